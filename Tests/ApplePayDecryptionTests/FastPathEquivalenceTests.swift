// The per-token fast paths (base64 two symbols at a time, member walks over a validated document,
// the payload validated in one pass) must accept and refuse exactly what the plain algorithms do.
@testable import ApplePayDecryption
import ApplePayTestSupport
import Foundation
import Testing

@Suite("Fast paths agree with the plain algorithms")
struct FastPathEquivalenceTests {
    @Test("base64 decodes what Foundation decodes, padded or not, and refuses a foreign symbol anywhere")
    func base64MatchesFoundation() {
        var random = SplitMix(state: 0x5EED)
        let foreign: [UInt8] = Array(" \n\t!-_.,:\"\u{7F}".utf8) + [0x00, 0x80, 0xC3, 0xFF]
        for length in 0..<300 {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &random) }
            let padded = Array(Data(bytes).base64EncodedString().utf8)
            let unpadded = Array(padded.prefix { $0 != UInt8(ascii: "=") })
            #expect(Base64.decode(padded) == bytes, "length \(length), padded")
            #expect(Base64.decode(unpadded) == bytes, "length \(length), unpadded")
            // The same bytes after other decoded fields (as in a lane's buffer).
            var storage: [UInt8] = [1, 2, 3]
            #expect(Base64.decode(padded, appendingTo: &storage) && storage == [1, 2, 3] + bytes)
            guard !padded.isEmpty else { continue }
            for _ in 0..<4 {
                var altered = padded
                let position = Int.random(in: 0..<altered.count, using: &random)
                altered[position] = foreign.randomElement(using: &random)!
                #expect(Base64.decode(altered) == nil, "length \(length), foreign symbol at \(position)")
                #expect(Data(base64Encoded: Data(altered)) == nil)
            }
            // Escaped slashes (as PHP writes them) decode in place, to the same bytes.
            let escaped = padded.flatMap { $0 == UInt8(ascii: "/") ? [UInt8(ascii: "\\"), $0] : [$0] }
            var decoded: [UInt8] = []
            #expect(Base64.decode(escaped, appendingTo: &decoded, jsonEscapedSlashes: true) && decoded == bytes)
        }
    }

    @Test("a token's members are found whatever the values before them hold")
    func membersOfValidatedDocument() throws {
        let minted = Fixtures.shared.mint()
        let bare = minted.paymentData.description
        let body = String(bare.dropFirst().dropLast())
        let decryptor = Fixtures.shared.decryptor()
        let expected = try decryptor.decrypt(Array(bare.utf8), at: .at(signingInstant))
        let prefixes = [
            #""a":"\\","#,  // a string ending in an escaped backslash
            #""b":"\"}{][\\\"","#,  // escaped quotes and brackets inside a string
            #""c":[{"d":"]}"},["}",{}],"e",-1.5e-3,true,null],"#,
            #""f":{"version":"RSA_v1","data":"AAAA"},"#,  // the same names one level down: not the token's
            "\"g\" : \t\"x\" ,\n",
        ]
        for prefix in prefixes {
            let input = Array(("{" + prefix + body + "}").utf8)
            let payment = try decryptor.decrypt(input, at: .at(signingInstant))
            #expect(payment.json == expected.json && payment.transactionId == expected.transactionId, "\(prefix)")
        }
    }

    @Test("an ephemeral point off P-256 is refused: the decoder's own check, probed once, stands in for a second one")
    func offCurvePointRefused() throws {
        let generator: [UInt8] = [
            0x04,
            0x6B, 0x17, 0xD1, 0xF2, 0xE1, 0x2C, 0x42, 0x47, 0xF8, 0xBC, 0xE6, 0xE5, 0x63, 0xA4, 0x40, 0xF2,
            0x77, 0x03, 0x7D, 0x81, 0x2D, 0xEB, 0x33, 0xA0, 0xF4, 0xA1, 0x39, 0x45, 0xD8, 0x98, 0xC2, 0x96,
            0x4F, 0xE3, 0x42, 0xE2, 0xFE, 0x1A, 0x7F, 0x9B, 0x8E, 0xE7, 0xEB, 0x4A, 0x7C, 0x0F, 0x9E, 0x16,
            0x2B, 0xCE, 0x33, 0x57, 0x6B, 0x31, 0x5E, 0xCE, 0xCB, 0xB6, 0x40, 0x68, 0x37, 0xBF, 0x51, 0xF5,
        ]
        let probe = try #require(ECDHProbe(privateKey: [UInt8](repeating: 0, count: 31) + [1]))
        #expect(probe.sharedSecret(peerPoint: generator) == Array(generator[1...32]))  // 1·G
        for (offset, delta) in [(64, UInt8(1)), (32, UInt8(1)), (40, UInt8(0x80))] {
            var moved = generator
            moved[offset] ^= delta
            #expect(probe.sharedSecret(peerPoint: moved) == nil, "byte \(offset) changed")
        }
    }

    @Test(
        "the signer's chain is located in one walk exactly as in two: issuer before or after the signer, strangers, many certificates"
    )
    func chainLocatedInOneWalk() throws {
        let f = Fixtures.shared
        var names = TestPKI.Options()
        names.appleNames = false
        let stranger = TestPKI(options: names)
        let junk: [UInt8] = [0x30, 0x03, 0x02, 0x01, 0x01]
        let many = Array(repeating: stranger.leafDER, count: SignerChainCache.keptBeforeSigner + 1)
        let cases: [([[UInt8]], Bool)] = [
            ([], false), ([f.pki.intermediateDER], true), ([stranger.leafDER, stranger.intermediateDER], true),
            ([junk, f.pki.intermediateDER, stranger.intermediateDER], true), (many, true),
            (many + [f.pki.intermediateDER], true),
            ([f.pki.intermediateDER] + many, true), ([stranger.intermediateDER, f.pki.leafDER], false),
            ([stranger.leafDER], false),
        ]
        let decryptor = f.decryptor()
        for (extras, first) in cases {
            let minted = f.mint {
                $0.extraCertificates = extras; $0.extraCertificatesFirst = first
            }
            let token = try PaymentToken.parse(minted.bytes)
            try token.withView { view throws in
                let signature = view[view.fields.signature]
                let cms = try CMSSignedData.parse(signature)
                let one = Result { () throws(ApplePayError) in try SignerChainCache.locateChain(cms, in: signature) }
                let two = Result { () throws(ApplePayError) in
                    try SignerChainCache.locateChainInTwoWalks(cms, in: signature)
                }
                switch (one, two) {
                case let (.success(a), .success(b)): #expect(a == b, "\(extras.count) extra, first: \(first)")
                default: Issue.record("\(extras.count) extra, first: \(first): one walk \(one), two walks \(two)")
                }
            }
            #expect(
                try decryptor.decrypt(minted.bytes, at: .at(signingInstant)).applicationPrimaryAccountNumber
                    == "4761120010000492")
        }
    }

    /// The payload check as it was: the whole document validated first, then walked.
    static func referenceLayOutError(_ raw: UnsafeRawBufferPointer) -> ApplePayError? {
        let scan = JSONScan(raw)
        let start: Int
        do throws(JSONScanError) { start = try scan.document(0..<raw.count) } catch {
            if let name = error.duplicate {
                return ApplePayError(
                    .invalidPayload, "the decrypted payment data has member \"\(name.prefix(64))\" more than once",
                    field: error.pathText)
            }
            return ApplePayError(.invalidPayload, "the decrypted payment data is not JSON", reason: error.description)
        }
        guard raw[start] == UInt8(ascii: "{") else {
            return ApplePayError(.invalidPayload, "the decrypted payment data is not a JSON object")
        }
        return nil
    }

    @Test("the payment data is refused in one pass exactly as a whole-document check refuses it")
    func payloadOnePass() {
        let valid = #"{"applicationPrimaryAccountNumber":"4111111111111111","currencyCode":"840"}"#
        let inputs = [
            valid, " \n" + valid + " \t", valid + "x", valid + valid, valid + ",", "", " ", "{", "}", "[1]", "\"s\"",
            "1", "null",
            #"{"a":1,"a":2}"#, #"{"a":{"b":1,"b":2}}"#, #"{"a":1} {"#, #"{"a":01}"#, #"{"a":"\q"}"#,
            "{\"a\":\"\u{01}\"}",
            #"{"applicationPrimaryAccountNumber":"4111111111111111","applicationPrimaryAccountNumber":"1"}"#,
            #"{"applicationPrimaryAccountNumber":"4111111111111111"} x"#,
        ]
        for input in inputs {
            let bytes = Array(input.utf8)
            bytes.withUnsafeBytes { raw in
                let reference = Self.referenceLayOutError(raw)
                let result = Result { () throws(ApplePayError) in try DecryptedPayment.layOut(raw) }
                switch (result, reference) {
                case (.success, nil):
                    break
                case let (.failure(error), reference?):
                    #expect(error == reference, "\(input)")
                    #expect(
                        error.field == reference.field && error.message == reference.message
                            && error.reason == reference.reason, "\(input)")
                case let (.failure(error), nil):
                    // Valid JSON objects may still lack a PAN: that check comes after, in both.
                    #expect(error.field == "applicationPrimaryAccountNumber", "\(input)")
                default:
                    Issue.record(
                        "\(input): one pass gives \(result), the whole-document check \(String(describing: reference))")
                }
            }
        }
    }
}
