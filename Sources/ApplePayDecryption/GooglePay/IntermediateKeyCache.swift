// The intermediate signing keys (ECv2, ECv2SigningOnly) whose root signature verified, each with a
// precomputed P-256 table for the message signatures it makes: verified once per distinct `signedKey`
// while it and its root key are valid, bounded like the signer-chain cache.
internal import ApplePayCrypto
import Synchronization

/// An intermediate key that a root key signed, ready for the message signatures it makes.
final class VerifiedIntermediateKey: @unchecked Sendable {
    // Sendable: immutable after construction; the table and key are only read.
    let key: EVPKey
    /// Nil when OpenSSL could not build the table: the key is then used through EVP.
    let table: P256SignerTable?
    /// The intermediate's `keyExpiration` (ms).
    let keyExpiration: Int64
    /// The latest expiration of the root keys that verified it (ms; nil for none): past it the entry
    /// no longer counts, and the key is verified again against the roots valid then.
    let rootExpiration: Int64?

    init(key: EVPKey, table: P256SignerTable?, keyExpiration: Int64, rootExpiration: Int64?) {
        self.key = key
        self.table = table
        self.keyExpiration = keyExpiration
        self.rootExpiration = rootExpiration
    }
}

final class IntermediateKeyCache: Sendable {
    /// Google signs with a handful of intermediate keys at a time (one a day or so); the bound only
    /// matters against input that cycles through many genuine ones.
    static let defaultLimit = 64
    private let limit: Int
    private let state = Mutex<(byId: [[UInt8]: VerifiedIntermediateKey], order: [[UInt8]])>(([:], []))

    init(limit: Int = IntermediateKeyCache.defaultLimit) { self.limit = max(limit, 1) }

    /// How many intermediate keys are cached.
    var count: Int { state.withLock { $0.byId.count } }

    /// The entry for `id` (a digest of the protocol version and `signedKey`) still backed by a root
    /// key valid at `referenceMilliseconds`.
    func lookup(_ id: [UInt8], at referenceMilliseconds: Int64?) -> VerifiedIntermediateKey? {
        state.withLock { table -> VerifiedIntermediateKey? in
            guard let entry = table.byId[id] else { return nil }
            if let now = referenceMilliseconds, let rootEnd = entry.rootExpiration, rootEnd <= now {
                table.byId[id] = nil
                table.order.removeAll { $0 == id }
                return nil
            }
            return entry
        }
    }

    func insert(_ id: [UInt8], _ entry: VerifiedIntermediateKey) {
        state.withLock { table in
            if table.byId.updateValue(entry, forKey: id) == nil { table.order.append(id) }
            while table.order.count > limit {
                table.byId[table.order.removeFirst()] = nil
            }
        }
    }
}
