// The keys the service decrypts with, swapped whole on SIGHUP (and, for root keys fetched from a URL, on
// each refresh): requests in flight keep the set they started with.
import ApplePayDecryption
import Synchronization

/// The Google Pay part of the configuration: what a reload reloads.
struct GooglePayKeyConfiguration: Sendable {
    let recipientIds: [String]
    let merchantKeySpecs: [String]
    /// The root keys file, reread on each reload; nil when they come from a URL (the last good
    /// document fetched is used).
    let rootKeysFile: String?
    /// --google-protocol-version (default: ECv1 and ECv2).
    var protocolVersions = GooglePayTokenDecryptor.defaultProtocolVersions
}

/// The current key set, replaced atomically by a reload or a root keys refresh.
final class KeyRing: Sendable {
    let specs: [MerchantSpec]
    let anchor: TrustAnchor
    let window: Int64
    let google: GooglePayKeyConfiguration?
    /// The --samsung-key specs, reloaded with the rest.
    let samsungKeySpecs: [String]

    private struct State {
        var set: KeySet
        /// The last good root keys document fetched from the URL (nil for a file).
        var fetchedRootKeys: GooglePayRootKeys?
    }
    private let current: Mutex<State>

    /// Loads every key; `fetchedRootKeys` is the first document fetched when the root keys come from a URL.
    init(
        specs: [MerchantSpec], anchor: TrustAnchor, window: Int64, google: GooglePayKeyConfiguration?,
        samsungKeySpecs: [String] = [], fetchedRootKeys: GooglePayRootKeys? = nil
    ) throws {
        self.specs = specs
        self.anchor = anchor
        self.window = window
        self.google = google
        self.samsungKeySpecs = samsungKeySpecs
        let apple = try KeySet.loadApple(specs: specs, anchor: anchor, window: window)
        let googlePay = try google.map { google in
            guard let rootKeys = try Self.rootKeysFile(google) ?? fetchedRootKeys else {
                throw ServiceConfigurationError("--google-root-keys: no root keys document")
            }
            return try KeySet.googlePay(
                merchantKeys: KeySet.loadGoogleMerchantKeys(google.merchantKeySpecs),
                recipientIds: google.recipientIds, rootKeys: rootKeys, protocolVersions: google.protocolVersions)
        }
        let samsungPay = try KeySet.samsungPay(specs: samsungKeySpecs, window: window)
        self.current = Mutex(
            State(
                set: KeySet(decryptor: apple, googlePay: googlePay, samsungPay: samsungPay),
                fetchedRootKeys: fetchedRootKeys))
    }

    var keys: KeySet { current.withLock { $0.set } }

    /// The root keys file read, or nil when the root keys come from a URL.
    private static func rootKeysFile(_ google: GooglePayKeyConfiguration) throws -> GooglePayRootKeys? {
        guard let path = google.rootKeysFile else { return nil }
        do throws(ConfigurationError) { return try GooglePayRootKeys(contentsOfFile: path) } catch {
            throw ServiceConfigurationError("--google-root-keys: \(error.message)")
        }
    }

    /// Loads every key again (the Apple Pay merchants, the Google Pay merchant keys and the root keys
    /// file, the Samsung Pay keys; root keys from a URL stay the last good document fetched); on failure the current set
    /// stays and the error is returned.
    func reload() -> Result<KeySet, any Error> {
        do {
            let apple = try KeySet.loadApple(specs: specs, anchor: anchor, window: window)
            let googleKeys = try google.map { try KeySet.loadGoogleMerchantKeys($0.merchantKeySpecs) }
            let file = try google.flatMap { try Self.rootKeysFile($0) }
            let samsungPay = try KeySet.samsungPay(specs: samsungKeySpecs, window: window)
            let google = google
            // Assembled under the lock, so that a refresh that lands meanwhile is not undone.
            return .success(
                try current.withLock { state throws -> KeySet in
                    var googlePay: GooglePayTokenDecryptor?
                    if let google, let googleKeys, let rootKeys = file ?? state.fetchedRootKeys {
                        googlePay = try KeySet.googlePay(
                            merchantKeys: googleKeys, recipientIds: google.recipientIds, rootKeys: rootKeys,
                            protocolVersions: google.protocolVersions)
                    }
                    state.set = KeySet(decryptor: apple, googlePay: googlePay, samsungPay: samsungPay)
                    return state.set
                })
        } catch {
            return .failure(error)
        }
    }

    /// Puts a freshly fetched root keys document in use (the merchant keys stay as they are).
    func replaceFetchedRootKeys(_ rootKeys: GooglePayRootKeys) throws {
        try current.withLock { state throws in
            state.set = try state.set.replacingGoogleRootKeys(rootKeys)
            state.fetchedRootKeys = rootKeys
        }
    }
}
