// The merchant keys the service decrypts with, swapped whole on SIGHUP: requests in flight keep the set
// they started with.
import ApplePayDecryption
import Synchronization

/// The current key set, replaced atomically by a reload.
final class KeyRing: Sendable {
    let specs: [MerchantSpec]
    let anchor: TrustAnchor
    let window: Int64
    private let current: Mutex<KeySet>

    init(specs: [MerchantSpec], anchor: TrustAnchor, window: Int64) throws {
        self.specs = specs
        self.anchor = anchor
        self.window = window
        self.current = Mutex(try KeySet.load(specs: specs, anchor: anchor, window: window))
    }

    var keys: KeySet { current.withLock { $0 } }

    /// Loads the specs again; on failure the current set stays and the error is returned.
    func reload() -> Result<KeySet, any Error> {
        do {
            let fresh = try KeySet.load(specs: specs, anchor: anchor, window: window)
            current.withLock { $0 = fresh }
            return .success(fresh)
        } catch {
            return .failure(error)
        }
    }
}
