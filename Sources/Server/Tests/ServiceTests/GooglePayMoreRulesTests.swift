// The rest of Google Pay's rules through POST /v1/decrypt: tokens that must decrypt (one of several
// intermediate signatures, a shared secret with a leading zero byte, the second of two merchant keys), an
// ephemeral key off the curve, and root keys documents whose only root is for another protocolVersion or
// expired.
import ApplePayDecryption
import ApplePayService
import ApplePayTestSupport
import Foundation
import XCTest

final class GooglePayMoreRulesTests: XCTestCase {
    func testTheRemainingRulesGiveTheirCodes() async throws {
        let keys = GooglePayKeys()
        let now = try Date(Bundled.now, strategy: .iso8601)
        let second = keys.scratch.write("merchant-2.pem", keys.factory.merchantKeyPEM(1))
        let cases: [(String, Int, String?, Data)] = [
            (
                "one of three intermediate signatures verifies", 200, nil,
                keys.token(now: now) { $0.extraIntermediateSignaturesBefore = 2 }
            ),
            (
                "a shared secret with a leading zero byte", 200, nil,
                keys.token(now: now) { $0.requireLeadingZeroSharedSecret = true }
            ),
            ("sealed to the second merchant key", 200, nil, keys.token(now: now) { $0.merchantKeyIndex = 1 }),
            (
                "an ephemeral key off the curve", 422, "decryptionFailed",
                keys.token(now: now) { $0.ephemeralPointOffCurve = true }
            ),
        ]
        let options = keys.options(now: now) + ["--google-merchant-key", second]
        try await withService(options + ["--insecure-testing-fixed-now", Bundled.now]) { client in
            for (name, status, code, token) in cases {
                let answer = try await client.post("/v1/decrypt", token)
                XCTAssertEqual(answer.status, status, "\(name): \(answer.text)")
                if let code { XCTAssertEqual(answer.code, code, "\(name): \(answer.text)") }
            }
        }
    }

    func testARootOfAnotherProtocolVersionOrExpiredVerifiesNothing() async throws {
        let keys = GooglePayKeys()
        let now = try Date(Bundled.now, strategy: .iso8601)
        let milliseconds = Int64(now.timeIntervalSince1970 * 1000)
        let documents: [(String, [GooglePayTestFactory.RootKeyEntry])] = [
            ("ECv1 only", [.init(protocolVersion: "ECv1", keyExpiration: nil)]),
            (
                "ECv2 expired",
                [
                    .init(protocolVersion: "ECv1", keyExpiration: nil),
                    .init(protocolVersion: "ECv2", keyExpiration: milliseconds - 1),
                ]
            ),
        ]
        let token = keys.token(now: now)
        for (name, entries) in documents {
            let roots = keys.scratch.write(
                "roots-\(entries.count)-\(name.count).json",
                String(decoding: keys.factory.rootKeysDocument(entries), as: UTF8.self))
            let options = [
                "--google-root-keys", roots, "--google-recipient-id", keys.recipientId, "--google-merchant-key",
                keys.scratch.write("merchant.pem", keys.factory.merchantKeyPEM(0)),
                "--insecure-testing-fixed-now", Bundled.now,
            ]
            try await withService(options) { client in
                let answer = try await client.post("/v1/decrypt", token)
                XCTAssertEqual(answer.status, 422, "\(name): \(answer.text)")
                XCTAssertEqual(answer.code, "invalidSignature", "\(name): \(answer.text)")
            }
        }
    }
}
