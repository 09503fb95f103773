// Every rule of the Samsung Pay format and of what the engine checks beyond decryption, one test each,
// on tokens from the factory: the envelopes, the JWE's parts and header, keys and rotation, implicit
// rejection, the payment's members, freshness, replays across wrappers and the payment request.
import ApplePayDecryption
import ApplePayTestSupport
import Dispatch
import Foundation
import Testing

/// One factory (three RSA-2048 merchant keys, the third loaded nowhere) and a decryptor for both, made once.
final class SamsungPayBench: Sendable {
    static let shared = SamsungPayBench()
    let factory = SamsungPayTestFactory(merchantKeyCount: 3)
    let now = Date(timeIntervalSince1970: 1_772_366_400)
    let decryptor: SamsungPayTokenDecryptor

    private init() {
        decryptor = try! SamsungPayTokenDecryptor(merchantKeys: [factory.merchantKey(0), factory.merchantKey(1)])
    }

    func options(_ change: (inout SamsungPayTestFactory.Options) -> Void = { _ in }) -> SamsungPayTestFactory.Options {
        var options = SamsungPayTestFactory.Options(now: now)
        change(&options)
        return options
    }

    func mint(_ change: (inout SamsungPayTestFactory.Options) -> Void = { _ in }) -> SamsungPayTestFactory.Minted {
        factory.mint(options(change))
    }

    /// The error a token gets, or nil when it decrypts.
    func error(_ token: [UInt8], at reference: ReferenceTime? = nil) -> ApplePayError? {
        do throws(ApplePayError) {
            _ = try decryptor.decrypt(token, at: reference ?? .at(now))
            return nil
        } catch {
            return error
        }
    }

    func error(_ change: (inout SamsungPayTestFactory.Options) -> Void) -> ApplePayError? { error(mint(change).token) }
}

@Suite("Samsung Pay rules")
struct SamsungPayRuleTests {
    let bench = SamsungPayBench.shared

    func expect(
        _ change: (inout SamsungPayTestFactory.Options) -> Void, _ code: ApplePayError.Code, field: String?,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        let error = bench.error(change)
        #expect(error?.code == code, "\(error.map { "\($0)" } ?? "decrypted")", sourceLocation: sourceLocation)
        #expect(error?.field == field, "\(error.map { "\($0)" } ?? "decrypted")", sourceLocation: sourceLocation)
    }

    // MARK: envelopes

    @Test(
        "every envelope carries the same payment: paymentCredential, web checkout, bare JWE, JWE as a JSON string",
        arguments: SamsungPayTestFactory.Wrapper.allCases)
    func everyEnvelopeDecrypts(_ wrapper: SamsungPayTestFactory.Wrapper) throws {
        let minted = bench.mint { $0.wrapper = wrapper }
        #expect(SamsungPayToken.hasShape(minted.token))
        let payment = try bench.decryptor.decrypt(minted.token, at: .at(bench.now))
        #expect(payment.plaintext.withUnsafeBytes { Array($0) } == minted.payload)
        #expect(payment.tokenPAN == "4111111111111111")
        #expect(payment.kid == bench.factory.kid(0))
        let expected: SamsungPayToken.Envelope =
            switch wrapper {
            case .paymentCredential: .paymentCredential
            case .webCheckout: .webCheckout
            case .compactJWE, .jsonString: .compactJWE
            }
        #expect(payment.envelope == expected)
        #expect(payment.version == (expected == .compactJWE ? nil : "100"))
    }

    @Test("an escaped character in 3DS.data is read as that character (the envelope is JSON)")
    func escapedJWEInEnvelope() throws {
        let minted = bench.mint()
        let text = String(decoding: minted.token, as: UTF8.self)
        let escaped = text.replacingOccurrences(of: "\"data\":\"e", with: "\"data\":\"\\u0065")
        #expect(escaped != text)
        let payment = try bench.decryptor.decrypt(Array(escaped.utf8), at: .at(bench.now))
        #expect(payment.plaintext.withUnsafeBytes { Array($0) } == minted.payload)
    }

    // The long fuzz run of 2026-11-28 (FuzzSamsungPayToken): a JWE as a JSON string with one character written
    // as an escape was a payment to SamsungPayToken.parse and went to Apple Pay at the front door.
    @Test("a JWE as a JSON string holding an escape is malformedToken, and is not of Samsung's shape")
    func escapedJSONStringJWEIsRefused() throws {
        let minted = bench.mint { $0.wrapper = .jsonString }
        let text = String(decoding: minted.token, as: UTF8.self)
        #expect(try SamsungPayToken.parse(minted.token).envelope == .compactJWE)
        let escaped = Array(text.replacingOccurrences(of: "\"eyJ", with: "\"\\u0065yJ").utf8)
        #expect(escaped != minted.token)
        let error = bench.error(escaped)
        #expect(error?.code == .malformedToken && error?.field == "$", "\(error.map { "\($0)" } ?? "decrypted")")
        #expect(throws: ApplePayError.self) { try SamsungPayToken.parse(escaped) }
        #expect(!SamsungPayToken.hasShape(escaped))
    }

    @Test("hasShape tells Samsung Pay from Apple Pay and Google Pay tokens")
    func shapeTellsWalletsApart() throws {
        #expect(!SamsungPayToken.hasShape(Array(#"{"data":"x","header":{},"signature":"y","version":"EC_v1"}"#.utf8)))
        #expect(!SamsungPayToken.hasShape(Array(#"{"protocolVersion":"ECv2","signedMessage":"{}"}"#.utf8)))
        #expect(!SamsungPayToken.hasShape(Array("eyJhbGciOiJSU0ExXzUifQ.a.b.c".utf8)))
        #expect(SamsungPayToken.hasShape(Array(#"{"card_brand":"VI","3DS":{"data":7}}"#.utf8)))
        #expect(!GooglePayToken.hasShape(bench.mint().token))
    }

    // The long fuzz run of 2026-11-28 (FuzzSamsungPayToken): an app envelope with an added "header" member was
    // a payment to SamsungPayToken.parse and went to Apple Pay at the front door (Wallet.of).
    @Test(
        "an envelope with another wallet's top-level name is malformedToken naming it, and is not of Samsung's shape",
        arguments: ["data", "header", "signedMessage", "protocolVersion"])
    func otherWalletsNamesAreRefused(_ name: String) throws {
        for wrapper in [SamsungPayTestFactory.Wrapper.paymentCredential, .webCheckout] {
            let token = String(decoding: bench.mint { $0.wrapper = wrapper }.token, as: UTF8.self)
            #expect(token.hasSuffix("}"))
            let hostile = Array((token.dropLast() + ",\"\(name)\":\"3DS\"}").utf8)
            #expect(throws: ApplePayError.self) { try SamsungPayToken.parse(hostile) }
            let error = bench.error(hostile)
            #expect(error?.code == .malformedToken && error?.field == name, "\(error.map { "\($0)" } ?? "decrypted")")
            #expect(!SamsungPayToken.hasShape(hostile))
            #expect(hostile.withUnsafeBytes { Wallet.of($0) } != .samsungPay)
        }
    }

    @Test("3DS.type other than S and 3DS.version other than 100 are unsupportedVersion, named in either envelope")
    func envelopeTypeAndVersion() {
        expect({ $0.threeDSType = "G" }, .unsupportedVersion, field: "3DS.type")
        expect({ $0.threeDSVersion = "200" }, .unsupportedVersion, field: "3DS.version")
        expect(
            {
                $0.wrapper = .webCheckout
                $0.threeDSVersion = "101"
            }, .unsupportedVersion, field: "paymentCredential.3DS.version")
    }

    @Test("a duplicate member is refused at every level: envelope, 3DS, web wrapper, protected header, payment")
    func duplicateMembersAtEveryLevel() {
        expect({ $0.duplicateEnvelopeMember = true }, .malformedToken, field: "method")
        expect({ $0.duplicateThreeDSMember = true }, .malformedToken, field: "3DS.type")
        expect(
            {
                $0.wrapper = .webCheckout
                $0.duplicateWebMember = true
            }, .malformedToken, field: "paymentMethod")
        expect(
            {
                $0.wrapper = .webCheckout
                $0.duplicateEnvelopeMember = true
            }, .malformedToken, field: "paymentCredential.method")
        expect({ $0.duplicateHeaderMember = true }, .malformedToken, field: "alg")
        expect({ $0.duplicatePayloadMember = true }, .invalidPayload, field: "amount")
    }

    // MARK: the compact JWE

    @Test("a JWE of four or six parts is malformedToken")
    func exactlyFiveParts() {
        for count in [4, 6] {
            expect({ $0.partCount = count }, .malformedToken, field: "$")
            expect(
                {
                    $0.partCount = count
                    $0.wrapper = .compactJWE
                }, .malformedToken, field: "$")
        }
    }

    @Test(
        "each part must be unpadded base64url: a '+' or a '=' is malformedToken naming the part",
        arguments: SamsungPayTestFactory.Part.allCases)
    func strictBase64URL(_ part: SamsungPayTestFactory.Part) {
        let names = ["protected", "encryptedKey", "iv", "ciphertext", "tag"]
        expect({ $0.nonBase64URLPart = part }, .malformedToken, field: names[part.rawValue])
        expect({ $0.paddedPart = part }, .malformedToken, field: names[part.rawValue])
    }

    @Test("the IV is 12 bytes, the tag 16, the encrypted key the modulus' size")
    func partSizes() {
        expect({ $0.ivLength = 16 }, .malformedToken, field: "iv")
        expect({ $0.tagLength = 12 }, .malformedToken, field: "tag")
        expect({ $0.truncateEncryptedKey = true }, .malformedToken, field: "encryptedKey")
    }

    @Test(
        "a protected header other than Samsung's is unsupportedVersion naming the member, before any key is looked up")
    func protectedHeaderExactly() {
        let unknownKid = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="
        let cases: [(String, (inout SamsungPayTestFactory.Options) -> Void)] = [
            ("alg", { $0.alg = "RSA-OAEP-256" }),
            ("enc", { $0.enc = "A256GCM" }),
            ("typ", { $0.typ = "JWT" }),
            ("channelSecurityContext", { $0.channelSecurityContext = "ECC_PKI" }),
            ("crit", { $0.extraHeaderMembers = [("crit", #"["exp"]"#)] }),
            ("zip", { $0.extraHeaderMembers = [("zip", #""DEF""#)] }),
            ("x5c", { $0.extraHeaderMembers = [("x5c", #"[]"#)] }),
        ]
        for (field, change) in cases {
            expect(change, .unsupportedVersion, field: field)
            // With a kid no key has, the header is still what is refused: it is read first.
            expect(
                {
                    change(&$0)
                    $0.kid = unknownKid
                }, .unsupportedVersion, field: field)
        }
        expect({ $0.typ = nil }, .malformedToken, field: "typ")
        expect({ $0.channelSecurityContext = nil }, .malformedToken, field: "channelSecurityContext")
    }

    // MARK: keys

    @Test("a kid no loaded key has is unknownMerchantKey naming kid")
    func unknownKid() {
        expect({ $0.merchantKeyIndex = 2 }, .unknownMerchantKey, field: "kid")
        expect({ $0.kid = "not-a-kid" }, .unknownMerchantKey, field: "kid")
    }

    @Test("rotated keys: tokens sealed to either loaded key decrypt, each selected by its kid")
    func rotatedKeys() throws {
        for index in [0, 1] {
            let payment = try bench.decryptor.decrypt(
                bench.mint { $0.merchantKeyIndex = index }.token, at: .at(bench.now))
            #expect(payment.kid == bench.factory.kid(index))
        }
        #expect(bench.decryptor.merchantKey(kid: bench.factory.kid(1))?.kid == bench.factory.kid(1))
    }

    @Test("kid is the standard base64 of SHA-256 over the public key's DER SubjectPublicKeyInfo")
    func kidDerivation() throws {
        let key = try bench.factory.merchantKey(0)
        #expect(key.kid == SamsungPayMerchantKey.kid(ofSubjectPublicKeyInfo: bench.factory.merchantPublicKeyDER(0)))
        #expect(key.kid.count == 44 && key.kid.hasSuffix("="))
    }

    @Test("an EC key is not a Samsung Pay key; two keys with one kid are refused")
    func keyChecks() throws {
        let ec = GooglePayTestFactory(merchantKeyCount: 1).merchantKeyPEM()
        #expect(throws: ConfigurationError(.unsupportedKeyType, "")) {
            try SamsungPayMerchantKey(privateKey: Array(ec.utf8))
        }
        #expect(throws: ConfigurationError(.duplicateMerchant, "")) {
            try SamsungPayTokenDecryptor(merchantKeys: [bench.factory.merchantKey(0), bench.factory.merchantKey(0)])
        }
    }

    @Test("a key spec loads as for the other wallets: a bare path, key=PATH, p12= and pkcs11= forms checked")
    func keySpecs() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("samsung-spec-\(getpid())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("key.pem").path
        try bench.factory.merchantKeyPEM(1).write(toFile: path, atomically: true, encoding: .utf8)
        #expect(try SamsungPayMerchantKey(spec: path).kid == bench.factory.kid(1))
        #expect(try SamsungPayMerchantKey(spec: "key=\(path)").kid == bench.factory.kid(1))
        #expect(throws: ConfigurationError(.invalidOption, "")) { try SamsungPayMerchantKey(spec: "pkcs11:token=x") }
        #expect(throws: ConfigurationError(.invalidOption, "")) { try SamsungPayMerchantKey(spec: "key=\(path),pin=1") }
    }

    // MARK: implicit rejection

    @Test("a padding failure of every kind and a tag failure give the identical error: code, field and message")
    func paddingAndTagFailAlike() throws {
        let tagFailure = try #require(bench.error { $0.corruptTag = true })
        #expect(tagFailure.code == .decryptionFailed)
        #expect(tagFailure.field == "tag")
        var failures: [ApplePayError] = []
        for kind in SamsungPayTestFactory.PaddingBreak.allCases {
            failures.append(try #require(bench.error { $0.breakPadding = kind }))
        }
        // RFC 7516's AAD (the ASCII protected header) is not what Samsung's tokens use: refused alike.
        failures.append(try #require(bench.error { $0.rfcAAD = true }))
        // Sealed to key 1 but naming key 0: the wrong key fails as a bad padding does.
        failures.append(
            try #require(
                bench.error {
                    $0.merchantKeyIndex = 1
                    $0.kid = bench.factory.kid(0)
                }))
        for failure in failures {
            #expect(failure.code == tagFailure.code)
            #expect(failure.field == tagFailure.field)
            #expect(failure.message == tagFailure.message)
            #expect(failure.reason == tagFailure.reason)
        }
    }

    // MARK: the payment

    @Test("each payment member is required, a JSON string of its form: otherwise invalidPayload naming it")
    func paymentMembersTyped() {
        let base = SamsungPayTestFactory.payload(utc: SamsungPayTestFactory.milliseconds(bench.now), cryptogram: "AAAA")
        func replacing(_ name: String, with value: String?) -> [UInt8] {
            guard case var .object(members) = try! JSONValue.parse(base) else { return [] }
            if let value {
                members = members.map { $0.0 == name ? (name, try! JSONValue.parse(Array(value.utf8))) : $0 }
            } else {
                members.removeAll { $0.0 == name }
            }
            return Array(JSONValue.object(members).description.utf8)
        }
        let cases: [(String, String?)] = [
            ("amount", nil), ("amount", "1000"), ("amount", #""10.00""#), ("currency_code", #""usd""#),
            ("currency_code", nil), ("utc", #""now""#), ("utc", nil), ("eci_indicator", #""005""#),
            ("tokenPAN", #""4111""#), ("tokenPAN", "4111111111111111"), ("tokenPAN", nil),
            ("tokenPanExpiration", #""1330""#), ("tokenPanExpiration", #""12/30""#), ("cryptogram", #""""#),
            ("cryptogram", nil),
        ]
        for (name, value) in cases {
            let payload = replacing(name, with: value)
            expect({ $0.payload = payload }, .invalidPayload, field: name)
        }
        expect({ $0.payload = Array("[1]".utf8) }, .invalidPayload, field: "$")
        var withName = base
        withName.removeLast()
        withName += Array(#","cardholder_name":7}"#.utf8)
        expect({ $0.payload = withName }, .invalidPayload, field: "cardholder_name")
    }

    @Test("printing a payment masks the token PAN and never shows the cryptogram or the expiry")
    func printingMasks() throws {
        let minted = bench.mint {
            $0.cryptogram = "CRYPTOGRAMxyz="
            $0.expiration = "0931"
            $0.cardholderName = "Jane Doe"
        }
        let payment = try bench.decryptor.decrypt(minted.token, at: .at(bench.now))
        #expect(payment.cardholderName == "Jane Doe")
        for text in [payment.description, String(reflecting: payment), "\(payment)", dumped(payment)] {
            #expect(text.contains("4111********1111"))
            #expect(!text.contains("4111111111111111"))
            #expect(!text.contains("CRYPTOGRAM"))
            #expect(!text.contains("0931"))
        }
    }

    private func dumped(_ payment: SamsungPayment) -> String {
        var text = ""
        dump(payment, to: &text)
        return text
    }

    @Test("the result says wallet and version, masks on request, and claims nothing about Samsung")
    func resultShape() throws {
        let minted = bench.mint { $0.cryptogram = "AgAAAAAABk4DWZ4C28yUQAAAAAA=" }
        let payment = try bench.decryptor.decrypt(minted.token, at: .at(bench.now))
        let out = SensitiveBuffer()
        ResultWriter.write(transactionId: nil, samsungPay: .success(payment), as: .response, into: out)
        let text = out.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
        let json = try JSONValue.parse(Array(text.utf8))
        #expect(json["transactionId"]?.stringValue == payment.transactionId)
        #expect(json["payment"]?["wallet"]?.stringValue == "samsungPay")
        #expect(json["payment"]?["version"]?.stringValue == "100")
        #expect(json["payment"]?["kid"]?.stringValue == bench.factory.kid(0))
        #expect(json["payment"]?["tokenPAN"]?.stringValue == "4111111111111111")
        #expect(json["payment"]?["cryptogram"]?.stringValue == "AgAAAAAABk4DWZ4C28yUQAAAAAA=")
        #expect(!text.lowercased().contains("verified") && !text.contains("Samsung"))
        let masked = SensitiveBuffer()
        var projection = ResultProjection.payment
        projection.maskingPAN = true
        ResultWriter.write(transactionId: nil, samsungPay: .success(payment), as: projection, into: masked)
        let maskedJSON = try masked.withUnsafeBytes { try JSONValue.parse($0) }
        #expect(maskedJSON["tokenPAN"]?.stringValue == "4111********1111")
        let bare = try bench.decryptor.decrypt(bench.mint { $0.wrapper = .compactJWE }.token, at: .at(bench.now))
        let line = SensitiveBuffer()
        ResultWriter.write(
            transactionId: nil, samsungPay: .success(bare), as: .line(index: 3, source: "in.jsonl"), into: line)
        let lineJSON = try line.withUnsafeBytes { try JSONValue.parse($0) }
        #expect(lineJSON["payment"]?["version"] == .null)
        #expect(lineJSON["index"] == .number("3"))
    }

    // MARK: freshness

    @Test("utc outside the window, before or after the reference time, is messageExpired naming utc")
    func freshnessWindow() throws {
        let window = SamsungPayTokenDecryptor.defaultFreshnessWindow * 1000
        expect({ $0.utcOffset = -window - 1 }, .messageExpired, field: "utc")
        expect({ $0.utcOffset = window + 1 }, .messageExpired, field: "utc")
        #expect(bench.error { $0.utcOffset = -window } == nil)
        #expect(bench.error { $0.utcOffset = window } == nil)
        // Re-processing an archive at the signing time checks no freshness.
        #expect(bench.error(bench.mint { $0.utcOffset = -86_400_000 }.token, at: .signingTime) == nil)
    }

    // MARK: replays

    @Test("a re-wrapped copy of a payment (new content key and IV, any envelope) has the same replay identity")
    func replayAcrossWrappers() throws {
        let options = bench.options()
        let first = bench.factory.mint(options)
        let original = try bench.decryptor.decrypt(first.token, at: .at(bench.now))
        let ledger = ReplayLedger()
        ledger.claim(original.replayIdentity, index: 0)
        for wrapper in SamsungPayTestFactory.Wrapper.allCases {
            let copy = bench.factory.rewrap(first, options: options, wrapper: wrapper)
            #expect(copy.token != first.token)
            let payment = try bench.decryptor.decrypt(copy.token, at: .at(bench.now))
            #expect(payment.replayIdentity == original.replayIdentity)
            #expect(ledger.firstClaim(of: payment.replayIdentity) == 0)
        }
        // Another payment: the same card and amount a second later.
        let other = try bench.decryptor.decrypt(bench.mint { $0.utcOffset = 1000 }.token, at: .at(bench.now))
        #expect(ledger.firstClaim(of: other.replayIdentity) == nil)
    }

    @Test(
        "the same payment with another cryptogram is still a replay (tokenPAN, utc, amount); the same cryptogram in another payment too"
    )
    func replayKeys() throws {
        let utc = SamsungPayTestFactory.milliseconds(bench.now)
        func identity(_ amount: String, _ pan: String, _ cryptogram: String) throws -> ReplayIdentity {
            let payload = SamsungPayTestFactory.payload(amount: amount, utc: utc, tokenPAN: pan, cryptogram: cryptogram)
            return try bench.decryptor.decrypt(bench.mint { $0.payload = payload }.token, at: .at(bench.now))
                .replayIdentity
        }
        let a = try identity("1000", "4111111111111111", "AAAAAAAA")
        let ledger = ReplayLedger()
        ledger.claim(a, index: 7)
        #expect(ledger.firstClaim(of: try identity("1000", "4111111111111111", "BBBBBBBB")) == 7)
        #expect(ledger.firstClaim(of: try identity("999", "4000000000000002", "AAAAAAAA")) == 7)
        #expect(ledger.firstClaim(of: try identity("01000", "4111111111111111", "CCCCCCCC")) == 7)
        #expect(ledger.firstClaim(of: try identity("999", "4111111111111111", "DDDDDDDD")) == nil)
    }

    // MARK: the payment request

    @Test(
        "with a payment request, the amount and currency must be the request's: paymentRequestMismatch naming the member"
    )
    func requestBinding() throws {
        let token = bench.mint().token
        _ = try bench.decryptor.decrypt(token, at: .at(bench.now), expecting: RequestJSON().request())
        func mismatch(_ request: RequestJSON) -> String? {
            do throws(ApplePayError) {
                _ = try bench.decryptor.decrypt(token, at: .at(bench.now), expecting: try! request.request())
                return nil
            } catch {
                return error.code == .paymentRequestMismatch ? error.field : "other: \(error)"
            }
        }
        #expect(mismatch(RequestJSON().total("10.01")) == "total.amount")
        #expect(mismatch(RequestJSON().with("currencyCode", .string("EUR"))) == "currencyCode")
        #expect(mismatch(RequestJSON().total("99.00", type: "pending")) == nil)
        #expect(mismatch(RequestJSON().with("applicationData", .string("YWJj"))) == "applicationData")
    }
}

@Suite("Samsung Pay keys and lanes")
struct SamsungPayKeyFormTests {
    @Test("a Samsung Pay key loads from PEM, DER, PKCS#12 and a p12= spec alike, with one kid", .tags(.pkcs12))
    func keyForms() throws {
        let merchant = Fixtures.shared.rsaMerchant
        let factory = try SamsungPayTestFactory(merchantPrivateKeys: [merchant.privateKeyDER])
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("samsung-p12-\(getpid())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let p12 = directory.appendingPathComponent("key.p12").path
        try Data(merchant.pkcs12(password: "pw")).write(to: URL(fileURLWithPath: p12))
        let keys = [
            try SamsungPayMerchantKey(privateKey: Array(merchant.privateKeyPEM.utf8)),
            try SamsungPayMerchantKey(privateKey: merchant.privateKeyDER),
            try SamsungPayMerchantKey(pkcs12File: p12, password: "pw"),
            try SamsungPayMerchantKey(
                spec: "p12=\(p12),password-env=P12_PASSWORD", environment: ["P12_PASSWORD": "pw"]),
        ]
        let minted = factory.mint(SamsungPayTestFactory.Options(now: SamsungPayBench.shared.now))
        for key in keys {
            #expect(key.kid == factory.kid(0))
            let payment = try SamsungPayTokenDecryptor(merchantKeys: [key]).decrypt(
                minted.token, at: .at(SamsungPayBench.shared.now))
            #expect(payment.plaintext.withUnsafeBytes { Array($0) } == minted.payload)
        }
    }

    @Test("one decryptor shared by four threads opens every token, each on its own lane", .tags(.concurrency))
    func sharedAcrossThreads() throws {
        let bench = SamsungPayBench.shared
        let minted = (0..<16).map { i in
            bench.mint {
                $0.utcOffset = Int64(i)
                $0.merchantKeyIndex = i % 2
                $0.breakPadding = i % 5 == 0 ? .blockType : nil
            }
        }
        // A pthread lock ThreadSanitizer sees (Synchronization.Mutex locks with futexes it does not: .ci/tsan.supp).
        let outcomes = SharedOutcomes()
        DispatchQueue.concurrentPerform(iterations: 4) { thread in
            for round in 0..<8 {
                for (i, token) in minted.enumerated() where (i + round + thread) % 2 == 0 {
                    let outcome: String
                    do throws(ApplePayError) {
                        let payment = try bench.decryptor.decrypt(token.token, at: .at(bench.now))
                        outcome = payment.utc == token.utc ? "ok" : "wrong payment"
                    } catch {
                        outcome = error.code.rawValue
                    }
                    outcomes.record(i, outcome)
                }
            }
        }
        let seen = outcomes.all
        for i in 0..<16 { #expect(seen[i] == (i % 5 == 0 ? "decryptionFailed" : "ok")) }
    }
}

/// Each token's outcome as the threads see it, behind a pthread lock.
final class SharedOutcomes: @unchecked Sendable {
    // Sendable: `seen` is only touched under `lock`.
    private let lock = NSLock()
    private var seen: [Int: String] = [:]

    func record(_ i: Int, _ outcome: String) {
        lock.lock()
        defer { lock.unlock() }
        if let known = seen[i], known != outcome { seen[i] = "inconsistent" } else { seen[i] = outcome }
    }

    var all: [Int: String] {
        lock.lock()
        defer { lock.unlock() }
        return seen
    }
}
