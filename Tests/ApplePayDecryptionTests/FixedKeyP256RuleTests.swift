// The rules for the engine's own P-256 floor: fixed-key ECDSA verification agrees with Wycheproof
// and with EVP_PKEY_verify, strict DER for (r, s), and ECDH on EC_POINTs agrees with Wycheproof and EVP.
//
// The differential test runs 10^5 valid and 10^5 mutated signatures by default. For 10^7 of each:
//   APPLEPAY_DIFFERENTIAL_SIGNATURES=10000000 swift test -c release --filter FixedKeyP256RuleTests/fixedKeyVerifierAgreesWithEVP
import ApplePayTestSupport
import Foundation
import Synchronization
import Testing

private enum Wycheproof {
    static let directory = SharedVectors.wycheproofFolder

    static func load(_ name: String) throws -> [String: Any] {
        let data = try Data(contentsOf: directory.appendingPathComponent(name))
        return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    static func groups(_ file: [String: Any]) throws -> [[String: Any]] {
        try #require(file["testGroups"] as? [[String: Any]])
    }
    static func tests(_ group: [String: Any]) throws -> [[String: Any]] {
        try #require(group["tests"] as? [[String: Any]])
    }
}

private func hex(_ text: String) -> [UInt8] {
    var out: [UInt8] = []
    var index = text.startIndex
    while index < text.endIndex {
        let next = text.index(index, offsetBy: 2)
        out.append(UInt8(text[index..<next], radix: 16)!)
        index = next
    }
    return out
}

@Suite("Fixed-key P-256 verification and EC_POINT ECDH")
struct FixedKeyP256RuleTests {
    @Test(
        "Wycheproof ECDSA P-256/SHA-256: every valid signature is accepted and every invalid one rejected by the fixed-key verifier (one table per group key), in each of its variants",
        SharedVectors.wycheproof
    )
    func wycheproofECDSAThroughFixedKeyVerifier() throws {
        let file = try Wycheproof.load("ecdsa_secp256r1_sha256_test.json")
        var counts: [String: Int] = [:]
        for group in try Wycheproof.groups(file) {
            let key = try #require((group["publicKey"] as? [String: Any])?["uncompressed"] as? String)
            let probe = try #require(FixedKeyVerificationProbe(publicKey: hex(key)), "no table for group key \(key)")
            for test in try Wycheproof.tests(group) {
                let id = test["tcId"] as? Int ?? -1
                let result = try #require(test["result"] as? String)
                let message = try #require(test["msg"] as? String)
                let digest = FixedKeyVerificationProbe.sha256(hex(message))
                let signature = hex(try #require(test["sig"] as? String))
                let accepted = probe.verifyFixedKey(digest: digest, signature: signature)
                for (comparison, inversion) in [
                    (FixedKeyVerificationProbe.Comparison.affine, FixedKeyVerificationProbe.Inversion.openSSL),
                    (.affine, .limbs), (.jacobian, .openSSL),
                ] {
                    #expect(
                        accepted
                            == probe.verifyFixedKey(
                                digest: digest, signature: signature, comparison: comparison, inversion: inversion),
                        "tcId \(id): the \(comparison)/\(inversion) variant disagrees with the engine's")
                }
                counts[result, default: 0] += 1
                switch result {
                case "valid": #expect(accepted, "tcId \(id) (\(test["comment"] ?? "")) is valid but was rejected")
                case "invalid": #expect(!accepted, "tcId \(id) (\(test["comment"] ?? "")) is invalid but was accepted")
                default: Issue.record("tcId \(id): result \(result) is not documented here")
                }
                // The reference agrees on every case, whatever the verdict.
                #expect(
                    accepted == probe.verifyEVP(digest: digest, signature: signature),
                    "tcId \(id): fixed-key and EVP disagree")
            }
        }
        // This file has no `acceptable` cases (a new version with some must be documented above).
        #expect(counts == ["valid": 174, "invalid": 310])
    }

    @Test(
        "Wycheproof ECDH P-256 (uncompressed points): the shared secret equals the expected one, invalid points are rejected, compressed points are refused",
        SharedVectors.wycheproof
    )
    func wycheproofECDHThroughPointAgreement() throws {
        let file = try Wycheproof.load("ecdh_secp256r1_ecpoint_test.json")
        var counts: [String: Int] = [:]
        for group in try Wycheproof.groups(file) {
            for test in try Wycheproof.tests(group) {
                let id = test["tcId"] as? Int ?? -1
                let result = try #require(test["result"] as? String)
                let privateKey = hex(try #require(test["private"] as? String))
                let probe = try #require(ECDHProbe(privateKey: privateKey), "tcId \(id): private key refused")
                let peer = hex(try #require(test["public"] as? String))
                let shared = probe.sharedSecret(peerPoint: peer)
                counts[result, default: 0] += 1
                switch result {
                case "valid":
                    let expected = try #require(test["shared"] as? String)
                    #expect(shared == hex(expected), "tcId \(id) (\(test["comment"] ?? ""))")
                    #expect(shared == probe.sharedSecretEVP(peerPoint: peer), "tcId \(id): EC_POINT and EVP disagree")
                case "invalid":
                    #expect(shared == nil, "tcId \(id) (\(test["comment"] ?? "")) is invalid but gave a secret")
                case "acceptable":
                    // The one acceptable case is a compressed point; an ephemeral key inside an Apple
                    // Pay token is always uncompressed, so the engine refuses compressed points.
                    #expect(
                        (test["flags"] as? [String])?.contains("CompressedPoint") == true,
                        "tcId \(id): acceptable for another reason")
                    #expect(shared == nil, "tcId \(id): compressed point accepted")
                default: Issue.record("tcId \(id): result \(result)")
                }
            }
        }
        #expect(counts == ["valid": 330, "invalid": 24, "acceptable": 1])
    }

    @Test(
        "a signature must be strict DER with 0 < r, s < n: BER lengths, padding, negative or zero values, r or s ≥ n and trailing bytes are rejected"
    )
    func signatureEncodingIsStrictDER() throws {
        let signer = P256SigningProbe()
        let probe = try #require(FixedKeyVerificationProbe(publicKey: signer.publicKey))
        let digest = FixedKeyVerificationProbe.sha256(Array("strict DER".utf8))
        // A signature whose r and s are each a 32-byte INTEGER (top bit clear, top byte not zero; with a
        // 33-byte one the padding byte is required). 70 bytes alone is not enough: a 31-byte r beside
        // a 33-byte s is 70 bytes too (it happened once in CI).
        var signature = signer.sign(digest: digest)
        while signature.count != 70 || signature[3] != 32 { signature = signer.sign(digest: digest) }
        #expect(probe.verifyFixedKey(digest: digest, signature: signature))
        let r = Array(signature[4..<36]), s = Array(signature[38..<70])
        func der(_ r: [UInt8], _ s: [UInt8]) -> [UInt8] {
            let body = [0x02, UInt8(r.count)] + r + [0x02, UInt8(s.count)] + s
            return [0x30, UInt8(body.count)] + body
        }
        #expect(der(r, s) == signature)
        let order = hex("ffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551")
        let variants: [String: [UInt8]] = [
            "long-form sequence length": [0x30, 0x81, 68] + signature[2...],
            "long-form integer length": [0x30, 69, 0x02, 0x81, 32] + r + [0x02, 32] + s,
            "r padded with a zero byte": der([0] + r, s),
            "s padded with a zero byte": der(r, [0] + s),
            "negative r": der([r[0] | 0x80] + r.dropFirst(), s),
            "zero r": der([0], s),
            "zero s": der(r, [0]),
            "r = n": der([0] + order, s),
            "s = n": der(r, [0] + order),
            "trailing byte": signature + [0],
            "indefinite length": [0x30, 0x80] + signature[2...] + [0, 0],
            "empty": [],
        ]
        for (rule, variant) in variants.sorted(by: { $0.key < $1.key }) {
            #expect(!probe.verifyFixedKey(digest: digest, signature: variant), "accepted: \(rule)")
            #expect(!probe.verifyEVP(digest: digest, signature: variant), "EVP accepted: \(rule)")
        }
    }

    @Test(
        "the fixed-key verifier agrees with EVP_PKEY_verify on random keys, digests and signatures, valid and mutated")
    func fixedKeyVerifierAgreesWithEVP() throws {
        let environment = ProcessInfo.processInfo.environment["APPLEPAY_DIFFERENTIAL_SIGNATURES"]
        let perKind = environment.flatMap(Int.init) ?? 100_000
        // Few keys, many signatures each (a table costs ~0.3 G instructions, a case ~0.1 ms for both
        // verifiers), the keys on all cores at once.
        let keys = 4
        struct Tally: Sendable { var count = 0, validRejected = 0, disagreements = 0, mutatedAccepted = 0 }
        let tallies = Mutex([Tally](repeating: Tally(), count: keys))
        DispatchQueue.concurrentPerform(iterations: keys) { k in
            var generator = SystemRandomNumberGenerator()
            let signer = P256SigningProbe()
            guard let fixed = FixedKeyVerificationProbe(publicKey: signer.publicKey) else { return }
            // Odd keys run the other variants (affine comparison, BN_mod_inverse) as well.
            let variant: (FixedKeyVerificationProbe.Comparison, FixedKeyVerificationProbe.Inversion)? =
                k % 2 == 1 ? (.affine, .openSSL) : nil
            var tally = Tally()
            tally.count = perKind / keys + (k < perKind % keys ? 1 : 0)
            for _ in 0..<tally.count {
                var digest = (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }
                var signature = signer.sign(digest: digest)
                if !fixed.verifyFixedKey(digest: digest, signature: signature)
                    || !fixed.verifyEVP(digest: digest, signature: signature)
                {
                    tally.validRejected += 1
                }
                // One mutation of the same case: a bit of the digest or the signature, a byte
                // dropped or added, or s replaced by n − s (still valid: ECDSA is malleable).
                switch UInt8.random(in: 0...4, using: &generator) {
                case 0:
                    digest[Int.random(in: 0..<32, using: &generator)] ^= 1 << UInt8.random(in: 0...7, using: &generator)
                case 1:
                    signature[Int.random(in: 0..<signature.count, using: &generator)] ^=
                        1 << UInt8.random(in: 0...7, using: &generator)
                case 2: signature.remove(at: Int.random(in: 0..<signature.count, using: &generator))
                case 3:
                    signature.insert(
                        UInt8.random(in: 0...255, using: &generator),
                        at: Int.random(in: 0...signature.count, using: &generator))
                default: signature = Self.negatedS(signature)
                }
                let accepted = fixed.verifyFixedKey(digest: digest, signature: signature)
                if accepted != fixed.verifyEVP(digest: digest, signature: signature) { tally.disagreements += 1 }
                if let (comparison, inversion) = variant,
                    accepted
                        != fixed.verifyFixedKey(
                            digest: digest, signature: signature, comparison: comparison, inversion: inversion)
                {
                    tally.disagreements += 1
                }
                if accepted { tally.mutatedAccepted += 1 }
            }
            tallies.withLock { $0[k] = tally }
        }
        let all = tallies.withLock { $0 }
        for (k, tally) in all.enumerated() {
            #expect(tally.count > 0, "key \(k) did not run (no table or no EVP key)")
            #expect(
                tally.validRejected == 0, "key \(k): \(tally.validRejected) of \(tally.count) valid signatures rejected"
            )
            #expect(
                tally.disagreements == 0,
                "key \(k): \(tally.disagreements) of \(tally.count) mutated signatures judged differently")
        }
        #expect(all.map(\.count).reduce(0, +) == perKind)
        // The (r, n − s) variants are about a fifth of the mutations and must verify.
        #expect(all.map(\.mutatedAccepted).reduce(0, +) > perKind / 10)
    }

    /// (r, s) → (r, n − s), re-encoded in DER.
    private static func negatedS(_ signature: [UInt8]) -> [UInt8] {
        let order = hex("ffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551")
        let rLength = Int(signature[3])
        let r = Array(signature[4..<4 + rLength])
        let sField = Array(signature[(6 + rLength)...])
        var s = [UInt8](repeating: 0, count: 32 - min(32, sField.count)) + sField.suffix(32)
        // n − s, byte by byte from the end.
        var borrow = 0
        for i in (0..<32).reversed() {
            let difference = Int(order[i]) - Int(s[i]) - borrow
            s[i] = UInt8((difference + 256) % 256)
            borrow = difference < 0 ? 1 : 0
        }
        while s.count > 1 && s[0] == 0 && s[1] & 0x80 == 0 { s.removeFirst() }
        if s[0] & 0x80 != 0 { s.insert(0, at: 0) }
        let body = [0x02, UInt8(r.count)] + r + [0x02, UInt8(s.count)] + s
        return [0x30, UInt8(body.count)] + body
    }
}
