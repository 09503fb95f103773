// The integrity rules around verification: the token format read strictly by one reader, replays
// keyed by what Apple signed, claims made only by verified tokens, no trap on any reference time,
// PAN masking that hides at least half, and card data that stays in wiped buffers.
import ApplePayDecryption
import Foundation
import Testing

/// A real Apple token with its merchant, verified at its signing time.
struct RealToken {
    let decryptor: PaymentTokenDecryptor
    let paymentData: JSONValue
    let signingTime: Date

    init(_ name: String = "basistheory-2023-ec-new") throws {
        let vector = AppleVector(name: name)
        let meta = try vector.meta()
        let key = try Data(contentsOf: URL(fileURLWithPath: vector.path(meta.keyFile))).bytes
        let cert = try Data(contentsOf: URL(fileURLWithPath: vector.path(meta.certFile!))).bytes
        decryptor = try PaymentTokenDecryptor(merchants: [try MerchantIdentity(certificate: cert, privateKey: key)])
        var root = try JSONValue.parse(Data(contentsOf: URL(fileURLWithPath: vector.path("token.json"))).bytes)
        while root["version"] == nil, let inner = root["paymentData"] ?? root["token"] { root = inner }
        paymentData = root
        signingTime = try #require(try? Date(meta.signingTime, strategy: .iso8601))
    }

    var transactionId: String { paymentData["header"]!["transactionId"]!.stringValue! }

    func withHeader(_ change: (inout [(String, JSONValue)]) -> Void) -> [UInt8] {
        var header = paymentData["header"]!.objectMembers!
        change(&header)
        return bytes(rewrite(paymentData, path: ["header"]) { _ in .object(header) })
    }

    func batch(_ tokens: [[UInt8]], indices: Range<Int>? = nil) throws -> [BatchResult] {
        var source = ArrayTokenSource(tokens)
        var results: [BatchResult] = []
        try BatchDecryptor(decryptor: decryptor, lanes: 2, reference: .at(signingTime), windowSize: 3)
            .run(&source, indices: indices, deliver: { results.append($0) })
        return results
    }
}

@Suite("Token integrity")
struct TokenIntegrityTests {
    // MARK: the token format

    @Test(
        "applicationData, when present, is exactly 32 bytes: a re-framed real token is malformed", SharedVectors.apple)
    func applicationDataIsExactly32Bytes() throws {
        let real = try RealToken()
        let tx = real.transactionId
        // Move trailing bytes of transactionId into applicationData: Apple's signature still holds.
        for moved in [1, 2, 8, 16] {
            let cut = tx.index(tx.endIndex, offsetBy: -2 * moved)
            let token = real.withHeader { header in
                header = header.map { $0.0 == "transactionId" ? ($0.0, .string(String(tx[..<cut]))) : $0 }
                header.append(("applicationData", .string(String(tx[cut...]))))
            }
            let error = try #require(rejectionError { try real.decryptor.decrypt(token, at: .at(real.signingTime)) })
            #expect(error.code == .malformedToken)
            #expect(error.field == "header.applicationData")
        }
    }

    @Test(
        "transactionId is non-empty even-length hex of at most 32 bytes",
        arguments: ["", "abc", "zz", String(repeating: "ab", count: 33)])
    func transactionIdIsBoundedEvenLengthHex(_ value: String) {
        let f = Fixtures.shared
        let token = bytes(rewrite(f.mint().paymentData, path: ["header", "transactionId"]) { _ in .string(value) })
        let error = rejectionError { try f.decryptor().decrypt(token, at: .at(signingInstant)) }
        #expect(error?.code == .malformedToken)
        #expect(error?.field == "header.transactionId")
    }

    @Test("transactionId is reported as lower-case hex whatever case the token used", SharedVectors.apple)
    func transactionIdIsNormalisedToLowerCase() throws {
        let real = try RealToken()
        let upper = real.withHeader { header in
            header = header.map { $0.0 == "transactionId" ? ($0.0, .string($0.1.stringValue!.uppercased())) : $0 }
        }
        let payment = try real.decryptor.decrypt(upper, at: .at(real.signingTime))
        #expect(payment.transactionId == real.transactionId.lowercased())
        #expect(try PaymentToken.parse(upper).transactionId == real.transactionId.lowercased())
        let results = try real.batch([upper])
        #expect(results[0].transactionId == real.transactionId.lowercased())
    }

    @Test(
        "a duplicate member anywhere in the token, null included, is malformedToken naming the member",
        arguments: [
            (#""applicationData":null,"applicationData":"%AD%""#, "header.applicationData"),
            (#""transactionId":"%TX%","transactionId":"%TX%""#, "header.transactionId"),
        ])
    func duplicateHeaderMembersAreMalformed(_ members: String, _ field: String) {
        let f = Fixtures.shared
        let minted = f.mint()
        let ad = String(repeating: "ab", count: 32)
        var header = minted.paymentData["header"]!.objectMembers!.filter {
            $0.0 != "transactionId" && $0.0 != "applicationData"
        }
        header.append(("__marker__", .null))
        let text = JSONValue.object(
            minted.paymentData.objectMembers!.map { $0.0 == "header" ? ($0.0, .object(header)) : $0 }
        ).description
            .replacingOccurrences(
                of: #""__marker__":null"#,
                with: members.replacingOccurrences(of: "%AD%", with: ad).replacingOccurrences(
                    of: "%TX%", with: minted.transactionId))
        let error = rejectionError { try f.decryptor().decrypt(Array(text.utf8), at: .at(signingInstant)) }
        #expect(error?.code == .malformedToken)
        #expect(error?.field == field)
    }

    @Test(
        "duplicate members in wrappers and in unknown objects are refused too",
        arguments: [
            #"{"paymentData":%PD%,"paymentData":%PD%}"#,
            #"{"token":{"paymentData":%PD%,"paymentMethod":{"type":"debit","type":"credit"}}}"#,
            #"{"x":1,"x":1,"paymentData":%PD%}"#,
        ])
    func duplicatesAnywhereAreRefused(_ template: String) {
        let f = Fixtures.shared
        let text = template.replacingOccurrences(of: "%PD%", with: f.mint().paymentData.description)
        let error = rejectionError { try f.decryptor().decrypt(Array(text.utf8), at: .at(signingInstant)) }
        #expect(error?.code == .malformedToken)
        #expect(error?.message.contains("more than once") == true)
    }

    @Test("one reader: the outcome does not depend on an unrelated escaped member elsewhere")
    func oneReaderWhateverTheEscapes() {
        let f = Fixtures.shared
        // Signed without applicationData; the header then says null and a hex value.
        let text = f.mint().paymentData.description.replacingOccurrences(
            of: #""header":{"#,
            with: #""header":{"applicationData":null,"applicationData":""# + String(repeating: "ab", count: 32) + #"","#
        )
        let escapedElsewhere = #"{"note":"caf\u00e9","# + String(text.dropFirst())
        let a = rejectionError { try f.decryptor().decrypt(Array(text.utf8), at: .at(signingInstant)) }
        let b = rejectionError { try f.decryptor().decrypt(Array(escapedElsewhere.utf8), at: .at(signingInstant)) }
        #expect(a?.code == .malformedToken && a?.field == "header.applicationData")
        #expect(a == b)
    }

    // MARK: replays

    @Test(
        "a replay is a token whose normalised transactionId was already claimed: an upper-cased copy is a replay",
        SharedVectors.apple)
    func upperCasedCopyIsAReplay() throws {
        let real = try RealToken()
        let original = bytes(real.paymentData)
        let upper = real.withHeader { header in
            header = header.map { $0.0 == "transactionId" ? ($0.0, .string($0.1.stringValue!.uppercased())) : $0 }
        }
        let results = try real.batch([original, upper])
        #expect(results[0].outcome.result.isSuccess)
        #expect(results[1].error?.code == .replayedTransaction)
    }

    @Test("re-framing cannot pass: transactionId ‖ applicationData posing as one 64-byte transactionId is malformed")
    func reframingIntoOneLongTransactionIdIsMalformed() throws {
        let f = Fixtures.shared
        let applicationData = String(repeating: "ab", count: 32)
        let minted = f.mint { $0.applicationData = applicationData }
        let joined = bytes(
            rewrite(minted.paymentData, path: ["header"]) { header in
                .object(
                    header.objectMembers!.compactMap { name, value in
                        name == "applicationData"
                            ? nil
                            : (name == "transactionId"
                                ? (name, .string(minted.transactionId + applicationData)) : (name, value))
                    })
            })
        let decryptor = f.decryptor()
        #expect(
            try decryptor.decrypt(minted.bytes, at: .at(signingInstant)).transactionId
                == minted.transactionId.lowercased())
        let error = rejectionError { try decryptor.decrypt(joined, at: .at(signingInstant)) }
        #expect(error?.code == .malformedToken)
        #expect(error?.field == "header.transactionId")
    }

    @Test("a replay is a token whose transactionId or signed content digest was already claimed", SharedVectors.apple)
    func eitherKeyOfAClaimMakesAReplay() throws {
        let real = try RealToken()
        let payment = try real.decryptor.decrypt(bytes(real.paymentData), at: .at(real.signingTime))
        let ledger = ReplayLedger()
        ledger.claim(payment.replayIdentity, index: 3)
        let other = ReplayKey(Array(repeating: UInt8(7), count: 16))!
        #expect(
            ledger.firstClaim(
                of: ReplayIdentity(transactionKey: payment.replayIdentity.transactionKey, contentKey: other)) == 3)
        #expect(
            ledger.firstClaim(of: ReplayIdentity(transactionKey: other, contentKey: payment.replayIdentity.contentKey))
                == 3)
        #expect(ledger.firstClaim(of: ReplayIdentity(transactionKey: other, contentKey: other)) == nil)
    }

    @Test(
        "duplicate checks cost no more for escaped member names: a 1 MiB object of 255 escaped names is read fast",
        SharedVectors.apple)
    func escapedNamesDoNotMakeDuplicateChecksQuadratic() throws {
        let real = try RealToken()
        let names = (0..<255).map {
            "\"" + String(repeating: "\\u0041", count: 680) + String(format: "%03d", $0) + "\":0"
        }
        let text =
            #"{"junk":{"# + names.joined(separator: ",") + "},"
            + String(bytes(real.paymentData).map { Character(UnicodeScalar($0)) }.dropFirst())
        #expect(text.utf8.count > 1_000_000)
        let started = Date()
        let payment = try real.decryptor.decrypt(Array(text.utf8), at: .at(real.signingTime))
        let elapsed = Date().timeIntervalSince(started)
        #expect(payment.transactionId == real.transactionId.lowercased())
        // About 60 s in a debug build before names were hashed once; well under a second now.
        #expect(elapsed < 5, "took \(elapsed) s")
    }

    @Test(
        "only verified tokens claim: a junk token carrying a genuine transactionId does not cancel the genuine one",
        SharedVectors.apple)
    func junkTokensClaimNothing() throws {
        let real = try RealToken()
        let junk = bytes(tamperBase64(real.paymentData, path: ["signature"]) { $0[$0.count - 5] ^= 1 })
        let genuine = bytes(real.paymentData)
        let results = try real.batch([junk, junk, genuine, genuine])
        #expect(results[0].error?.code == .invalidSignature)
        #expect(results[1].error?.code == .invalidSignature)
        #expect(results[2].outcome.result.isSuccess)
        #expect(results[3].error?.code == .replayedTransaction)
    }

    @Test("only verified tokens claim, in shard and resume prefixes too", SharedVectors.apple)
    func prefixesClaimOnlyVerifiedTokens() throws {
        let real = try RealToken()
        let junk = bytes(tamperBase64(real.paymentData, path: ["signature"]) { $0[$0.count - 5] ^= 1 })
        let genuine = bytes(real.paymentData)
        // The junk copy is in the prefix of the second shard: the genuine token must still pass.
        let second = try real.batch([junk, genuine], indices: 1..<2)
        #expect(second.count == 1)
        #expect(second[0].outcome.result.isSuccess)
        // A genuine token in the prefix does make a later copy a replay.
        let third = try real.batch([genuine, genuine], indices: 1..<2)
        #expect(third[0].error?.code == .replayedTransaction)
    }

    @Test("the replay ledger survives a journal round trip", SharedVectors.apple)
    func ledgerJournalRoundTrip() throws {
        let real = try RealToken()
        let payment = try real.decryptor.decrypt(bytes(real.paymentData), at: .at(real.signingTime))
        let ledger = ReplayLedger()
        ledger.claim(payment.replayIdentity, index: 7)
        let records = ledger.takeNewRecords()
        #expect(records.count == ReplayLedger.recordSize)
        #expect(ledger.takeNewRecords().isEmpty)
        let restored = ReplayLedger()
        try restored.restore(records: records)
        #expect(restored.firstClaim(of: payment.replayIdentity) == 7)
        #expect(throws: ConfigurationError.self) { try restored.restore(records: Array(records.dropLast())) }
    }

    // MARK: no traps

    @Test(
        "any reference date at all gives an error code, never a trap",
        arguments: [Double.nan, .infinity, -.infinity, 1e300, -1e300, Double(Int64.max), -Double(Int64.max)])
    func referenceDatesNeverTrap(_ seconds: Double) {
        let f = Fixtures.shared
        let error = rejectionError {
            try f.decryptor().decrypt(f.mint().bytes, at: .at(Date(timeIntervalSince1970: seconds)))
        }
        #expect(error?.code == .signingTimeOutOfRange)
    }

    // MARK: card data

    @Test(
        "PAN masking never shows more than the first 6 and last 4 digits, and hides at least half",
        arguments: [4, 8, 12, 13, 16, 19, 24])
    func panMaskingHidesAtLeastHalf(_ length: Int) {
        let pan = String((0..<length).map { Character(String($0 % 10)) })
        let masked = PANMask.masked(pan)
        #expect(masked.count == length)
        let shownHead = masked.prefix { $0 != "*" }.count
        let shownTail = masked.reversed().prefix { $0 != "*" }.count
        #expect(shownHead <= 6 && shownTail <= 4)
        #expect(masked.filter { $0 == "*" }.count * 2 >= length)
        #expect(masked.prefix(shownHead) == pan.prefix(shownHead) && masked.suffix(shownTail) == pan.suffix(shownTail))
    }

    @Test("the payment is written from the wiped plaintext: compact, complete, PAN masked on request")
    func paymentJSONIsWrittenFromThePlaintext() throws {
        let f = Fixtures.shared
        let payload = Array(
            "{ \"applicationPrimaryAccountNumber\" : \"4761120010000492\",\n \"note\": \"a b\\\"c\", \"n\": [1, 2.50] }"
                .utf8)
        let payment = try f.decryptor().decrypt(f.mint(payload).bytes, at: .at(signingInstant))
        let out = SensitiveBuffer()
        payment.writeJSON(into: out)
        #expect(
            out.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
                == #"{"applicationPrimaryAccountNumber":"4761120010000492","note":"a b\"c","n":[1,2.50]}"#)
        #expect(try JSONValue.parse(out.withUnsafeBytes { Array($0) }) == payment.json)
        out.removeAll()
        payment.writeJSON(into: out, maskingPAN: true)
        #expect(out.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }.contains(#""4761********0492""#))
    }

    @Test("a decrypted payload with a duplicate member is invalidPayload")
    func duplicatePayloadMembersAreInvalid() {
        let f = Fixtures.shared
        let payload = Array(
            #"{"applicationPrimaryAccountNumber":"4761120010000492","applicationPrimaryAccountNumber":"5555555555554444"}"#
                .utf8)
        let error = rejectionError { try f.decryptor().decrypt(f.mint(payload).bytes, at: .at(signingInstant)) }
        #expect(error?.code == .invalidPayload)
        #expect(error?.field == "applicationPrimaryAccountNumber")
    }

    @Test("JSON equality is reflexive, duplicate keys included")
    func jsonEqualityIsReflexive() throws {
        // JSONValue.parse refuses duplicate members, but a value built in code can still hold them.
        let value = JSONValue.object([("a", .number("1")), ("a", .number("2"))])
        #expect(value == value)
        #expect(value != JSONValue.object([("a", .number("2")), ("a", .number("1"))]))
        #expect((try JSONValue.parse(#"{"a":1,"b":2}"#)) == (try JSONValue.parse(#"{"b":2,"a":1}"#)))
    }
}

/// The ApplePayError a body throws, or nil if it succeeds.
func rejectionError(_ body: () throws -> DecryptedPayment) -> ApplePayError? {
    do {
        _ = try body()
        return nil
    } catch let error as ApplePayError {
        return error
    } catch {
        Issue.record("unexpected error type: \(error)")
        return nil
    }
}

extension Result {
    var isSuccess: Bool { if case .success = self { true } else { false } }
}

extension BatchResult {
    /// A Google Pay item's verdict, nil for another wallet's item.
    var googlePay: Result<GooglePayment, ApplePayError>? {
        guard outcome.wallet == .googlePay else { return nil }
        return outcome.result.map { $0.googlePay! }
    }
}
