// The merchant's ApplePayPaymentRequest, decoded from JSON with the engine's strict reader and held to
// the project's JSON Schema (required members, patterns, enums), each failure naming the member.
#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// An `ApplePayPaymentRequest`: what the merchant asked the payment sheet for. Decode one from the JSON
/// the merchant gave the browser or app (``init(json:)``) and pass it to
/// ``PaymentTokenDecryptor/decrypt(_:at:expecting:)`` to check that a token is the payment it asked for.
///
/// Decoding validates against the `ApplePayPaymentRequest` JSON Schema: required members, the
/// `countryCode`/`currencyCode`/amount patterns, every enum, `minItems`, integer minimums. Stricter than
/// the schema, because the binding check depends on them: the JSON must be strict (no duplicate
/// member names), `currencyCode` must be in the ISO 4217 table, `applicationData` must be non-empty
/// standard base64, `multiTokenContexts[].amount` must match the line-item amount pattern, and
/// `date-time`/`uri` formats are asserted. Members the schema does not name are allowed and ignored.
public struct PaymentRequest: Sendable, Hashable {
    /// The schema's `LineItem`: a label and an amount (a decimal string with exactly two decimals,
    /// `^-?\d+\.\d{2}$`), final or pending, and when it is paid.
    public struct LineItem: Sendable, Hashable {
        /// Whether the amount is known (`final`) or an estimate (`pending`).
        public enum AmountType: String, Sendable, Hashable, CaseIterable {
            /// The amount is known; the binding check compares it with the token's.
            case final
            /// The amount is an estimate; the binding check does not compare it.
            case pending
        }

        /// When the line item is paid.
        public enum PaymentTiming: String, Sendable, Hashable, CaseIterable {
            /// Charged now.
            case immediate
            /// Charged on a schedule (a subscription).
            case recurring
            /// Charged once, later.
            case deferred
            /// Charged when a balance falls below a threshold (store cards).
            case automaticReload
        }

        /// The unit of a recurring payment's interval.
        public enum IntervalUnit: String, Sendable, Hashable, CaseIterable {
            /// Years.
            case year
            /// Months.
            case month
            /// Days.
            case day
            /// Hours.
            case hour
            /// Minutes.
            case minute
        }

        /// A short description shown on the sheet.
        public let label: String
        /// The amount as written, e.g. `"19.99"` (ASCII digits, one point, exactly two decimals).
        public let amount: String
        /// `final` unless the request says `pending`.
        public let type: AmountType
        /// When it is paid, if the request says.
        public let paymentTiming: PaymentTiming?
        /// RFC 3339 date-time of the first recurring payment.
        public let recurringPaymentStartDate: String?
        /// The unit of the recurring interval.
        public let recurringPaymentIntervalUnit: IntervalUnit?
        /// Interval units between recurring payments (at least 1).
        public let recurringPaymentIntervalCount: Int?
        /// RFC 3339 date-time of the last recurring payment.
        public let recurringPaymentEndDate: String?
        /// RFC 3339 date-time of a deferred payment.
        public let deferredPaymentDate: String?
        /// The balance below which an automatic reload happens.
        public let automaticReloadPaymentThresholdAmount: String?
    }

    /// A payment network the merchant accepts, with the schema's spelling.
    public enum Network: String, Sendable, Hashable, CaseIterable {
        /// Visa.
        case visa
        /// Mastercard (Apple: `MasterCard`).
        case masterCard
        /// American Express (Apple: `AmEx`).
        case amex
        /// Discover.
        case discover
        /// JCB.
        case jcb
        /// China UnionPay.
        case chinaUnionPay
        /// Interac.
        case interac
        /// A store's private-label card.
        case privateLabel
        /// eftpos (Australia).
        case eftpos
        /// Cartes Bancaires (France).
        case cartesBancaires
        /// iD (Japan).
        case iD
        /// QUICPay (Japan).
        case quicPay
        /// Suica (Japan).
        case suica
        /// mada (Saudi Arabia).
        case mada
        /// Bancomat (Italy).
        case bancomat
        /// Bancontact (Belgium).
        case bancontact
        /// girocard (Germany).
        case girocard
    }

    /// A payment capability the merchant supports.
    public enum MerchantCapability: String, Sendable, Hashable, CaseIterable {
        /// 3-D Secure: the merchant can process `paymentDataType` `3DSecure` tokens.
        case supports3DS
        /// EMV: the merchant can process `paymentDataType` `EMV` tokens.
        case supportsEMV
        /// Credit cards.
        case supportsCredit
        /// Debit cards.
        case supportsDebit
    }

    /// A contact field the sheet must collect.
    public enum ContactField: String, Sendable, Hashable, CaseIterable {
        /// E-mail address.
        case email
        /// Name.
        case name
        /// Phone number.
        case phone
        /// Postal address.
        case postalAddress
        /// Phonetic name.
        case phoneticName
    }

    /// How the order reaches the customer (wording on the sheet).
    public enum ShippingType: String, Sendable, Hashable, CaseIterable {
        /// Shipping.
        case shipping
        /// Delivery.
        case delivery
        /// Pick-up in store.
        case storePickup
        /// Pick-up at a service point.
        case servicePickup
    }

    /// Whether the shipping contact may be edited on the sheet.
    public enum ShippingContactEditingMode: String, Sendable, Hashable, CaseIterable {
        /// Editable.
        case enabled
        /// Store pick-up: not editable.
        case storePickup
    }

    /// A shipping method offered on the sheet (validated; not used by the binding check).
    public struct ShippingMethod: Sendable, Hashable {
        /// A short description.
        public let label: String
        /// A longer description.
        public let detail: String
        /// Its cost, with the line-item amount pattern.
        public let amount: String
        /// The merchant's identifier for it.
        public let identifier: String
    }

    /// A recurring (subscription) payment request.
    public struct RecurringPaymentRequest: Sendable, Hashable {
        /// What the subscription is.
        public let paymentDescription: String
        /// The regular charge and its interval.
        public let regularBilling: LineItem
        /// A trial charge that comes first, if any.
        public let trialBilling: LineItem?
        /// A billing agreement shown to the user.
        public let billingAgreement: String?
        /// Where the user manages the subscription.
        public let managementURL: String
        /// Where Apple sends merchant-token lifecycle notifications.
        public let tokenNotificationURL: String?
    }

    /// An automatic-reload (store card top-up) payment request.
    public struct AutomaticReloadPaymentRequest: Sendable, Hashable {
        /// What the reload is.
        public let paymentDescription: String
        /// The reload charge (its `automaticReloadPaymentThresholdAmount` says when).
        public let automaticReloadBilling: LineItem
        /// A billing agreement shown to the user.
        public let billingAgreement: String?
        /// Where the user manages the reload.
        public let managementURL: String
        /// Where Apple sends merchant-token lifecycle notifications.
        public let tokenNotificationURL: String?
    }

    /// One merchant's part of a multi-merchant payment: each context gets its own token.
    public struct PaymentTokenContext: Sendable, Hashable {
        /// The Apple merchant identifier (e.g. `merchant.com.example`) whose key the token is sealed to.
        public let merchantIdentifier: String
        /// The merchant's own identifier for this part.
        public let externalIdentifier: String
        /// The merchant's display name.
        public let merchantName: String
        /// The merchant's domain.
        public let merchantDomain: String
        /// This merchant's amount (line-item amount pattern).
        public let amount: String
    }

    /// Why a payment request does not meet the schema: the member (a path such as `total.amount` or
    /// `supportedNetworks[2]`, `$` for the whole document) and what is wrong with it.
    public struct ValidationError: Error, Sendable, Hashable, CustomStringConvertible {
        /// The path of the offending member, e.g. `multiTokenContexts[0].amount`.
        public let member: String
        /// What is wrong, for humans and logs.
        public let message: String

        /// An error about `member`.
        public init(member: String, message: String) {
            self.member = member
            self.message = message
        }

        /// `member: message`.
        public var description: String { "\(member): \(message)" }
    }

    /// ISO 3166-1 alpha-2 country of the merchant.
    public let countryCode: String
    /// ISO 4217 alphabetic code of the payment currency (upper case).
    public let currencyCode: String
    /// The ISO 4217 entry for ``currencyCode`` (numeric code, minor-unit exponent).
    public let currency: ISO4217Currency
    /// The networks the merchant accepts (at least one).
    public let supportedNetworks: [Network]
    /// The capabilities the merchant supports (at least one).
    public let merchantCapabilities: [MerchantCapability]
    /// The total: the amount the user authorises.
    public let total: LineItem
    /// The line items explaining the total.
    public let lineItems: [LineItem]
    /// Billing contact fields the sheet collects.
    public let requiredBillingContactFields: [ContactField]
    /// Shipping contact fields the sheet collects.
    public let requiredShippingContactFields: [ContactField]
    /// Shipping methods offered.
    public let shippingMethods: [ShippingMethod]
    /// The kind of shipping, if given.
    public let shippingType: ShippingType?
    /// Whether the shipping contact is editable, if given.
    public let shippingContactEditingMode: ShippingContactEditingMode?
    /// Base64 application data; its SHA-256 must come back in the token's `header.applicationData`.
    public let applicationData: String?
    /// ISO 3166-1 alpha-2 countries of the cards accepted (nil: all).
    public let supportedCountries: [String]?
    /// The subscription, for a recurring payment request.
    public let recurringPaymentRequest: RecurringPaymentRequest?
    /// The reload, for an automatic-reload payment request.
    public let automaticReloadPaymentRequest: AutomaticReloadPaymentRequest?
    /// The merchants of a multi-merchant payment (empty for an ordinary request).
    public let multiTokenContexts: [PaymentTokenContext]
    /// The decoded ``applicationData`` bytes (their SHA-256 is what the token carries).
    let applicationDataBytes: [UInt8]?

    /// The largest request accepted, in bytes: far above any real request, and a bound on the work.
    public static let maxJSONLength = 1 << 20

    /// Decodes and validates a payment request from its JSON (UTF-8) bytes.
    /// - Throws: ``ValidationError`` naming the first member that breaks the schema.
    public init(json: some DataProtocol) throws(ValidationError) {
        let bytes = Array(json)
        guard bytes.count <= Self.maxJSONLength else {
            throw ValidationError(
                member: "$", message: "the payment request is larger than \(Self.maxJSONLength) bytes")
        }
        let root = try bytes.withBytes { (raw) throws(ValidationError) in try Self.parse(raw) }
        try self.init(validating: root)
    }

    /// Strict JSON (the engine's grammar, duplicate members refused), validated once, then the tree.
    private static func parse(_ raw: UnsafeRawBufferPointer) throws(ValidationError) -> JSONValue {
        let scan = JSONScan(raw)
        let start: Int
        do throws(JSONScanError) { start = try scan.document(0..<raw.count) } catch {
            if let name = error.duplicate {
                throw ValidationError(
                    member: error.pathText, message: "member \"\(name.prefix(64))\" appears more than once")
            }
            throw ValidationError(member: "$", message: "the payment request is not valid JSON (\(error.description))")
        }
        return scan.tree(at: start)
    }

    private init(validating root: JSONValue) throws(ValidationError) {
        let r = try Members(root, path: "$")
        countryCode = try r.requiredString("countryCode", pattern: Patterns.countryCode, patternText: "^[A-Z]{2}$")
        currencyCode = try r.requiredString("currencyCode", pattern: Patterns.currencyCode, patternText: "^[A-Z]{3}$")
        guard let currency = ISO4217Currency(alphabeticCode: currencyCode) else {
            throw ValidationError(
                member: "currencyCode", message: "\"\(currencyCode)\" is not an ISO 4217 currency with a minor unit")
        }
        self.currency = currency
        supportedNetworks = try r.enumArray("supportedNetworks", required: true, minItems: 1)
        merchantCapabilities = try r.enumArray("merchantCapabilities", required: true, minItems: 1)
        total = try LineItem(try r.requiredObject("total"))
        lineItems = try r.objectArray("lineItems").map { (m) throws(ValidationError) in try LineItem(m) }
        requiredBillingContactFields = try r.enumArray("requiredBillingContactFields", required: false, minItems: 0)
        requiredShippingContactFields = try r.enumArray("requiredShippingContactFields", required: false, minItems: 0)
        shippingMethods = try r.objectArray("shippingMethods").map { (m) throws(ValidationError) in
            try ShippingMethod(m)
        }
        shippingType = try r.enumValue("shippingType")
        shippingContactEditingMode = try r.enumValue("shippingContactEditingMode")
        if let data = try r.optionalString("applicationData") {
            guard !data.isEmpty else { throw ValidationError(member: "applicationData", message: "must not be empty") }
            guard let decoded = Base64.decode(data) else {
                throw ValidationError(member: "applicationData", message: "is not valid base64")
            }
            applicationData = data
            applicationDataBytes = decoded
        } else {
            applicationData = nil
            applicationDataBytes = nil
        }
        if r.has("supportedCountries") {
            supportedCountries = try r.stringArray(
                "supportedCountries", pattern: Patterns.countryCode, patternText: "^[A-Z]{2}$")
        } else {
            supportedCountries = nil
        }
        recurringPaymentRequest = try r.optionalObject("recurringPaymentRequest").map { (m) throws(ValidationError) in
            try RecurringPaymentRequest(m)
        }
        automaticReloadPaymentRequest = try r.optionalObject("automaticReloadPaymentRequest").map {
            (m) throws(ValidationError) in
            try AutomaticReloadPaymentRequest(m)
        }
        multiTokenContexts = try r.objectArray("multiTokenContexts").map { (m) throws(ValidationError) in
            try PaymentTokenContext(m)
        }
        // Two contexts for one merchant would let two cheap tokens each pass as "one of them": refused.
        var merchants = Set<String>()
        for (i, context) in multiTokenContexts.enumerated() where !merchants.insert(context.merchantIdentifier).inserted
        {
            throw ValidationError(
                member: "multiTokenContexts[\(i)].merchantIdentifier",
                message: "names a merchant an earlier context already names; each merchant may have one context")
        }
    }
}
