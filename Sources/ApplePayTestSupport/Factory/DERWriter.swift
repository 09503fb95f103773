// DER (and Apple-style BER indefinite-length) encoding for the token factory's CMS and extensions.

enum DER {
    static func length(_ n: Int) -> [UInt8] {
        if n < 0x80 { return [UInt8(n)] }
        var bytes: [UInt8] = []
        var v = n
        while v > 0 { bytes.insert(UInt8(v & 0xFF), at: 0); v >>= 8 }
        return [0x80 | UInt8(bytes.count)] + bytes
    }

    static func tlv(_ tag: UInt8, _ content: [UInt8]) -> [UInt8] { [tag] + length(content.count) + content }

    /// Constructed element with indefinite length and end-of-contents octets, as Apple's CMS uses.
    static func indefinite(_ tag: UInt8, _ content: [UInt8]) -> [UInt8] { [tag, 0x80] + content + [0x00, 0x00] }

    static func sequence(_ parts: [[UInt8]]) -> [UInt8] { tlv(0x30, parts.flatMap { $0 }) }
    static func set(_ parts: [[UInt8]]) -> [UInt8] { tlv(0x31, parts.flatMap { $0 }) }
    static func oid(_ content: [UInt8]) -> [UInt8] { tlv(0x06, content) }
    static func octetString(_ content: [UInt8]) -> [UInt8] { tlv(0x04, content) }
    static let null: [UInt8] = [0x05, 0x00]

    static func integer(_ value: Int) -> [UInt8] {
        var bytes: [UInt8] = []
        var v = value
        repeat { bytes.insert(UInt8(v & 0xFF), at: 0); v >>= 8 } while v > 0
        if bytes[0] & 0x80 != 0 { bytes.insert(0, at: 0) }
        return tlv(0x02, bytes)
    }

    /// UTCTime for 1950–2049, GeneralizedTime otherwise (RFC 5280 rule).
    static func time(unixSeconds: Int64) -> [UInt8] {
        var days = unixSeconds / 86_400
        var rest = unixSeconds % 86_400
        if rest < 0 { rest += 86_400; days -= 1 }
        let (y, m, d) = civil(fromDays: days)
        let text = fourDigits(y) + two(m) + two(d) + two(rest / 3600) + two(rest / 60 % 60) + two(rest % 60) + "Z"
        if (1950...2049).contains(y) { return tlv(0x17, Array(text.dropFirst(2).utf8)) }
        return tlv(0x18, Array(text.utf8))
    }

    static func generalizedTime(unixSeconds: Int64) -> [UInt8] {
        var days = unixSeconds / 86_400
        var rest = unixSeconds % 86_400
        if rest < 0 { rest += 86_400; days -= 1 }
        let (y, m, d) = civil(fromDays: days)
        return tlv(
            0x18,
            Array(
                (fourDigits(y) + two(m) + two(d) + two(rest / 3600) + two(rest / 60 % 60) + two(rest % 60) + "Z").utf8))
    }

    private static func fourDigits(_ v: Int64) -> String {
        let s = "\(v)"
        return String(repeating: "0", count: max(0, 4 - s.count)) + s
    }

    private static func two(_ v: Int64) -> String { v < 10 ? "0\(v)" : "\(v)" }

    /// Inverse of ASN1Time.daysFromCivil.
    static func civil(fromDays z0: Int64) -> (Int64, Int64, Int64) {
        let z = z0 + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (m <= 2 ? 1 : 0), m, d)
    }
}
