// A merchant certificate's expiry, for the metrics.
import Foundation

/// Reads a certificate's notAfter from its DER (or PEM), walking only as far as the validity.
enum CertificateValidity {
    static func notAfter(_ bytes: [UInt8]) -> Date? {
        guard let der = derBytes(bytes) else { return nil }
        var reader = DERReader(der[...])
        guard let certificate = reader.element(tag: 0x30) else { return nil }
        var cert = DERReader(certificate)
        guard let tbs = cert.element(tag: 0x30) else { return nil }
        var fields = DERReader(tbs)
        if fields.peekTag == 0xA0 { _ = fields.element(tag: 0xA0) }
        guard fields.element(tag: 0x02) != nil, fields.element(tag: 0x30) != nil, fields.element(tag: 0x30) != nil,
              let validity = fields.element(tag: 0x30) else { return nil }
        var times = DERReader(validity)
        guard times.anyElement() != nil, let (tag, value) = times.anyElement() else { return nil }
        return time(tag: tag, text: String(decoding: value, as: UTF8.self))
    }

    static func derBytes(_ bytes: [UInt8]) -> [UInt8]? {
        let text = String(decoding: bytes, as: UTF8.self)
        guard let begin = text.range(of: "-----BEGIN CERTIFICATE-----") else { return bytes.first == 0x30 ? bytes : nil }
        guard let end = text.range(of: "-----END CERTIFICATE-----", range: begin.upperBound..<text.endIndex) else { return nil }
        let body = text[begin.upperBound..<end.lowerBound].filter { !$0.isWhitespace }
        return Data(base64Encoded: String(body)).map { Array($0) }
    }

    /// UTCTime YYMMDDHHMMSSZ or GeneralizedTime YYYYMMDDHHMMSSZ.
    static func time(tag: UInt8, text: String) -> Date? {
        let digits = text.dropLast()
        guard text.hasSuffix("Z"), digits.allSatisfy(\.isNumber) else { return nil }
        var year: Int, rest: Substring
        if tag == 0x17, digits.count == 12 {
            year = Int(digits.prefix(2))!
            year += year < 50 ? 2000 : 1900
            rest = digits.dropFirst(2)
        } else if tag == 0x18, digits.count == 14 {
            year = Int(digits.prefix(4))!
            rest = digits.dropFirst(4)
        } else {
            return nil
        }
        let n = stride(from: 0, to: 10, by: 2).map { Int(rest.dropFirst($0).prefix(2))! }
        var components = DateComponents(year: year, month: n[0], day: n[1], hour: n[2], minute: n[3], second: n[4])
        components.timeZone = TimeZone(identifier: "UTC")
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        return calendar.date(from: components)
    }

    struct DERReader {
        var rest: ArraySlice<UInt8>
        init(_ bytes: ArraySlice<UInt8>) { rest = bytes }

        var peekTag: UInt8? { rest.first }

        mutating func element(tag: UInt8) -> ArraySlice<UInt8>? {
            guard rest.first == tag else { return nil }
            return anyElement()?.1
        }

        mutating func anyElement() -> (UInt8, ArraySlice<UInt8>)? {
            guard rest.count >= 2 else { return nil }
            let tag = rest[rest.startIndex]
            var index = rest.startIndex + 1
            var length = Int(rest[index])
            index += 1
            if length & 0x80 != 0 {
                let octets = length & 0x7F
                guard octets >= 1, octets <= 3, rest.endIndex - index >= octets else { return nil }
                length = 0
                for _ in 0..<octets {
                    length = length << 8 | Int(rest[index])
                    index += 1
                }
            }
            guard rest.endIndex - index >= length else { return nil }
            let value = rest[index..<index + length]
            rest = rest[(index + length)...]
            return (tag, value)
        }
    }
}
