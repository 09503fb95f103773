// The four operations against a real HTTPS gateway on loopback that demands a client certificate.
@testable import ApplePayMerchantAPI
import XCTest

final class GatewayTests: XCTestCase {
    /// Odd spacing, escapes, key order and a large integer: any decode/re-encode would change a byte.
    static let sessionBytes = Array(
        """
        {"epochTimestamp":1763812345678, "expiresAt" :1763815945678,"merchantSessionIdentifier":"SSH7C1A2B3\\u00e9\\/x",
          "nonce":"9b3f0c1d","merchantIdentifier":"4A7E2C","domainName":"shop.example.com","displayName":"Caf\u{e9} \\"Store\\"",
        "signature":"308006092a864886f70d010702a0803080020101310f300d06096086480165030402010500","operationalAnalyticsIdentifier":"Store:4A7E2C","retries":0,"pspId":"4A7E2C","big":12345678901234567890123}

        """.utf8)

    func testSessionJSONPassesThroughByteForByte() async throws {
        let gateway = try await TestGateway { _ in .answer(status: 200, body: Self.sessionBytes) }
        let client = try makeTestClient(gateway)
        let session = try await client.requestPaymentSession(
            displayName: "Café Store", initiativeContext: "shop.example.com")
        XCTAssertEqual(session.json, Self.sessionBytes)

        let request = try XCTUnwrap(gateway.requests.first)
        XCTAssertEqual(request.method, "POST")
        XCTAssertEqual(request.uri, sessionPath)
        XCTAssertEqual(request.header("Content-Type"), "application/json")
        XCTAssertEqual(request.json["merchantIdentifier"] as? String, "merchant.com.example.test")
        XCTAssertEqual(request.json["displayName"] as? String, "Café Store")
        XCTAssertEqual(request.json["initiative"] as? String, "web")
        XCTAssertEqual(request.json["initiativeContext"] as? String, "shop.example.com")
        XCTAssertEqual(request.json.count, 4)
        try await client.shutdown()
        await gateway.stop()
    }

    func testAcceptedValidationURLKeepsItsPath() async throws {
        let gateway = try await TestGateway { _ in .answer(status: 200, body: Self.sessionBytes) }
        let client = try makeTestClient(gateway)
        _ = try await client.requestPaymentSession(
            displayName: "Store", initiativeContext: "shop.example.com",
            validationURL: "https://apple-pay-gateway-nc-pod3.apple.com/paymentservices/startSession")
        XCTAssertEqual(gateway.requests.map(\.uri), ["/paymentservices/startSession"])
        try await client.shutdown()
        await gateway.stop()
    }

    func testMissingClientCertificateFailsWithATLSError() async throws {
        let gateway = try await TestGateway { _ in .answer(status: 200, body: Self.sessionBytes) }
        let client = try makeTestClient(gateway, withoutCertificate: true)
        do throws(MerchantAPIError) {
            _ = try await client.requestPaymentSession(displayName: "Store", initiativeContext: "shop.example.com")
            XCTFail("the gateway answered a client without a certificate")
        } catch {
            XCTAssertEqual(error.code, .tlsFailure, error.message)
            XCTAssertTrue(error.message.contains("CERTIFICATE_REQUIRED"), error.message)
            XCTAssertTrue(error.message.contains("refused the merchant identity certificate"), error.message)
        }
        XCTAssertTrue(gateway.requests.isEmpty)
        try await client.shutdown()
        await gateway.stop()
    }

    func testClientCertificateFromAnotherCAFailsWithATLSError() async throws {
        let gateway = try await TestGateway { _ in .answer(status: 200, body: Self.sessionBytes) }
        let pki = TestPKI.shared
        let rogue = try MerchantTLSIdentity.pem(
            certificatePath: pki.path("rogue-client.pem"), keyPath: pki.path("rogue-client.key"))
        let client = try makeTestClient(gateway, identity: rogue)
        do throws(MerchantAPIError) {
            _ = try await client.requestPaymentSession(displayName: "Store", initiativeContext: "shop.example.com")
            XCTFail("the gateway answered a client with an untrusted certificate")
        } catch {
            XCTAssertEqual(error.code, .tlsFailure, error.message)
            XCTAssertTrue(error.message.contains("refused the merchant identity certificate"), error.message)
        }
        XCTAssertTrue(gateway.requests.isEmpty)
        try await client.shutdown()
        await gateway.stop()
    }

    func testGatewayWhoseCertificateIsNotTrustedIsRefused() async throws {
        let gateway = try await TestGateway { _ in .answer(status: 200, body: Self.sessionBytes) }
        let client = try makeTestClient(gateway, trustRoot: "rogue-ca.pem", timeout: .seconds(20))
        let started = ContinuousClock.now
        do throws(MerchantAPIError) {
            _ = try await client.requestPaymentSession(displayName: "Store", initiativeContext: "shop.example.com")
            XCTFail("talked to a gateway outside the trust root")
        } catch {
            XCTAssertEqual(error.code, .tlsFailure, error.message)
            XCTAssertTrue(error.message.contains("certificate is not trusted"), error.message)
        }
        XCTAssertLessThan(
            ContinuousClock.now - started, .seconds(10),
            "a refused handshake is reported at once, not retried until the deadline")
        XCTAssertTrue(gateway.requests.isEmpty)
        try await client.shutdown()
        await gateway.stop()
    }

    func testGatewayErrorSurfacesStatusCodeAndStatusMessage() async throws {
        let body =
            #"{"statusMessage":"Payment Services Exception merchantId=4A7E2C unauthorized to process transactions","statusCode":"400"}"#
        let gateway = try await TestGateway { _ in .answer(status: 400, body: Array(body.utf8)) }
        let client = try makeTestClient(gateway)
        do throws(MerchantAPIError) {
            _ = try await client.requestPaymentSession(displayName: "Store", initiativeContext: "shop.example.com")
            XCTFail("a 400 was taken for a session")
        } catch {
            XCTAssertEqual(error.code, .gatewayError)
            XCTAssertEqual(error.httpStatus, 400)
            XCTAssertEqual(error.statusCode, "400")
            XCTAssertEqual(
                error.statusMessage, "Payment Services Exception merchantId=4A7E2C unauthorized to process transactions"
            )
            XCTAssertTrue(error.message.contains("unauthorized to process transactions"), error.message)
        }
        try await client.shutdown()
        await gateway.stop()
    }

    func testGatewayErrorTextIsStrippedOfControlCharacters() async throws {
        let body = #"{"statusCode":417,"statusMessage":"bad\u001b[31m\nnews"}"#
        let gateway = try await TestGateway { _ in .answer(status: 417, body: Array(body.utf8)) }
        let client = try makeTestClient(gateway)
        do throws(MerchantAPIError) {
            _ = try await client.requestPaymentSession(displayName: "Store", initiativeContext: "shop.example.com")
            XCTFail("a 417 was taken for a session")
        } catch {
            XCTAssertEqual(error.statusCode, "417")
            XCTAssertEqual(error.statusMessage, "bad\u{FFFD}[31m\u{FFFD}news")
        }
        try await client.shutdown()
        await gateway.stop()
    }

    func testTimeoutIsReportedAsTimeout() async throws {
        let gateway = try await TestGateway { _ in .silence }
        let client = try makeTestClient(gateway, timeout: .seconds(1))
        let started = ContinuousClock.now
        do throws(MerchantAPIError) {
            _ = try await client.requestPaymentSession(displayName: "Store", initiativeContext: "shop.example.com")
            XCTFail("a silent gateway produced a session")
        } catch {
            XCTAssertEqual(error.code, .timeout, error.message)
        }
        XCTAssertLessThan(ContinuousClock.now - started, .seconds(8))
        XCTAssertEqual(gateway.requests.count, 1, "the request arrived; the answer never came")
        try await client.shutdown()
        await gateway.stop()
    }

    func testRedirectIsNotFollowed() async throws {
        let gateway = try await TestGateway { request in
            request.path == sessionPath
                ? .answer(status: 307, headers: [("Location", "/paymentservices/elsewhere")], body: [])
                : .answer(status: 200, body: Self.sessionBytes)
        }
        let client = try makeTestClient(gateway)
        do throws(MerchantAPIError) {
            _ = try await client.requestPaymentSession(displayName: "Store", initiativeContext: "shop.example.com")
            XCTFail("a redirect was followed or taken for a session")
        } catch {
            XCTAssertEqual(error.code, .redirectRefused)
            XCTAssertEqual(error.httpStatus, 307)
        }
        XCTAssertEqual(gateway.requests.map(\.uri), [sessionPath], "the redirect target was never requested")
        try await client.shutdown()
        await gateway.stop()
    }

    func testSessionAnswerThatIsNotAJSONObjectIsRefused() async throws {
        for body in ["<html>captive portal</html>", "[1,2]", ""] {
            let gateway = try await TestGateway { _ in .answer(status: 200, body: Array(body.utf8)) }
            let client = try makeTestClient(gateway)
            do throws(MerchantAPIError) {
                _ = try await client.requestPaymentSession(displayName: "Store", initiativeContext: "shop.example.com")
                XCTFail("\(body) was taken for a session")
            } catch {
                XCTAssertEqual(error.code, .invalidResponse)
            }
            try await client.shutdown()
            await gateway.stop()
        }
    }

    func testOversizedAnswerIsRefused() async throws {
        let huge = Array(
            ("{\"pad\":\"" + String(repeating: "x", count: MerchantAPIClient.maximumResponseBytes) + "\"}").utf8)
        let gateway = try await TestGateway { _ in .answer(status: 200, body: huge) }
        let client = try makeTestClient(gateway)
        do throws(MerchantAPIError) {
            _ = try await client.requestPaymentSession(displayName: "Store", initiativeContext: "shop.example.com")
            XCTFail("an answer over the limit was taken")
        } catch {
            XCTAssertEqual(error.code, .invalidResponse)
        }
        try await client.shutdown()
        await gateway.stop()
    }

    func testRegisterListAndRemoveSpeakTheDocumentedOperations() async throws {
        let gateway = try await TestGateway { request in
            switch (request.method, request.path) {
            case ("POST", "/paymentservices/registerMerchant"):
                return .answer(
                    status: 200,
                    body: Array(
                        #"{"status":"ok","merchantIdentifier":"merchant.com.example.test","registeredDomains":["shop.example.com","pay.example.com"]}"#
                            .utf8))
            case ("GET", "/paymentservices/domains"):
                return .answer(
                    status: 200,
                    body: Array(
                        #"{"merchantIdentifier":"merchant.com.example.test","domainNames":["shop.example.com"]}"#.utf8))
            case ("DELETE", "/paymentservices/domains") where request.uri.hasSuffix("domainName=gone.example.com"):
                return .answer(
                    status: 404, body: Array(#"{"statusCode":"404","statusMessage":"domain not registered"}"#.utf8))
            case ("DELETE", "/paymentservices/domains"):
                return .answer(status: 200, headers: [], body: [])
            default:
                return .answer(status: 500, body: [])
            }
        }
        let client = try makeTestClient(gateway)
        let registration = try await client.registerMerchant(domainNames: ["Shop.Example.com.", "pay.example.com"])
        XCTAssertEqual(registration.registeredDomains, ["shop.example.com", "pay.example.com"])
        let listed = try await client.listMerchantDomains()
        XCTAssertEqual(listed.domainNames, ["shop.example.com"])
        try await client.removeMerchantDomain("pay.example.com")
        do throws(MerchantAPIError) {
            try await client.removeMerchantDomain("gone.example.com")
            XCTFail("a 404 was taken for a removal")
        } catch {
            XCTAssertEqual(error.code, .gatewayError)
            XCTAssertEqual(error.httpStatus, 404)
            XCTAssertEqual(error.statusMessage, "domain not registered")
        }
        let requests = gateway.requests
        XCTAssertEqual(requests.map(\.method), ["POST", "GET", "DELETE", "DELETE"])
        XCTAssertEqual(requests[0].json["merchantIdentifier"] as? String, "merchant.com.example.test")
        XCTAssertEqual(requests[0].json["domainNames"] as? [String], ["shop.example.com", "pay.example.com"])
        XCTAssertEqual(requests[1].uri, "/paymentservices/domains?merchantIdentifier=merchant.com.example.test")
        XCTAssertEqual(
            requests[2].uri,
            "/paymentservices/domains?merchantIdentifier=merchant.com.example.test&domainName=pay.example.com")
        try await client.shutdown()
        await gateway.stop()
    }

    func testDomainOperationsRefuseBadNamesBeforeAnyConnection() async throws {
        let gateway = try await TestGateway { _ in .answer(status: 200, body: Array("{}".utf8)) }
        let client = try makeTestClient(gateway)
        for name in [
            "127.0.0.1", "localhost", "evil.example/x", "a..example.com", "shop.example.com&domainName=other.example",
            "",
        ] {
            do throws(MerchantAPIError) {
                try await client.removeMerchantDomain(name)
                XCTFail("\(name) was sent")
            } catch {
                XCTAssertEqual(error.code, .invalidRequest, name)
            }
        }
        do throws(MerchantAPIError) {
            _ = try await client.registerMerchant(domainNames: [])
            XCTFail("an empty registration was sent")
        } catch {
            XCTAssertEqual(error.code, .invalidRequest)
        }
        XCTAssertEqual(gateway.connectionCount, 0)
        try await client.shutdown()
        await gateway.stop()
    }

    func testTestGatewayNeedsAnHTTPSURLAndARootCertificate() throws {
        let root = TestPKI.shared.bytes("ca.pem")
        for url in [
            "http://127.0.0.1:8443", "https://user@127.0.0.1", "https://127.0.0.1/x?y", "127.0.0.1:8443", "https://",
        ] {
            XCTAssertThrowsError(try Gateway.insecureTestingOnly(baseURL: url, trustRootPEM: root), url)
        }
        let identity = try MerchantTLSIdentity.pem(
            certificatePath: TestPKI.shared.path("client.pem"), keyPath: TestPKI.shared.path("client.key"))
        let noRoot = try Gateway.insecureTestingOnly(
            baseURL: "https://127.0.0.1:8443", trustRootPEM: Array("not a certificate".utf8))
        XCTAssertThrowsError(
            try MerchantAPIClient(merchantIdentifier: "merchant.com.example.test", identity: identity, gateway: noRoot)
        ) {
            XCTAssertEqual(($0 as? MerchantAPIError)?.code, .invalidRequest)
        }
    }
}
