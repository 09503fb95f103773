// Issue 44, item 7: the service against its contract, as schemathesis --checks all holds it: 405 with Allow for
// a method the contract does not declare on its path, 400 for a batch without a body.
import ApplePayDecryption
import ApplePayService
import ApplePayTestSupport
import Foundation
import HTTPTypes
import XCTest

final class ContractMethodTests: XCTestCase {
    /// The contract's methods: any other method on a declared path is 405 with Allow, not 404.
    func testAnUndeclaredMethodIs405WithAllow() async throws {
        try await withService(Bundled.options) { client in
            for (method, path, allow) in [
                (HTTPRequestMethod.get, "/v1/decrypt", "POST"), (.put, "/v1/decrypt/batch", "POST"),
                (.delete, "/v1/merchant-session", "POST"), (.post, "/healthz", "GET"), (.patch, "/readyz", "GET"),
                (.post, "/metrics", "GET"), (.put, "/openapi.yaml", "GET"),
            ] {
                let answer = try await client.request(method.value, path)
                XCTAssertEqual(answer.status, 405, "\(method) \(path): \(answer.text)")
                XCTAssertEqual(answer.headers["allow"], allow, "\(method) \(path)")
                XCTAssertEqual(answer.code, "methodNotAllowed", answer.text)
            }
            let unknown = try await client.get("/v2/nothing")
            XCTAssertEqual(unknown.status, 404, unknown.text)
        }
    }

    /// POST /v1/decrypt/batch without a body is 400 (the contract requires one), not an empty 200.
    func testABatchWithoutABodyIs400() async throws {
        try await withService(Bundled.options) { client in
            let answer = try await client.request(
                .post, "/v1/decrypt/batch", headers: ["Content-Type": "application/jsonl"])
            XCTAssertEqual(answer.status, 400, answer.text)
            XCTAssertEqual(answer.code, "missingBody", answer.text)
            let empty = try await client.post(
                "/v1/decrypt/batch", Data(), headers: ["Content-Type": "application/jsonl"])
            XCTAssertEqual(empty.status, 400, empty.text)
        }
    }
}

/// The methods the 405 test sends.
enum HTTPRequestMethod {
    case get, put, post, delete, patch

    var value: HTTPRequest.Method {
        switch self {
        case .get: .get
        case .put: .put
        case .post: .post
        case .delete: .delete
        case .patch: .patch
        }
    }
}
