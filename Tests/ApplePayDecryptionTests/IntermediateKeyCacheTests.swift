// The verified intermediate keys' cache over its bound: entries that can no longer serve a token (the
// key or every signature's roots expired) go first, then the least recently used; a hit is a use.
@testable import ApplePayDecryption
import ApplePayCrypto
import Testing

@Suite("Google Pay intermediate key cache")
struct IntermediateKeyCacheTests {
    static let key = EVPKey.generateEC(curve: "P-256")

    static func digest(_ n: UInt8) -> SignedKeyDigest {
        [UInt8](repeating: n, count: 32).withUnsafeBytes { SignedKeyDigest($0) }
    }

    static func entry(expiring keyExpiration: Int64) -> VerifiedIntermediateKey {
        VerifiedIntermediateKey(key: key, table: nil, keyExpiration: keyExpiration)
    }

    let now: Int64 = 1_000_000

    @Test("over the bound, the least recently used entry goes, a lookup counting as a use (not the oldest inserted)")
    func leastRecentlyUsedGoes() {
        let cache = IntermediateKeyCache(limit: 2)
        let a = Self.digest(1), b = Self.digest(2), c = Self.digest(3)
        cache.insert(a, Self.entry(expiring: now + 10), signatures: [[1]: .max], at: now)
        cache.insert(b, Self.entry(expiring: now + 10), signatures: [[2]: .max], at: now)
        #expect(cache.lookup(a, signatures: [[1]], at: now).verified != nil)
        cache.insert(c, Self.entry(expiring: now + 10), signatures: [[3]: .max], at: now)
        #expect(cache.count == 2)
        #expect(cache.lookup(b, signatures: [[2]], at: now).known == nil, "b, the least recently used, is evicted")
        #expect(cache.lookup(a, signatures: [[1]], at: now).verified != nil)
        #expect(cache.lookup(c, signatures: [[3]], at: now).verified != nil)
    }

    @Test(
        "over the bound, entries that can serve no token go first, however recently used: an expired key, or every signature's roots expired"
    )
    func expiredGoFirst() {
        let cache = IntermediateKeyCache(limit: 3)
        let valid = Self.digest(1), keyExpired = Self.digest(2), rootsExpired = Self.digest(3)
        let newcomer = Self.digest(4)
        cache.insert(valid, Self.entry(expiring: now + 10), signatures: [[1]: .max], at: now - 100)
        cache.insert(keyExpired, Self.entry(expiring: now - 1), signatures: [[2]: .max], at: now - 100)
        cache.insert(rootsExpired, Self.entry(expiring: now + 10), signatures: [[3]: now - 1], at: now - 100)
        // The two expired entries are the most recently used.
        _ = cache.lookup(keyExpired, signatures: [[2]], at: now - 50)
        _ = cache.lookup(rootsExpired, signatures: [[3]], at: now - 50)
        cache.insert(newcomer, Self.entry(expiring: now + 10), signatures: [[4]: .max], at: now)
        #expect(cache.count == 2)
        #expect(cache.digestsByUse == [valid, newcomer])
    }

    @Test("a signature whose roots expired no longer matches, and the entry's key is still known (no table rebuilt)")
    func expiredSignatureNoLongerMatches() {
        let cache = IntermediateKeyCache(limit: 4)
        let a = Self.digest(1)
        let entry = Self.entry(expiring: now + 10)
        cache.insert(a, entry, signatures: [[1]: now], at: now - 100)
        #expect(cache.lookup(a, signatures: [[1]], at: now - 1).verified === entry)
        let later = cache.lookup(a, signatures: [[1]], at: now)
        #expect(later.verified == nil)
        #expect(later.known === entry)
        // Verified again (by a root valid now): merged, and the expired record dropped.
        cache.insert(a, entry, signatures: [[1]: now + 5], at: now)
        #expect(cache.lookup(a, signatures: [[1]], at: now).verified === entry)
    }
}
