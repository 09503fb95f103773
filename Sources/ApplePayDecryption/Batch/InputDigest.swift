// The digest that ties a resumed batch run to the input bytes the interrupted run read.
internal import ApplePayCrypto

/// A running SHA-256 over input bytes (not secrets), so a resumed run can prove it reads what the
/// interrupted run read. Reading the digest leaves the running state as it is.
public struct InputDigest {
    /// Copied on write, so that a copy of the struct keeps its own running state.
    private var context = DigestContext()

    /// A digest of nothing yet.
    public init() {}

    /// Adds bytes.
    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        if !isKnownUniquelyReferenced(&context) { context = context.copy() }
        context.update(bytes)
    }

    /// Adds bytes.
    public mutating func update(_ bytes: [UInt8]) { bytes.withUnsafeBytes { update($0) } }

    /// Adds a string's UTF-8 bytes.
    public mutating func update(_ text: String) { update(Array(text.utf8)) }

    /// The digest of everything so far, as 64 lower-case hex digits.
    public var hex: String { Hex.encode(context.copy().finish()) }
}
