// A minimal BER reader (definite and indefinite lengths, one-byte tags) for CMS SignedData that
// works in place: elements are offsets into the caller's buffer, children are iterated, not collected.

package struct BERElement: Sendable {
    package let tag: UInt8
    /// Offset of the tag byte.
    package let start: Int
    package let contentStart: Int
    /// End of the content (the end-of-contents octets of an indefinite element are after it).
    package let contentEnd: Int
    /// Offset just past the whole element.
    package let end: Int
    package let isIndefinite: Bool

    @inlinable
    package init(tag: UInt8, start: Int, contentStart: Int, contentEnd: Int, end: Int, isIndefinite: Bool) {
        (self.tag, self.start, self.contentStart, self.contentEnd, self.end, self.isIndefinite) =
            (tag, start, contentStart, contentEnd, end, isIndefinite)
    }

    @inlinable package var isConstructed: Bool { tag & 0x20 != 0 }
    @inlinable package var contentRange: Range<Int> { contentStart..<contentEnd }
    @inlinable package var encodedRange: Range<Int> { start..<end }
}

package struct BERError: Error {
    package let offset: Int
    package let message: String
    @inlinable package init(offset: Int, message: String) { (self.offset, self.message) = (offset, message) }
}

package struct BERReader {
    package let bytes: UnsafeRawBufferPointer
    package static let maxDepth = 24

    @inlinable package init(bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

    /// The element starting at `offset`, which must end at or before `limit`.
    @inlinable package func element(at offset: Int, limit: Int, depth: Int = 0) throws(BERError) -> BERElement {
        guard depth < BERReader.maxDepth else { throw BERError(offset: offset, message: "nesting too deep") }
        guard offset + 2 <= limit else { throw BERError(offset: offset, message: "truncated header") }
        let tag = bytes[offset]
        guard tag & 0x1F != 0x1F else { throw BERError(offset: offset, message: "multi-byte tags are not used by CMS") }
        var cursor = offset + 1
        let first = bytes[cursor]
        cursor += 1
        if first == 0x80 {
            guard tag & 0x20 != 0 else { throw BERError(offset: offset, message: "indefinite length on a primitive") }
            var child = cursor
            while true {
                guard child + 2 <= limit else { throw BERError(offset: child, message: "missing end-of-contents") }
                if bytes[child] == 0, bytes[child + 1] == 0 {
                    return BERElement(
                        tag: tag, start: offset, contentStart: cursor, contentEnd: child, end: child + 2,
                        isIndefinite: true)
                }
                child = try element(at: child, limit: limit, depth: depth + 1).end
            }
        }
        var length = 0
        if first < 0x80 {
            length = Int(first)
        } else {
            let count = Int(first & 0x7F)
            guard count <= 4, cursor + count <= limit else { throw BERError(offset: offset, message: "bad length") }
            for _ in 0..<count { length = length << 8 | Int(bytes[cursor]); cursor += 1 }
        }
        guard length <= limit - cursor else { throw BERError(offset: offset, message: "length beyond the end") }
        return BERElement(
            tag: tag, start: offset, contentStart: cursor, contentEnd: cursor + length, end: cursor + length,
            isIndefinite: false)
    }

    @inlinable package func root() throws(BERError) -> BERElement {
        let e = try element(at: 0, limit: bytes.count)
        guard e.end == bytes.count else { throw BERError(offset: e.end, message: "trailing bytes") }
        return e
    }

    /// Iterates the children of a constructed element without collecting them.
    package struct Children {
        package let reader: BERReader
        package let parent: BERElement
        package var offset: Int

        @inlinable package init(reader: BERReader, parent: BERElement, offset: Int) {
            (self.reader, self.parent, self.offset) = (reader, parent, offset)
        }

        @inlinable package mutating func next() throws(BERError) -> BERElement? {
            guard offset < parent.contentEnd else { return nil }
            let child = try reader.element(at: offset, limit: parent.contentEnd)
            offset = child.end
            return child
        }

        /// The next child, which must exist and carry `tag`.
        @inlinable package mutating func expect(_ tag: UInt8, _ what: String) throws(BERError) -> BERElement {
            guard let child = try next(), child.tag == tag else {
                throw BERError(offset: offset, message: "expected \(what)")
            }
            return child
        }
    }

    @inlinable package func children(of parent: BERElement) throws(BERError) -> Children {
        guard parent.isConstructed else {
            throw BERError(offset: parent.start, message: "expected a constructed element")
        }
        return Children(reader: self, parent: parent, offset: parent.contentStart)
    }

    @inlinable package func content(_ e: BERElement) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(rebasing: bytes[e.contentRange])
    }
    @inlinable package func encoded(_ e: BERElement) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(rebasing: bytes[e.encodedRange])
    }

    /// Whether `e` and everything inside it is DER-framed: definite, minimally encoded lengths and
    /// no constructed universal types other than SEQUENCE and SET. Certificates must be DER
    /// (RFC 5280); OpenSSL would also accept padded lengths outside the signed TBS, each padding a
    /// new byte string for the same certificate, i.e. a new chain-cache key for a genuine chain.
    package func isDER(_ e: BERElement, depth: Int = 0) -> Bool {
        guard !e.isIndefinite, depth < BERReader.maxDepth else { return false }
        let header = e.contentStart - e.start
        let length = e.contentEnd - e.contentStart
        let minimalHeader = length < 0x80 ? 2 : length < 0x100 ? 3 : length < 0x1_0000 ? 4 : length < 0x100_0000 ? 5 : 6
        guard header == minimalHeader else { return false }
        guard e.isConstructed else { return true }
        guard e.tag & 0xC0 != 0 || e.tag == 0x30 || e.tag == 0x31 else { return false }
        var offset = e.contentStart
        while offset < e.contentEnd {
            guard let child = try? element(at: offset, limit: e.contentEnd, depth: depth + 1),
                isDER(child, depth: depth + 1)
            else { return false }
            offset = child.end
        }
        return true
    }

    /// Whether a primitive element's content equals `expected` (OIDs and the like).
    @inlinable package func content(_ e: BERElement, equals expected: [UInt8]) -> Bool {
        bytesEqual(expected, content(e))
    }
}

/// ASN.1 UTCTime / GeneralizedTime ("...Z" forms, as CMS requires) to Unix seconds, strictly:
/// UTCTime for 1950–2049 and GeneralizedTime for 2050 onwards only (RFC 5280 §4.1.2.5, which RFC 5652
/// §11.3 follows for signingTime), and impossible dates refused rather than normalised (Feb 30 would
/// otherwise silently become Mar 2).
package enum ASN1Time {
    package static func unixSeconds(tag: UInt8, _ text: UnsafeRawBufferPointer) -> Int64? {
        guard text.count >= 1, text[text.count - 1] == UInt8(ascii: "Z") else { return nil }
        let digits = text.count - 1
        for i in 0..<digits where !(0x30...0x39).contains(text[i]) { return nil }
        func number(_ from: Int, _ count: Int) -> Int64 {
            var v: Int64 = 0
            for i in from..<from + count { v = v * 10 + Int64(text[i] - 0x30) }
            return v
        }
        let year: Int64
        let rest: Int
        switch (tag, digits) {
        case (0x17, 12):  // UTCTime YYMMDDHHMMSS
            let yy = number(0, 2)
            year = yy < 50 ? 2000 + yy : 1900 + yy
            rest = 2
        case (0x18, 14):  // GeneralizedTime YYYYMMDDHHMMSS, only where UTCTime cannot say it
            year = number(0, 4)
            guard year >= 2050 else { return nil }
            rest = 4
        default:
            return nil
        }
        let month = number(rest, 2), day = number(rest + 2, 2)
        let hour = number(rest + 4, 2), minute = number(rest + 6, 2), second = number(rest + 8, 2)
        guard (1...12).contains(month), (1...daysIn(month: month, year: year)).contains(day), hour < 24, minute < 60,
            second < 60
        else { return nil }
        return daysFromCivil(year: year, month: month, day: day) * 86_400 + hour * 3600 + minute * 60 + second
    }

    package static func daysIn(month: Int64, year: Int64) -> Int64 {
        switch month {
        case 2: return year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    /// Days since 1970-01-01 in the proleptic Gregorian calendar (Howard Hinnant's algorithm).
    package static func daysFromCivil(year: Int64, month: Int64, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let mp = (month + 9) % 12
        let doy = (153 * mp + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }
}
