// The intermediate signing keys (ECv2, ECv2SigningOnly) whose root signature verified, each with a
// precomputed P-256 table for the message signatures it makes and the very signatures that verified:
// a later token reuses the entry only when it carries one of them, so that the outcome of a token never
// depends on which tokens came before it (or on which lane or shard saw them).
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

    init(key: EVPKey, table: P256SignerTable?, keyExpiration: Int64) {
        self.key = key
        self.table = table
        self.keyExpiration = keyExpiration
    }
}

final class IntermediateKeyCache: Sendable {
    /// Google signs with a handful of intermediate keys at a time (one a day or so); the bound only
    /// matters against input that cycles through many genuine ones.
    static let defaultLimit = 64
    /// A signature that verified is remembered until the latest expiration of the root keys that
    /// verified it (ms; `Int64.max` for a root without one).
    typealias VerifiedSignatures = [[UInt8]: Int64]

    private struct Entry {
        let key: VerifiedIntermediateKey
        var signatures: VerifiedSignatures
    }

    private let limit: Int
    private let state = Mutex<(byId: [[UInt8]: Entry], order: [[UInt8]])>(([:], []))

    init(limit: Int = IntermediateKeyCache.defaultLimit) { self.limit = max(limit, 1) }

    /// How many intermediate keys are cached.
    var count: Int { state.withLock { $0.byId.count } }

    /// The entry for `id` (a digest of the protocol version and `signedKey`): `verified` when one of
    /// `signatures` is one that verified before with a root key still valid at `referenceMilliseconds`;
    /// `known` (the parsed key and its table, to spare rebuilding them) whenever the entry exists.
    func lookup(_ id: [UInt8], signatures: [[UInt8]], at referenceMilliseconds: Int64?)
        -> (verified: VerifiedIntermediateKey?, known: VerifiedIntermediateKey?)
    {
        state.withLock { table -> (verified: VerifiedIntermediateKey?, known: VerifiedIntermediateKey?) in
            guard var entry = table.byId[id] else { return (nil, nil) }
            if let now = referenceMilliseconds {
                entry.signatures = entry.signatures.filter { $0.value > now }
                if entry.signatures.isEmpty {
                    table.byId[id] = nil
                    table.order.removeAll { $0 == id }
                    return (nil, nil)
                }
                table.byId[id] = entry
            }
            let matches = signatures.contains { entry.signatures[$0] != nil }
            return (matches ? entry.key : nil, entry.key)
        }
    }

    /// Records `signatures` (each with its roots' expiration) as verified for `id`, beside any recorded.
    func insert(_ id: [UInt8], _ key: VerifiedIntermediateKey, signatures: VerifiedSignatures) {
        state.withLock { table in
            if var entry = table.byId[id], entry.key === key {
                entry.signatures.merge(signatures) { max($0, $1) }
                table.byId[id] = entry
                return
            }
            if table.byId.updateValue(Entry(key: key, signatures: signatures), forKey: id) == nil {
                table.order.append(id)
            }
            while table.order.count > limit {
                table.byId[table.order.removeFirst()] = nil
            }
        }
    }
}
