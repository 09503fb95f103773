// A small, exact JSON model: objects keep key order and numbers keep their literal text, so a
// decrypted payload can be re-emitted with its fields and values unchanged.

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// A JSON value as written: objects keep their member order and numbers their literal text, so a
/// decrypted payload can be re-emitted with its fields and values unchanged.
///
/// Its ``description`` is compact JSON text, all of it: a `JSONValue` taken from a payment (see
/// ``DecryptedPayment/json``) holds card data in full and is for code that means to read it.
public enum JSONValue: Sendable, Equatable, CustomStringConvertible, Encodable {
    /// `null`.
    case null
    /// `true` or `false`.
    case bool(Bool)
    /// The number exactly as written in the source.
    case number(String)
    /// A string, unescaped.
    case string(String)
    /// An array.
    case array([JSONValue])
    /// Members in source order.
    case object([(String, JSONValue)])

    /// Structural equality: object member order does not matter, numbers compare by value too.
    public static func == (lhs: JSONValue, rhs: JSONValue) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): return true
        case let (.bool(a), .bool(b)): return a == b
        case let (.number(a), .number(b)): return a == b || (Double(a) != nil && Double(a) == Double(b))
        case let (.string(a), .string(b)): return a == b
        case let (.array(a), .array(b)): return a == b
        case let (.object(a), .object(b)):
            // Member order is not significant for equality, unless a name repeats: then the members
            // are compared in order (so that equality stays reflexive).
            guard a.count == b.count else { return false }
            let bd = Dictionary(b, uniquingKeysWith: { first, _ in first })
            if bd.count < b.count || Set(a.map(\.0)).count < a.count {
                return zip(a, b).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
            }
            return a.allSatisfy { key, value in bd[key] == value }
        default: return false
        }
    }

    /// The value of the first member named `key`, if this is an object that has one.
    public subscript(key: String) -> JSONValue? {
        if case let .object(members) = self {
            return members.first(where: { $0.0 == key })?.1
        }
        return nil
    }

    /// The string, if this is one.
    public var stringValue: String? { if case let .string(s) = self { return s } else { return nil } }
    /// The members in source order, if this is an object.
    public var objectMembers: [(String, JSONValue)]? { if case let .object(m) = self { return m } else { return nil } }

    /// Encodes the value as itself: objects as keyed containers in member order, numbers as
    /// integers when they are integers (as `transactionAmount` is) and otherwise through `Decimal`
    /// (the same value; the text may be normalised, `1.50` becoming `1.5`).
    public func encode(to encoder: any Encoder) throws {
        switch self {
        case .null:
            var c = encoder.singleValueContainer()
            try c.encodeNil()
        case let .bool(b):
            var c = encoder.singleValueContainer()
            try c.encode(b)
        case let .number(text):
            var c = encoder.singleValueContainer()
            if let i = Int64(text) {
                try c.encode(i)
            } else if let u = UInt64(text) {
                try c.encode(u)
            } else if let d = Decimal(string: text, locale: Locale(identifier: "en_US_POSIX")) {
                try c.encode(d)
            } else {
                throw EncodingError.invalidValue(
                    text, .init(codingPath: encoder.codingPath, debugDescription: "not a JSON number"))
            }
        case let .string(s):
            var c = encoder.singleValueContainer()
            try c.encode(s)
        case let .array(items):
            var c = encoder.unkeyedContainer()
            for item in items { try c.encode(item) }
        case let .object(members):
            var c = encoder.container(keyedBy: MemberKey.self)
            for (name, value) in members { try c.encode(value, forKey: MemberKey(stringValue: name)) }
        }
    }

    private struct MemberKey: CodingKey {
        let stringValue: String
        init(stringValue: String) { self.stringValue = stringValue }
        var intValue: Int? { nil }
        init?(intValue: Int) { nil }
    }

    /// Compact JSON text.
    public var description: String {
        var out = ""
        write(to: &out)
        return out
    }

    func write(to out: inout String) {
        switch self {
        case .null: out += "null"
        case let .bool(b): out += b ? "true" : "false"
        case let .number(n): out += n
        case let .string(s): JSONValue.writeString(s, to: &out)
        case let .array(items):
            out += "["
            for (i, item) in items.enumerated() {
                if i > 0 { out += "," }
                item.write(to: &out)
            }
            out += "]"
        case let .object(members):
            out += "{"
            for (i, (key, value)) in members.enumerated() {
                if i > 0 { out += "," }
                JSONValue.writeString(key, to: &out)
                out += ":"
                value.write(to: &out)
            }
            out += "}"
        }
    }

    static func writeString(_ s: String, to out: inout String) {
        out += "\""
        // Fast path: nothing to escape (base64, hex, digits, names), appended in one piece.
        if !s.utf8.contains(where: { $0 < 0x20 || $0 == 0x22 || $0 == 0x5C }) {
            out += s
            out += "\""
            return
        }
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        out += "\""
    }

    /// Parses one JSON value spanning the whole array.
    public static func parse(_ bytes: [UInt8]) throws(JSONSyntaxError) -> JSONValue {
        try bytes.withBytes { (raw) throws(JSONSyntaxError) in try parse(raw) }
    }

    /// Parses one JSON value spanning the whole string.
    public static func parse(_ text: String) throws(JSONSyntaxError) -> JSONValue {
        try parse(Array(text.utf8))
    }
}
