// Strict RFC 8259 JSON walked in place: validation, member iteration and string decoding without
// building a tree. The token reader and the payload model both read JSON through this one grammar,
// and both refuse duplicate member names (parsers disagree on which duplicate wins).
#if canImport(FoundationEssentials)
    import FoundationEssentials
    import Glibc  // open, read, memchr, errno: Foundation re-exports them, FoundationEssentials does not
#else
    import Foundation
#endif

/// Why bytes are not acceptable JSON, where, and (filled in while the error unwinds) in which member.
struct JSONScanError: Error {
    var offset: Int
    var message: String
    /// Member names from the outermost object inwards.
    var path: [String] = []
    /// A member name that appears twice in one object.
    var duplicate: String? = nil

    var pathText: String { path.isEmpty ? "$" : path.joined(separator: ".") }
    var description: String { "invalid JSON at byte \(offset): \(message)" }
}

/// One member of an object: where its name and value are.
struct JSONMember {
    /// The name's content (between the quotes, escapes not decoded).
    var name: Range<Int>
    var nameEscaped: Bool
    /// First byte of the value, and the index after it.
    var value: Int
    var valueEnd: Int
}

struct JSONScan {
    let s: UnsafeRawBufferPointer
    static let maxDepth = 32
    /// Bounds the duplicate check (quadratic in the member count); no Apple object comes close.
    static let maxMembers = 256
    /// Up to this many members, an object of plain names compares them directly (see `object`).
    static let directlyCompared = 16

    init(_ s: UnsafeRawBufferPointer) { self.s = s }

    @inline(__always) func isSpace(_ c: UInt8) -> Bool { c == 0x20 || c == 0x0A || c == 0x0D || c == 0x09 }

    func skipWhitespace(_ start: Int) -> Int {
        var i = start
        while i < s.count, isSpace(s[i]) { i += 1 }
        return i
    }

    private func fail(_ offset: Int, _ message: String) -> JSONScanError {
        JSONScanError(offset: offset, message: message)
    }

    /// Validates that `range` holds exactly one JSON value (surrounding whitespace allowed); returns its start.
    func document(_ range: Range<Int>) throws(JSONScanError) -> Int {
        let start = skipWhitespace(range.lowerBound)
        guard start < range.upperBound else { throw fail(start, "unexpected end") }
        let end = try value(at: start, depth: 0)
        guard end <= range.upperBound else { throw fail(range.upperBound, "unexpected end") }
        var i = end
        while i < range.upperBound, isSpace(s[i]) { i += 1 }
        guard i == range.upperBound else { throw fail(i, "trailing characters") }
        return start
    }

    // MARK: strings

    /// The string at `start` (its opening quote): content range, whether it holds escapes, and the
    /// index after the closing quote. Validates escapes and UTF-8.
    func string(at start: Int) throws(JSONScanError) -> (content: Range<Int>, escaped: Bool, end: Int) {
        guard start < s.count, s[start] == UInt8(ascii: "\"") else { throw fail(start, "expected a string") }
        // Fast path: the next quote, and nothing but printable ASCII before it.
        if let quote = memchr(s.baseAddress! + start + 1, 0x22, s.count - start - 1) {
            let close = UnsafeRawPointer(quote) - s.baseAddress!
            var unusual: UInt8 = 0
            for k in start + 1..<close {
                let b = s[k]; unusual |= b & 0x80 | (b &- 0x20) & 0x80 | (b == 0x5C ? 0x80 : 0)
            }
            if unusual == 0 { return (start + 1..<close, false, close + 1) }
        }
        var i = start + 1
        var escaped = false
        while i < s.count {
            let c = s[i]
            switch c {
            case 0x22:
                return (start + 1..<i, escaped, i + 1)
            case 0x5C:
                escaped = true
                guard i + 1 < s.count else { throw fail(i, "unterminated string") }
                switch s[i + 1] {
                case 0x22, 0x5C, 0x2F, UInt8(ascii: "b"), UInt8(ascii: "f"), UInt8(ascii: "n"), UInt8(ascii: "r"),
                    UInt8(ascii: "t"):
                    i += 2
                case UInt8(ascii: "u"):
                    let unit = try hex4(i + 2)
                    i += 6
                    if (0xD800..<0xDC00).contains(unit) {
                        guard i + 1 < s.count, s[i] == 0x5C, s[i + 1] == UInt8(ascii: "u") else {
                            throw fail(i, "lone surrogate")
                        }
                        let low = try hex4(i + 2)
                        guard (0xDC00..<0xE000).contains(low) else { throw fail(i, "lone surrogate") }
                        i += 6
                    } else if (0xDC00..<0xE000).contains(unit) {
                        throw fail(i - 6, "lone surrogate")
                    }
                default:
                    throw fail(i, "invalid escape")
                }
            case 0..<0x20:
                throw fail(i, "control character in string")
            case 0x80...:
                i = try utf8Scalar(i)
            default:
                i += 1
            }
        }
        throw fail(start, "unterminated string")
    }

    private func hex4(_ i: Int) throws(JSONScanError) -> UInt32 {
        guard i + 4 <= s.count else { throw fail(i, "truncated \\u escape") }
        var v: UInt32 = 0
        for k in i..<i + 4 {
            guard let n = Hex.nibble(s[k]) else { throw fail(k, "invalid \\u escape") }
            v = v << 4 | UInt32(n)
        }
        return v
    }

    /// Validates one multi-byte UTF-8 scalar at `i` (shortest form, no surrogates, ≤ U+10FFFF).
    private func utf8Scalar(_ i: Int) throws(JSONScanError) -> Int {
        let lead = s[i]
        let length: Int
        var scalar: UInt32
        switch lead {
        case 0xC2...0xDF: length = 2; scalar = UInt32(lead & 0x1F)
        case 0xE0...0xEF: length = 3; scalar = UInt32(lead & 0x0F)
        case 0xF0...0xF4: length = 4; scalar = UInt32(lead & 0x07)
        default: throw fail(i, "invalid UTF-8")
        }
        guard i + length <= s.count else { throw fail(i, "invalid UTF-8") }
        for k in i + 1..<i + length {
            guard s[k] & 0xC0 == 0x80 else { throw fail(k, "invalid UTF-8") }
            scalar = scalar << 6 | UInt32(s[k] & 0x3F)
        }
        let minimum: UInt32 = length == 2 ? 0x80 : length == 3 ? 0x800 : 0x10000
        guard scalar >= minimum, scalar <= 0x10FFFF, !(0xD800...0xDFFF).contains(scalar) else {
            throw fail(i, "invalid UTF-8")
        }
        return i + length
    }

    /// The decoded bytes of a validated string's content.
    func decoded(_ content: Range<Int>, escaped: Bool) -> [UInt8] {
        var out = [UInt8]()
        appendDecoded(content, escaped: escaped, to: &out)
        return out
    }

    /// Appends the decoded bytes of a validated string's content to `out`.
    func appendDecoded(_ content: Range<Int>, escaped: Bool, to out: inout [UInt8]) {
        guard escaped else { out.append(contentsOf: UnsafeRawBufferPointer(rebasing: s[content])); return }
        var i = content.lowerBound
        func unit(_ at: Int) -> UInt32 {
            (at..<at + 4).reduce(UInt32(0)) { $0 << 4 | UInt32(Hex.nibble(s[$1]) ?? 0) }
        }
        while i < content.upperBound {
            let c = s[i]
            guard c == 0x5C else { out.append(c); i += 1; continue }
            let e = s[i + 1]
            i += 2
            switch e {
            case UInt8(ascii: "b"): out.append(0x08)
            case UInt8(ascii: "f"): out.append(0x0C)
            case UInt8(ascii: "n"): out.append(0x0A)
            case UInt8(ascii: "r"): out.append(0x0D)
            case UInt8(ascii: "t"): out.append(0x09)
            case UInt8(ascii: "u"):
                var scalar = unit(i)
                i += 4
                if (0xD800..<0xDC00).contains(scalar) {
                    scalar = 0x10000 + ((scalar - 0xD800) << 10) + (unit(i + 2) - 0xDC00)
                    i += 6
                }
                Self.appendUTF8(scalar, to: &out)
            default: out.append(e)  // " \ /
            }
        }
    }

    private static func appendUTF8(_ scalar: UInt32, to out: inout [UInt8]) {
        switch scalar {
        case ..<0x80: out.append(UInt8(scalar))
        case ..<0x800:
            out.append(UInt8(0xC0 | scalar >> 6)); out.append(UInt8(0x80 | scalar & 0x3F))
        case ..<0x10000:
            out.append(UInt8(0xE0 | scalar >> 12)); out.append(UInt8(0x80 | scalar >> 6 & 0x3F));
            out.append(UInt8(0x80 | scalar & 0x3F))
        default:
            out.append(UInt8(0xF0 | scalar >> 18)); out.append(UInt8(0x80 | scalar >> 12 & 0x3F))
            out.append(UInt8(0x80 | scalar >> 6 & 0x3F)); out.append(UInt8(0x80 | scalar & 0x3F))
        }
    }

    /// A per-process keyed hash (SipHash) of a validated name once decoded: names are compared by
    /// hash first, so a crafted object costs no more than a plain one.
    func nameHash(_ content: Range<Int>, escaped: Bool) -> Int {
        var hasher = Hasher()
        if escaped {
            let bytes = decoded(content, escaped: true)
            bytes.withUnsafeBytes { hasher.combine(bytes: $0) }
        } else {
            hasher.combine(bytes: UnsafeRawBufferPointer(rebasing: s[content]))
        }
        return hasher.finalize()
    }

    /// Whether a validated string's content equals `name` once decoded.
    func content(_ content: Range<Int>, escaped: Bool, equals name: StaticString) -> Bool {
        let p = name.utf8Start
        if !escaped {
            guard content.count == name.utf8CodeUnitCount else { return false }
            return memcmp(s.baseAddress! + content.lowerBound, p, content.count) == 0
        }
        let bytes = decoded(content, escaped: true)
        return bytes.count == name.utf8CodeUnitCount
            && bytes.withUnsafeBytes { memcmp($0.baseAddress!, p, bytes.count) == 0 }
    }

    /// Whether a validated string's content, decoded, reads as `name` to a reader that matches keys without
    /// regard to case (Go's encoding/json, Jackson with case-insensitive properties): ASCII letters in either
    /// case, U+017F (ſ) as s and U+212A (the Kelvin sign) as k, as Go's folding has them.
    func content(_ content: Range<Int>, escaped: Bool, foldsTo name: StaticString) -> Bool {
        if !escaped {
            // Each character is one byte, or at most three (U+212A): a name outside that is no match.
            guard content.count >= name.utf8CodeUnitCount, content.count <= 3 * name.utf8CodeUnitCount else {
                return false
            }
            return Self.folds(UnsafeRawBufferPointer(rebasing: s[content]), to: name)
        }
        let bytes = decoded(content, escaped: true)
        return bytes.withUnsafeBytes { Self.folds($0, to: name) }
    }

    private static func folds(_ bytes: UnsafeRawBufferPointer, to name: StaticString) -> Bool {
        let lower = { (c: UInt8) -> UInt8 in c >= 0x41 && c <= 0x5A ? c | 0x20 : c }
        var i = 0
        for t in UnsafeBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount).lazy.map(lower) {
            guard i < bytes.count else { return false }
            if lower(bytes[i]) == t {
                i += 1
            } else if t == UInt8(ascii: "s"), i + 1 < bytes.count, bytes[i] == 0xC5, bytes[i + 1] == 0xBF {
                i += 2
            } else if t == UInt8(ascii: "k"), i + 2 < bytes.count, bytes[i] == 0xE2, bytes[i + 1] == 0x84,
                bytes[i + 2] == 0xAA
            {
                i += 3
            } else {
                return false
            }
        }
        return i == bytes.count
    }

    private func sameName(_ a: Name, _ b: Name) -> Bool {
        guard a.hash == b.hash else { return false }
        if !a.escaped, !b.escaped {
            return a.content.count == b.content.count
                && memcmp(s.baseAddress! + a.content.lowerBound, s.baseAddress! + b.content.lowerBound, a.content.count)
                    == 0
        }
        return decoded(a.content, escaped: a.escaped) == decoded(b.content, escaped: b.escaped)
    }

    /// Two names neither of which holds an escape: the same bytes.
    private func samePlainName(_ a: Name, _ b: Name) -> Bool {
        a.content.count == b.content.count
            && memcmp(s.baseAddress! + a.content.lowerBound, s.baseAddress! + b.content.lowerBound, a.content.count)
                == 0
    }

    private struct Name {
        var content: Range<Int>
        var escaped: Bool
        var hash: Int
    }

    // MARK: values

    /// Validates the value at `start` and returns the index after it. Without `checkingDuplicates`
    /// (a walk over a document already validated) names are not compared.
    func value(at start: Int, depth: Int, checkingDuplicates: Bool = true) throws(JSONScanError) -> Int {
        guard start < s.count else { throw fail(start, "unexpected end") }
        guard depth < Self.maxDepth else { throw fail(start, "nesting too deep") }
        switch s[start] {
        case 0x22: return try string(at: start).end
        case UInt8(ascii: "{"):
            return try object(at: start, depth: depth, checkingDuplicates: checkingDuplicates) {
                _ throws(JSONScanError) in
            }
        case UInt8(ascii: "["):
            var i = skipWhitespace(start + 1)
            guard i < s.count else { throw fail(i, "unexpected end") }
            if s[i] == UInt8(ascii: "]") { return i + 1 }
            while true {
                i = skipWhitespace(try value(at: i, depth: depth + 1, checkingDuplicates: checkingDuplicates))
                guard i < s.count else { throw fail(i, "unexpected end") }
                if s[i] == UInt8(ascii: ",") { i = skipWhitespace(i + 1); continue }
                guard s[i] == UInt8(ascii: "]") else { throw fail(i, "expected ',' or ']'") }
                return i + 1
            }
        case UInt8(ascii: "t"): return try literal(start, "true")
        case UInt8(ascii: "f"): return try literal(start, "false")
        case UInt8(ascii: "n"): return try literal(start, "null")
        default: return try number(start)
        }
    }

    /// Walks the object at `start`, validating every member and refusing duplicate names; `body`
    /// sees each member after its value was validated. Returns the index after the object.
    func object(
        at start: Int, depth: Int, checkingDuplicates: Bool = true,
        _ body: (JSONMember) throws(JSONScanError) -> Void
    ) throws(JSONScanError) -> Int {
        guard start < s.count, s[start] == UInt8(ascii: "{") else { throw fail(start, "expected an object") }
        guard depth < Self.maxDepth else { throw fail(start, "nesting too deep") }
        // Names seen so far: the first ones on the stack, the rest (rare) on the heap.
        return try withUnsafeTemporaryAllocation(of: Name.self, capacity: 32) { (names) throws(JSONScanError) -> Int in
            var overflow: [Name] = []
            var count = 0
            var hashed = false
            var i = skipWhitespace(start + 1)
            guard i < s.count else { throw fail(i, "unexpected end") }
            if s[i] == UInt8(ascii: "}") { return i + 1 }
            while true {
                guard i < s.count, s[i] == 0x22 else { throw fail(i, "expected a member name") }
                let name = try string(at: i)
                i = skipWhitespace(name.end)
                guard i < s.count, s[i] == UInt8(ascii: ":") else { throw fail(i, "expected ':'") }
                let valueStart = skipWhitespace(i + 1)
                func named(_ error: JSONScanError) -> JSONScanError {
                    var error = error
                    error.path.insert(
                        String(decoding: decoded(name.content, escaped: name.escaped), as: UTF8.self), at: 0)
                    return error
                }
                guard count < Self.maxMembers else {
                    throw fail(i, "more than \(Self.maxMembers) members in one object")
                }
                if checkingDuplicates {
                    // Small objects of plain names (a token, a payment: about a dozen members) compare
                    // names directly, length first; the first escaped name or the member after
                    // `directlyCompared` switches the object to hashing, every name seen so far included
                    // (all still on the stack). About 2.5 K instructions less per object than hashing
                    // each name, and a crafted object still costs no more than a plain one.
                    if !hashed, name.escaped || count >= Self.directlyCompared {
                        for k in 0..<count { names[k].hash = nameHash(names[k].content, escaped: names[k].escaped) }
                        hashed = true
                    }
                    let key = Name(
                        content: name.content, escaped: name.escaped,
                        hash: hashed ? nameHash(name.content, escaped: name.escaped) : 0)
                    for k in 0..<count
                    where hashed ? sameName(k < 32 ? names[k] : overflow[k - 32], key) : samePlainName(names[k], key) {
                        var error = named(fail(name.content.lowerBound - 1, "duplicate member"))
                        error.duplicate = error.path[0]
                        throw error
                    }
                    if count < 32 { (names.baseAddress! + count).initialize(to: key) } else { overflow.append(key) }
                }
                count += 1
                let valueEnd: Int
                do throws(JSONScanError) {
                    valueEnd = try value(at: valueStart, depth: depth + 1, checkingDuplicates: checkingDuplicates)
                } catch {
                    throw named(error)
                }
                do throws(JSONScanError) {
                    try body(
                        JSONMember(name: name.content, nameEscaped: name.escaped, value: valueStart, valueEnd: valueEnd)
                    )
                } catch {
                    throw named(error)
                }
                i = skipWhitespace(valueEnd)
                guard i < s.count else { throw fail(i, "unexpected end") }
                if s[i] == UInt8(ascii: ",") { i = skipWhitespace(i + 1); continue }
                guard s[i] == UInt8(ascii: "}") else { throw fail(i, "expected ',' or '}'") }
                return i + 1
            }
        }
    }

    // MARK: walking a document already validated

    // A validated document needs no second check: its strings end at the first quote not escaped
    // (found with memchr, not byte by byte) and its containers at the matching bracket. The token
    // reader walks the members of a token it has just validated this way (about 9 K instructions
    // per token less than validating each value again).

    /// The index after the string whose opening quote is at `start`, in a validated document.
    func skipValidatedString(_ start: Int) -> Int {
        let base = s.baseAddress!
        var from = start + 1
        while let quote = memchr(base + from, 0x22, s.count - from) {
            let close = UnsafeRawPointer(quote) - base
            var backslashes = 0
            while s[close - 1 - backslashes] == 0x5C { backslashes += 1 }
            if backslashes & 1 == 0 { return close + 1 }
            from = close + 1
        }
        return s.count  // unreachable in a validated document
    }

    /// Whether the content of a validated string holds an escape.
    func hasEscape(_ content: Range<Int>) -> Bool {
        !content.isEmpty && memchr(s.baseAddress! + content.lowerBound, 0x5C, content.count) != nil
    }

    /// The index after the value at `start`, in a validated document.
    func skipValidated(_ start: Int) -> Int {
        switch s[start] {
        case 0x22:
            return skipValidatedString(start)
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            var depth = 0
            var i = start
            while i < s.count {
                switch s[i] {
                case 0x22: i = skipValidatedString(i); continue
                case UInt8(ascii: "{"), UInt8(ascii: "["): depth += 1
                case UInt8(ascii: "}"), UInt8(ascii: "]"):
                    depth -= 1
                    if depth == 0 { return i + 1 }
                default: break
                }
                i += 1
            }
            return s.count  // unreachable in a validated document
        default:  // number or literal: up to the next delimiter
            var i = start
            while i < s.count {
                let c = s[i]
                if c == UInt8(ascii: ",") || c == UInt8(ascii: "}") || c == UInt8(ascii: "]") || isSpace(c) { break }
                i += 1
            }
            return i
        }
    }

    /// Each member of the object at `start` in a validated document, in order, without checking
    /// anything again.
    func forEachValidatedMember(ofObjectAt start: Int, _ body: (JSONMember) -> Void) {
        var i = skipWhitespace(start + 1)
        guard i < s.count, s[i] == 0x22 else { return }  // `}`: empty
        while i < s.count, s[i] == 0x22 {
            let nameEnd = skipValidatedString(i)
            let name = i + 1..<nameEnd - 1
            let valueStart = skipWhitespace(skipWhitespace(nameEnd) + 1)  // past the ':'
            let valueEnd = skipValidated(valueStart)
            body(JSONMember(name: name, nameEscaped: hasEscape(name), value: valueStart, valueEnd: valueEnd))
            i = skipWhitespace(valueEnd)
            guard i < s.count, s[i] == UInt8(ascii: ",") else { return }
            i = skipWhitespace(i + 1)
        }
    }

    private func literal(_ start: Int, _ text: StaticString) throws(JSONScanError) -> Int {
        let n = text.utf8CodeUnitCount
        guard start + n <= s.count, memcmp(s.baseAddress! + start, text.utf8Start, n) == 0 else {
            throw fail(start, "invalid literal")
        }
        return start + n
    }

    private func number(_ start: Int) throws(JSONScanError) -> Int {
        var i = start
        func digits() -> Bool {
            let from = i
            while i < s.count, s[i] >= 0x30, s[i] <= 0x39 { i += 1 }
            return i > from
        }
        if i < s.count, s[i] == UInt8(ascii: "-") { i += 1 }
        guard i < s.count, s[i] >= 0x30, s[i] <= 0x39 else { throw fail(start, "invalid value") }
        if s[i] == 0x30 { i += 1 } else { _ = digits() }
        if i < s.count, s[i] == UInt8(ascii: ".") { i += 1; guard digits() else { throw fail(i, "invalid number") } }
        if i < s.count, s[i] == UInt8(ascii: "e") || s[i] == UInt8(ascii: "E") {
            i += 1
            if i < s.count, s[i] == UInt8(ascii: "+") || s[i] == UInt8(ascii: "-") { i += 1 }
            guard digits() else { throw fail(i, "invalid number") }
        }
        return i
    }
}
