// POST /v1/merchant-session's contract, in process (HummingbirdTesting drives the application's router)
// against the real HTTPS test gateway (TestGateway, a Python process requiring the merchant identity):
// refusals that send nothing, the gateway's errors and timeouts, the in-flight limit, the unconfigured 404.
import Foundation
import XCTest

final class MerchantSessionContractTests: XCTestCase {
    static func session(_ service: ServiceClient, _ members: [String: String], headers: [String: String] = [:])
        async throws -> HTTPResult
    {
        try await service.post(
            "/v1/merchant-session", JSONSerialization.data(withJSONObject: members), headers: headers)
    }

    func testRefusedValidationURLsAndMembersAre422AndNothingIsSent() async throws {
        let gateway = try TestGateway(.answer(status: 200, body: Data("{}".utf8)))
        setenv("APPLEPAY_TEST_KEY", "k1", 1)
        try await withService(
            gateway.serviceOptions() + ["--api-key-env", "APPLEPAY_TEST_KEY", "--merchant-allow-display-name"]
        ) { service in
            let key = ["Authorization": "Bearer k1"]
            let path = "/paymentservices/paymentSession"
            let port = gateway.port
            // The loopback ones point at the live test gateway itself: a proxy that followed them would reach it.
            for url in [
                "https://localhost:\(port)\(path)", "https://127.0.0.1:\(port)\(path)", "https://[::1]:\(port)\(path)",
                "https://127.0.0.1\(path)", "https://2130706433\(path)", "https://localhost\(path)",
                "https://apple-pay-gateway.apple.com:\(port)\(path)", "https://apple-pay-gateway.apple.com:8443\(path)",
                "http://apple-pay-gateway.apple.com\(path)",
                "https://apple-pay-gateway.apple.com@127.0.0.1:\(port)\(path)",
                "https://user:pass@apple-pay-gateway.apple.com\(path)",
                "https://apple-pay-gateway.apple.com.example.net\(path)",
                "https://evil-apple-pay-gateway.apple.com\(path)",
                "https://apple-pay-gateway-cert.apple.com\(path)",  // sandbox host, production service
                "https://apple-pay-gateway.apple.com/admin",
                "https://apple-pay-gateway.apple.com\(path)?next=http://127.0.0.1",
                "https://apple-pay-gateway.apple.com%2f@127.0.0.1\(path)", "",
            ] {
                let result = try await Self.session(
                    service, ["validationURL": url, "initiativeContext": "shop.example.com"], headers: key)
                XCTAssertEqual(result.status, 422, "\(url): \(result.text)")
                XCTAssertEqual(result.headers["cache-control"], "no-store", url)
                XCTAssertEqual(result.code, "invalidValidationURL", url)
                XCTAssertEqual(result.json["field"] as? String, "validationURL", url)
            }
            for (members, field) in [
                (
                    ["validationURL": MerchantSessionTests.appleURL, "initiativeContext": "other.example.com"],
                    "initiativeContext"
                ),
                (
                    ["validationURL": MerchantSessionTests.appleURL, "initiativeContext": "127.0.0.1"],
                    "initiativeContext"
                ),
                (
                    [
                        "validationURL": MerchantSessionTests.appleURL, "initiativeContext": "shop.example.com",
                        "displayName": String(repeating: "x", count: 65),
                    ], "displayName"
                ),
                (
                    [
                        "validationURL": MerchantSessionTests.appleURL, "initiativeContext": "shop.example.com",
                        "displayName": "line\nbreak",
                    ], "displayName"
                ),
                (
                    [
                        "validationURL": MerchantSessionTests.appleURL, "initiativeContext": "shop.example.com",
                        "displayName": "Store\u{202E}erots",
                    ], "displayName"
                ),
                (
                    [
                        "validationURL": MerchantSessionTests.appleURL, "initiativeContext": "shop.example.com",
                        "displayName": "Sto\u{200B}re",
                    ], "displayName"
                ),
                (
                    [
                        "validationURL": MerchantSessionTests.appleURL, "initiativeContext": "shop.example.com",
                        "displayName": "Store\u{2028}Line",
                    ], "displayName"
                ),
                (
                    [
                        "validationURL": MerchantSessionTests.appleURL, "initiativeContext": "shop.example.com",
                        "merchantIdentifier": "merchant.com.other",
                    ], "merchantIdentifier"
                ),
                (["initiativeContext": "shop.example.com"], "validationURL"),
                (["validationURL": MerchantSessionTests.appleURL], "initiativeContext"),
            ] {
                let result = try await Self.session(service, members, headers: key)
                XCTAssertEqual(result.status, 422, "\(members): \(result.text)")
                XCTAssertEqual(result.code, "invalidRequest", "\(members)")
                XCTAssertEqual(result.json["field"] as? String, field, "\(members)")
            }
            for body in [
                "not json", "[]", #"{"validationURL": 1, "initiativeContext": "shop.example.com"}"#,
                #"{"validationURL": "\#(MerchantSessionTests.appleURL)", "validationURL": "\#(MerchantSessionTests.appleURL)", "initiativeContext": "shop.example.com"}"#,
            ] {
                let result = try await service.post("/v1/merchant-session", Data(body.utf8), headers: key)
                XCTAssertEqual(result.status, 422, "\(body): \(result.text)")
                XCTAssertEqual(result.code, "invalidRequest", body)
            }
            let big = try await service.post("/v1/merchant-session", Data(repeating: 0x20, count: 9000), headers: key)
            XCTAssertEqual(big.status, 413, big.text)
            let anonymous = try await Self.session(
                service, ["validationURL": MerchantSessionTests.appleURL, "initiativeContext": "shop.example.com"])
            XCTAssertEqual(anonymous.status, 401, "the API key rule of the other /v1 routes applies")

            XCTAssertTrue(gateway.events.isEmpty, "no connection reached the gateway: \(gateway.events)")
            let metrics = try await service.get("/metrics").text
            XCTAssertTrue(
                metrics.contains(#"applepay_merchant_sessions_total{outcome="invalidValidationURL"} 18"#), metrics)
        }
    }

    func testGatewayErrorIs502CarryingItsStatusCodeAndStatusMessage() async throws {
        // A bidi override, a zero-width space and a line separator: never passed on as they are.
        let answer = Data(
            #"{"statusCode":"400","statusMessage":"Payment Services Exception merchantId=ABC unregistered domain\u202Egnp.exe\u200B\u2028Injected"}"#
                .utf8)
        let gateway = try TestGateway(.answer(status: 400, body: answer))
        try await withService(gateway.serviceOptions()) { service in
            let result = try await Self.session(
                service, ["validationURL": MerchantSessionTests.appleURL, "initiativeContext": "shop.example.com"])
            XCTAssertEqual(result.status, 502, result.text)
            XCTAssertEqual(result.code, "gatewayError")
            XCTAssertEqual(result.json["gatewayStatus"] as? Int, 400)
            XCTAssertEqual(result.json["statusCode"] as? String, "400")
            XCTAssertEqual(
                result.json["statusMessage"] as? String,
                "Payment Services Exception merchantId=ABC unregistered domain\u{FFFD}gnp.exe\u{FFFD}\u{FFFD}Injected")
            XCTAssertEqual(result.headers["cache-control"], "no-store")
            XCTAssertEqual(gateway.requests.count, 1)
        }
    }

    func testGatewayThatNeverAnswersIs504WithinTheMerchantTimeout() async throws {
        let gateway = try TestGateway(.hang)
        try await withService(gateway.serviceOptions(timeout: 2)) { service in
            let start = Date()
            let result = try await Self.session(
                service, ["validationURL": MerchantSessionTests.appleURL, "initiativeContext": "shop.example.com"])
            let elapsed = Date().timeIntervalSince(start)
            XCTAssertEqual(result.status, 504, result.text)
            XCTAssertEqual(result.code, "timeout")
            XCTAssertGreaterThan(elapsed, 1.5, "the gateway was given its time")
            XCTAssertLessThan(elapsed, 6, "answered within the --merchant-timeout of 2 s (took \(elapsed) s)")
            XCTAssertEqual(gateway.requests.count, 1, "the request reached the gateway, which held it")
        }
    }

    func testIdentityTheGatewayDoesNotTrustIs502WithAClearError() async throws {
        let gateway = try TestGateway(.answer(status: 200, body: Data("{}".utf8)))
        try await withService(gateway.serviceOptions(identity: GatewayPKI.shared.stranger)) { service in
            let result = try await Self.session(
                service, ["validationURL": MerchantSessionTests.appleURL, "initiativeContext": "shop.example.com"])
            XCTAssertEqual(result.status, 502, result.text)
            XCTAssertTrue(["tlsFailure", "connectionFailed"].contains(result.code ?? ""), result.text)
            XCTAssertTrue(
                (result.json["message"] as? String ?? "").contains("merchant identity certificate"), result.text)
            for detail in ["127.0.0.1", "\(gateway.port)", "SSL", "ALERT", "Error"] {
                XCTAssertFalse(
                    result.text.contains(detail), "transport detail (\(detail)) stays in the log: \(result.text)")
            }
            XCTAssertTrue(gateway.requests.isEmpty, "the gateway served nothing to a stranger")
            XCTAssertTrue(gateway.events.contains { $0["event"] as? String == "handshakeFailed" }, "\(gateway.events)")
        }
    }

    func testUnconfiguredEndpointIs404NotConfigured() async throws {
        try await withService(Bundled.options) { service in
            let result = try await Self.session(
                service, ["validationURL": MerchantSessionTests.appleURL, "initiativeContext": "shop.example.com"])
            XCTAssertEqual(result.status, 404, result.text)
            XCTAssertEqual(result.code, "merchantSessionNotConfigured")
            let again = try await service.get("/healthz")
            XCTAssertEqual(again.status, 200)
        }
    }

    func testUpperCaseAndTrailingDotHostsAreAcceptedAndARequestDisplayNameNeedsTheOption() async throws {
        let answer = Data(#"{"merchantSessionIdentifier":"S","signature":"X"}"#.utf8)
        let gateway = try TestGateway(.answer(status: 200, body: answer))
        try await withService(gateway.serviceOptions()) { service in
            for url in [
                "https://APPLE-PAY-GATEWAY.Apple.COM/paymentservices/paymentSession",
                "https://apple-pay-gateway.apple.com./paymentservices/paymentSession",
            ] {
                let result = try await Self.session(
                    service, ["validationURL": url, "initiativeContext": "shop.example.com"])
                XCTAssertEqual(result.status, 200, "\(url): \(result.text)")
                XCTAssertEqual(result.body, answer, url)
            }
            XCTAssertEqual(gateway.requests.count, 2, "both reached the (test) gateway: \(gateway.events)")
            // Without --merchant-allow-display-name the configured store name is the only one shown.
            let named = try await Self.session(
                service,
                [
                    "validationURL": MerchantSessionTests.appleURL, "initiativeContext": "shop.example.com",
                    "displayName": "Other Store",
                ])
            XCTAssertEqual(named.status, 422, named.text)
            XCTAssertEqual(named.code, "invalidRequest")
            XCTAssertEqual(named.json["field"] as? String, "displayName")
            XCTAssertEqual(gateway.requests.count, 2, "the refused request was not sent")
        }
    }

    func testRequestsOverTheInFlightLimitAre503BusyAtOnceAndNotSent() async throws {
        let gateway = try TestGateway(.hang)
        try await withService(gateway.serviceOptions(timeout: 6) + ["--merchant-max-in-flight", "2"]) { service in
            let members = ["validationURL": MerchantSessionTests.appleURL, "initiativeContext": "shop.example.com"]
            let body = try JSONSerialization.data(withJSONObject: members)
            let held = (0..<2).map { _ in Task { try await service.post("/v1/merchant-session", body) } }
            // Both held requests have reached the gateway (which holds them): the limit is full.
            let deadline = Date().addingTimeInterval(20)
            while gateway.requests.count < 2, Date() < deadline { try await Task.sleep(for: .milliseconds(50)) }
            XCTAssertEqual(gateway.requests.count, 2, "\(gateway.events)")
            let start = Date()
            let busy = try await Self.session(service, members)
            XCTAssertEqual(busy.status, 503, busy.text)
            XCTAssertEqual(busy.code, "merchantSessionBusy")
            XCTAssertEqual(busy.headers["retry-after"], "1")
            XCTAssertLessThan(Date().timeIntervalSince(start), 3, "answered at once, not queued behind the held calls")
            for task in held {
                let result = try await task.value
                XCTAssertEqual(result.status, 504, result.text)
            }
            XCTAssertEqual(gateway.requests.count, 2, "the refused request was never sent")
            // The held calls gave their places back.
            let after = try await Self.session(service, members)
            XCTAssertEqual(after.status, 504, after.text)
            XCTAssertEqual(gateway.requests.count, 3)
            let metrics = try await service.get("/metrics").text
            XCTAssertTrue(
                metrics.contains(#"applepay_merchant_sessions_total{outcome="merchantSessionBusy"} 1"#), metrics)
        }
    }
}
