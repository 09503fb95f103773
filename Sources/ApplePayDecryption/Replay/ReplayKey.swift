// The 128-bit key a replay claim is made of: the first 16 bytes of a SHA-256 digest.

/// 128 bits that identify a claim (collisions are out of reach: 2⁶⁴ work for a birthday match).
public struct ReplayKey: Sendable, Hashable, CustomStringConvertible {
    static let transactionLabel: StaticString = "applepay-transactionId\u{0}"
    /// The 16 bytes, in memory order.
    public let bytes: (UInt64, UInt64)

    /// From exactly 16 bytes, as stored by ``bytesArray`` or a replay store.
    public init?(_ bytes: some Collection<UInt8>) {
        guard bytes.count == 16 else { return nil }
        var value = (UInt64(0), UInt64(0))
        withUnsafeMutableBytes(of: &value) { out in
            for (i, b) in bytes.enumerated() { out[i] = b }
        }
        self.bytes = value
    }

    /// The 16 bytes as an array.
    public var bytesArray: [UInt8] { withUnsafeBytes(of: bytes) { Array($0) } }
    /// Lower-case hex of the 16 bytes.
    public var description: String { Hex.encode(bytesArray) }

    /// True when the 16 bytes are equal.
    public static func == (a: ReplayKey, b: ReplayKey) -> Bool { a.bytes == b.bytes }
    /// Hashes the 16 bytes.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(bytes.0)
        hasher.combine(bytes.1)
    }
}
