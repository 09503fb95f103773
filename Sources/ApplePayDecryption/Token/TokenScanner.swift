// The batch fast path: locates a token's fields in the input bytes in place and decodes them
// straight into a reusable buffer. It accepts only what it can vouch for (strict JSON, ASCII, no
// \u escapes, the usual wrappings) and otherwise answers nil, so the caller falls back to the
// general parser, which also produces the precise error. Either way the result is the same.

import Foundation

struct TokenScanner {
    private let s: UnsafeRawBufferPointer
    private static let maxDepth = 32

    private init(_ s: UnsafeRawBufferPointer) { self.s = s }

    /// The token's fields decoded into `storage` (cleared first, capacity kept), or nil to fall back.
    static func scan(_ input: UnsafeRawBufferPointer, into storage: inout [UInt8]) -> TokenFields? {
        storage.removeAll(keepingCapacity: true)
        let scanner = TokenScanner(input)
        var i = scanner.skipWhitespace(0)
        guard i < input.count, input[i] == UInt8(ascii: "{") else { return nil }
        // Unwrap {paymentData: …} and {token: …} the way the general parser does. Walking the
        // outermost object validates the whole input; nested objects were validated as its members.
        for depth in 0..<4 {
            guard let (members, end) = scanner.wrapperMembers(i) else { return nil }
            if depth == 0, scanner.skipWhitespace(end) != input.count { return nil }
            if members.isPaymentData { return scanner.decode(paymentData: members, into: &storage) }
            guard let inner = members.paymentData ?? members.token, input[inner] == UInt8(ascii: "{") else { return nil }
            i = inner
        }
        return nil
    }

    /// Spans (string contents or value starts) of the members the scanner cares about.
    private struct Members {
        var version: Range<Int>?
        var data: Range<Int>?
        var signature: Range<Int>?
        var header: Int?
        var paymentData: Int?
        var token: Int?
        var sawVersionDataOrHeader = false
        var isPaymentData: Bool { sawVersionDataOrHeader }
    }

    private struct HeaderMembers {
        var ephemeralPublicKey: Range<Int>?
        var wrappedKey: Range<Int>?
        var publicKeyHash: Range<Int>?
        var transactionId: Range<Int>?
        var applicationData: Range<Int>?
    }

    private func key(_ range: Range<Int>, is name: StaticString) -> Bool {
        guard range.count == name.utf8CodeUnitCount else { return false }
        let p = name.utf8Start
        for (k, i) in range.enumerated() where s[i] != p[k] { return false }
        return true
    }

    /// Walks the members of the object at `start`, validating each value; returns the index after
    /// the object, or nil when `body` declines a member or the JSON is not strict.
    private func forEachMember(_ start: Int, _ body: (Range<Int>, Int) -> Bool) -> Int? {
        var i = skipWhitespace(start + 1)
        guard i < s.count else { return nil }
        if s[i] == UInt8(ascii: "}") { return i + 1 }
        while true {
            guard let (name, afterKey) = stringContent(i) else { return nil }
            i = skipWhitespace(afterKey)
            guard i < s.count, s[i] == UInt8(ascii: ":") else { return nil }
            let valueStart = skipWhitespace(i + 1)
            guard valueStart < s.count, body(name, valueStart), let valueEnd = skipValue(valueStart, depth: 1) else { return nil }
            i = skipWhitespace(valueEnd)
            guard i < s.count else { return nil }
            if s[i] == UInt8(ascii: ",") { i = skipWhitespace(i + 1); continue }
            return s[i] == UInt8(ascii: "}") ? i + 1 : nil
        }
    }

    /// Records the content of the string at `value` in an empty slot; false for a duplicate member
    /// or a value that is not a string the scanner accepts.
    private func fill(_ slot: inout Range<Int>?, withStringAt value: Int) -> Bool {
        guard slot == nil, let (content, _) = stringContent(value) else { return false }
        slot = content
        return true
    }

    private func wrapperMembers(_ start: Int) -> (Members, Int)? {
        var m = Members()
        let end = forEachMember(start) { name, value in
            func stringValue(_ slot: inout Range<Int>?) -> Bool { fill(&slot, withStringAt: value) }
            if key(name, is: "version") { m.sawVersionDataOrHeader = true; return stringValue(&m.version) }
            if key(name, is: "data") { m.sawVersionDataOrHeader = true; return stringValue(&m.data) }
            if key(name, is: "signature") { return stringValue(&m.signature) }
            if key(name, is: "header") {
                m.sawVersionDataOrHeader = true
                guard m.header == nil, s[value] == UInt8(ascii: "{") else { return false }
                m.header = value
            } else if key(name, is: "paymentData") {
                guard m.paymentData == nil else { return false }
                m.paymentData = value
            } else if key(name, is: "token") {
                guard m.token == nil else { return false }
                m.token = value
            }
            return true
        }
        return end.map { (m, $0) }
    }

    private func headerMembers(_ start: Int) -> HeaderMembers? {
        var h = HeaderMembers()
        let end = forEachMember(start) { name, value in
            func stringValue(_ slot: inout Range<Int>?) -> Bool { fill(&slot, withStringAt: value) }
            if key(name, is: "ephemeralPublicKey") { return stringValue(&h.ephemeralPublicKey) }
            if key(name, is: "wrappedKey") { return stringValue(&h.wrappedKey) }
            if key(name, is: "publicKeyHash") { return stringValue(&h.publicKeyHash) }
            if key(name, is: "transactionId") { return stringValue(&h.transactionId) }
            if key(name, is: "applicationData") {
                if s[value] == UInt8(ascii: "n") { return true }  // null: absent
                return stringValue(&h.applicationData)
            }
            return true
        }
        return end == nil ? nil : h
    }

    private func decode(paymentData m: Members, into storage: inout [UInt8]) -> TokenFields? {
        guard let versionRange = m.version, let dataRange = m.data, let signatureRange = m.signature, let headerStart = m.header,
              let h = headerMembers(headerStart), let hashRange = h.publicKeyHash, let txRange = h.transactionId
        else { return nil }
        let version: PaymentToken.Version
        if key(versionRange, is: "EC_v1") { version = .ecV1 } else if key(versionRange, is: "RSA_v1") { version = .rsaV1 } else { return nil }

        func base64(_ range: Range<Int>) -> Range<Int>? {
            let start = storage.count
            let chars = UnsafeRawBufferPointer(rebasing: s[range])
            return Base64.decode(chars, appendingTo: &storage, jsonEscapedSlashes: true) ? start..<storage.count : nil
        }
        func hex(_ range: Range<Int>) -> Range<Int>? {
            let start = storage.count
            return Hex.decode(UnsafeRawBufferPointer(rebasing: s[range]), appendingTo: &storage) ? start..<storage.count : nil
        }
        guard let data = base64(dataRange), data.count > Primitives.gcmTagLength,
              let signature = base64(signatureRange), !signature.isEmpty
        else { return nil }
        let keyMaterial: Range<Int>
        switch version {
        case .ecV1:
            guard let range = h.ephemeralPublicKey, let decoded = base64(range),
                  TokenFieldRules.isP256SPKI(storage[decoded]) else { return nil }
            keyMaterial = decoded
        case .rsaV1:
            guard let range = h.wrappedKey, let decoded = base64(range), TokenFieldRules.wrappedKeyLengths.contains(decoded.count) else { return nil }
            keyMaterial = decoded
        }
        guard let publicKeyHash = base64(hashRange), publicKeyHash.count == 32,
              let transactionId = hex(txRange), !transactionId.isEmpty else { return nil }
        let textStart = storage.count
        storage.append(contentsOf: UnsafeRawBufferPointer(rebasing: s[txRange]))
        let transactionIdText = textStart..<storage.count
        var applicationData: Range<Int>? = nil
        if let range = h.applicationData {
            guard let decoded = hex(range) else { return nil }
            applicationData = decoded
        }
        return TokenFields(version: version, data: data, signature: signature, keyMaterial: keyMaterial, publicKeyHash: publicKeyHash,
                           transactionIdText: transactionIdText, transactionId: transactionId, applicationData: applicationData)
    }

    // MARK: strict JSON skipping

    private func skipWhitespace(_ start: Int) -> Int {
        var i = start
        while i < s.count, s[i] == 0x20 || s[i] == 0x0A || s[i] == 0x0D || s[i] == 0x09 { i += 1 }
        return i
    }

    /// The content range of the string at `start` and the index after its closing quote.
    /// Accepts ASCII only and the simple escapes (no \u), as the general parser would.
    private func stringContent(_ start: Int) -> (Range<Int>, Int)? {
        guard start < s.count, s[start] == UInt8(ascii: "\"") else { return nil }
        // Fast path: jump to the next quote and accept the run if it is plain printable ASCII.
        if let quote = memchr(s.baseAddress! + start + 1, 0x22, s.count - start - 1) {
            let close = UnsafeRawPointer(quote) - s.baseAddress!
            var unusual: UInt8 = 0
            for k in start + 1..<close { let b = s[k]; unusual |= b & 0x80 | (b &- 0x20) & 0x80 | (b == 0x5C ? 0x80 : 0) }
            if unusual == 0 { return (start + 1..<close, close + 1) }
        }
        // Escapes (or a missing quote): one careful pass.
        var i = start + 1
        while i < s.count {
            let c = s[i]
            if c == UInt8(ascii: "\"") { return (start + 1..<i, i + 1) }
            if c < 0x20 || c >= 0x80 { return nil }
            if c == UInt8(ascii: "\\") {
                guard i + 1 < s.count else { return nil }
                switch s[i + 1] {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"), UInt8(ascii: "f"),
                     UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
                    i += 2
                    continue
                default:
                    return nil
                }
            }
            i += 1
        }
        return nil
    }

    /// The index after the value at `start`, or nil if it is not strict JSON the scanner accepts.
    private func skipValue(_ start: Int, depth: Int) -> Int? {
        guard start < s.count, depth < Self.maxDepth else { return nil }
        switch s[start] {
        case UInt8(ascii: "\""):
            return stringContent(start)?.1
        case UInt8(ascii: "{"):
            var i = skipWhitespace(start + 1)
            guard i < s.count else { return nil }
            if s[i] == UInt8(ascii: "}") { return i + 1 }
            while true {
                guard let (_, afterKey) = stringContent(i) else { return nil }
                i = skipWhitespace(afterKey)
                guard i < s.count, s[i] == UInt8(ascii: ":"), let end = skipValue(skipWhitespace(i + 1), depth: depth + 1) else { return nil }
                i = skipWhitespace(end)
                guard i < s.count else { return nil }
                if s[i] == UInt8(ascii: ",") { i = skipWhitespace(i + 1); continue }
                return s[i] == UInt8(ascii: "}") ? i + 1 : nil
            }
        case UInt8(ascii: "["):
            var i = skipWhitespace(start + 1)
            guard i < s.count else { return nil }
            if s[i] == UInt8(ascii: "]") { return i + 1 }
            while true {
                guard let end = skipValue(i, depth: depth + 1) else { return nil }
                i = skipWhitespace(end)
                guard i < s.count else { return nil }
                if s[i] == UInt8(ascii: ",") { i = skipWhitespace(i + 1); continue }
                return s[i] == UInt8(ascii: "]") ? i + 1 : nil
            }
        case UInt8(ascii: "t"): return literal(start, "true")
        case UInt8(ascii: "f"): return literal(start, "false")
        case UInt8(ascii: "n"): return literal(start, "null")
        default: return number(start)
        }
    }

    private func literal(_ start: Int, _ text: StaticString) -> Int? {
        let n = text.utf8CodeUnitCount
        guard start + n <= s.count, key(start..<start + n, is: text) else { return nil }
        return start + n
    }

    private func number(_ start: Int) -> Int? {
        var i = start
        func digits() -> Bool {
            let from = i
            while i < s.count, s[i] >= 0x30, s[i] <= 0x39 { i += 1 }
            return i > from
        }
        if i < s.count, s[i] == UInt8(ascii: "-") { i += 1 }
        guard i < s.count else { return nil }
        if s[i] == 0x30 { i += 1 } else { guard digits() else { return nil } }
        if i < s.count, s[i] == UInt8(ascii: ".") { i += 1; guard digits() else { return nil } }
        if i < s.count, s[i] == UInt8(ascii: "e") || s[i] == UInt8(ascii: "E") {
            i += 1
            if i < s.count, s[i] == UInt8(ascii: "+") || s[i] == UInt8(ascii: "-") { i += 1 }
            guard digits() else { return nil }
        }
        return i
    }
}
