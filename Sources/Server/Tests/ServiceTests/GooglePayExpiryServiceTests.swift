// Issue 44, item 2, through the service: a Google Pay message without messageExpiration is refused, since the
// service keeps its replay claims for a bounded time.
import ApplePayDecryption
import ApplePayService
import ApplePayTestSupport
import Foundation
import HTTPTypes
import XCTest

final class GooglePayExpiryServiceTests: XCTestCase {
    /// A message without messageExpiration would verify at any time; the service keeps its claim only
    /// for the store's retention, so it refuses it (invalidPayload on messageExpiration) on both routes,
    /// and claims nothing.
    func testAGooglePayMessageWithoutExpirationIsRefused() async throws {
        let keys = GooglePayKeys()
        let now = Date()
        let token = keys.token(now: now) {
            $0.protocolVersion = .ecV1
            $0.payload = Array(
                #"{"messageId":"no-expiry","paymentMethod":"CARD","paymentMethodDetails":{"pan":"4111111111111111","expirationMonth":12,"expirationYear":2030,"authMethod":"PAN_ONLY"}}"#
                    .utf8)
        }
        try await withService(keys.options(now: now)) { client in
            let answer = try await client.post("/v1/decrypt", token)
            XCTAssertEqual(answer.status, 422, answer.text)
            XCTAssertEqual(answer.code, "invalidPayload", answer.text)
            XCTAssertEqual(answer.json["field"] as? String, "messageExpiration", answer.text)
            let batch = try await client.post(
                "/v1/decrypt/batch", token + Data("\n".utf8), headers: ["Content-Type": "application/jsonl"])
            XCTAssertEqual(batch.status, 200, batch.text)
            XCTAssertTrue(batch.text.contains("\"field\":\"messageExpiration\""), batch.text)
            // An ECv1 message with one is a payment.
            let dated = try await client.post("/v1/decrypt", keys.token(now: now) { $0.protocolVersion = .ecV1 })
            XCTAssertEqual(dated.status, 200, dated.text)
        }
    }
}
