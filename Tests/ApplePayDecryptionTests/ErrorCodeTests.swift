// Each malformed input maps to exactly one stable code and names the offending field.
import ApplePayDecryption
import Foundation
import Testing

@Suite("Error codes")
struct ErrorCodeTests {
    let f = Fixtures.shared

    func error(_ input: [UInt8]) -> ApplePayError? {
        do {
            _ = try f.decryptor().decrypt(input, at: .at(signingInstant))
            return nil
        } catch {
            return error
        }
    }

    @Test("the codes are stable API")
    func stableCodes() {
        #expect(
            ApplePayError.Code.allCases.map(\.rawValue) == [
                "malformedToken", "unsupportedVersion", "invalidSignature", "untrustedCertificateChain",
                "signingTimeOutOfRange",
                "unknownMerchantKey", "decryptionFailed", "invalidPayload", "replayedTransaction",
                "paymentRequestMismatch", "intermediateKeyExpired", "messageExpired",
            ])
    }

    @Test("input that is not JSON is malformedToken", arguments: ["", "{", "{\"version\":", "@@@", "[1]"])
    func notJSON(_ text: String) {
        #expect(error(Array(text.utf8))?.code == .malformedToken)
    }

    @Test(
        "a missing field is malformedToken naming its path",
        arguments: [
            ["version"], ["data"], ["signature"], ["header"], ["header", "ephemeralPublicKey"],
            ["header", "publicKeyHash"],
            ["header", "transactionId"],
        ])
    func missingField(_ path: [String]) {
        let e = error(bytes(removing(f.mint().paymentData, path: path)))
        #expect(e?.code == .malformedToken)
        #expect(e?.field == path.joined(separator: "."))
    }

    @Test(
        "a field of the wrong type is malformedToken naming its path",
        arguments: [["data"], ["header", "ephemeralPublicKey"], ["header", "transactionId"]])
    func wrongType(_ path: [String]) {
        let e = error(bytes(rewrite(f.mint().paymentData, path: path) { _ in .number("12") }))
        #expect(e?.code == .malformedToken)
        #expect(e?.field == path.joined(separator: "."))
    }

    @Test(
        "bad base64 or hex is malformedToken naming its path",
        arguments: [
            (["data"], "!!!!"), (["signature"], "a b"), (["header", "publicKeyHash"], "AAAA"),
            (["header", "ephemeralPublicKey"], "AAAA"), (["header", "transactionId"], "xyz1"),
            (["header", "applicationData"], "0g"),
        ])
    func badEncoding(_ path: [String], _ value: String) {
        var token = f.mint { $0.applicationData = "00ff" }.paymentData
        token = rewrite(token, path: path) { _ in .string(value) }
        let e = error(bytes(token))
        #expect(e?.code == .malformedToken)
        #expect(e?.field == path.joined(separator: "."))
    }

    @Test("an unknown version is unsupportedVersion", arguments: ["EC_v2", "ECC", ""])
    func unknownVersion(_ version: String) {
        let e = error(bytes(rewrite(f.mint().paymentData, path: ["version"]) { _ in .string(version) }))
        #expect(e?.code == .unsupportedVersion)
        #expect(e?.field == "version")
    }

    @Test("a signature that is not CMS is invalidSignature")
    func signatureNotCMS() {
        let e = error(bytes(rewrite(f.mint().paymentData, path: ["signature"]) { _ in .string("MIIBAAAA") }))
        #expect(e?.code == .invalidSignature)
    }

    @Test("no error text carries the plaintext")
    func errorsCarryNoSecrets() {
        let token = f.mint(Array(#"{"applicationPrimaryAccountNumber":12345678901234}"#.utf8))
        let e = error(token.bytes)
        #expect(e?.code == .invalidPayload)
        #expect(!(e?.description.contains("12345678901234") ?? true))
    }

    @Test("errors are equal when their codes are: message, field and reason are context")
    func equalityIsOnTheCode() {
        #expect(
            ApplePayError(.invalidSignature, "one")
                == ApplePayError(.invalidSignature, "two", field: "signature", reason: "r"))
        #expect(ApplePayError(.invalidSignature, "same") != ApplePayError(.decryptionFailed, "same"))
        #expect(ConfigurationError(.unreadableKey, "one") == ConfigurationError(.unreadableKey, "two"))
    }

    @Test("a code this version does not know still round-trips through its raw value (codes are extensible)")
    func codesAreExtensible() throws {
        let later = ApplePayError.Code(rawValue: "someLaterCode")
        #expect(!ApplePayError.Code.allCases.contains(later))
        let encoded = try JSONEncoder().encode([later, .malformedToken])
        #expect(String(decoding: encoded, as: UTF8.self) == #"["someLaterCode","malformedToken"]"#)
        #expect(try JSONDecoder().decode([ApplePayError.Code].self, from: encoded) == [later, .malformedToken])
    }

    @Test("configuration errors carry a code: an unreadable merchant key is unreadableKey")
    func configurationErrorsHaveCodes() {
        do {
            _ = try MerchantIdentity(merchantIdentifier: "merchant.x", privateKey: [1, 2, 3])
            Issue.record("garbage was accepted as a key")
        } catch {
            #expect(error.code == .unreadableKey)
        }
        #expect(throws: ConfigurationError(.invalidOption, "")) { try PaymentTokenDecryptor(merchants: []) }
    }
}
