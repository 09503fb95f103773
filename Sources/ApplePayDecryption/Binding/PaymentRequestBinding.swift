// The binding check: after a token verified and decrypted, is it the payment the merchant's request
// asked for? Each contradiction is `paymentRequestMismatch` naming the request member.
internal import ApplePayCrypto
#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// What the check reads from a verified token besides its decrypted payload.
struct BindingEvidence {
    /// `header.applicationData`, decoded (32 bytes), when the token carries it. Covered by the signature.
    var applicationData: [UInt8]?
    /// SHA-256 of the merchant identifier of the key that opened the token (its KDF partyV), if known.
    var merchantIdentifierHash: [UInt8]?
    /// `paymentMethod.network` and `.type` of the wrapper, when present. NOT covered by Apple's
    /// signature: a defence in depth only (whoever holds the token can rewrite or drop them).
    var paymentMethod: PaymentMethodFields

    init(view: TokenView, merchant: MerchantIdentity?) {
        applicationData = view.fields.applicationData.map { Array(view[$0]) }
        merchantIdentifierHash = merchant?.partyV
        paymentMethod = PaymentMethodFields(view)
    }
}

/// The wrapper's `paymentMethod` members the check reads.
struct PaymentMethodFields {
    enum Text: Equatable {
        case absent
        case value(String)
        /// Present but not a string (or paymentMethod not an object): never matches anything.
        case invalid
    }

    var network: Text = .absent
    var type: Text = .absent

    /// What the token reader found beside `paymentData` in a PKPaymentToken (`{paymentData,
    /// paymentMethod, …}`) or an Apple Pay JS payment (`{"token": {paymentData, paymentMethod, …}}`),
    /// in the same walk that found the token. Bare or base64 tokens carry none.
    init(_ view: TokenView) {
        func text(_ found: PaymentMethodText.Text) -> Text {
            switch found {
            case .absent: return .absent
            case .invalid: return .invalid
            case let .text(range): return .value(String(decoding: view[range], as: UTF8.self))
            }
        }
        network = text(view.fields.paymentMethod.network)
        type = text(view.fields.paymentMethod.type)
    }

    init() {}
}

extension PaymentRequest {
    /// Checks a verified, decrypted token against this request, in the order <doc:PaymentRequestBinding>
    /// lists the rules; the first contradiction is thrown.
    func check(_ payment: DecryptedPayment, _ evidence: BindingEvidence) throws(ApplePayError) {
        try checkApplicationData(evidence)
        try checkCurrency(payment)
        if multiTokenContexts.isEmpty {
            try checkTotal(payment)
        } else {
            try checkContexts(payment, evidence)
        }
        try checkCapabilities(payment, evidence)
        try checkNetwork(evidence)
    }

    private static func mismatch(_ field: String, _ message: String, reason: String? = nil) -> ApplePayError {
        ApplePayError(.paymentRequestMismatch, message, field: field, reason: reason)
    }

    /// SHA-256 of the request's decoded applicationData equals the signed `header.applicationData`;
    /// present on one side only is a mismatch (a token minted without it must not pass a request that
    /// set it, nor the reverse).
    private func checkApplicationData(_ evidence: BindingEvidence) throws(ApplePayError) {
        switch (applicationDataBytes, evidence.applicationData) {
        case (nil, nil):
            return
        case (nil, _?):
            throw Self.mismatch(
                "applicationData",
                "the token carries header.applicationData but the payment request has no applicationData")
        case (_?, nil):
            throw Self.mismatch(
                "applicationData",
                "the payment request has applicationData but the token carries no header.applicationData")
        case let (requested?, carried?):
            let expected = SHA256.hash(requested)
            let equal = expected.withUnsafeBytes { a in
                carried.withUnsafeBytes { b in SecureMemory.constantTimeEquals(a, b) }
            }
            guard equal, carried.count == expected.count else {
                throw Self.mismatch(
                    "applicationData",
                    "the token's header.applicationData is not the SHA-256 of the payment request's applicationData")
            }
        }
    }

    /// The payload's numeric code (exactly three ASCII digits) is the request currency's.
    private func checkCurrency(_ payment: DecryptedPayment) throws(ApplePayError) {
        let expected =
            String(repeating: "0", count: max(0, 3 - String(currency.numericCode).count)) + String(currency.numericCode)
        guard let carried = payment.currencyCode else {
            throw Self.mismatch(
                "currencyCode",
                "the decrypted payment has no currencyCode; the payment request is in \(currencyCode) (\(expected))")
        }
        guard carried == expected else {
            throw Self.mismatch(
                "currencyCode",
                "the token is in ISO 4217 \(Self.shown(carried)); the payment request is in \(currencyCode) (\(expected))"
            )
        }
    }

    /// Whether the request fixes the amount of the token, and where.
    enum AmountExpectation: Equatable {
        /// The token must carry this amount; `field` is what a mismatch names.
        case exact(amount: String, field: String)
        /// The amount is not final: not compared.
        case pending
    }

    /// `total.amount`, unless `total.type` is `pending`. A final total is what the sheet showed and what
    /// the token carries, whatever the recurring or automatic-reload billing says: a pending line item
    /// beside a final total does not open the amount (a 1.00 token must not pass a 900.00 order).
    var amountExpectation: AmountExpectation {
        if total.type == .pending { return .pending }
        return .exact(amount: total.amount, field: "total.amount")
    }

    private func checkTotal(_ payment: DecryptedPayment) throws(ApplePayError) {
        guard case let .exact(amount, field) = amountExpectation else { return }
        try checkAmount(amount, field: field, payment)
    }

    /// `amount` (a pattern-checked decimal string) in minor units equals the payload's
    /// `transactionAmount`, compared as canonical digit strings (no overflow at any size).
    private func checkAmount(_ amount: String, field: String, _ payment: DecryptedPayment) throws(ApplePayError) {
        guard let carried = payment.transactionAmount, let tokenMinor = Self.canonicalDigits(carried) else {
            throw Self.mismatch(field, "the decrypted payment has no plain transactionAmount in minor units")
        }
        let requested: String
        switch Self.minorUnits(amount, exponent: currency.minorUnitExponent) {
        case let .success(minor): requested = minor
        case let .failure(problem):
            throw Self.mismatch(
                field,
                "the payment request's amount \(amount) \(currencyCode) \(problem.rawValue); the token is for \(tokenMinor) minor units"
            )
        }
        guard requested == tokenMinor else {
            throw Self.mismatch(
                field,
                "the token is for \(tokenMinor) minor units of \(currencyCode); the payment request asks for \(amount) (\(requested))"
            )
        }
    }

    /// Why a request amount cannot equal any token amount.
    enum AmountProblem: String, Error {
        case negative = "is negative"
        case notPatterned = "is not a decimal with two places"
        case finerThanMinorUnit = "has digits below the currency's minor unit"
    }

    /// A schema amount (`-?\d+\.\d{2}`) in minor units of a currency with `exponent` decimals, as a
    /// canonical digit string ("0", or no leading zero). `"1000.00"` JPY is `1000`; `"1.50"` BHD is
    /// `1500`; `"1000.50"` JPY has no value in yen; any `-` (even `-0.00`) is refused.
    static func minorUnits(_ amount: String, exponent: Int) -> Result<String, AmountProblem> {
        guard Patterns.amount(amount) else { return .failure(.notPatterned) }
        guard !amount.hasPrefix("-") else { return .failure(.negative) }
        let parts = amount.split(separator: ".", omittingEmptySubsequences: false)
        var digits = String(parts[0])
        var fraction = String(parts[1])
        if exponent >= fraction.count {
            fraction += String(repeating: "0", count: exponent - fraction.count)
        } else {
            let dropped = fraction.suffix(fraction.count - exponent)
            guard dropped.allSatisfy({ $0 == "0" }) else { return .failure(.finerThanMinorUnit) }
            fraction = String(fraction.prefix(exponent))
        }
        digits += fraction
        return .success(canonicalDigits(digits) ?? "0")
    }

    /// ASCII digits only (a JSON number's text or a string), leading zeros removed; nil otherwise
    /// (a sign, a point, an exponent, spaces, or non-ASCII digits are never an amount in minor units).
    static func canonicalDigits(_ text: String) -> String? {
        guard !text.isEmpty, text.utf8.allSatisfy(Patterns.isDigit) else { return nil }
        let trimmed = text.drop { $0 == "0" }
        return trimmed.isEmpty ? "0" : String(trimmed)
    }

    /// The token's merchant is the merchant identifier whose SHA-256 is the partyV of the merchant key
    /// that opened it (for EC_v1 the KDF proves it); the token's amount is that context's amount.
    private func checkContexts(_ payment: DecryptedPayment, _ evidence: BindingEvidence) throws(ApplePayError) {
        guard let hash = evidence.merchantIdentifierHash else {
            throw Self.mismatch(
                "multiTokenContexts",
                "the merchant key that opened the token has no merchant identifier to match a token context")
        }
        let candidates = multiTokenContexts.indices.filter {
            MerchantIdentity.merchantIdentifierHash(multiTokenContexts[$0].merchantIdentifier) == hash
        }
        guard let first = candidates.first else {
            throw Self.mismatch(
                "multiTokenContexts",
                "the token was sealed for a merchant that is none of the payment request's multiTokenContexts")
        }
        var firstError: ApplePayError?
        for index in candidates {
            do throws(ApplePayError) {
                try checkAmount(multiTokenContexts[index].amount, field: "multiTokenContexts[\(index)].amount", payment)
                return
            } catch {
                if index == first { firstError = error }
            }
        }
        throw firstError!
    }

    /// An `EMV` payload needs `supportsEMV`, a `3DSecure` one `supports3DS` (anything else matches
    /// neither). When the request names `supportsCredit` or `supportsDebit`, a wrapper's
    /// `paymentMethod.type` of `credit` or `debit` must be among them.
    private func checkCapabilities(_ payment: DecryptedPayment, _ evidence: BindingEvidence) throws(ApplePayError) {
        let type = payment.paymentDataType
        let needed: MerchantCapability?
        switch type {
        case "3DSecure"?: needed = .supports3DS
        case "EMV"?: needed = .supportsEMV
        default: needed = nil
        }
        guard let needed else {
            throw Self.mismatch(
                "merchantCapabilities",
                "the decrypted payment's paymentDataType \(type.map { "\"\(Self.shown($0))\"" } ?? "(none)") matches no merchant capability"
            )
        }
        guard merchantCapabilities.contains(needed) else {
            throw Self.mismatch(
                "merchantCapabilities",
                "the token's paymentDataType is \(type!), but the payment request does not list \(needed.rawValue)")
        }
        let cardTypes = merchantCapabilities.filter { $0 == .supportsCredit || $0 == .supportsDebit }
        guard !cardTypes.isEmpty else { return }
        switch evidence.paymentMethod.type {
        case .absent: return
        case .invalid: throw Self.mismatch("merchantCapabilities", "the token's paymentMethod.type is not a string")
        case let .value(text):
            let capability: MerchantCapability? =
                switch text.lowercased() {
                case "credit": .supportsCredit
                case "debit": .supportsDebit
                default: nil
                }
            if let capability, !cardTypes.contains(capability) {
                throw Self.mismatch(
                    "merchantCapabilities",
                    "the token's card is \(text.lowercased()), but the payment request does not list \(capability.rawValue)"
                )
            }
        }
    }

    /// Apple's network names (PKPaymentNetwork, Apple Pay JS) that differ from the schema's by more
    /// than letter case.
    static let networkAliases: [String: Network] = [
        "american express": .amex, "americanexpress": .amex, "unionpay": .chinaUnionPay,
        "china unionpay": .chinaUnionPay,
        "cartebancaire": .cartesBancaires, "cartes bancaires": .cartesBancaires, "mastercard": .masterCard,
    ]

    /// The network a wrapper's `paymentMethod.network` names, case-insensitively; nil when unknown.
    static func network(named name: String) -> Network? {
        let folded = name.lowercased()
        if let exact = Network.allCases.first(where: { $0.rawValue.lowercased() == folded }) { return exact }
        return networkAliases[folded]
    }

    /// Where the token carries `paymentMethod.network`, it must be one of `supportedNetworks`.
    private func checkNetwork(_ evidence: BindingEvidence) throws(ApplePayError) {
        switch evidence.paymentMethod.network {
        case .absent: return
        case .invalid: throw Self.mismatch("supportedNetworks", "the token's paymentMethod.network is not a string")
        case let .value(name):
            guard let network = Self.network(named: name), supportedNetworks.contains(network) else {
                throw Self.mismatch(
                    "supportedNetworks",
                    "the token's network \"\(Self.shown(name))\" is not among the payment request's supportedNetworks")
            }
        }
    }

    static func shown(_ text: String) -> String { Members.shown(text) }
}
