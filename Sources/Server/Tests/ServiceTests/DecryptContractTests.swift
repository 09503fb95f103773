// The HTTP contract, in process (HummingbirdTesting drives the application's router): every stable
// code, the accepted forms and the envelope, the body limit, the API key, no 5xx for any token input,
// batch streaming, metrics, logs without secrets.
import ApplePayDecryption
import ApplePayTestSupport
import Foundation
import XCTest

final class DecryptContractTests: XCTestCase {

    func testEveryBundledTokenFormDecryptsWith200() async throws {
        try await withService(Bundled.options) { service in
            for name in Bundled.tokenFiles {
                let result = try await service.post("/v1/decrypt", try Bundled.token(name))
                XCTAssertEqual(result.status, 200, "\(name): \(result.text)")
                XCTAssertNotNil(result.json["transactionId"] as? String, name)
                let payment = result.json["payment"] as? [String: Any]
                XCTAssertNotNil(payment?["applicationPrimaryAccountNumber"] as? String, name)
                XCTAssertEqual(result.headers["content-type"], "application/json")
            }
        }
    }

    func testEveryStableCodeIsA422WithItsCodeInArchiveOrder() async throws {
        try await withService(Bundled.options) { service in
            let lines = try Bundled.archiveLines()
            let expected = try Bundled.archiveExpectations()
            XCTAssertEqual(lines.count, expected.count)
            var seen = Set<String>()
            for (line, expect) in zip(lines, expected) {
                let result = try await service.post("/v1/decrypt", Data(line.utf8))
                if expect == "ok" {
                    XCTAssertEqual(result.status, 200, result.text)
                } else {
                    XCTAssertEqual(result.status, 422, result.text)
                    XCTAssertEqual(result.code, expect, result.text)
                    XCTAssertNotNil(result.json["message"] as? String)
                    XCTAssertTrue(result.json.keys.contains("field"), "field is always present (null when none)")
                }
                seen.insert(result.code ?? "ok")
            }
            // paymentRequestMismatch needs the envelope's payment request: a bundled token that verifies,
            // against an order in another currency (binding runs before the replay claim).
            let first = lines[expected.firstIndex(of: "ok")!]
            let mismatch = try await service.post(
                "/v1/decrypt",
                Data(
                    "{\"paymentToken\": \(first), \"paymentRequest\": \(PaymentRequests.json(currency: "ISK"))}".utf8))
            XCTAssertEqual(mismatch.status, 422, mismatch.text)
            XCTAssertEqual(mismatch.json["field"] as? String, "currencyCode", mismatch.text)
            seen.insert(mismatch.code ?? "ok")
            XCTAssertEqual(
                seen,
                Set(
                    ["ok"]
                        + ApplePayError.Code.allCases.filter { !ApplePayError.Code.googlePayOnly.contains($0) }.map(
                            \.rawValue)),
                "every stable Apple Pay code went over HTTP (the Google Pay-only codes: GooglePayDecryptTests)")
        }
    }

    func testEnvelopeCarriesATokenInAnyForm() async throws {
        let keys = MintedKeys()
        let merchant = keys.pki.makeMerchant(identifier: "merchant.com.example.envelope")
        try await withService(["--merchant", keys.writeMerchant(merchant, as: "m"), "--trust-root", keys.rootPath]) {
            service in
            for wrapping in TokenWrapping.allCases {
                let token = keys.token(for: merchant, wrapping: wrapping)
                let inner: String =
                    wrapping == .base64String
                    ? "\"\(String(decoding: token, as: UTF8.self))\"" : String(decoding: token, as: UTF8.self)
                let result = try await service.post("/v1/decrypt", Data("{\"paymentToken\": \(inner)}".utf8))
                XCTAssertEqual(result.status, 200, "\(wrapping): \(result.text)")
                let direct = try await service.post("/v1/decrypt", keys.token(for: merchant, wrapping: wrapping))
                XCTAssertEqual(direct.status, 200, "\(wrapping) without the envelope: \(direct.text)")
            }
            let twice = try await service.post("/v1/decrypt", Data(#"{"paymentToken": "a", "paymentToken": "b"}"#.utf8))
            XCTAssertEqual(twice.status, 422)
            XCTAssertEqual(twice.code, "malformedToken")
        }
    }

    func testAPaymentRequestInTheEnvelopeBindsTheTokenAndAMismatchClaimsNothing() async throws {
        let keys = MintedKeys()
        let merchant = keys.pki.makeMerchant(identifier: "merchant.com.example.binding")
        try await withService(["--merchant", keys.writeMerchant(merchant, as: "m"), "--trust-root", keys.rootPath]) {
            service in
            let token = String(decoding: keys.token(for: merchant), as: UTF8.self)  // USD 10.00, 3-D Secure
            func post(_ request: String) async throws -> HTTPResult {
                try await service.post(
                    "/v1/decrypt", Data("{\"paymentToken\": \(token), \"paymentRequest\": \(request)}".utf8))
            }
            // Another order's amount, currency or capabilities: a mismatch naming the request member.
            for (request, field) in [
                (PaymentRequests.json(amount: "900.00"), "total.amount"),
                (PaymentRequests.json(currency: "EUR"), "currencyCode"),
                (PaymentRequests.json(capabilities: #"["supportsEMV"]"#), "merchantCapabilities"),
            ] {
                let result = try await post(request)
                XCTAssertEqual(result.status, 422, result.text)
                XCTAssertEqual(result.code, "paymentRequestMismatch", result.text)
                XCTAssertEqual(result.json["field"] as? String, field, result.text)
            }
            // A request that breaks the schema names its member, before anything is decrypted.
            for (request, field) in [
                (PaymentRequests.json(currency: "usd"), "paymentRequest.currencyCode"), ("[]", "paymentRequest"),
                (PaymentRequests.json(amount: "1e3"), "paymentRequest.total.amount"),
                // A misspelt member must not leave the token unbound.
                (
                    PaymentRequests.json() + #", "paymentrequest": \#(PaymentRequests.json(amount: "900.00"))"#,
                    "paymentrequest"
                ),
            ] {
                let result = try await post(request)
                XCTAssertEqual(result.status, 422, result.text)
                XCTAssertEqual(result.code, "malformedToken", result.text)
                XCTAssertEqual(result.json["field"] as? String, field, result.text)
            }
            // None of the refusals claimed the token: with its own order it decrypts, once.
            let bound = try await post(PaymentRequests.json())
            XCTAssertEqual(bound.status, 200, bound.text)
            let again = try await post(PaymentRequests.json())
            XCTAssertEqual(again.code, "replayedTransaction", again.text)
            // The batch endpoint reads the same envelope on each line.
            let other = String(decoding: keys.token(for: merchant), as: UTF8.self)
            let body =
                "{\"paymentToken\": \(other), \"paymentRequest\": \(PaymentRequests.json(amount: "1.00"))}\n"
                + "{\"paymentToken\": \(other), \"paymentRequest\": \(PaymentRequests.json())}\n"
            let batch = try await service.post(
                "/v1/decrypt/batch", Data(body.utf8), headers: ["Content-Type": "application/jsonl"])
            let codes = batch.text.split(separator: "\n").map {
                (try! JSONSerialization.jsonObject(with: Data($0.utf8)) as! [String: Any])["error"] as? String
            }
            XCTAssertEqual(codes, ["paymentRequestMismatch", nil], batch.text)
        }
    }

    func testNoTokenInputGivesA5xx() async throws {
        try await withService(Bundled.options) { service in
            let valid = try Bundled.token("ec-3dsecure.json")
            var bodies: [Data] = [
                Data(), Data("{".utf8), Data("null".utf8), Data("[]".utf8), Data("\"\"".utf8), Data("123".utf8),
                Data(#"{"paymentToken": 1}"#.utf8), Data(#"{"paymentToken": null}"#.utf8),
                Data(#"{"paymentToken": {}}"#.utf8),
                Data(#"{"paymentToken": {"paymentToken": {}}}"#.utf8), Data(String(repeating: "[", count: 20000).utf8),
                Data(String(repeating: "{\"a\":", count: 5000).utf8),
                Data((0..<4096).map { UInt8(truncatingIfNeeded: $0 &* 31) }),
                Data("\u{FEFF}{}".utf8), Data(#"{"data":"\ud800"}"#.utf8), valid.prefix(valid.count / 2),
                Data(#"{"version":"EC_v1","data":1e999999,"signature":"","header":{}}"#.utf8),
            ]
            // Every single-byte truncation point of a real token, sampled.
            for cut in stride(from: 1, to: valid.count, by: max(1, valid.count / 40)) {
                bodies.append(valid.prefix(cut))
            }
            for body in bodies {
                let result = try await service.post("/v1/decrypt", body)
                XCTAssertEqual(result.status, 422, "\(body.prefix(40) as NSData): \(result.text)")
                XCTAssertNotNil(result.code)
            }
            let healthy = try await service.get("/healthz")
            XCTAssertEqual(healthy.status, 200)
        }
    }

    func testBodyOverTheLimitIs413() async throws {
        try await withService(Bundled.options) { service in
            let big = Data(repeating: UInt8(ascii: " "), count: 64 * 1024 + 1)
            let result = try await service.post("/v1/decrypt", big)
            XCTAssertEqual(result.status, 413)
            XCTAssertEqual(result.code, "payloadTooLarge")
            let atLimit = try await service.post("/v1/decrypt", Data(repeating: UInt8(ascii: " "), count: 64 * 1024))
            XCTAssertEqual(atLimit.status, 422, "a body of exactly the limit is read")
        }
        try await withService(Bundled.options + ["--max-body-bytes", "1000"]) { small in
            let token = try await small.post("/v1/decrypt", try Bundled.token("ec-3dsecure.json"))
            XCTAssertEqual(token.status, 413)
        }
    }

    func testAPIKeyIsRequiredWhenConfigured() async throws {
        setenv("TEST_API_KEY", "s3cr3t-key", 1)
        try await withService(Bundled.options + ["--api-key-env", "TEST_API_KEY"]) { service in
            let token = try Bundled.token("ec-3dsecure.json")
            for headers in [
                [:], ["Authorization": "Bearer wrong-key!"], ["Authorization": "Bearer s3cr3t-ke"],
                ["Authorization": "Bearer s3cr3t-key2"], ["Authorization": "s3cr3t-key"],
                ["Authorization": "Basic s3cr3t-key"],
            ] {
                let result = try await service.post("/v1/decrypt", token, headers: headers)
                XCTAssertEqual(result.status, 401, "\(headers)")
                XCTAssertEqual(result.code, "unauthorized")
                let batch = try await service.post("/v1/decrypt/batch", token, headers: headers)
                XCTAssertEqual(batch.status, 401)
            }
            let ok = try await service.post("/v1/decrypt", token, headers: ["Authorization": "Bearer s3cr3t-key"])
            XCTAssertEqual(ok.status, 200, ok.text)
            // Orchestrators probe without the key.
            let health = try await service.get("/healthz")
            XCTAssertEqual(health.status, 200)
            XCTAssertFalse(service.log.text.contains("s3cr3t-key"))
        }
    }

    func testBatchStreamsTheCLILineShapeInOrder() async throws {
        try await withService(Bundled.options) { service in
            let lines = try Bundled.archiveLines()
            let body = Data((lines.joined(separator: "\n") + "\n").utf8)
            let result = try await service.post(
                "/v1/decrypt/batch", body, headers: ["Content-Type": "application/jsonl"])
            XCTAssertEqual(result.status, 200)
            let out = result.text.split(separator: "\n").map {
                try! JSONSerialization.jsonObject(with: Data($0.utf8)) as! [String: Any]
            }
            let expected = try Bundled.archiveExpectations()
            XCTAssertEqual(out.count, expected.count)
            for (i, line) in out.enumerated() {
                XCTAssertEqual(line["index"] as? Int, i)
                XCTAssertEqual(line["source"] as? String, "request:\(i + 1)")
                XCTAssertTrue(line.keys.contains("transactionId"))
                XCTAssertEqual((line["error"] as? String) ?? "ok", expected[i], "line \(i)")
                if expected[i] == "ok" {
                    XCTAssertNotNil((line["payment"] as? [String: Any])?["applicationPrimaryAccountNumber"])
                }
            }
            // A second batch with the same tokens: every token that verified is now a replay.
            let again = try await service.post("/v1/decrypt/batch", body)
            let codes = again.text.split(separator: "\n").map {
                (try! JSONSerialization.jsonObject(with: Data($0.utf8)) as! [String: Any])["error"] as? String
            }
            for (code, expect) in zip(codes, expected) where expect == "ok" {
                XCTAssertEqual(code, "replayedTransaction")
            }
        }
    }

    func testARefusedClaimLeavesNeitherKeyClaimedInTheMemoryStore() async throws {
        let keys = MintedKeys()
        let merchant = keys.pki.makeMerchant(identifier: "merchant.com.example.atomic")
        try await withService(["--merchant", keys.writeMerchant(merchant, as: "m"), "--trust-root", keys.rootPath]) {
            service in
            let transactionId = String(repeating: "5a", count: 32)
            let first = try await service.post("/v1/decrypt", keys.token(for: merchant, transactionId: transactionId))
            XCTAssertEqual(first.status, 200, first.text)
            // Same transactionId, other signed contents: refused on its transactionId alone, and its
            // content key must not be left claimed.
            for _ in 0..<3 {
                let second = try await service.post(
                    "/v1/decrypt", keys.token(for: merchant, transactionId: transactionId))
                XCTAssertEqual(second.code, "replayedTransaction", second.text)
            }
            let metrics = try await service.get("/metrics").text
            XCTAssertTrue(
                metrics.contains("applepay_replay_store_claims 2.0\n"),
                "only the accepted token's two keys are held: \(metrics)")
        }
    }

    func testMetricsCountOutcomesAndCertificateExpiry() async throws {
        try await withService(Bundled.options) { service in
            _ = try await service.post("/v1/decrypt", try Bundled.token("ec-3dsecure.json"))
            _ = try await service.post("/v1/decrypt", try Bundled.token("ec-3dsecure.json"))
            _ = try await service.post("/v1/decrypt", Data("{}".utf8))
            let metrics = try await service.get("/metrics")
            XCTAssertEqual(metrics.status, 200)
            let text = metrics.text
            XCTAssertTrue(text.contains(#"applepay_tokens_total{outcome="ok"} 1"#), text)
            XCTAssertTrue(text.contains(#"applepay_tokens_total{outcome="replayedTransaction"} 1"#))
            XCTAssertTrue(text.contains(#"applepay_tokens_total{outcome="malformedToken"} 1"#))
            XCTAssertTrue(text.contains("applepay_request_duration_seconds_bucket{route=\"/v1/decrypt\""))
            XCTAssertTrue(text.contains("applepay_requests_in_flight"))
            XCTAssertTrue(text.contains("applepay_replay_store_duration_seconds_count 2"))
            XCTAssertTrue(text.contains("applepay_merchant_certificate_expiry_seconds{merchant="))
            let ready = try await service.get("/readyz")
            XCTAssertEqual(ready.status, 200)
            XCTAssertEqual(ready.json["replayStore"] as? String, "memory")
            let contract = try await service.get("/openapi.yaml")
            XCTAssertEqual(contract.status, 200)
            let file = try String(
                contentsOf: Paths.package.appendingPathComponent("ApplePayService/openapi.yaml"), encoding: .utf8)
            XCTAssertEqual(contract.text, file)
        }
    }

    func testOneLogLinePerRequestAndNoSecrets() async throws {
        try await withService(Bundled.options) { service in
            let token = try Bundled.token("ec-3dsecure.json")
            let result = try await service.post("/v1/decrypt", token)
            XCTAssertEqual(result.status, 200)
            _ = try await service.post("/v1/decrypt", Data("{}".utf8))
            let payment = result.json["payment"] as! [String: Any]
            let pan = payment["applicationPrimaryAccountNumber"] as! String
            let cryptogram = (payment["paymentData"] as? [String: Any])?["onlinePaymentCryptogram"] as? String
            let log = service.log.text
            let requestLines = log.split(separator: "\n").filter {
                $0.contains(" request ") || $0.hasSuffix(" request") || $0.contains(": request")
                    || $0.contains("] request")
            }
            XCTAssertEqual(requestLines.count, 2, log)
            XCTAssertTrue(requestLines[0].contains("outcome=ok"), String(requestLines[0]))
            XCTAssertTrue(requestLines[0].contains("latency_ms="))
            XCTAssertTrue(requestLines[0].contains("merchant="))
            XCTAssertTrue(requestLines[1].contains("outcome=malformedToken"))
            XCTAssertFalse(log.contains(pan), "the PAN is in the log")
            if let cryptogram { XCTAssertFalse(log.contains(cryptogram), "the cryptogram is in the log") }
            let data = (try JSONSerialization.jsonObject(with: token) as! [String: Any])["data"] as! String
            XCTAssertFalse(log.contains(String(data.prefix(24))), "token data is in the log")
        }
    }
}

/// Payment requests (the schema's ApplePayPaymentRequest) for the binding tests.
enum PaymentRequests {
    static func json(amount: String = "10.00", currency: String = "USD", capabilities: String = #"["supports3DS"]"#)
        -> String
    {
        #"{"countryCode":"US","currencyCode":"\#(currency)","supportedNetworks":["visa","masterCard"],"#
            + #""merchantCapabilities":\#(capabilities),"total":{"label":"Shop","amount":"\#(amount)"}}"#
    }
}
