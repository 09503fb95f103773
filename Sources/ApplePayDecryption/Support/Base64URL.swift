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

    /// The bytes of `chars`, or nil when it is not canonical unpadded base64url.
    package static func decode(_ chars: UnsafeRawBufferPointer) -> [UInt8]? {
        guard chars.count % 4 != 1 else { return nil }
        var out = [UInt8]()
        out.reserveCapacity(chars.count * 3 / 4)
        var acc: UInt32 = 0
        var bits = 0
        for c in chars {
            let v = table[Int(c)]
            guard v != 0xFF else { return nil }
            acc = acc << 6 | UInt32(v)
            bits += 6
            if bits >= 8 {
                bits -= 8
                out.append(UInt8(truncatingIfNeeded: acc >> UInt32(bits)))
            }
        }
        // Left-over bits (2 or 4) must be zero: another spelling of the same bytes is refused.
        guard acc & ((1 << UInt32(bits)) - 1) == 0 else { return nil }
        return out
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
