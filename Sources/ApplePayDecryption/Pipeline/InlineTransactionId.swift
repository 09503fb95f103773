// A payment's decoded transactionId, kept inline so that building a payment allocates no String.

/// A transactionId of at most 32 bytes held inline; its lower-case hex is made on demand.
struct InlineTransactionId: Sendable {
    private var words: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
    private var count: UInt8 = 0

    init?(_ bytes: UnsafeRawBufferPointer) {
        guard bytes.count <= 32 else { return nil }
        withUnsafeMutableBytes(of: &words) { $0.copyMemory(from: bytes) }
        count = UInt8(bytes.count)
    }

    /// Written straight into the new String's storage: one allocation, as the reader's text was.
    var hex: String {
        withUnsafeBytes(of: words) { bytes in
            let length = Int(count)
            return String(unsafeUninitializedCapacity: length * 2) { out in
                let digits: StaticString = "0123456789abcdef"
                for i in 0..<length {
                    out[2 * i] = digits.utf8Start[Int(bytes[i] >> 4)]
                    out[2 * i + 1] = digits.utf8Start[Int(bytes[i] & 0xF)]
                }
                return length * 2
            }
        }
    }
}
