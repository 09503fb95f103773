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

/// The SHA-256 of a signed key's signed string, as a value: a cache key that a token's lookup does
/// not allocate (an `[UInt8]` of it was one allocation a token).
struct SignedKeyDigest: Hashable, Sendable {
    let words: (UInt64, UInt64, UInt64, UInt64)

    init(_ digest: UnsafeRawBufferPointer) {
        precondition(digest.count == 32)
        words = (
            digest.loadUnaligned(fromByteOffset: 0, as: UInt64.self),
            digest.loadUnaligned(fromByteOffset: 8, as: UInt64.self),
            digest.loadUnaligned(fromByteOffset: 16, as: UInt64.self),
            digest.loadUnaligned(fromByteOffset: 24, as: UInt64.self)
        )
    }

    static func == (a: Self, b: Self) -> Bool { a.words == b.words }

    func hash(into hasher: inout Hasher) {
        hasher.combine(words.0)
        hasher.combine(words.1)
        hasher.combine(words.2)
        hasher.combine(words.3)
    }
}

final class IntermediateKeyCache: Sendable {
    // Sendable: every entry is read and written under `state`'s lock only.
    /// Google signs with a handful of intermediate keys at a time (one a day or so); the bound only
    /// matters against input that cycles through many genuine ones.
    static let defaultLimit = 64
    /// A signature that verified is remembered until the latest expiration of the root keys that
    /// verified it (ms; `Int64.max` for a root without one).
    typealias VerifiedSignatures = [[UInt8]: Int64]

    /// A class, so that a hit updates `lastUse` in place: writing through the dictionary's subscript
    /// (`byDigest[d]?.lastUse = …`) cost three allocations a token (its modify accessors' frames).
    private final class Entry {
        let key: VerifiedIntermediateKey
        var signatures: VerifiedSignatures
        /// The cache's clock at the entry's last use: the least recently used entry goes first.
        var lastUse: UInt64

        init(key: VerifiedIntermediateKey, signatures: VerifiedSignatures, lastUse: UInt64) {
            self.key = key
            self.signatures = signatures
            self.lastUse = lastUse
        }

        /// True when the entry can no longer serve a token at `now`: its key expired (a token would
        /// be intermediateKeyExpired whatever the cache held) or every signature's roots did.
        func isExpired(at now: Int64) -> Bool {
            key.keyExpiration <= now || !signatures.values.contains { $0 > now }
        }
    }

    private struct Table {
        var byDigest: [SignedKeyDigest: Entry] = [:]
        var clock: UInt64 = 0
    }

    private let limit: Int
    private let state = Mutex(Table())

    init(limit: Int = IntermediateKeyCache.defaultLimit) { self.limit = max(limit, 1) }

    /// How many intermediate keys are cached.
    var count: Int { state.withLock { $0.byDigest.count } }

    /// The entry for `digest` (of the protocol version and `signedKey`): `verified` when one of
    /// `signatures` is one that verified before with a root key still valid at `referenceMilliseconds`;
    /// `known` (the parsed key and its table, to spare rebuilding them) whenever the entry exists.
    func lookup(_ digest: SignedKeyDigest, signatures: [[UInt8]], at referenceMilliseconds: Int64?)
        -> (verified: VerifiedIntermediateKey?, known: VerifiedIntermediateKey?)
    {
        state.withLock { table -> (verified: VerifiedIntermediateKey?, known: VerifiedIntermediateKey?) in
            guard let entry = table.byDigest[digest] else { return (nil, nil) }
            table.clock &+= 1
            entry.lastUse = table.clock
            // Signatures whose roots expired are not dropped here (that built a new dictionary on every
            // token): they no longer match, and an entry with none left goes first at the next insert.
            let matches = signatures.contains { signature in
                guard let end = entry.signatures[signature] else { return false }
                return referenceMilliseconds.map { end > $0 } ?? true
            }
            return (matches ? entry.key : nil, entry.key)
        }
    }

    /// Records `signatures` (each with its roots' expiration) as verified for `digest`, beside any
    /// recorded. Over the bound, the entries expired at `referenceMilliseconds` go first, then the
    /// least recently used.
    func insert(
        _ digest: SignedKeyDigest, _ key: VerifiedIntermediateKey, signatures: VerifiedSignatures,
        at referenceMilliseconds: Int64?
    ) {
        state.withLock { table in
            table.clock &+= 1
            if let entry = table.byDigest[digest], entry.key === key {
                if let now = referenceMilliseconds { entry.signatures = entry.signatures.filter { $0.value > now } }
                entry.signatures.merge(signatures) { max($0, $1) }
                entry.lastUse = table.clock
                return
            }
            table.byDigest[digest] = Entry(key: key, signatures: signatures, lastUse: table.clock)
            guard table.byDigest.count > limit else { return }
            if let now = referenceMilliseconds {
                let expired = table.byDigest.filter { $0.key != digest && $0.value.isExpired(at: now) }
                for stale in expired.keys { table.byDigest[stale] = nil }
            }
            while table.byDigest.count > limit {
                guard
                    let oldest = table.byDigest.min(by: { $0.value.lastUse < $1.value.lastUse })?.key
                else { break }
                table.byDigest[oldest] = nil
            }
        }
    }

    /// The cached digests from least to most recently used (tests of the eviction order).
    var digestsByUse: [SignedKeyDigest] {
        state.withLock { table in table.byDigest.sorted { $0.value.lastUse < $1.value.lastUse }.map(\.key) }
    }
}
