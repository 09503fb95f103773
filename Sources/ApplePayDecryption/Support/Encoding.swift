// Hex and base64 decoding with strict validation (token fields), hex encoding for diagnostics.

package enum Hex {
    /// Decodes an even-length hex string (either case). Returns nil on any other character.
    package static func decode<S: Collection>(_ chars: S) -> [UInt8]? where S.Element == UInt8 {
        var out = [UInt8]()
        out.reserveCapacity(chars.count / 2)
        return decode(chars, appendingTo: &out) ? out : nil
    }

    package static func decode(_ s: String) -> [UInt8]? { decode(Array(s.utf8)) }

    /// Decodes onto the end of `out`; on failure `out` may hold a partial result.
    static func decode<S: Collection>(_ chars: S, appendingTo out: inout [UInt8]) -> Bool where S.Element == UInt8 {
        guard chars.count % 2 == 0 else { return false }
        var high: UInt8? = nil
        for c in chars {
            guard let v = nibble(c) else { return false }
            if let h = high { out.append(h << 4 | v); high = nil } else { high = v }
        }
        return true
    }

    /// The token reader's form (contiguous bytes): a nibble table, the bytes written in place, about
    /// a third of the generic loop's instructions. On failure `out` is unchanged.
    static func decode(_ chars: UnsafeRawBufferPointer, appendingTo out: inout [UInt8]) -> Bool {
        guard chars.count % 2 == 0 else { return false }
        let start = out.count, length = chars.count / 2
        out.append(contentsOf: repeatElement(0, count: length))
        let ok = nibbles.withUnsafeBufferPointer { table in
            out.withUnsafeMutableBufferPointer { buffer -> Bool in
                var bad: UInt8 = 0
                for i in 0..<length {
                    let high = table[Int(chars[2 * i])], low = table[Int(chars[2 * i + 1])]
                    bad |= high | low
                    buffer[start + i] = high << 4 | low & 0x0F
                }
                return bad & 0x80 == 0
            }
        }
        if !ok { out.removeLast(length) }
        return ok
    }

    /// The value of each hex digit (either case); 0xFF for any other byte.
    private static let nibbles: [UInt8] = (0..<256).map { nibble(UInt8($0)) ?? 0xFF }

    @inline(__always) static func nibble(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return c &- UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return c &- UInt8(ascii: "a") &+ 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return c &- UInt8(ascii: "A") &+ 10
        default: return nil
        }
    }

    /// Appends the lower-case hex of `out[range]` to `out`.
    static func encode(appending range: Range<Int>, of out: inout [UInt8]) {
        let digits: StaticString = "0123456789abcdef"
        let start = out.count
        out.append(contentsOf: repeatElement(0, count: range.count * 2))
        out.withUnsafeMutableBufferPointer { buffer in
            for (k, i) in range.enumerated() {
                let b = buffer[i]
                buffer[start + 2 * k] = digits.utf8Start[Int(b >> 4)]
                buffer[start + 2 * k + 1] = digits.utf8Start[Int(b & 0xF)]
            }
        }
    }

    package static func encode<C: Collection>(_ bytes: C) -> String where C.Element == UInt8 {
        let digits = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        out.reserveCapacity(bytes.count * 2)
        for b in bytes { out.append(digits[Int(b >> 4)]); out.append(digits[Int(b & 0xF)]) }
        return String(decoding: out, as: UTF8.self)
    }
}

package enum Base64 {
    private static let table: [UInt8] = {
        var t = [UInt8](repeating: 0xFF, count: 256)
        for (i, c) in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8.enumerated() {
            t[Int(c)] = UInt8(i)
        }
        return t
    }()

    /// Two symbols at once: for the little-endian pair `a | b << 8`, the 12 bits `value(a) << 6 | value(b)`,
    /// or 0x8000 when either is not a base64 symbol. 128 KB, built on first use and kept; the pairs
    /// of real symbols, the only entries read on the fast path, fill about 12 KB of it.
    // Unsafe only by type: written once in its initializer (run once, thread-safely), then only read.
    nonisolated(unsafe) private static let pairs: UnsafePointer<UInt16> = {
        let pairs = UnsafeMutablePointer<UInt16>.allocate(capacity: 1 << 16)
        for index in 0..<(1 << 16) {
            let a = table[index & 0xFF], b = table[index >> 8]
            pairs[index] = (a | b) & 0x80 != 0 ? 0x8000 : UInt16(a) << 6 | UInt16(b)
        }
        return UnsafePointer(pairs)
    }()

    /// Standard base64 with optional `=` padding. Rejects whitespace and any other character.
    static func decode<S: Collection>(_ chars: S) -> [UInt8]? where S.Element == UInt8 {
        var out = [UInt8]()
        out.reserveCapacity(chars.count * 3 / 4)
        return decode(chars, appendingTo: &out) ? out : nil
    }

    /// Decodes onto the end of `out` (no allocation once `out` has the capacity). With
    /// `jsonEscapedSlashes`, a backslash before `/` is skipped, so a JSON string's raw bytes
    /// (as PHP writes them, `\\/`) decode in place. On failure `out` may hold a partial result.
    static func decode<S: Collection>(_ chars: S, appendingTo out: inout [UInt8], jsonEscapedSlashes: Bool = false)
        -> Bool
    where S.Element == UInt8 {
        if let done = chars.withContiguousStorageIfAvailable({
            decode(UnsafeRawBufferPointer($0), appendingTo: &out, jsonEscapedSlashes: jsonEscapedSlashes)
        }) {
            return done
        }
        return Array(chars).withUnsafeBytes { decode($0, appendingTo: &out, jsonEscapedSlashes: jsonEscapedSlashes) }
    }

    static func decode(
        _ chars: UnsafeRawBufferPointer, appendingTo out: inout [UInt8], jsonEscapedSlashes: Bool = false
    ) -> Bool {
        let start = out.count
        let room = chars.count / 4 * 3 + 3
        out.append(contentsOf: repeatElement(0, count: room))
        let written: Int? = table.withUnsafeBufferPointer { table in
            out.withUnsafeMutableBufferPointer { buffer -> Int? in
                let dst = buffer.baseAddress! + start
                var n = 0
                var acc: UInt32 = 0
                var bits = 0
                var padding = 0
                var symbols = 0
                var escaped = false
                var index = 0
                // Fast path: eight plain symbols read as one word and decoded two at a time through
                // `pairs`, six bytes written as one word (the two bytes beyond land inside `room` and
                // are overwritten or dropped). About 30 instructions per eight symbols against 62 one
                // symbol at a time (callgrind): a token carries 2–5 KB of base64.
                if let raw = chars.baseAddress {
                    let out = UnsafeMutableRawPointer(dst)
                    let pairs = Self.pairs
                    while index + 8 <= chars.count {
                        let w = raw.loadUnaligned(fromByteOffset: index, as: UInt64.self).littleEndian
                        let p0 = UInt64(pairs[Int(truncatingIfNeeded: w & 0xFFFF)]),
                            p1 = UInt64(pairs[Int(truncatingIfNeeded: w >> 16 & 0xFFFF)])
                        let p2 = UInt64(pairs[Int(truncatingIfNeeded: w >> 32 & 0xFFFF)]),
                            p3 = UInt64(pairs[Int(truncatingIfNeeded: w >> 48)])
                        // '=', '\\' or an invalid symbol: slower paths
                        guard (p0 | p1 | p2 | p3) & 0x8000 == 0 else { break }
                        let bits = p0 << 36 | p1 << 24 | p2 << 12 | p3
                        out.storeBytes(of: (bits << 16).bigEndian, toByteOffset: n, as: UInt64.self)
                        n += 6
                        index += 8
                    }
                }
                if let src = chars.baseAddress?.assumingMemoryBound(to: UInt8.self) {
                    while index + 4 <= chars.count {
                        let a = table[Int(src[index])], b = table[Int(src[index + 1])]
                        let c = table[Int(src[index + 2])], d = table[Int(src[index + 3])]
                        guard (a | b | c | d) & 0x80 == 0 else { break }  // '=', '\\' or an invalid symbol: slow path
                        let v = UInt32(a) << 18 | UInt32(b) << 12 | UInt32(c) << 6 | UInt32(d)
                        dst[n] = UInt8(truncatingIfNeeded: v >> 16)
                        dst[n + 1] = UInt8(truncatingIfNeeded: v >> 8)
                        dst[n + 2] = UInt8(truncatingIfNeeded: v)
                        n += 3
                        index += 4
                    }
                    symbols = index
                }
                for c in UnsafeRawBufferPointer(rebasing: chars[index...]) {
                    if escaped {
                        guard c == UInt8(ascii: "/") else { return nil }
                        escaped = false
                    } else if jsonEscapedSlashes, c == UInt8(ascii: "\\") {
                        escaped = true
                        continue
                    }
                    symbols += 1
                    if c == UInt8(ascii: "=") { padding += 1; continue }
                    let v = table[Int(c)]
                    guard padding == 0, v != 0xFF else { return nil }  // no data after padding
                    acc = acc << 6 | UInt32(v)
                    bits += 6
                    if bits >= 8 {
                        bits -= 8
                        dst[n] = UInt8(truncatingIfNeeded: acc >> UInt32(bits))
                        n += 1
                    }
                }
                guard !escaped, padding <= 2, bits < 6, padding == 0 || symbols % 4 == 0 else { return nil }
                return n
            }
        }
        out.removeLast(room - (written ?? 0))
        return written != nil
    }

    package static func decode(_ s: String) -> [UInt8]? { decode(Array(s.utf8)) }

    package static func encode(_ bytes: [UInt8]) -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
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
            out.append(rest == 2 ? alphabet[Int(n >> 6 & 63)] : UInt8(ascii: "="))
            out.append(UInt8(ascii: "="))
        }
        return String(decoding: out, as: UTF8.self)
    }
}
