// Payment-request binding: the request's schema, then each rule that ties a verified token to the
// request it was minted for, on the library, batch envelopes and the CLI.
import ApplePayDecryption
import ApplePayTestSupport
import Foundation
import Testing

/// A payment request as JSON, from a valid base that each test bends.
struct RequestJSON {
    var members: [(String, JSONValue)] = [
        ("countryCode", .string("US")),
        ("currencyCode", .string("USD")),
        ("supportedNetworks", .array([.string("visa"), .string("masterCard")])),
        ("merchantCapabilities", .array([.string("supports3DS")])),
        ("total", .object([("label", .string("Example Shop")), ("amount", .string("10.00"))])),
    ]

    func with(_ name: String, _ value: JSONValue) -> RequestJSON {
        var copy = self
        if let i = copy.members.firstIndex(where: { $0.0 == name }) {
            copy.members[i].1 = value
        } else {
            copy.members.append((name, value))
        }
        return copy
    }

    func without(_ name: String) -> RequestJSON {
        var copy = self
        copy.members.removeAll { $0.0 == name }
        return copy
    }

    func total(_ amount: String, type: String? = nil, timing: String? = nil) -> RequestJSON {
        var item: [(String, JSONValue)] = [("label", .string("Example Shop")), ("amount", .string(amount))]
        if let type { item.append(("type", .string(type))) }
        if let timing { item.append(("paymentTiming", .string(timing))) }
        return with("total", .object(item))
    }

    var json: JSONValue { .object(members) }
    var bytes: [UInt8] { Array(json.description.utf8) }
    func request() throws -> PaymentRequest { try PaymentRequest(json: bytes) }
}

func lineItem(_ amount: String, type: String = "final", timing: String? = nil) -> JSONValue {
    var item: [(String, JSONValue)] = [
        ("label", .string("Item")), ("amount", .string(amount)), ("type", .string(type)),
    ]
    if let timing { item.append(("paymentTiming", .string(timing))) }
    return .object(item)
}

/// The member a validation error names, or nil when the request is valid.
func invalidMember(_ bytes: [UInt8]) -> String? {
    do {
        _ = try PaymentRequest(json: bytes)
        return nil
    } catch {
        return error.member
    }
}

/// base64 of a UTF-8 text, and the hex SHA-256 of that text (what header.applicationData carries).
func applicationData(_ text: String) -> (base64: String, hashHex: String) {
    let hash = MerchantIdentity.merchantIdentifierHash(text)  // SHA-256 of the UTF-8 bytes
    return (Data(text.utf8).base64EncodedString(), hash.map { String(format: "%02x", $0) }.joined())
}

@Suite("Payment request: schema validation")
struct PaymentRequestSchemaTests {
    @Test("a valid request decodes, with its ISO 4217 currency resolved")
    func validRequest() throws {
        let request = try RequestJSON().request()
        #expect(request.currency.numericCode == 840 && request.currency.minorUnitExponent == 2)
        #expect(request.supportedNetworks == [.visa, .masterCard])
        #expect(request.total.type == .final)
    }

    @Test(
        "each required member, when missing, is named",
        arguments: ["countryCode", "currencyCode", "supportedNetworks", "merchantCapabilities", "total"])
    func requiredMember(_ name: String) {
        #expect(invalidMember(RequestJSON().without(name).bytes) == name)
    }

    @Test(
        "total.amount must match ^-?\\d+\\.\\d{2}$: exponents, hex, spaces, signs, extra digits, Unicode digits are refused",
        arguments: [
            "1e2", "0x10", " 1.00", "1.00 ", "1.000", "+1.00", "1", "1.", ".50", "1.5", "1,00", "١.٠٠", "１.００",
            "1.00\n", "", "--1.00",
        ])
    func amountPattern(_ amount: String) {
        #expect(invalidMember(RequestJSON().total(amount).bytes) == "total.amount")
    }

    @Test("an amount must be a string, not a JSON number")
    func amountNotNumber() {
        #expect(
            invalidMember(
                RequestJSON().with("total", .object([("label", .string("x")), ("amount", .number("10.00"))])).bytes)
                == "total.amount")
    }

    @Test(
        "currencyCode must be three upper-case letters of an ISO 4217 currency with a minor unit",
        arguments: ["usd", "Usd", "US", "USDD", "ABC", "XAU", "XTS", "ＵＳＤ"])
    func currencyCode(_ code: String) {
        #expect(invalidMember(RequestJSON().with("currencyCode", .string(code)).bytes) == "currencyCode")
    }

    @Test("countryCode must be two upper-case letters", arguments: ["us", "USA", "U", "U1"])
    func countryCode(_ code: String) {
        #expect(invalidMember(RequestJSON().with("countryCode", .string(code)).bytes) == "countryCode")
    }

    @Test("enums are the schema's spelling, case-sensitive, named by index")
    func enums() {
        #expect(
            invalidMember(RequestJSON().with("supportedNetworks", .array([.string("visa"), .string("Visa")])).bytes)
                == "supportedNetworks[1]")
        #expect(
            invalidMember(RequestJSON().with("merchantCapabilities", .array([.string("supports3ds")])).bytes)
                == "merchantCapabilities[0]")
        #expect(invalidMember(RequestJSON().total("1.00", type: "estimated").bytes) == "total.type")
        #expect(invalidMember(RequestJSON().total("1.00", timing: "later").bytes) == "total.paymentTiming")
        #expect(invalidMember(RequestJSON().with("shippingType", .string("teleport")).bytes) == "shippingType")
        #expect(
            invalidMember(RequestJSON().with("requiredBillingContactFields", .array([.string("ssn")])).bytes)
                == "requiredBillingContactFields[0]")
    }

    @Test("minItems: supportedNetworks and merchantCapabilities may not be empty")
    func minItems() {
        #expect(invalidMember(RequestJSON().with("supportedNetworks", .array([])).bytes) == "supportedNetworks")
        #expect(invalidMember(RequestJSON().with("merchantCapabilities", .array([])).bytes) == "merchantCapabilities")
    }

    @Test("nested members are named by their path")
    func nestedPaths() {
        #expect(
            invalidMember(RequestJSON().with("lineItems", .array([lineItem("1.00"), lineItem("2")])).bytes)
                == "lineItems[1].amount")
        let recurring = JSONValue.object([
            ("paymentDescription", .string("Plan")), ("regularBilling", lineItem("5.00")),
        ])
        #expect(
            invalidMember(RequestJSON().with("recurringPaymentRequest", recurring).bytes)
                == "recurringPaymentRequest.managementURL")
        let badCount = JSONValue.object([
            ("label", .string("x")), ("amount", .string("1.00")), ("recurringPaymentIntervalCount", .number("0")),
        ])
        #expect(
            invalidMember(RequestJSON().with("lineItems", .array([badCount])).bytes)
                == "lineItems[0].recurringPaymentIntervalCount")
        let badDate = JSONValue.object([
            ("label", .string("x")), ("amount", .string("1.00")), ("deferredPaymentDate", .string("tomorrow")),
        ])
        #expect(invalidMember(RequestJSON().with("total", badDate).bytes) == "total.deferredPaymentDate")
        let context = JSONValue.object([
            ("merchantIdentifier", .string("merchant.a")), ("externalIdentifier", .string("a")),
            ("merchantName", .string("A")), ("merchantDomain", .string("a.example")), ("amount", .string("1e3")),
        ])
        #expect(
            invalidMember(RequestJSON().with("multiTokenContexts", .array([context])).bytes)
                == "multiTokenContexts[0].amount")
        #expect(
            invalidMember(RequestJSON().with("supportedCountries", .array([.string("us")])).bytes)
                == "supportedCountries[0]")
    }

    @Test(
        "applicationData must be non-empty standard base64",
        arguments: ["", "!!!!", "b3JkZXI tMQ==", "b3JkZXItMQ=x", "b3JkZXItMQ==\n"])
    func applicationDataBase64(_ text: String) {
        #expect(invalidMember(RequestJSON().with("applicationData", .string(text)).bytes) == "applicationData")
    }

    @Test("strict JSON: not JSON, not an object, a duplicate member (named), a wrong type")
    func strictJSON() {
        #expect(invalidMember(Array("{".utf8)) == "$")
        #expect(invalidMember(Array("[]".utf8)) == "$")
        #expect(invalidMember(Array(#"{"countryCode":"US","countryCode":"GB"}"#.utf8)) == "countryCode")
        #expect(invalidMember(RequestJSON().with("total", .string("10.00")).bytes) == "total")
        #expect(invalidMember(RequestJSON().with("supportedNetworks", .string("visa")).bytes) == "supportedNetworks")
    }

    @Test("members the schema does not name are allowed")
    func unknownMembers() {
        #expect(invalidMember(RequestJSON().with("couponCode", .string("SPRING")).bytes) == nil)
    }
}

@Suite("Payment request binding")
struct PaymentRequestBindingTests {
    let f = Fixtures.shared
    let at = ReferenceTime.at(signingInstant)

    func decrypt(_ token: [UInt8], _ request: RequestJSON) throws -> ApplePayError? {
        let decryptor = f.decryptor()
        let parsed = try request.request()
        do throws(ApplePayError) {
            _ = try decryptor.decrypt(token, at: at, expecting: parsed)
            return nil
        } catch {
            return error
        }
    }

    /// The field of the mismatch, "ok" when the token passes; any other code is a failure.
    func outcome(_ token: [UInt8], _ request: RequestJSON) throws -> String {
        guard let error = try decrypt(token, request) else { return "ok" }
        #expect(error.code == .paymentRequestMismatch, "\(error)")
        return error.field ?? "(no field)"
    }

    // MARK: amount and currency

    @Test(
        "total.amount equals transactionAmount in the currency's minor units (each exponent)",
        arguments: [
            ("USD", "840", "10.00", 1000), ("EUR", "978", "25.99", 2599), ("JPY", "392", "1000.00", 1000),
            ("KRW", "410", "5000.00", 5000),
            ("BHD", "048", "1.25", 1250), ("KWD", "414", "0.50", 500), ("JOD", "400", "12.34", 12340),
            ("CLF", "990", "1.00", 10000),
            ("USD", "840", "0.00", 0), ("USD", "840", "0010.00", 1000),
        ])
    func amountInMinorUnits(_ alpha: String, _ numeric: String, _ amount: String, _ minor: Int) throws {
        let token = f.mint(TestPayload.threeDSecure(currency: numeric, amount: minor)).bytes
        let request = RequestJSON().with("currencyCode", .string(alpha)).total(amount)
        #expect(try outcome(token, request) == "ok")
        let off = f.mint(TestPayload.threeDSecure(currency: numeric, amount: minor + 1)).bytes
        #expect(try outcome(off, request) == "total.amount")
    }

    @Test(
        "an amount read with the wrong exponent is a mismatch: 10.00 USD is not 10 minor units, nor 1000.00 JPY 100000")
    func wrongExponent() throws {
        #expect(
            try outcome(
                f.mint(TestPayload.threeDSecure(currency: "840", amount: 10)).bytes, RequestJSON().total("10.00"))
                == "total.amount")
        let yen = RequestJSON().with("currencyCode", .string("JPY")).total("1000.00")
        #expect(
            try outcome(f.mint(TestPayload.threeDSecure(currency: "392", amount: 100000)).bytes, yen) == "total.amount")
    }

    @Test("JPY has no minor unit: 1000.50 JPY matches no token amount")
    func finerThanMinorUnit() throws {
        let request = RequestJSON().with("currencyCode", .string("JPY")).total("1000.50")
        for amount in [1000, 1001, 100050] {
            #expect(
                try outcome(f.mint(TestPayload.threeDSecure(currency: "392", amount: amount)).bytes, request)
                    == "total.amount")
        }
    }

    @Test("negative totals (even -0.00) and totals beyond any integer match no token")
    func negativeAndHuge() throws {
        #expect(
            try outcome(f.mint(TestPayload.threeDSecure(amount: 1000)).bytes, RequestJSON().total("-10.00"))
                == "total.amount")
        #expect(
            try outcome(f.mint(TestPayload.threeDSecure(amount: 0)).bytes, RequestJSON().total("-0.00"))
                == "total.amount")
        let huge = RequestJSON().total("184467440737095516.16")  // 2^64 minor units
        #expect(try outcome(f.mint(TestPayload.threeDSecure(amount: 0)).bytes, huge) == "total.amount")
        #expect(
            try outcome(
                f.mint(TestPayload.threeDSecure(amount: 1000)).bytes,
                RequestJSON().total("99999999999999999999999999.00")) == "total.amount")
    }

    @Test("a transactionAmount that is not plain digits never matches")
    func payloadAmountForms() throws {
        for text in ["1e3", "1000.0", "-1000"] {
            var members = try #require(try JSONValue.parse(TestPayload.threeDSecure()).objectMembers)
            members = members.map { $0.0 == "transactionAmount" ? ($0.0, .number(text)) : $0 }
            let token = f.mint(Array(JSONValue.object(members).description.utf8)).bytes
            #expect(try outcome(token, RequestJSON().total("10.00")) == "total.amount", "\(text)")
        }
    }

    @Test("currencyCode: the payload's numeric code must be the request currency's")
    func currencyMismatch() throws {
        let token = f.mint(TestPayload.threeDSecure(currency: "840", amount: 1000)).bytes
        #expect(try outcome(token, RequestJSON().with("currencyCode", .string("EUR"))) == "currencyCode")
        #expect(try outcome(token, RequestJSON().with("currencyCode", .string("CAD"))) == "currencyCode")
        // ISO 4217 numeric codes have three digits: "48" is not BHD's "048".
        let bhd = f.mint(TestPayload.threeDSecure(currency: "48", amount: 1250)).bytes
        #expect(try outcome(bhd, RequestJSON().with("currencyCode", .string("BHD")).total("1.25")) == "currencyCode")
    }

    // MARK: pending, recurring, deferred, automatic reload

    @Test("a pending total is not compared (the currency still is)")
    func pendingTotal() throws {
        let request = RequestJSON().total("10.00", type: "pending")
        #expect(try outcome(f.mint(TestPayload.threeDSecure(amount: 1234)).bytes, request) == "ok")
        #expect(
            try outcome(f.mint(TestPayload.threeDSecure(currency: "978", amount: 1234)).bytes, request)
                == "currencyCode")
    }

    @Test(
        "recurring: a final total is compared exactly, whatever the billings say; only a pending total leaves the amount open"
    )
    func recurring() throws {
        func recurring(regular: JSONValue, trial: JSONValue? = nil) -> RequestJSON {
            var members: [(String, JSONValue)] = [
                ("paymentDescription", .string("Plan")), ("regularBilling", regular),
                ("managementURL", .string("https://example.com/manage")),
            ]
            if let trial { members.append(("trialBilling", trial)) }
            return RequestJSON().total("10.00", timing: "recurring").with("recurringPaymentRequest", .object(members))
        }
        let ten = f.mint(TestPayload.threeDSecure(amount: 1000)).bytes
        let other = f.mint(TestPayload.threeDSecure(amount: 1500)).bytes
        #expect(try outcome(ten, recurring(regular: lineItem("10.00", timing: "recurring"))) == "ok")
        #expect(try outcome(other, recurring(regular: lineItem("10.00", timing: "recurring"))) == "total.amount")
        // A pending billing beside a final total does not open the amount (a cheap token must not pass a dear order).
        #expect(
            try outcome(other, recurring(regular: lineItem("10.00", type: "pending", timing: "recurring")))
                == "total.amount")
        #expect(
            try outcome(other, recurring(regular: lineItem("10.00"), trial: lineItem("0.00", type: "pending")))
                == "total.amount")
        #expect(
            try outcome(other, recurring(regular: lineItem("10.00", type: "pending"), trial: lineItem("0.00")))
                == "total.amount")
        // A pending total does.
        let pendingTotal = recurring(regular: lineItem("10.00", type: "pending", timing: "recurring")).total(
            "10.00", type: "pending", timing: "recurring")
        #expect(try outcome(other, pendingTotal) == "ok")
    }

    @Test("automatic reload: a final total is compared exactly even beside a pending reload billing")
    func automaticReload() throws {
        func reload(_ billing: JSONValue) -> RequestJSON {
            RequestJSON().total("10.00", timing: "automaticReload").with(
                "automaticReloadPaymentRequest",
                .object([
                    ("paymentDescription", .string("Top-up")), ("automaticReloadBilling", billing),
                    ("managementURL", .string("https://example.com/m")),
                ]))
        }
        let other = f.mint(TestPayload.threeDSecure(amount: 2000)).bytes
        #expect(try outcome(other, reload(lineItem("10.00", timing: "automaticReload"))) == "total.amount")
        #expect(
            try outcome(other, reload(lineItem("10.00", type: "pending", timing: "automaticReload"))) == "total.amount")
    }

    @Test("deferred: the token carries the deferred total, compared exactly")
    func deferred() throws {
        let request = RequestJSON().total("10.00", timing: "deferred")
        #expect(try outcome(f.mint(TestPayload.threeDSecure(amount: 1000)).bytes, request) == "ok")
        #expect(try outcome(f.mint(TestPayload.threeDSecure(amount: 999)).bytes, request) == "total.amount")
    }

    // MARK: applicationData

    @Test("applicationData: header.applicationData must be the SHA-256 of the request's decoded applicationData")
    func applicationDataHash() throws {
        let order = applicationData("order-1")
        let token = f.mint { $0.applicationData = order.hashHex }.bytes
        #expect(try outcome(token, RequestJSON().with("applicationData", .string(order.base64))) == "ok")
        #expect(
            try outcome(token, RequestJSON().with("applicationData", .string(applicationData("order-2").base64)))
                == "applicationData")
    }

    @Test("applicationData present on one side only is a mismatch")
    func applicationDataOneSided() throws {
        let order = applicationData("order-1")
        #expect(try outcome(f.mint { $0.applicationData = order.hashHex }.bytes, RequestJSON()) == "applicationData")
        #expect(
            try outcome(f.mint().bytes, RequestJSON().with("applicationData", .string(order.base64)))
                == "applicationData")
    }

    @Test(
        "a token bound to one request is rejected against another (the 1.00 USD token replayed for a 900.00 USD order)")
    func boundToOneRequest() throws {
        let first = applicationData("order-1"), second = applicationData("order-2")
        let token = f.mint(TestPayload.threeDSecure(amount: 100)) { $0.applicationData = first.hashHex }.bytes
        let own = RequestJSON().total("1.00").with("applicationData", .string(first.base64))
        #expect(try outcome(token, own) == "ok")
        #expect(
            try outcome(token, RequestJSON().total("900.00").with("applicationData", .string(second.base64)))
                == "applicationData")
        // Even with the first order's applicationData copied over, the amount gives it away.
        #expect(
            try outcome(token, RequestJSON().total("900.00").with("applicationData", .string(first.base64)))
                == "total.amount")
    }

    @Test("verification comes first: a tampered token is invalidSignature, not a mismatch")
    func verificationFirst() throws {
        let minted = f.mint()
        let tampered = tamperBase64(minted.paymentData, path: ["data"]) { $0[0] ^= 1 }
        #expect(try decrypt(Array(tampered.description.utf8), RequestJSON().total("99.00"))?.code == .invalidSignature)
    }

    // MARK: capabilities and networks

    @Test("merchantCapabilities: a 3DSecure payload needs supports3DS, an EMV one supportsEMV")
    func capabilities() throws {
        let threeDS = f.mint(TestPayload.threeDSecure(amount: 1000)).bytes
        let emv = f.mint(TestPayload.emv(currency: "840", amount: 1000)).bytes
        let emvOnly = RequestJSON().with("merchantCapabilities", .array([.string("supportsEMV")]))
        let both = RequestJSON().with("merchantCapabilities", .array([.string("supports3DS"), .string("supportsEMV")]))
        #expect(try outcome(threeDS, RequestJSON()) == "ok")
        #expect(try outcome(threeDS, emvOnly) == "merchantCapabilities")
        #expect(try outcome(emv, emvOnly) == "ok")
        #expect(try outcome(emv, RequestJSON()) == "merchantCapabilities")
        #expect(try outcome(emv, both) == "ok")
    }

    @Test("a paymentDataType that is neither 3DSecure nor EMV (or none) matches no capability")
    func unknownPaymentDataType() throws {
        let all = RequestJSON().with(
            "merchantCapabilities",
            .array(["supports3DS", "supportsEMV", "supportsCredit", "supportsDebit"].map { .string($0) }))
        for type in ["3dsecure", "emv", "CryptogramOnly", nil] as [String?] {
            #expect(
                try outcome(f.mint(TestPayload.withPaymentDataType(type)).bytes, all) == "merchantCapabilities",
                "\(type ?? "nil")")
        }
    }

    @Test("supportsCredit/supportsDebit: when named, the wrapper's paymentMethod.type must be one of them")
    func cardType() throws {
        let minted = f.mint()
        let debit = TokenWrapping.pkPaymentToken.wrap(
            minted.paymentData, transactionId: minted.transactionId, cardType: "debit")
        #expect(
            try outcome(
                debit,
                RequestJSON().with("merchantCapabilities", .array([.string("supports3DS"), .string("supportsCredit")])))
                == "merchantCapabilities")
        #expect(
            try outcome(
                debit,
                RequestJSON().with("merchantCapabilities", .array([.string("supports3DS"), .string("supportsDebit")])))
                == "ok")
        #expect(try outcome(debit, RequestJSON()) == "ok")
    }

    @Test(
        "supportedNetworks: where the token carries paymentMethod.network (PKPaymentToken and Apple Pay JS), case-insensitively"
    )
    func networks() throws {
        let minted = f.mint()
        for wrapping in [TokenWrapping.pkPaymentToken, .applePayJS] {
            func token(_ network: String?) -> [UInt8] {
                wrapping.wrap(minted.paymentData, transactionId: minted.transactionId, network: network)
            }
            #expect(try outcome(token("Visa"), RequestJSON()) == "ok")
            #expect(try outcome(token("MasterCard"), RequestJSON()) == "ok")
            #expect(try outcome(token("AmEx"), RequestJSON()) == "supportedNetworks")
            #expect(
                try outcome(token("AmEx"), RequestJSON().with("supportedNetworks", .array([.string("amex")]))) == "ok")
            #expect(
                try outcome(token("QUICPay"), RequestJSON().with("supportedNetworks", .array([.string("quicPay")])))
                    == "ok")
            #expect(try outcome(token("Maestro"), RequestJSON()) == "supportedNetworks")
            #expect(try outcome(token("Visa "), RequestJSON()) == "supportedNetworks")
            #expect(try outcome(token(nil), RequestJSON().with("supportedNetworks", .array([.string("amex")]))) == "ok")
        }
        // Bare and base64 tokens carry no paymentMethod: nothing to compare.
        #expect(
            try outcome(
                TokenWrapping.base64String.wrap(minted.paymentData, transactionId: minted.transactionId),
                RequestJSON().with("supportedNetworks", .array([.string("amex")]))) == "ok")
        // A paymentMethod.network that is not a string never matches.
        let odd = JSONValue.object([
            ("paymentData", minted.paymentData), ("paymentMethod", .object([("network", .number("1"))])),
        ])
        #expect(try outcome(Array(odd.description.utf8), RequestJSON()) == "supportedNetworks")
    }

    // MARK: multiTokenContexts

    func context(_ merchant: String, _ amount: String) -> JSONValue {
        .object([
            ("merchantIdentifier", .string(merchant)), ("externalIdentifier", .string("ext-\(merchant)")),
            ("merchantName", .string("M")),
            ("merchantDomain", .string("m.example")), ("amount", .string(amount)),
        ])
    }

    @Test(
        "multiTokenContexts: the token's merchant (the identifier behind the key that opened it) must be a context, with that context's amount"
    )
    func multiTokenContexts() throws {
        let ec = f.mint(TestPayload.threeDSecure(amount: 1000)).bytes
        let request = RequestJSON().total("30.00").with(
            "multiTokenContexts",
            .array([
                context("merchant.com.example.other", "20.00"), context(f.ecMerchant.identifier, "10.00"),
            ]))
        #expect(try outcome(ec, request) == "ok")
        #expect(
            try outcome(f.mint(TestPayload.threeDSecure(amount: 2000)).bytes, request) == "multiTokenContexts[1].amount"
        )
        let elsewhere = RequestJSON().with(
            "multiTokenContexts", .array([context("merchant.com.example.other", "10.00")]))
        #expect(try outcome(ec, elsewhere) == "multiTokenContexts")
        // Case matters: merchant identifiers are compared as Apple hashes them, byte for byte.
        #expect(
            try outcome(
                ec,
                RequestJSON().with(
                    "multiTokenContexts", .array([context(f.ecMerchant.identifier.uppercased(), "10.00")])))
                == "multiTokenContexts")
        // The same merchant twice would let two cheap tokens each pass as "one of them": the request is refused.
        let twice = RequestJSON().with(
            "multiTokenContexts",
            .array([context(f.ecMerchant.identifier, "5.00"), context(f.ecMerchant.identifier, "10.00")]))
        #expect(invalidMember(twice.bytes) == "multiTokenContexts[1].merchantIdentifier")
    }

    @Test("multiTokenContexts work for an RSA_v1 merchant through its certificate's merchant identifier")
    func multiTokenContextsRSA() throws {
        let rsa = f.mint(TestPayload.threeDSecure(amount: 1000), for: f.rsaMerchant).bytes
        #expect(
            try outcome(
                rsa, RequestJSON().with("multiTokenContexts", .array([context(f.rsaMerchant.identifier, "10.00")])))
                == "ok")
        #expect(
            try outcome(
                rsa, RequestJSON().with("multiTokenContexts", .array([context(f.ecMerchant.identifier, "10.00")])))
                == "multiTokenContexts")
    }
}

@Suite("Payment request binding: batch envelopes and the CLI")
struct PaymentRequestEnvelopeTests {
    let f = Fixtures.shared

    func envelope(_ token: [UInt8], _ request: JSONValue) -> [UInt8] {
        Array("{\"paymentToken\":".utf8) + token + Array(",\"paymentRequest\":\(request.description)}".utf8)
    }

    func run(_ items: [[UInt8]]) throws -> [BatchResult] {
        var source = ArrayTokenSource(items)
        var results: [BatchResult] = []
        let batch = BatchDecryptor(decryptor: f.decryptor(), lanes: 2, reference: .at(signingInstant), windowSize: 3)
        try batch.run(&source, deliver: { results.append($0) })
        return results
    }

    func code(_ result: BatchResult) -> String {
        if case let .failure(error) = result.outcome.result { return "\(error.code.rawValue):\(error.field ?? "")" }
        return "ok"
    }

    @Test(
        "a batch line {paymentToken, paymentRequest} is decrypted and bound; a mismatched token claims nothing in the ledger"
    )
    func envelopeLines() throws {
        let a = f.mint(TestPayload.threeDSecure(amount: 1000)), b = f.mint(TestPayload.threeDSecure(amount: 500))
        let ten = RequestJSON().json, five = RequestJSON().total("5.00").json
        let results = try run([
            envelope(a.bytes, five),  // mismatch: claims nothing
            // a, bound: ok, claims
            envelope(TokenWrapping.applePayJS.wrap(a.paymentData, transactionId: a.transactionId), ten),
            a.bytes,  // plain replay of a
            envelope(a.bytes, ten),  // bound replay of a
            envelope(b.bytes, five),  // b, bound: ok
            // mismatch beats replay
            envelope(b.bytes, RequestJSON().total("5.00").with("currencyCode", .string("EUR")).json),
        ])
        #expect(
            results.map(code) == [
                "paymentRequestMismatch:total.amount", "ok", "replayedTransaction:header.transactionId",
                "replayedTransaction:header.transactionId",
                "ok", "paymentRequestMismatch:currencyCode",
            ])
        #expect(results[0].transactionId == a.transactionId)
    }

    @Test(
        "an envelope whose request breaks the schema is malformedToken naming paymentRequest.MEMBER; extra members are refused; no request is an unbound token"
    )
    func badEnvelopes() throws {
        let a = f.mint(), c = f.mint()
        let results = try run([
            envelope(a.bytes, RequestJSON().total("10").json),
            envelope(a.bytes, .string("x")),
            Array("{\"paymentToken\":".utf8) + c.bytes + Array("}".utf8),
            Array("{\"paymentToken\":".utf8) + a.bytes
                + Array(",\"paymentRequest\":\(RequestJSON().total("900.00").json),\"note\":1}".utf8),
            // A request beside a token outside the envelope, or an envelope the cheap filter does not see
            // (an escaped member name), is refused: never decrypted without its request.
            Array("{\"paymentData\":".utf8) + a.bytes
                + Array(",\"paymentRequest\":\(RequestJSON().total("900.00").json)}".utf8),
            Array("{\"payment\\u0054oken\":".utf8) + a.bytes
                + Array(",\"paymentRequest\":\(RequestJSON().total("900.00").json)}".utf8),
            a.bytes,  // not claimed by any of the above
        ])
        #expect(
            results.map(code) == [
                "malformedToken:paymentRequest.total.amount", "malformedToken:paymentRequest", "ok",
                "malformedToken:note", "malformedToken:paymentRequest", "malformedToken:paymentRequest", "ok",
            ])
    }

    @Test(
        "CLI decrypt --payment-request: exit 0 when bound, exit 1 with paymentRequestMismatch and the field, exit 2 naming a bad member"
    )
    func cliFlag() throws {
        let dir = ScratchDirectory()
        let root = dir.write("root.pem", f.pki.rootPEM)
        let cert = dir.write("merchant.pem", f.ecMerchant.certificatePEM)
        let key = dir.write("merchant.key", f.ecMerchant.privateKeyPEM)
        let common = ["--merchant", "cert=\(cert),key=\(key)", "--trust-root", root, "--now", "2026-03-01T12:00:00Z"]
        let token = dir.write("token.json", f.mint(TestPayload.threeDSecure(amount: 1000)).bytes)
        let good = dir.write("good.json", RequestJSON().bytes)
        let wrong = dir.write("wrong.json", RequestJSON().total("900.00").bytes)
        let invalid = dir.write("invalid.json", RequestJSON().with("currencyCode", .string("usd")).bytes)

        let ok = try runCLI(["decrypt", token, "--payment-request", good] + common)
        #expect(ok.status == 0, "\(ok.stderr)")
        let mismatch = try runCLI(["decrypt", token, "--payment-request", wrong] + common)
        #expect(mismatch.status == 1)
        let output = try JSONValue.parse(mismatch.stdout)
        #expect(output["error"]?.stringValue == "paymentRequestMismatch")
        #expect(output["field"]?.stringValue == "total.amount")
        let bad = try runCLI(["decrypt", token, "--payment-request", invalid] + common)
        #expect(bad.status == 2)
        #expect(bad.stderr.contains("currencyCode"))
        #expect(bad.stdout.isEmpty)
    }

    @Test("CLI batch: an envelope line gets paymentRequestMismatch in the result file")
    func cliBatchEnvelope() throws {
        let dir = ScratchDirectory()
        let root = dir.write("root.pem", f.pki.rootPEM)
        let cert = dir.write("merchant.pem", f.ecMerchant.certificatePEM)
        let key = dir.write("merchant.key", f.ecMerchant.privateKeyPEM)
        let a = f.mint(TestPayload.threeDSecure(amount: 1000))
        let input = dir.write(
            "in.jsonl",
            envelope(a.bytes, RequestJSON().total("9.00").json) + [0x0A] + envelope(a.bytes, RequestJSON().json) + [
                0x0A
            ])
        let out = dir.url.appendingPathComponent("out.jsonl").path
        let result = try runCLI([
            "batch", input, "--out", out, "--merchant", "cert=\(cert),key=\(key)", "--trust-root", root,
            "--now", "2026-03-01T12:00:00Z", "--quiet",
        ])
        #expect(result.status == 0, "\(result.stderr)")
        let lines = try String(contentsOfFile: out, encoding: .utf8).split(separator: "\n").map {
            try JSONValue.parse(String($0))
        }
        #expect(lines.count == 2)
        #expect(lines.first?["error"]?.stringValue == "paymentRequestMismatch")
        #expect(lines.first?["field"]?.stringValue == "total.amount")
        #expect(lines.last?["payment"] != nil)
    }
}
