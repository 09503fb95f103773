// The merchant's ApplePayPaymentRequest, decoded from JSON with the engine's strict reader and held to
// the project's JSON Schema (required members, patterns, enums), each failure naming the member.
import Foundation

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
            throw ValidationError(member: "$", message: "the payment request is larger than \(Self.maxJSONLength) bytes")
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
                throw ValidationError(member: error.pathText, message: "member \"\(name.prefix(64))\" appears more than once")
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
            throw ValidationError(member: "currencyCode", message: "\"\(currencyCode)\" is not an ISO 4217 currency with a minor unit")
        }
        self.currency = currency
        supportedNetworks = try r.enumArray("supportedNetworks", required: true, minItems: 1)
        merchantCapabilities = try r.enumArray("merchantCapabilities", required: true, minItems: 1)
        total = try LineItem(try r.requiredObject("total"))
        lineItems = try r.objectArray("lineItems").map { (m) throws(ValidationError) in try LineItem(m) }
        requiredBillingContactFields = try r.enumArray("requiredBillingContactFields", required: false, minItems: 0)
        requiredShippingContactFields = try r.enumArray("requiredShippingContactFields", required: false, minItems: 0)
        shippingMethods = try r.objectArray("shippingMethods").map { (m) throws(ValidationError) in try ShippingMethod(m) }
        shippingType = try r.enumValue("shippingType")
        shippingContactEditingMode = try r.enumValue("shippingContactEditingMode")
        if let data = try r.optionalString("applicationData") {
            guard !data.isEmpty else { throw ValidationError(member: "applicationData", message: "must not be empty") }
            guard let decoded = Base64.decode(data) else { throw ValidationError(member: "applicationData", message: "is not valid base64") }
            applicationData = data
            applicationDataBytes = decoded
        } else {
            applicationData = nil
            applicationDataBytes = nil
        }
        if r.has("supportedCountries") {
            supportedCountries = try r.stringArray("supportedCountries", pattern: Patterns.countryCode, patternText: "^[A-Z]{2}$")
        } else {
            supportedCountries = nil
        }
        recurringPaymentRequest = try r.optionalObject("recurringPaymentRequest").map { (m) throws(ValidationError) in try RecurringPaymentRequest(m) }
        automaticReloadPaymentRequest = try r.optionalObject("automaticReloadPaymentRequest").map { (m) throws(ValidationError) in
            try AutomaticReloadPaymentRequest(m)
        }
        multiTokenContexts = try r.objectArray("multiTokenContexts").map { (m) throws(ValidationError) in try PaymentTokenContext(m) }
        // Two contexts for one merchant would let two cheap tokens each pass as "one of them": refused.
        var merchants = Set<String>()
        for (i, context) in multiTokenContexts.enumerated() where !merchants.insert(context.merchantIdentifier).inserted {
            throw ValidationError(member: "multiTokenContexts[\(i)].merchantIdentifier",
                                  message: "names a merchant an earlier context already names; each merchant may have one context")
        }
    }
}

// MARK: decoding the nested definitions

extension PaymentRequest.LineItem {
    init(_ m: PaymentRequest.Members) throws(PaymentRequest.ValidationError) {
        label = try m.requiredString("label")
        amount = try m.requiredString("amount", pattern: PaymentRequest.Patterns.amount, patternText: #"^-?\d+\.\d{2}$"#)
        type = try m.enumValue("type") ?? .final
        paymentTiming = try m.enumValue("paymentTiming")
        recurringPaymentStartDate = try m.optionalString("recurringPaymentStartDate", format: .dateTime)
        recurringPaymentIntervalUnit = try m.enumValue("recurringPaymentIntervalUnit")
        recurringPaymentIntervalCount = try m.optionalInteger("recurringPaymentIntervalCount", minimum: 1)
        recurringPaymentEndDate = try m.optionalString("recurringPaymentEndDate", format: .dateTime)
        deferredPaymentDate = try m.optionalString("deferredPaymentDate", format: .dateTime)
        automaticReloadPaymentThresholdAmount = try m.optionalString("automaticReloadPaymentThresholdAmount")
    }
}

extension PaymentRequest.ShippingMethod {
    init(_ m: PaymentRequest.Members) throws(PaymentRequest.ValidationError) {
        label = try m.requiredString("label")
        detail = try m.requiredString("detail")
        amount = try m.requiredString("amount", pattern: PaymentRequest.Patterns.amount, patternText: #"^-?\d+\.\d{2}$"#)
        identifier = try m.requiredString("identifier")
        if let range = try m.optionalObject("dateComponentsRange") {
            for name in ["startDateComponents", "endDateComponents"] {
                guard let components = try range.optionalObject(name) else { continue }
                for integer in ["era", "year", "month", "day", "hours", "minutes", "seconds"] {
                    _ = try components.optionalInteger(integer, minimum: nil)
                }
                _ = try components.optionalString("calendar")
            }
        }
    }
}

extension PaymentRequest.RecurringPaymentRequest {
    init(_ m: PaymentRequest.Members) throws(PaymentRequest.ValidationError) {
        paymentDescription = try m.requiredString("paymentDescription")
        regularBilling = try PaymentRequest.LineItem(try m.requiredObject("regularBilling"))
        trialBilling = try m.optionalObject("trialBilling").map { (o) throws(PaymentRequest.ValidationError) in try PaymentRequest.LineItem(o) }
        billingAgreement = try m.optionalString("billingAgreement")
        managementURL = try m.requiredString("managementURL", format: .uri)
        tokenNotificationURL = try m.optionalString("tokenNotificationURL", format: .uri)
    }
}

extension PaymentRequest.AutomaticReloadPaymentRequest {
    init(_ m: PaymentRequest.Members) throws(PaymentRequest.ValidationError) {
        paymentDescription = try m.requiredString("paymentDescription")
        automaticReloadBilling = try PaymentRequest.LineItem(try m.requiredObject("automaticReloadBilling"))
        billingAgreement = try m.optionalString("billingAgreement")
        managementURL = try m.requiredString("managementURL", format: .uri)
        tokenNotificationURL = try m.optionalString("tokenNotificationURL", format: .uri)
    }
}

extension PaymentRequest.PaymentTokenContext {
    init(_ m: PaymentRequest.Members) throws(PaymentRequest.ValidationError) {
        merchantIdentifier = try m.requiredString("merchantIdentifier")
        guard !merchantIdentifier.isEmpty else { throw m.error("merchantIdentifier", "must not be empty") }
        externalIdentifier = try m.requiredString("externalIdentifier")
        merchantName = try m.requiredString("merchantName")
        merchantDomain = try m.requiredString("merchantDomain")
        // The schema leaves this amount free; it is compared with the token's, so it gets the line-item pattern.
        amount = try m.requiredString("amount", pattern: PaymentRequest.Patterns.amount, patternText: #"^-?\d+\.\d{2}$"#)
    }
}

// MARK: the schema reader

extension PaymentRequest {
    /// The patterns of the schema, matched byte by byte (ECMA-262 `\d` is ASCII 0-9 only, and `$`
    /// ends the string: no trailing newline, no Unicode digits, no spaces, no sign but a leading `-`).
    enum Patterns {
        static func isUpper(_ c: UInt8) -> Bool { c >= 0x41 && c <= 0x5A }
        static func isDigit(_ c: UInt8) -> Bool { c >= 0x30 && c <= 0x39 }

        static func countryCode(_ s: String) -> Bool { s.utf8.count == 2 && s.utf8.allSatisfy(isUpper) }
        static func currencyCode(_ s: String) -> Bool { s.utf8.count == 3 && s.utf8.allSatisfy(isUpper) }

        /// `^-?\d+\.\d{2}$`
        static func amount(_ s: String) -> Bool {
            var bytes = Array(s.utf8)[...]
            if bytes.first == UInt8(ascii: "-") { bytes = bytes.dropFirst() }
            guard let point = bytes.firstIndex(of: UInt8(ascii: ".")) else { return false }
            let whole = bytes[..<point], fraction = bytes[(point + 1)...]
            return !whole.isEmpty && whole.allSatisfy(isDigit) && fraction.count == 2 && fraction.allSatisfy(isDigit)
        }

        /// RFC 3339 `date-time`: `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)`, fields in range.
        static func dateTime(_ s: String) -> Bool {
            let b = Array(s.utf8)
            guard b.count >= 20 else { return false }
            func number(_ range: Range<Int>) -> Int? {
                guard range.upperBound <= b.count, b[range].allSatisfy(isDigit) else { return nil }
                return b[range].reduce(0) { $0 * 10 + Int($1 - 0x30) }
            }
            guard number(0..<4) != nil, b[4] == 0x2D, let month = number(5..<7), b[7] == 0x2D, let day = number(8..<10),
                  b[10] == UInt8(ascii: "T") || b[10] == UInt8(ascii: "t"), let hour = number(11..<13), b[13] == 0x3A,
                  let minute = number(14..<16), b[16] == 0x3A, let second = number(17..<19),
                  (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second <= 60
            else { return false }
            var i = 19
            if b[i] == UInt8(ascii: ".") {
                i += 1
                let start = i
                while i < b.count, isDigit(b[i]) { i += 1 }
                guard i > start else { return false }
            }
            guard i < b.count else { return false }
            if b[i] == UInt8(ascii: "Z") || b[i] == UInt8(ascii: "z") { return i + 1 == b.count }
            guard b[i] == 0x2B || b[i] == 0x2D, i + 6 == b.count, let h = number(i + 1..<i + 3), b[i + 3] == 0x3A,
                  let m = number(i + 4..<i + 6)
            else { return false }
            return h < 24 && m < 60
        }

        /// RFC 3986 absolute URI, loosely: a scheme, a colon, and no whitespace or control characters.
        static func uri(_ s: String) -> Bool {
            let b = Array(s.utf8)
            guard let colon = b.firstIndex(of: 0x3A), colon > 0, b[0] | 0x20 >= 0x61, b[0] | 0x20 <= 0x7A else { return false }
            let schemeOK = b[..<colon].allSatisfy { c in isDigit(c) || (c | 0x20 >= 0x61 && c | 0x20 <= 0x7A) || c == 0x2B || c == 0x2D || c == 0x2E }
            return schemeOK && colon + 1 < b.count && b.allSatisfy { $0 > 0x20 && $0 != 0x7F }
        }
    }

    enum Format { case dateTime, uri }

    /// One JSON object of the request with its path, read member by member.
    struct Members {
        let members: [(String, JSONValue)]
        let path: String

        init(_ value: JSONValue, path: String) throws(ValidationError) {
            guard case let .object(members) = value else {
                throw ValidationError(member: path, message: "must be a JSON object")
            }
            self.members = members
            self.path = path
        }

        func child(_ name: String) -> String { path == "$" ? name : "\(path).\(name)" }
        func error(_ name: String, _ message: String) -> ValidationError { ValidationError(member: child(name), message: message) }
        func has(_ name: String) -> Bool { members.contains { $0.0 == name } }
        func value(_ name: String) -> JSONValue? { members.first { $0.0 == name }?.1 }

        func requiredString(_ name: String, pattern: ((String) -> Bool)? = nil, patternText: String = "",
                            format: Format? = nil) throws(ValidationError) -> String {
            guard let text = try optionalString(name, pattern: pattern, patternText: patternText, format: format) else {
                throw error(name, "is required")
            }
            return text
        }

        func optionalString(_ name: String, pattern: ((String) -> Bool)? = nil, patternText: String = "",
                            format: Format? = nil) throws(ValidationError) -> String? {
            guard let value = value(name) else { return nil }
            guard case let .string(text) = value else { throw error(name, "must be a string") }
            if let pattern, !pattern(text) { throw error(name, "\"\(Self.shown(text))\" does not match \(patternText)") }
            switch format {
            case .dateTime?: guard Patterns.dateTime(text) else { throw error(name, "\"\(Self.shown(text))\" is not an RFC 3339 date-time") }
            case .uri?: guard Patterns.uri(text) else { throw error(name, "\"\(Self.shown(text))\" is not an absolute URI") }
            case nil: break
            }
            return text
        }

        /// A JSON integer: digits with an optional `-`, no fraction or exponent, within `Int`.
        func optionalInteger(_ name: String, minimum: Int?) throws(ValidationError) -> Int? {
            guard let value = value(name) else { return nil }
            guard case let .number(text) = value, let n = Int(text), !text.contains("+") else { throw error(name, "must be an integer") }
            if let minimum, n < minimum { throw error(name, "must be at least \(minimum)") }
            return n
        }

        func requiredObject(_ name: String) throws(ValidationError) -> Members {
            guard let value = value(name) else { throw error(name, "is required") }
            return try Members(value, path: child(name))
        }

        func optionalObject(_ name: String) throws(ValidationError) -> Members? {
            guard let value = value(name) else { return nil }
            return try Members(value, path: child(name))
        }

        func enumValue<E: RawRepresentable & CaseIterable>(_ name: String) throws(ValidationError) -> E? where E.RawValue == String {
            guard let text = try optionalString(name) else { return nil }
            return try Self.enumCase(text, path: child(name))
        }

        static func enumCase<E: RawRepresentable & CaseIterable>(_ text: String, path: String) throws(ValidationError) -> E where E.RawValue == String {
            guard let value = E(rawValue: text) else {
                throw ValidationError(member: path, message: "\"\(shown(text))\" is not one of \(E.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            return value
        }

        func items(_ name: String, required: Bool, minItems: Int) throws(ValidationError) -> [(JSONValue, String)] {
            guard let value = value(name) else {
                if required { throw error(name, "is required") }
                return []
            }
            guard case let .array(items) = value else { throw error(name, "must be an array") }
            guard items.count >= minItems else { throw error(name, "must have at least \(minItems) item\(minItems == 1 ? "" : "s")") }
            return items.enumerated().map { ($0.element, "\(child(name))[\($0.offset)]") }
        }

        func enumArray<E: RawRepresentable & CaseIterable>(_ name: String, required: Bool, minItems: Int) throws(ValidationError) -> [E]
        where E.RawValue == String {
            var out: [E] = []
            for (item, path) in try items(name, required: required, minItems: minItems) {
                guard case let .string(text) = item else { throw ValidationError(member: path, message: "must be a string") }
                out.append(try Self.enumCase(text, path: path))
            }
            return out
        }

        func stringArray(_ name: String, pattern: (String) -> Bool, patternText: String) throws(ValidationError) -> [String] {
            var out: [String] = []
            for (item, path) in try items(name, required: false, minItems: 0) {
                guard case let .string(text) = item else { throw ValidationError(member: path, message: "must be a string") }
                guard pattern(text) else { throw ValidationError(member: path, message: "\"\(Self.shown(text))\" does not match \(patternText)") }
                out.append(text)
            }
            return out
        }

        func objectArray(_ name: String) throws(ValidationError) -> [Members] {
            var out: [Members] = []
            for (item, path) in try items(name, required: false, minItems: 0) { out.append(try Members(item, path: path)) }
            return out
        }

        /// A value quoted in a message: short, and only printable ASCII (never a control character).
        static func shown(_ text: String) -> String {
            String(String.UnicodeScalarView(text.unicodeScalars.prefix(40).map { $0.value >= 0x20 && $0.value < 0x7F ? $0 : "?" }))
        }
    }
}
