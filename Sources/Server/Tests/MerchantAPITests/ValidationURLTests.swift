// The SSRF guard: which validation URLs reach a gateway, and that every other one is refused before a connection.
@testable import ApplePayMerchantAPI
import XCTest

final class ValidationURLTests: XCTestCase {
    private let path = "/paymentservices/paymentSession"

    private func assertRefused(
        _ urls: [String], environment: GatewayEnvironment = .production, file: StaticString = #filePath,
        line: UInt = #line
    ) {
        for url in urls {
            do throws(MerchantAPIError) {
                let accepted = try MerchantValidationURL(url, environment: environment)
                XCTFail("accepted \(url.debugDescription) as \(accepted.absoluteString)", file: file, line: line)
            } catch {
                XCTAssertEqual(error.code, .invalidValidationURL, url.debugDescription, file: file, line: line)
            }
        }
    }

    func testEveryPublishedHostIsAcceptedOnPort443() throws {
        for environment in GatewayEnvironment.allCases {
            for host in environment.validationHosts {
                for url in [
                    "https://\(host)\(path)", "https://\(host):443\(path)",
                    "https://\(host)/paymentservices/startSession",
                ] {
                    let accepted = try MerchantValidationURL(url, environment: environment)
                    XCTAssertEqual(accepted.host, host)
                }
            }
        }
        XCTAssertEqual(GatewayEnvironment.production.validationHosts.count, 18)
        XCTAssertTrue(GatewayEnvironment.production.validationHosts.allSatisfy { $0.hasSuffix(".apple.com") })
    }

    func testHostIsComparedAfterNormalisingCaseAndOneTrailingDot() throws {
        let accepted = try MerchantValidationURL(
            "HTTPS://APPLE-PAY-GATEWAY.Apple.COM.:443\(path)", environment: .production)
        XCTAssertEqual(
            accepted.absoluteString, "https://apple-pay-gateway.apple.com\(path)",
            "the request goes to the canonical name")
        assertRefused([
            "https://apple-pay-gateway.apple.com..\(path)",
            "https://LOCALHOST.\(path)",
            "https://APPLE-PAY-GATEWAY.APPLE.COM.EXAMPLE.NET.\(path)",
            "https://.apple-pay-gateway.apple.com\(path)",
        ])
    }

    func testLoopbackAndIPLiteralsAreRefused() {
        assertRefused([
            "https://localhost\(path)", "https://localhost.localdomain\(path)",
            "https://127.0.0.1\(path)", "https://127.1\(path)", "https://0\(path)", "https://0.0.0.0\(path)",
            "https://[::1]\(path)", "https://[::ffff:127.0.0.1]\(path)", "https://[::]\(path)",
            "https://2130706433\(path)", "https://017700000001\(path)", "https://0177.0.0.1\(path)",
            "https://0x7f000001\(path)", "https://0x7f.0.0.1\(path)",
            "https://169.254.169.254/latest/meta-data/", "https://17.171.78.7\(path)",  // even Apple's own address
        ])
    }

    func testOtherPortsAreRefused() {
        let host = "apple-pay-gateway.apple.com"
        assertRefused(
            ["80", "8443", "444", "0443", "4430", "443:443", "", "+443", "443 ", "65979"].map {
                "https://\(host):\($0)\(path)"
            })
    }

    func testLookalikeHostsAreRefused() {
        assertRefused([
            "https://apple-pay-gateway.apple.com.example.net\(path)",
            "https://apple-pay-gateway.apple.com-evil.example\(path)",
            "https://apple-pay-gateway.apple.co\(path)",
            "https://apple-pay-gateway-apple.com\(path)",
            "https://xapple-pay-gateway.apple.com\(path)",
            "https://evil.apple-pay-gateway.apple.com\(path)",
            "https://apple-pay-gateway-nc-pod6.apple.com\(path)",
            "https://apple-pay-gateway-pr-pod0.apple.com\(path)",
            "https://evil.example/apple-pay-gateway.apple.com\(path)",
            "https://xn--apple-pay-gateway-9zb.apple.com\(path)",
            "https://apple.com\(path)",
        ])
    }

    func testUserinfoIsRefused() {
        assertRefused([
            "https://apple-pay-gateway.apple.com@evil.example\(path)",
            "https://apple-pay-gateway.apple.com:443@evil.example\(path)",
            "https://evil.example@apple-pay-gateway.apple.com\(path)",
            "https://user:password@apple-pay-gateway.apple.com\(path)",
            "https://@apple-pay-gateway.apple.com\(path)",
            "https://apple-pay-gateway.apple.com%40evil.example\(path)",
            "https://apple-pay-gateway.apple.com\\@evil.example\(path)",
        ])
    }

    func testEncodingTricksAreRefused() {
        assertRefused([
            "https://apple-pay-gateway%2eapple.com\(path)",
            "https://%61pple-pay-gateway.apple.com\(path)",
            "https://apple-pay-gateway.apple.com/paymentservices%2fpaymentSession",
            "https://apple-pay-gateway\u{3002}apple.com\(path)",  // ideographic full stop (IDNA maps it to '.')
            "https://apple-pay-gateway\u{FF0E}apple.com\(path)",  // fullwidth full stop
            "https://\u{FF41}pple-pay-gateway.apple.com\(path)",  // fullwidth 'a'
            "https://apple-pay-gateway.apple.com\u{200B}\(path)",  // zero-width space
            "https://аpple-pay-gateway.apple.com\(path)",  // Cyrillic 'а'
            "https://apple-pay-gateway.apple.com\t\(path)",
            "https://apple-pay-\ngateway.apple.com\(path)",
            " https://apple-pay-gateway.apple.com\(path)",
            "https://apple-pay-gateway.apple.com\(path) ",
            "https://evil.example\\.apple-pay-gateway.apple.com\(path)",
            "https:\\\\apple-pay-gateway.apple.com\(path)",
        ])
    }

    func testOnlyHTTPSIsAccepted() {
        assertRefused([
            "http://apple-pay-gateway.apple.com\(path)", "HTTP://apple-pay-gateway.apple.com\(path)",
            "http://apple-pay-gateway.apple.com:443\(path)", "ftp://apple-pay-gateway.apple.com\(path)",
            "wss://apple-pay-gateway.apple.com\(path)", "https:/apple-pay-gateway.apple.com\(path)",
            "https:apple-pay-gateway.apple.com\(path)", "//apple-pay-gateway.apple.com\(path)",
            "apple-pay-gateway.apple.com\(path)", "https:///apple-pay-gateway.apple.com\(path)", "https://", "",
            "javascript:alert(1)//apple-pay-gateway.apple.com\(path)", "file:///etc/passwd",
        ])
    }

    func testQueriesFragmentsAndOtherPathsAreRefused() {
        let origin = "https://apple-pay-gateway.apple.com"
        assertRefused([
            "\(origin)\(path)?next=https://evil.example", "\(origin)\(path)#@evil.example", "\(origin)#\(path)",
            "\(origin)", "\(origin)/", "\(origin)/paymentservices/registerMerchant",
            "\(origin)/paymentservices/paymentSession/../../admin", "\(origin)/paymentservices/./paymentSession",
            "\(origin)//paymentservices/paymentSession", "\(origin)/PAYMENTSERVICES/paymentSession",
            "\(origin)\(path)/", "\(origin)\(path);x",
            origin + "/" + String(repeating: "a", count: 3000),
        ])
    }

    func testEachEnvironmentAcceptsOnlyItsOwnHosts() {
        assertRefused(
            ["https://apple-pay-gateway-cert.apple.com\(path)", "https://cn-apple-pay-gateway-cert.apple.com\(path)"],
            environment: .production)
        assertRefused(
            ["https://apple-pay-gateway.apple.com\(path)", "https://apple-pay-gateway-nc-pod5.apple.com\(path)"],
            environment: .sandbox)
    }

    /// The guard runs before anything else: against a live, trusted gateway that would answer, no refused
    /// URL (including ones naming that gateway's own address and port) opens even a TCP connection.
    func testRefusedValidationURLsOpenNoConnection() async throws {
        let gateway = try await TestGateway { _ in .answer(status: 200, body: Array(#"{"ok":true}"#.utf8)) }
        let client = try makeTestClient(gateway)
        let attacks = [
            "https://127.0.0.1:\(gateway.port)\(path)", "https://localhost:\(gateway.port)\(path)",
            "https://[::1]:\(gateway.port)\(path)", "https://2130706433:\(gateway.port)\(path)",
            "https://apple-pay-gateway.apple.com:\(gateway.port)\(path)",
            "https://apple-pay-gateway.apple.com@127.0.0.1:\(gateway.port)\(path)",
            "https://apple-pay-gateway.apple.com.example.net\(path)", "http://apple-pay-gateway.apple.com\(path)",
        ]
        for url in attacks {
            do throws(MerchantAPIError) {
                _ = try await client.requestPaymentSession(
                    displayName: "Store", initiativeContext: "shop.example.com", validationURL: url)
                XCTFail("\(url) reached the gateway")
            } catch {
                XCTAssertEqual(error.code, .invalidValidationURL, url)
            }
        }
        XCTAssertEqual(gateway.connectionCount, 0)
        try await client.shutdown()
        await gateway.stop()
    }
}
