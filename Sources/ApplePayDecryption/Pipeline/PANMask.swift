// How a PAN is shown where it must not be whole: in logs, descriptions and masked output.

/// PAN masking: never more than the first 6 and the last 4 digits, and never more than half of them.
///
/// Stricter than the "first 6, last 4" that PCI DSS allows: a 16-digit PAN shows its first 4 and last
/// 4 digits (`4761********0010`), a 19-digit PAN 5 + 4, a 12-digit PAN 2 + 4. Showing at most half
/// keeps short PANs (merchant-token and test PANs) from being nearly whole. Anything but ASCII
/// digits is masked whole.
public enum PANMask {
    /// How many leading and trailing characters of a PAN of `length` stay visible.
    public static func visible(length: Int) -> (head: Int, tail: Int) {
        let budget = length / 2
        let tail = min(4, budget)
        return (min(6, budget - tail), tail)
    }

    /// The masked form of `pan` (`*` for every hidden character).
    public static func masked(_ pan: String) -> String {
        let out = SensitiveBuffer()
        Array(pan.utf8).withUnsafeBytes { appendMasked($0, to: out) }
        return out.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
    }

    /// Appends the masked form of a PAN string's raw content. Anything but ASCII digits is masked whole.
    static func appendMasked(_ content: UnsafeRawBufferPointer, to out: SensitiveBuffer) {
        let digitsOnly = content.allSatisfy { $0 >= 0x30 && $0 <= 0x39 }
        let (head, tail) = digitsOnly ? visible(length: content.count) : (0, 0)
        for (i, c) in content.enumerated() {
            out.append(byte: i < head || i >= content.count - tail ? c : UInt8(ascii: "*"))
        }
    }
}
