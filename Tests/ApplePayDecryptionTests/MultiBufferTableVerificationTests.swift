// The batch lanes' signature check on crypto_mb: u1·G for eight lanes in one fixed-base call, u2·Q on
// the signer's table, s⁻¹ from one inversion. OpenSSL's verdict on every Wycheproof vector, lanes
// with different signers in one group, a broken lane, u1 = 0, partial groups, and the self-test.
import ApplePayCrypto
@testable import ApplePayDecryption
import ApplePayTestSupport
import Foundation
import Testing

@Suite("Multi-buffer P-256 verification with the signer's table")
struct MultiBufferTableVerificationTests {
    static func verification() throws -> P256MultiBufferTableVerification {
        let library = try #require(CryptoMB.shared.library)
        return try #require(
            P256MultiBufferTableVerification(library: library), "crypto_mb without mbx_nistp256_ecpublic_key_mb8")
    }

    @Test(
        "Wycheproof ECDSA P-256/SHA-256, eight lanes at a time with each vector's own key table: the verdict (a refused lane re-checked by the engine) is OpenSSL's for every vector, and the table lanes never accept what OpenSSL refuses",
        .enabled(if: MultiBufferEnvironment.ready), SharedVectors.wycheproof)
    func wycheproof() throws {
        let verification = try Self.verification()
        let vectors = try WycheproofECDSAVector.load()
        #expect(vectors.count == 484)
        // One table and one engine probe per key (113 keys), as the chain cache keeps one per leaf.
        var tables: [[UInt8]: P256SignerTable] = [:], probes: [[UInt8]: FixedKeyVerificationProbe] = [:]
        for v in vectors where tables[v.key] == nil {
            let table = try #require(v.key.withUnsafeBytes { P256SignerTable.build(uncompressedPoint: $0) })
            let probe = try #require(FixedKeyVerificationProbe(publicKey: v.key))
            (tables[v.key], probes[v.key]) = (table, probe)
        }
        var refusedByRules = 0, verifiedByLanes = 0, recheckedByEngine = 0, acceptedOnRecheck: [String] = []
        var mixedGroups = 0
        for start in stride(from: 0, to: vectors.count, by: 8) {
            let group = Array(vectors[start..<min(start + 8, vectors.count)])
            if Set(group.map(\.key)).count > 1 { mixedGroups += 1 }
            var set: UInt8 = 0
            for (k, v) in group.enumerated() {
                let table = tables[v.key]!
                if v.signature.withUnsafeBytes({ s in
                    v.digest.withUnsafeBytes { verification.set(lane: k, signature: s, digest: $0, table: table) }
                }) {
                    set |= 1 << UInt8(k)
                }
            }
            let ok = verification.run()
            #expect(ok & ~set == 0, "a lane not set was reported verified")
            for (k, v) in group.enumerated() {
                let probe = probes[v.key]!
                let openSSL = probe.verifyEVP(digest: v.digest, signature: v.signature)
                let engine = probe.verifyFixedKey(digest: v.digest, signature: v.signature)
                let byLanes = ok & (1 << UInt8(k)) != 0
                let verdict = set & (1 << UInt8(k)) == 0 ? false : (byLanes || engine)
                #expect(verdict == openSSL, "tcId \(v.id) (\(v.result)): multi-buffer \(verdict), OpenSSL \(openSSL)")
                #expect(!byLanes || openSSL, "tcId \(v.id): the table lanes accepted a signature OpenSSL refuses")
                #expect(verdict == (v.result == "valid"), "tcId \(v.id) (\(v.result))")
                if set & (1 << UInt8(k)) == 0 {
                    refusedByRules += 1
                } else if byLanes {
                    verifiedByLanes += 1
                } else {
                    recheckedByEngine += 1
                }
                if set & (1 << UInt8(k)) != 0, !byLanes, engine { acceptedOnRecheck.append(v.id) }
            }
        }
        #expect(verifiedByLanes + refusedByRules + recheckedByEngine == 484)
        // Every valid signature verifies in the lanes themselves: the re-check is a safety net.
        #expect(verifiedByLanes == 174 && acceptedOnRecheck.isEmpty, "lanes refused valid tcIds \(acceptedOnRecheck)")
        // Groups holding several signers' lanes (the Wycheproof file's one-vector groups run together).
        #expect(mixedGroups > 10)
        print(
            "Wycheproof ECDSA through the table lanes: \(verifiedByLanes) verified, \(recheckedByEngine) refused (re-checked: \(acceptedOnRecheck.count) accepted), \(refusedByRules) refused by the DER/range rules; \(mixedGroups) groups mixed signers"
        )
    }

    @Test(
        "a broken signature in lane 3 of eight is refused there, and only there; partial groups are padded; two signers share a group",
        .enabled(if: MultiBufferEnvironment.ready))
    func brokenLaneAndPartialGroups() throws {
        let verification = try Self.verification()
        let signers = [P256SigningProbe(), P256SigningProbe()]
        let tables = try signers.map { signer in
            try #require(signer.publicKey.withUnsafeBytes { P256SignerTable.build(uncompressedPoint: $0) })
        }
        var lanes: [(signature: [UInt8], digest: [UInt8], signer: Int)] = (0..<8).map { k in
            let digest = SHA256.hash(Array("lane \(k)".utf8))
            return (signers[k % 2].sign(digest: digest), digest, k % 2)
        }
        lanes[3].signature[lanes[3].signature.count - 1] ^= 0x01  // s changed, still DER and in range
        func set(_ k: Int, table: Int? = nil) -> Bool {
            lanes[k].signature.withUnsafeBytes { s in
                lanes[k].digest.withUnsafeBytes {
                    verification.set(lane: k, signature: s, digest: $0, table: tables[table ?? lanes[k].signer])
                }
            }
        }
        for k in 0..<8 { #expect(set(k)) }
        #expect(verification.run() == 0b1111_0111)
        // Lanes 1, 3 and 6 only: the padding lanes' verdicts are not reported.
        for k in [1, 3, 6] { #expect(set(k)) }
        #expect(verification.run() == 0b0100_0010)
        // One lane alone, then a lane given the other signer's table: refused.
        #expect(set(7))
        #expect(verification.run() == 0b1000_0000)
        #expect(set(2, table: 1))
        #expect(set(4))
        #expect(verification.run() == 0b0001_0000)
        // Nothing set: nothing run, nothing reported.
        #expect(verification.run() == 0)
    }

    @Test(
        "u1 = 0 (a digest equal to n): the lanes refuse it and the engine's verifier, which accepts it as OpenSSL does, decides",
        .enabled(if: MultiBufferEnvironment.ready))
    func zeroU1() throws {
        let verification = try Self.verification()
        let signer = P256SigningProbe()
        let table = try #require(signer.publicKey.withUnsafeBytes { P256SignerTable.build(uncompressedPoint: $0) })
        let probe = try #require(FixedKeyVerificationProbe(publicKey: signer.publicKey))
        // n itself as the digest: e ≡ 0 (mod n), so u1 = 0 and R = u2·Q.
        let order = Hex.decode("ffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551")!
        let signature = signer.sign(digest: order)
        #expect(probe.verifyEVP(digest: order, signature: signature))
        #expect(probe.verifyFixedKey(digest: order, signature: signature))
        let good = SHA256.hash(Array("neighbour".utf8))
        let goodSignature = signer.sign(digest: good)
        for k in 0..<2 {
            let (d, s) = k == 0 ? (order, signature) : (good, goodSignature)
            #expect(
                s.withUnsafeBytes { s in
                    d.withUnsafeBytes { verification.set(lane: k, signature: s, digest: $0, table: table) }
                })
        }
        #expect(verification.run() == 0b10)
        // Alone in its group: nothing to call crypto_mb for, nothing verified.
        #expect(
            signature.withUnsafeBytes { s in
                order.withUnsafeBytes { verification.set(lane: 5, signature: s, digest: $0, table: table) }
            })
        #expect(verification.run() == 0)
    }

    @Test(
        "a failing fixed-base self-test falls back: auto runs OpenSSL and names mbx_nistp256_ecpublic_key_mb8, on refuses",
        .enabled(if: MultiBufferEnvironment.loads))
    func failingFixedBaseSelfTest() throws {
        let auto = try MultiBufferBackend.probing(
            .auto, path: MultiBufferEnvironment.path, failSelfTest: false, failFixedBaseSelfTest: true)
        #expect(!auto.isActive)
        #expect(
            auto.reason.contains("self-test failed") && auto.reason.contains("mbx_nistp256_ecpublic_key_mb8"),
            "\(auto.reason)")
        #expect(throws: ConfigurationError.self) {
            try MultiBufferBackend.probing(
                .on, path: MultiBufferEnvironment.path, failSelfTest: false, failFixedBaseSelfTest: true)
        }
    }
}

/// crypto_mb's fixed-base call, then Z = 0 in every lane whose scalar's low byte is 0: a library wrong
/// only for some scalars (the exceptional case of an incomplete addition formula would look like this).
nonisolated(unsafe) private var realFixedBase: CryptoMBLibrary.FixedBase?
private let fixedBaseZeroingZ: CryptoMBLibrary.FixedBase = { xs, ys, zs, scalars, buffer in
    let status = realFixedBase!(xs, ys, zs, scalars, buffer)
    for k in 0..<8 where scalars[k]![0] & 0xFF == 0 { zs?[k]?.update(repeating: 0, count: 4) }
    return status
}

extension MultiBufferTableVerificationTests {
    @Test(
        "a library that gives Z = 0 for some scalars fails the self-test, and a signature forged for it (R = b·Q, u1·G read as ∞) is refused by the lanes, as OpenSSL refuses it",
        .enabled(if: MultiBufferEnvironment.ready))
    func wrongPointAtInfinity() throws {
        let library = try #require(CryptoMB.shared.library)
        realFixedBase = library.fixedBase
        let standIn = library.replacingFixedBase(with: fixedBaseZeroingZ)
        // The self-test's scalars include one whose low byte is 0.
        #expect(P256MultiBufferTableVerification.selfTest(library) == nil)
        let failure = P256MultiBufferTableVerification.selfTest(standIn)
        #expect(failure != nil, "the self-test passed a library that zeroes Z for some scalars")
        // The forgery, without the private key: R = b·Q, r = x(R), s = r/b, so u2 = b and R = u1·G + u2·Q
        // holds whenever u1·G is taken for ∞; messages are tried until u1 = e·s⁻¹ has a low byte of 0.
        let verification = try #require(P256MultiBufferTableVerification(library: standIn))
        let signer = P256SigningProbe()
        let table = try #require(signer.publicKey.withUnsafeBytes { P256SignerTable.build(uncompressedPoint: $0) })
        let probe = try #require(FixedKeyVerificationProbe(publicKey: signer.publicKey))
        let c = P256Crafting()
        var rng = SystemRandomNumberGenerator()
        let b = c.random(using: &rng)
        let r = try #require(c.x(of: nil, plus: b, times: signer.publicKey))
        let s = c.multiply(r, c.inverse(b))
        let signature = P256Crafting.der(r: r, s: s)
        var tries = 0
        var digest: [UInt8] = []
        repeat {
            tries += 1
            digest = SHA256.hash(Array("forged \(tries)".utf8))
        } while c.multiply(c.reduce(digest), c.inverse(s))[31] != 0 && tries < 10_000
        #expect(!probe.verifyEVP(digest: digest, signature: signature), "OpenSSL accepts the forgery")
        #expect(
            signature.withUnsafeBytes { sig in
                digest.withUnsafeBytes { verification.set(lane: 4, signature: sig, digest: $0, table: table) }
            })
        #expect(verification.run() == 0, "the lanes accepted a forgery for a library that zeroes Z (\(tries) tries)")
    }
}
