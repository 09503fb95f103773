// Issue 44, item 3, through the service: --google-protocol-version (ECv1 and ECv2 by default, ECv2SigningOnly
// only when named), and the version and verifying recipient id in its answers.
import ApplePayDecryption
import ApplePayService
import ApplePayTestSupport
import Foundation
import XCTest

final class GooglePayVersionServiceTests: XCTestCase {
    /// By default ECv2SigningOnly is 422 unsupportedVersion on protocolVersion, and an ECv1 payment says its
    /// version and the recipient id that verified.
    func testDefaultRefusesSigningOnlyAndAnswersSayTheVersionAndRecipient() async throws {
        let keys = GooglePayKeys()
        try await withService(keys.options(now: Date())) { client in
            let refused = try await client.post(
                "/v1/decrypt", keys.token(now: Date()) { $0.protocolVersion = .ecV2SigningOnly })
            XCTAssertEqual(refused.status, 422, refused.text)
            XCTAssertEqual(refused.code, "unsupportedVersion", refused.text)
            XCTAssertEqual(refused.json["field"] as? String, "protocolVersion", refused.text)
            let good = try await client.post("/v1/decrypt", keys.token(now: Date()) { $0.protocolVersion = .ecV1 })
            XCTAssertEqual(good.status, 200, good.text)
            let payment = good.json["payment"] as? [String: Any]
            XCTAssertEqual(payment?["protocolVersion"] as? String, "ECv1", good.text)
            XCTAssertEqual(payment?["recipientId"] as? String, keys.recipientId, good.text)
        }
        XCTAssertThrowsError(
            try ServiceOptions.parse([
                "--listen", "127.0.0.1:0", "--google-root-keys", "k.json", "--google-recipient-id", "merchant:1",
                "--google-protocol-version", "ECv3",
            ]))
    }

    /// Naming versions replaces the default: ECv2SigningOnly named alone is accepted and ECv2 refused.
    func testNamedVersionsReplaceTheDefault() async throws {
        let keys = GooglePayKeys()
        try await withService(keys.options(now: Date()) + ["--google-protocol-version", "ECv2SigningOnly"]) { client in
            let signingOnly = try await client.post(
                "/v1/decrypt", keys.token(now: Date()) { $0.protocolVersion = .ecV2SigningOnly })
            XCTAssertEqual(signingOnly.status, 200, signingOnly.text)
            let payment = signingOnly.json["payment"] as? [String: Any]
            XCTAssertEqual(payment?["protocolVersion"] as? String, "ECv2SigningOnly", signingOnly.text)
            let ecv2 = try await client.post("/v1/decrypt", keys.token(now: Date()))
            XCTAssertEqual(ecv2.code, "unsupportedVersion", ecv2.text)
        }
    }
}
