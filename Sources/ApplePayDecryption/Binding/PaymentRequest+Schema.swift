// The schema reader of ApplePayPaymentRequest: the patterns, the member accessors that name what is
// wrong, and the decoding of each nested definition (LineItem, ShippingMethod, the recurring,
// automatic-reload and multi-token requests).
#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

// MARK: decoding the nested definitions

extension PaymentRequest.LineItem {
    init(_ m: PaymentRequest.Members) throws(PaymentRequest.ValidationError) {
        label = try m.requiredString("label")
        amount = try m.requiredString(
            "amount", pattern: PaymentRequest.Patterns.amount, patternText: #"^-?\d+\.\d{2}$"#)
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
        amount = try m.requiredString(
            "amount", pattern: PaymentRequest.Patterns.amount, patternText: #"^-?\d+\.\d{2}$"#)
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
        trialBilling = try m.optionalObject("trialBilling").map { (o) throws(PaymentRequest.ValidationError) in
            try PaymentRequest.LineItem(o)
        }
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
        amount = try m.requiredString(
            "amount", pattern: PaymentRequest.Patterns.amount, patternText: #"^-?\d+\.\d{2}$"#)
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
            guard let colon = b.firstIndex(of: 0x3A), colon > 0, b[0] | 0x20 >= 0x61, b[0] | 0x20 <= 0x7A else {
                return false
            }
            let schemeOK = b[..<colon].allSatisfy { c in
                isDigit(c) || (c | 0x20 >= 0x61 && c | 0x20 <= 0x7A) || c == 0x2B || c == 0x2D || c == 0x2E
            }
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
        func error(_ name: String, _ message: String) -> ValidationError {
            ValidationError(member: child(name), message: message)
        }
        func has(_ name: String) -> Bool { members.contains { $0.0 == name } }
        func value(_ name: String) -> JSONValue? { members.first { $0.0 == name }?.1 }

        func requiredString(
            _ name: String, pattern: ((String) -> Bool)? = nil, patternText: String = "",
            format: Format? = nil
        ) throws(ValidationError) -> String {
            guard let text = try optionalString(name, pattern: pattern, patternText: patternText, format: format) else {
                throw error(name, "is required")
            }
            return text
        }

        func optionalString(
            _ name: String, pattern: ((String) -> Bool)? = nil, patternText: String = "",
            format: Format? = nil
        ) throws(ValidationError) -> String? {
            guard let value = value(name) else { return nil }
            guard case let .string(text) = value else { throw error(name, "must be a string") }
            if let pattern, !pattern(text) {
                throw error(name, "\"\(Self.shown(text))\" does not match \(patternText)")
            }
            switch format {
            case .dateTime?:
                guard Patterns.dateTime(text) else {
                    throw error(name, "\"\(Self.shown(text))\" is not an RFC 3339 date-time")
                }
            case .uri?:
                guard Patterns.uri(text) else { throw error(name, "\"\(Self.shown(text))\" is not an absolute URI") }
            case nil: break
            }
            return text
        }

        /// A JSON integer: digits with an optional `-`, no fraction or exponent, within `Int`.
        func optionalInteger(_ name: String, minimum: Int?) throws(ValidationError) -> Int? {
            guard let value = value(name) else { return nil }
            guard case let .number(text) = value, let n = Int(text), !text.contains("+") else {
                throw error(name, "must be an integer")
            }
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

        func enumValue<E: RawRepresentable & CaseIterable>(_ name: String) throws(ValidationError) -> E?
        where E.RawValue == String {
            guard let text = try optionalString(name) else { return nil }
            return try Self.enumCase(text, path: child(name))
        }

        static func enumCase<E: RawRepresentable & CaseIterable>(_ text: String, path: String) throws(ValidationError)
            -> E where E.RawValue == String
        {
            guard let value = E(rawValue: text) else {
                throw ValidationError(
                    member: path,
                    message: "\"\(shown(text))\" is not one of \(E.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            return value
        }

        func items(_ name: String, required: Bool, minItems: Int) throws(ValidationError) -> [(JSONValue, String)] {
            guard let value = value(name) else {
                if required { throw error(name, "is required") }
                return []
            }
            guard case let .array(items) = value else { throw error(name, "must be an array") }
            guard items.count >= minItems else {
                throw error(name, "must have at least \(minItems) item\(minItems == 1 ? "" : "s")")
            }
            return items.enumerated().map { ($0.element, "\(child(name))[\($0.offset)]") }
        }

        func enumArray<E: RawRepresentable & CaseIterable>(_ name: String, required: Bool, minItems: Int)
            throws(ValidationError) -> [E]
        where E.RawValue == String {
            var out: [E] = []
            for (item, path) in try items(name, required: required, minItems: minItems) {
                guard case let .string(text) = item else {
                    throw ValidationError(member: path, message: "must be a string")
                }
                out.append(try Self.enumCase(text, path: path))
            }
            return out
        }

        func stringArray(_ name: String, pattern: (String) -> Bool, patternText: String) throws(ValidationError)
            -> [String]
        {
            var out: [String] = []
            for (item, path) in try items(name, required: false, minItems: 0) {
                guard case let .string(text) = item else {
                    throw ValidationError(member: path, message: "must be a string")
                }
                guard pattern(text) else {
                    throw ValidationError(
                        member: path, message: "\"\(Self.shown(text))\" does not match \(patternText)")
                }
                out.append(text)
            }
            return out
        }

        func objectArray(_ name: String) throws(ValidationError) -> [Members] {
            var out: [Members] = []
            for (item, path) in try items(name, required: false, minItems: 0) {
                out.append(try Members(item, path: path))
            }
            return out
        }

        /// A value quoted in a message: short, and only printable ASCII (never a control character).
        static func shown(_ text: String) -> String {
            String(
                String.UnicodeScalarView(
                    text.unicodeScalars.prefix(40).map { $0.value >= 0x20 && $0.value < 0x7F ? $0 : "?" }))
        }
    }
}
