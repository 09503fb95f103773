// The request edge: one body (a token, or the envelope with its payment request) in, one outcome out,
// written by the one writer in each front end's shape; the error object has one shape everywhere.
import ApplePayDecryption
import ApplePayTestSupport
import Foundation
import Testing

@Suite("Request edge: envelopes, outcomes and the one result writer")
struct RequestEdgeTests {
    let f = Fixtures.shared

    func envelope(_ token: [UInt8], _ request: JSONValue? = nil, extra: String = "") -> [UInt8] {
        Array("{\"paymentToken\":".utf8) + token
            + Array((request.map { ",\"paymentRequest\":\($0.description)" } ?? "").utf8) + Array("\(extra)}".utf8)
    }

    func code(_ outcome: DecryptionOutcome) -> String {
        if case let .failure(error) = outcome.result { return "\(error.code.rawValue):\(error.field ?? "")" }
        return "ok"
    }

    func written(_ outcome: DecryptionOutcome, _ projection: ResultProjection) -> String {
        let out = SensitiveBuffer()
        outcome.write(projection, into: out)
        return out.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
    }

    @Test(
        "a token alone, an envelope without a request and an envelope with one all decrypt; the outcome names the merchant"
    )
    func forms() throws {
        let decryptor = f.decryptor()
        let a = f.mint(TestPayload.threeDSecure(amount: 1000))
        let bodies = [
            a.bytes, envelope(a.bytes), envelope(a.bytes, RequestJSON().json),
            envelope(
                TokenWrapping.pkPaymentToken.wrap(a.paymentData, transactionId: a.transactionId), RequestJSON().json),
            envelope(Array("\"\(Data(a.bytes).base64EncodedString())\"".utf8), RequestJSON().json),
        ]
        for body in bodies {
            let outcome = decryptor.decryptRequest(body, at: .at(signingInstant))
            #expect(code(outcome) == "ok", "\(String(decoding: body.prefix(40), as: UTF8.self))")
            #expect(outcome.transactionId == a.transactionId)
            #expect(outcome.merchantLabel == f.ecMerchant.identity().label)
        }
    }

    @Test(
        "an envelope is refused, naming the member, before anything is decrypted; a mismatch names the request member")
    func refusals() throws {
        let decryptor = f.decryptor()
        let a = f.mint(TestPayload.threeDSecure(amount: 1000))
        let cases: [([UInt8], String)] = [
            (envelope(a.bytes, RequestJSON().total("5.00").json), "paymentRequestMismatch:total.amount"),
            (envelope(a.bytes, RequestJSON().total("5").json), "malformedToken:paymentRequest.total.amount"),
            (envelope(a.bytes, .array([])), "malformedToken:paymentRequest"),
            (envelope(a.bytes, RequestJSON().json, extra: ",\"paymentrequest\":{}"), "malformedToken:paymentrequest"),
            (Array("{\"paymentToken\":42}".utf8), "malformedToken:paymentToken"),
            (
                Array("{\"paymentToken\":".utf8) + a.bytes + Array(",\"paymentToken\":".utf8) + a.bytes
                    + Array("}".utf8), "malformedToken:paymentToken"
            ),
            (
                Array("{\"paymentData\":".utf8) + a.bytes + Array(",\"paymentRequest\":\(RequestJSON().json)}".utf8),
                "malformedToken:paymentRequest"
            ),
            (Array("not json".utf8), "malformedToken:$"),
        ]
        for (body, expected) in cases {
            let outcome = decryptor.decryptRequest(body, at: .at(signingInstant))
            #expect(code(outcome) == expected, "\(String(decoding: body.prefix(60), as: UTF8.self))")
        }
        // A mismatch still reports the token's transactionId; a refused envelope has none.
        #expect(decryptor.decryptRequest(cases[0].0, at: .at(signingInstant)).transactionId == a.transactionId)
        #expect(decryptor.decryptRequest(cases[1].0, at: .at(signingInstant)).transactionId == nil)
    }

    @Test(
        "paymentMethod.network is read in the token reader's walk: a PKPaymentToken on a network the request does not support is a mismatch"
    )
    func paymentMethodInTheSameWalk() throws {
        let decryptor = f.decryptor()
        let a = f.mint(TestPayload.threeDSecure(amount: 1000))
        let wrapped = TokenWrapping.pkPaymentToken.wrap(a.paymentData, transactionId: a.transactionId)
        let amexOnly = RequestJSON().with("supportedNetworks", .array([.string("amex")])).json
        #expect(
            code(decryptor.decryptRequest(envelope(wrapped, amexOnly), at: .at(signingInstant)))
                == "paymentRequestMismatch:supportedNetworks")
        // A bare token carries no paymentMethod: nothing to contradict.
        #expect(code(decryptor.decryptRequest(envelope(a.bytes, amexOnly), at: .at(signingInstant))) == "ok")
    }

    @Test(
        "the one writer: the error object has error, message and field (null when none) in every shape, reason where OpenSSL gave one; lines never carry reason"
    )
    func writerShapes() throws {
        let decryptor = f.decryptor()
        let a = f.mint(TestPayload.threeDSecure(amount: 1000))
        let ok = decryptor.decryptRequest(a.bytes, at: .at(signingInstant))
        let response = try JSONValue.parse(written(ok, .response))
        #expect(response["transactionId"]?.stringValue == a.transactionId)
        #expect(response["payment"]?["applicationPrimaryAccountNumber"] != nil)
        let payment = try JSONValue.parse(written(ok, .payment))
        #expect(payment["applicationPrimaryAccountNumber"] != nil && payment["transactionId"] == nil)
        let line = written(ok, .line(index: 7, source: "in.jsonl:8", maskingPAN: true))
        #expect(
            line.hasPrefix(
                "{\"index\":7,\"source\":\"in.jsonl:8\",\"transactionId\":\"\(a.transactionId)\",\"payment\":{")
                && line.hasSuffix("}\n"))
        #expect(!line.contains("4761120010000492"))

        let refused = DecryptionOutcome(
            refusing: ApplePayError(.decryptionFailed, "ECDH key agreement failed", reason: "point is not on curve"))
        #expect(
            written(refused, .response)
                == #"{"error":"decryptionFailed","message":"ECDH key agreement failed","field":null,"reason":"point is not on curve"}"#
        )
        #expect(written(refused, .payment) == written(refused, .response))
        #expect(
            written(refused, .line(index: 0, source: "s"))
                == #"{"index":0,"source":"s","transactionId":null,"error":"decryptionFailed","message":"ECDH key agreement failed","field":null}"#
                + "\n")
        #expect(
            ResultWriter.errorObject(code: "payloadTooLarge", message: "too big", field: nil)
                == #"{"error":"payloadTooLarge","message":"too big","field":null}"#)
    }

    @Test("a merchant identity says when its certificate expires")
    func certificateExpiry() throws {
        let identity = f.ecMerchant.identity()
        let notAfter = try #require(identity.certificateNotAfter)
        #expect(notAfter > signingInstant)
        let keyOnly = try MerchantIdentity(
            merchantIdentifier: "merchant.com.example.shop", privateKey: Array(f.ecMerchant.privateKeyPEM.utf8))
        #expect(keyOnly.certificateNotAfter == nil)
    }
}
