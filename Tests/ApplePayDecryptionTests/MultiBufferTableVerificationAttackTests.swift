// Hostile differential tests of the multi-buffer table verification (P256MultiBufferTableVerification):
// signatures crafted with known private keys so that u1 and u2 take chosen edge values (small, powers
// of two, n − 2^k, Booth-window patterns, u1·G = ±u2·Q, R at infinity), valid ones with chosen s, and
// mutated ones; run in groups with random lane masks, mixed signers, lanes set twice or set then
// refused; every lane's verdict compared with EVP_PKEY_verify, with the engine's fixed-key verifier,
// and with the same lane run alone (a lane's verdict must not depend on its neighbours).
import ApplePayCrypto
@testable import ApplePayDecryption
import ApplePayTestSupport
import Foundation
import Testing

/// A signer with a known private key d.
private final class KnownKey {
    let d: [UInt8]
    let publicKey: [UInt8]
    let table: P256SignerTable
    let probe: FixedKeyVerificationProbe

    init(_ c: P256Crafting, rng: inout SplitMix) {
        d = c.random(using: &rng)
        publicKey = c.publicKey(d)
        table = publicKey.withUnsafeBytes { P256SignerTable.build(uncompressedPoint: $0)! }
        probe = FixedKeyVerificationProbe(publicKey: publicKey)!
    }
}

private struct Case {
    let label: String
    let key: Int
    let digest: [UInt8]
    let signature: [UInt8]
}

@Suite("Multi-buffer table verification under attack (differential against OpenSSL)")
struct MultiBufferTableVerificationAttackTests {
    /// Edge values for u1 (each reduced mod n, zero dropped): small numbers, 2^k and neighbours,
    /// n − 2^k, n − small, 2²⁵⁶ mod n and friends, and Booth-window patterns of crypto_mb's comb.
    private static func edgeScalars(_ c: P256Crafting, rng: inout SplitMix) -> [(String, [UInt8])] {
        var out: [(String, [UInt8])] = []
        let n = c.order
        func add(_ label: String, _ x: [UInt8]) { if !c.isZero(x) { out.append((label, c.reduce(x))) } }
        for w: UInt in [1, 2, 3, 4, 5, 7, 8, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129, 255, 256] {
            add("\(w)", c.word(w))
            add("n-\(w)", c.negate(c.word(w)))
        }
        for k in 0..<256 {
            add("2^\(k)", c.powerOfTwo(k))
            add("n-2^\(k)", c.negate(c.powerOfTwo(k)))
            // 2^k ± 1 at and beside 7-bit window boundaries only (time).
            guard [0, 1, 6].contains(k % 7) || k > 248 else { continue }
            add("2^\(k)-1", c.subtract(c.powerOfTwo(k), c.word(1)))
            add("2^\(k)+1", c.add(c.powerOfTwo(k), c.word(1)))
        }
        // 2^256 mod n, its negation, (n ± 1)/2 (n is odd: (n + 1)/2 = 2⁻¹, (n − 1)/2 = −2⁻¹).
        add("2^256 mod n", c.powerOfTwo(256))
        add("-(2^256 mod n)", c.negate(c.powerOfTwo(256)))
        add("(n-1)/2", c.negate(c.inverse(c.word(2))))
        add("(n+1)/2", c.inverse(c.word(2)))
        // Booth windows of widths 4 to 8: every window the same digit (0, 1, top, top ± 1, all ones).
        for width in 4...8 {
            let top = 1 << (width - 1)
            for digit in [1, top - 1, top, top + 1, (1 << width) - 1] {
                var x = c.word(0)
                var shift = 0
                while shift < 256 {
                    x = c.add(x, c.multiply(c.word(UInt(digit)), c.powerOfTwo(shift)))
                    shift += width
                }
                add("w\(width) digits \(digit)", x)
            }
        }
        // Random window soups: each 7-bit window 0, 1, 63, 64, 65, 127 or random; top windows near n.
        for i in 0..<200 {
            var bytes = [UInt8](repeating: 0, count: 32)
            var bit = 0
            let choices: [UInt64] = [0, 1, 63, 64, 65, 127, 0x7F]
            var value: [UInt64] = [0, 0, 0, 0]
            while bit < 256 {
                let digit = Bool.random(using: &rng) ? choices.randomElement(using: &rng)! : rng.next() & 0x7F
                for b in 0..<7 where bit + b < 256 && digit & (1 << UInt64(b)) != 0 {
                    value[(bit + b) / 64] |= 1 << UInt64((bit + b) % 64)
                }
                bit += 7
            }
            for j in 0..<32 { bytes[31 - j] = UInt8((value[j / 8] >> UInt64(8 * (j % 8))) & 0xFF) }
            if i % 4 == 0 { for j in 0..<4 { bytes[j] = n[j] } }  // just under or just over n's top
            add("soup \(i)", bytes)
        }
        return out
    }

    /// Valid signature for chosen u1, u2 (u2 ≠ 0) under `key`: r = x(u1·G + u2·Q), s = r/u2, e = u1·s.
    private static func craft(_ c: P256Crafting, _ key: KnownKey, u1: [UInt8], u2: [UInt8], plusN: Bool)
        -> (digest: [UInt8], signature: [UInt8])?
    {
        guard let r = c.x(of: u1, plus: u2, times: key.publicKey), !c.isZero(r) else { return nil }
        let s = c.multiply(r, c.inverse(u2))
        let e = c.multiply(u1, s)
        let digest = plusN ? c.plusOrder(e) ?? e : e
        return (digest, P256Crafting.der(r: r, s: s))
    }

    /// Valid signature with a chosen s: R = k·G, r = x(R), e = s·k − r·d.
    private static func craft(_ c: P256Crafting, _ key: KnownKey, s: [UInt8], rng: inout SplitMix) -> (
        digest: [UInt8], signature: [UInt8]
    )? {
        let k = c.random(using: &rng)
        guard let r = c.x(of: k), !c.isZero(r) else { return nil }
        let e = c.subtract(c.multiply(s, k), c.multiply(r, key.d))
        return (e, P256Crafting.der(r: r, s: s))
    }

    private static func cases(_ c: P256Crafting, keys: [KnownKey], rng: inout SplitMix) -> [Case] {
        var out: [Case] = []
        let edges = edgeScalars(c, rng: &rng)
        func push(_ label: String, _ key: Int, _ pair: (digest: [UInt8], signature: [UInt8])?) {
            guard let pair else { return }
            out.append(Case(label: label, key: key, digest: pair.digest, signature: pair.signature))
            // Mutants: e + 1, s's last byte, r's last byte, another signer's table.
            var digest = pair.digest
            digest[31] &+= 1
            out.append(Case(label: label + " e+1", key: key, digest: digest, signature: pair.signature))
            var s = pair.signature
            s[s.count - 1] ^= 0x01
            out.append(Case(label: label + " s^1", key: key, digest: pair.digest, signature: s))
            var r = pair.signature
            r[3 + Int(r[3])] ^= 0x01
            out.append(Case(label: label + " r^1", key: key, digest: pair.digest, signature: r))
            out.append(
                Case(
                    label: label + " other key", key: (key + 1) % keys.count, digest: pair.digest,
                    signature: pair.signature))
        }
        for (i, (name, u1)) in edges.enumerated() {
            let key = i % keys.count
            push(
                "u1=\(name), u2 random", key,
                craft(c, keys[key], u1: u1, u2: c.random(using: &rng), plusN: i % 3 == 0))
            // The same edge value as u2 (u2·Q on the table), u1 random.
            push(
                "u2=\(name), u1 random", key, craft(c, keys[key], u1: c.random(using: &rng), u2: u1, plusN: false))
            // As s.
            push("s=\(name)", key, craft(c, keys[key], s: u1, rng: &rng))
            // u1·G = u2·Q: u1 = u2·d (R = 2·u1·G, a doubling in EC_POINT_add).
            let u2 = c.multiply(u1, c.inverse(keys[key].d))
            push("u1=\(name), u1·G = u2·Q", key, craft(c, keys[key], u1: u1, u2: u2, plusN: false))
            // u1·G = −u2·Q: R = ∞; any r, s = r/u2, e = u1·s: must be refused everywhere.
            let u2neg = c.negate(u2)
            let r = c.random(using: &rng)
            let s = c.multiply(r, c.inverse(u2neg))
            out.append(
                Case(
                    label: "u1=\(name), R = ∞", key: key, digest: c.multiply(u1, s),
                    signature: P256Crafting.der(r: r, s: s)))
        }
        // Random valid signatures and random (r, s) pairs with edge r and s values.
        for i in 0..<600 {
            let key = i % keys.count
            push(
                "random \(i)", key,
                craft(c, keys[key], u1: c.random(using: &rng), u2: c.random(using: &rng), plusN: i % 2 == 0))
        }
        let n = c.order
        let rEdges: [[UInt8]] = [
            [1], [2], n.enumerated().map { $1 &- ($0 == 31 ? 1 : 0) },
            Array(repeating: 0xFF, count: 16), c.powerOfTwo(256),
        ]
        for rv in rEdges {
            for sv in rEdges {
                for key in 0..<keys.count {
                    out.append(
                        Case(
                            label: "edge r/s", key: key,
                            digest: (0..<32).map { _ in UInt8.random(in: 0...255, using: &rng) },
                            signature: P256Crafting.der(r: rv, s: sv)))
                }
            }
        }
        // Digest 0 (u1 = 0), digest n, digest n + 1, digest 2^256 − 1 with valid signatures.
        for (label, e) in [
            ("e=0", [UInt8](repeating: 0, count: 32)), ("e=n", n),
            ("e=n+1", n.enumerated().map { $1 &+ ($0 == 31 ? 1 : 0) }),
            ("e=2^256-1", [UInt8](repeating: 0xFF, count: 32)),
        ] {
            for key in 0..<keys.count {
                let k = c.random(using: &rng)
                let r = c.x(of: k)!
                // s = (e + r·d)/k
                let s = c.multiply(c.add(c.reduce(e), c.multiply(r, keys[key].d)), c.inverse(k))
                out.append(Case(label: label, key: key, digest: e, signature: P256Crafting.der(r: r, s: s)))
            }
        }
        return out
    }

    @Test(
        "crafted edge-case and random signatures in random lane masks: the lanes never accept what OpenSSL refuses, accept all it accepts (but u1 = 0), and give each lane the verdict it gets alone",
        .enabled(if: MultiBufferEnvironment.ready))
    func differential() throws {
        let library = try #require(CryptoMB.shared.library)
        let verification = try #require(P256MultiBufferTableVerification(library: library))
        let solo = try #require(P256MultiBufferTableVerification(library: library))
        let c = P256Crafting()
        let seed = UInt64.random(in: 0...UInt64.max)
        var rng = SplitMix(state: seed)
        let keys = (0..<4).map { _ in KnownKey(c, rng: &rng) }
        let all = Self.cases(c, keys: keys, rng: &rng).shuffled(using: &rng)
        // Reference verdicts.
        let openSSL = all.map { keys[$0.key].probe.verifyEVP(digest: $0.digest, signature: $0.signature) }
        let engine = all.map { keys[$0.key].probe.verifyFixedKey(digest: $0.digest, signature: $0.signature) }
        for i in all.indices where openSSL[i] != engine[i] {
            Issue.record("engine verifier differs from OpenSSL on \(all[i].label) (seed \(seed))")
        }
        func set(_ v: P256MultiBufferTableVerification, _ k: Int, _ t: Case) -> Bool {
            t.signature.withUnsafeBytes { s in
                t.digest.withUnsafeBytes { v.set(lane: k, signature: s, digest: $0, table: keys[t.key].table) }
            }
        }
        let junk = Case(label: "junk", key: 0, digest: [UInt8](repeating: 7, count: 32), signature: [0x30, 0x00])
        var compared = 0, acceptedByLanes = 0, refusedValid: [String] = [], groups = 0, neighbourDiffs = 0
        var doubleSets = 0, unsets = 0
        var next = 0
        while next < all.count {
            groups += 1
            let mask = UInt8.random(in: 1...255, using: &rng)
            var laneCase: [Int: Int] = [:]
            var expectSet: UInt8 = 0
            for k in 0..<8 where mask & (1 << UInt8(k)) != 0 && next < all.count {
                let roll = Int.random(in: 0..<10, using: &rng)
                if roll == 0 {
                    // Set with another case first, then overwritten.
                    let decoy = all[Int.random(in: 0..<all.count, using: &rng)]
                    _ = set(verification, k, decoy)
                    doubleSets += 1
                }
                let ok = set(verification, k, all[next])
                if roll == 1, ok {
                    // Set, then refused by the rules: the lane must be empty afterwards.
                    #expect(!set(verification, k, junk))
                    unsets += 1
                    next += 1
                    continue
                }
                if ok {
                    laneCase[k] = next
                    expectSet |= 1 << UInt8(k)
                } else {
                    // Refused by the DER/range rules: OpenSSL must refuse too.
                    #expect(!openSSL[next], "set refused a signature OpenSSL accepts: \(all[next].label)")
                }
                next += 1
            }
            let ok = verification.run()
            #expect(ok & ~expectSet == 0, "a lane not set (or unset) was reported verified (seed \(seed))")
            for (k, i) in laneCase {
                compared += 1
                let byLanes = ok & (1 << UInt8(k)) != 0
                if byLanes { acceptedByLanes += 1 }
                #expect(!byLanes || openSSL[i], "lanes ACCEPTED what OpenSSL refuses: \(all[i].label) (seed \(seed))")
                #expect(byLanes || engine[i] == openSSL[i])
                if openSSL[i] && !byLanes { refusedValid.append(all[i].label) }
                // The same lane alone (in a random lane of its own).
                let alone = Int.random(in: 0..<8, using: &rng)
                #expect(set(solo, alone, all[i]))
                let soloOK = solo.run() & (1 << UInt8(alone)) != 0
                if soloOK != byLanes {
                    neighbourDiffs += 1
                    Issue.record("\(all[i].label): \(byLanes) in its group, \(soloOK) alone (seed \(seed))")
                }
            }
        }
        // Only u1 = 0 (e ≡ 0 mod n) may be refused by the lanes when OpenSSL accepts.
        let unexpected = refusedValid.filter { $0 != "e=0" && $0 != "e=n" }
        #expect(unexpected.isEmpty, "lanes refused valid signatures: \(unexpected.prefix(20))")
        print(
            "table lanes attack: seed \(seed), \(all.count) cases, \(compared) lanes compared with OpenSSL in \(groups) groups, \(acceptedByLanes) accepted by the lanes, \(openSSL.filter { $0 }.count) valid; refused valid: \(refusedValid.count) \(refusedValid.prefix(6)); \(doubleSets) lanes set twice, \(unsets) set then unset; \(neighbourDiffs) neighbour differences"
        )
    }

    @Test(
        "tables are not retained after run(), nor after a refused set(); a table set but never run is held until the next run",
        .enabled(if: MultiBufferEnvironment.ready))
    func tablesReleased() throws {
        let library = try #require(CryptoMB.shared.library)
        let verification = try #require(P256MultiBufferTableVerification(library: library))
        let signer = P256SigningProbe()
        let digest = SHA256.hash(Array("x".utf8))
        let signature = signer.sign(digest: digest)
        weak var weakTable: P256SignerTable?
        do {
            let table = try #require(signer.publicKey.withUnsafeBytes { P256SignerTable.build(uncompressedPoint: $0) })
            weakTable = table
            #expect(
                signature.withUnsafeBytes { s in
                    digest.withUnsafeBytes { verification.set(lane: 3, signature: s, digest: $0, table: table) }
                })
        }
        #expect(weakTable != nil, "held between set and run (by design)")
        #expect(verification.run() == 0b1000)
        #expect(weakTable == nil, "table retained after run()")
        do {
            let table = try #require(signer.publicKey.withUnsafeBytes { P256SignerTable.build(uncompressedPoint: $0) })
            weakTable = table
            _ = signature.withUnsafeBytes { s in
                digest.withUnsafeBytes { verification.set(lane: 5, signature: s, digest: $0, table: table) }
            }
            let bad: [UInt8] = [0x30, 0x06, 0x02, 0x01, 0x00, 0x02, 0x01, 0x01]  // r = 0
            #expect(
                !bad.withUnsafeBytes { s in
                    digest.withUnsafeBytes { verification.set(lane: 5, signature: s, digest: $0, table: table) }
                })
        }
        #expect(weakTable == nil, "table retained after a refused set()")
        #expect(verification.run() == 0)
    }
}
