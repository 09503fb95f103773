// Decrypting raw bytes in place and decrypting a token parsed once (`PaymentToken.parse`) go through
// the same reader and must agree on every input: same payment or same error, field for field.
import ApplePayDecryption
import ApplePayTestSupport
import Foundation
import Testing

@Suite("In-place and parsed-once decryption agree")
struct ScannerEquivalenceTests {
    static let minted = Fixtures.shared.mint { $0.applicationData = "00ff10" }

    /// Variants of one valid token, accepted or rejected; the outcome must not differ between the two paths.
    static var variants: [(String, String)] {
        let bare = minted.paymentData.description
        let body = String(bare.dropFirst().dropLast())
        let pk = String(
            decoding: TokenWrapping.pkPaymentToken.wrap(minted.paymentData, transactionId: minted.transactionId),
            as: UTF8.self)
        return [
            ("bare", bare),
            (
                "whitespace around and inside",
                "  \n{ " + body.replacingOccurrences(of: ",\"", with: " ,\n \"") + " }\r\n"
            ),
            ("escaped slashes", bare.replacingOccurrences(of: "/", with: "\\/")),
            ("PKPaymentToken", pk),
            (
                "Apple Pay JS",
                String(
                    decoding: TokenWrapping.applePayJS.wrap(minted.paymentData, transactionId: minted.transactionId),
                    as: UTF8.self)
            ),
            (
                "base64 string",
                String(
                    decoding: TokenWrapping.base64String.wrap(minted.paymentData, transactionId: minted.transactionId),
                    as: UTF8.self)
            ),
            ("BOM", "\u{FEFF}" + bare),
            ("unicode escape elsewhere", "{\"note\":\"caf\\u00e9\"," + body + "}"),
            ("non-ASCII elsewhere", "{\"note\":\"café\"," + body + "}"),
            ("numbers and literals elsewhere", "{\"n\":[-1.5e3,0,true,false,null,{}],\"m\":[]," + body + "}"),
            ("duplicate version (refused)", "{\"version\":\"RSA_v1\"," + body + "}"),
            ("duplicate data", "{" + body + ",\"data\":\"AAAA\"}"),
            (
                "applicationData null",
                bare.replacingOccurrences(of: "\"applicationData\":\"00ff10\"", with: "\"applicationData\":null")
            ),
            ("trailing garbage", bare + "x"),
            ("two objects", bare + bare),
            ("bad number elsewhere", "{\"n\":01," + body + "}"),
            ("bad escape elsewhere", "{\"n\":\"\\q\"," + body + "}"),
            ("control character in a string", "{\"n\":\"a\u{01}b\"," + body + "}"),
            ("unterminated", String(bare.dropLast())),
            ("version not a string", bare.replacingOccurrences(of: "\"version\":\"EC_v1\"", with: "\"version\":1")),
            ("header not an object", "{\"header\":[]," + body + "}"),
            ("escaped quote in data", bare.replacingOccurrences(of: "\"data\":\"", with: "\"data\":\"\\\"")),
            ("escaped newline in data", bare.replacingOccurrences(of: "\"data\":\"", with: "\"data\":\"\\n")),
            ("paymentData wraps a string", "{\"paymentData\":\"" + Data(bare.utf8).base64EncodedString() + "\"}"),
            ("empty object", "{}"),
            ("deep nesting", String(repeating: "[", count: 100) + String(repeating: "]", count: 100)),
        ]
    }

    @Test("same outcome through decrypt(bytes) and decrypt(PaymentToken.parse(bytes))", arguments: variants.map(\.0))
    func sameOutcome(_ name: String) {
        let input = Array(Self.variants.first { $0.0 == name }!.1.utf8)
        let decryptor = Fixtures.shared.decryptor()
        let fast = Result { () throws(ApplePayError) in try decryptor.decrypt(input, at: .at(signingInstant)) }
        let general = Result { () throws(ApplePayError) in
            try decryptor.decrypt(try PaymentToken.parse(input), at: .at(signingInstant))
        }
        switch (fast, general) {
        case let (.success(a), .success(b)):
            #expect(a.json == b.json)
            #expect(a.transactionId == b.transactionId)
        case let (.failure(a), .failure(b)):
            #expect(a == b)
        default:
            Issue.record("\(name): decrypt gives \(fast), the general parser \(general)")
        }
    }
}
