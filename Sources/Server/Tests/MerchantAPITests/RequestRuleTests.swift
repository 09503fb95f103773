// displayName, initiativeContext, domain names and merchant identifiers: refused before anything is sent.
@testable import ApplePayMerchantAPI
import XCTest

final class RequestRuleTests: XCTestCase {
    func testDisplayNameIsAtMost64UnicodeScalars() throws {
        try RequestRules.checkDisplayName(String(repeating: "a", count: 64))
        try RequestRules.checkDisplayName(String(repeating: "é", count: 64))  // 128 UTF-8 bytes, 64 characters
        try RequestRules.checkDisplayName(String(repeating: "店", count: 64))  // 192 UTF-8 bytes
        for name in [
            String(repeating: "a", count: 65), String(repeating: "店", count: 65),
            String(repeating: "e\u{301}", count: 33),
        ] {  // 33 characters, 66 scalars
            XCTAssertThrowsError(try RequestRules.checkDisplayName(name)) {
                XCTAssertEqual(($0 as? MerchantAPIError)?.code, .invalidRequest)
            }
        }
    }

    func testDisplayNameIsNotEmptyAndHasNoControlCharacters() {
        for name in ["", "Store\nInjected: header", "Store\u{0}", "Store\u{7F}", "Store\u{85}", "\u{1B}[2J"] {
            XCTAssertThrowsError(try RequestRules.checkDisplayName(name), name.debugDescription)
        }
    }

    func testDisplayNameHasNoFormatCharactersOrLineSeparators() throws {
        // Bidi override (reverses what the payment sheet shows), zero-width space, BOM, line and
        // paragraph separators.
        for name in [
            "Store\u{202E}erots", "Sto\u{200B}re", "\u{FEFF}Store", "Store\u{2028}Line", "Store\u{2029}",
            "Store\u{2066}",
        ] {
            XCTAssertThrowsError(try RequestRules.checkDisplayName(name), name.debugDescription)
        }
        try RequestRules.checkDisplayName("Café Noël ✓ 店")
        // The joiners that scripts and emoji need are not format tricks: a Persian name with U+200C,
        // Malayalam with U+200D, a family emoji.
        try RequestRules.checkDisplayName("کتاب\u{200C}فروشی")
        try RequestRules.checkDisplayName("ന\u{0D4D}\u{200D}")
        try RequestRules.checkDisplayName("Store \u{1F468}\u{200D}\u{1F469}\u{200D}\u{1F467}")
    }

    func testInitiativeContextMustBeAConfiguredDomain() async throws {
        let gateway = try await TestGateway { _ in .answer(status: 200, body: GatewayTests.sessionBytes) }
        let client = try makeTestClient(gateway, domains: ["shop.example.com", "Pay.Example.com."])
        for context in [
            "evil.example", "example.com", "sub.shop.example.com", "shop.example.com.evil.example", "127.0.0.1",
            "localhost", "",
        ] {
            do throws(MerchantAPIError) {
                _ = try await client.requestPaymentSession(displayName: "Store", initiativeContext: context)
                XCTFail("\(context) was sent")
            } catch {
                XCTAssertEqual(error.code, .invalidRequest, context)
            }
        }
        XCTAssertEqual(gateway.connectionCount, 0)
        _ = try await client.requestPaymentSession(displayName: "Store", initiativeContext: "SHOP.example.COM.")
        _ = try await client.requestPaymentSession(displayName: "Store", initiativeContext: "pay.example.com")
        XCTAssertEqual(
            gateway.requests.map { $0.json["initiativeContext"] as? String }, ["shop.example.com", "pay.example.com"])
        try await client.shutdown()
        await gateway.stop()
    }

    func testTooLongDisplayNameIsRefusedBeforeAnyConnection() async throws {
        let gateway = try await TestGateway { _ in .answer(status: 200, body: GatewayTests.sessionBytes) }
        let client = try makeTestClient(gateway)
        do throws(MerchantAPIError) {
            _ = try await client.requestPaymentSession(
                displayName: String(repeating: "x", count: 65), initiativeContext: "shop.example.com")
            XCTFail("a 65-character name was sent")
        } catch {
            XCTAssertEqual(error.code, .invalidRequest)
        }
        XCTAssertEqual(gateway.connectionCount, 0)
        try await client.shutdown()
        await gateway.stop()
    }

    func testDomainNamesAreASCIIHostNames() throws {
        XCTAssertEqual(try RequestRules.normalisedDomain("Shop.Example.COM.", member: "d"), "shop.example.com")
        XCTAssertEqual(try RequestRules.normalisedDomain("xn--caf-dma.example", member: "d"), "xn--caf-dma.example")
        for bad in [
            "", ".", "com", "localhost", "127.0.0.1", "2130706433.0", "1.2.3.4.", "café.example", "-shop.example.com",
            "shop-.example.com", "shop..example.com", "shop.example.com..", "shop_x.example.com",
            "shop.example.com:443",
            "user@shop.example.com", "shop.example.com/path", String(repeating: "a", count: 64) + ".example",
            String(repeating: "abcdefgh.", count: 32) + "com",
        ] {
            XCTAssertThrowsError(try RequestRules.normalisedDomain(bad, member: "d"), bad)
        }
    }

    func testMerchantIdentifierIsPrintableASCII() throws {
        try RequestRules.checkMerchantIdentifier("merchant.com.example.store")
        for bad in ["", "merchant com", "merchant\n", "merchänt", String(repeating: "m", count: 256)] {
            XCTAssertThrowsError(try RequestRules.checkMerchantIdentifier(bad), bad)
        }
    }

    func testQueryValuesArePercentEncoded() {
        XCTAssertEqual(MerchantAPIClient.queryValue("merchant.com.example-1_~"), "merchant.com.example-1_~")
        XCTAssertEqual(MerchantAPIClient.queryValue("a&b=c d#é"), "a%26b%3Dc%20d%23%C3%A9")
    }
}
