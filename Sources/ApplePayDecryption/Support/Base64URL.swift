// Base64url without padding (RFC 7515 §2, RFC 4648 §5), strictly: the JOSE compact serialisation's parts.

/// Base64url as JOSE writes it: `A–Z a–z 0–9 - _`, no `=`, no whitespace, and canonical (the unused
/// low bits of the last symbol are zero), so that one byte string has exactly one spelling.
package enum Base64URL {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    private static let table: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (i, c) in alphabet.enumerated() { table[Int(c)] = UInt8(i) }
        return table
    }()

    /// The bytes of `chars`, or nil when it is not canonical unpadded base64url. Four symbols at a
    /// time into an output sized once (a JWE's encrypted key and ciphertext are 2 KB of symbols).
    package static func decode(_ chars: UnsafeRawBufferPointer) -> [UInt8]? {
        let n = chars.count
        let rest = n % 4
        guard rest != 1 else { return nil }
        var out = [UInt8](repeating: 0, count: n / 4 * 3 + (rest == 0 ? 0 : rest - 1))
        let decoded = table.withUnsafeBufferPointer { t in
            out.withUnsafeMutableBufferPointer { o -> Bool in
                var i = 0
                var j = 0
                while i + 4 <= n {
                    let a = t[Int(chars[i])], b = t[Int(chars[i + 1])], c = t[Int(chars[i + 2])],
                        d = t[Int(chars[i + 3])]
                    // 0xFF marks a byte outside the alphabet.
                    guard (a | b | c | d) & 0x80 == 0 else { return false }
                    let v = UInt32(a) << 18 | UInt32(b) << 12 | UInt32(c) << 6 | UInt32(d)
                    o[j] = UInt8(truncatingIfNeeded: v >> 16)
                    o[j + 1] = UInt8(truncatingIfNeeded: v >> 8)
                    o[j + 2] = UInt8(truncatingIfNeeded: v)
                    i += 4
                    j += 3
                }
                guard rest > 0 else { return true }
                let a = t[Int(chars[i])], b = t[Int(chars[i + 1])], c = rest == 3 ? t[Int(chars[i + 2])] : 0
                guard (a | b | c) & 0x80 == 0 else { return false }
                o[j] = a << 2 | b >> 4
                // The left-over bits must be zero: another spelling of the same bytes is refused.
                if rest == 2 { return b & 0x0F == 0 }
                o[j + 1] = (b & 0x0F) << 4 | c >> 2
                return c & 0x03 == 0
            }
        }
        return decoded ? out : nil
    }

    /// Whether every byte is a base64url symbol (a cheap shape test; `decode` is the strict one).
    package static func isAlphabet(_ c: UInt8) -> Bool { table[Int(c)] != 0xFF }

    /// Unpadded base64url of `bytes`.
    package static func encode(_ bytes: [UInt8]) -> String {
        var out = [UInt8]()
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        var i = 0
        while i + 3 <= bytes.count {
            let n = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8 | UInt32(bytes[i + 2])
            for shift in [18, 12, 6, 0] { out.append(alphabet[Int(n >> UInt32(shift) & 63)]) }
            i += 3
        }
        let rest = bytes.count - i
        if rest > 0 {
            var n = UInt32(bytes[i]) << 16
            if rest == 2 { n |= UInt32(bytes[i + 1]) << 8 }
            out.append(alphabet[Int(n >> 18 & 63)])
            out.append(alphabet[Int(n >> 12 & 63)])
            if rest == 2 { out.append(alphabet[Int(n >> 6 & 63)]) }
        }
        return String(decoding: out, as: UTF8.self)
    }
}
