// A fixed-capacity byte buffer for secrets that C writes into directly and that is wiped on release.
package import ApplePayCrypto

/// Owns a heap buffer whose whole capacity is wiped with `sodium_memzero` when released.
/// Secrets (shared secret, derived key, plaintext) live here and never in `Data`/`Array`/`String`.
public final class SensitiveBytes: @unchecked Sendable {
    // Sendable: the contents are written once while decrypting and only read afterwards.
    private let base: UnsafeMutableRawPointer
    /// Size of the allocation, all of it wiped on release.
    public let capacity: Int
    /// Number of meaningful bytes (<= capacity).
    public package(set) var count: Int

    package init(capacity: Int) {
        self.capacity = max(capacity, 1)
        self.base = UnsafeMutableRawPointer.allocate(byteCount: self.capacity, alignment: 16)
        self.count = 0
    }

    deinit {
        SecureMemory.wipe(base, count: capacity)
        base.deallocate()
    }

    /// Read-only, scoped access to the meaningful bytes.
    public func withUnsafeBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        try body(UnsafeRawBufferPointer(start: base, count: count))
    }

    /// The whole capacity, for C to write into.
    package func withUnsafeMutableBytes<R, E: Error>(_ body: (UnsafeMutableRawBufferPointer) throws(E) -> R) throws(E) -> R {
        try body(UnsafeMutableRawBufferPointer(start: base, count: capacity))
    }

    package var pointer: UnsafeMutablePointer<UInt8> { base.assumingMemoryBound(to: UInt8.self) }

    /// Overwrites a caller's copy of a secret (a private key file read into memory) with zeros,
    /// in a way the compiler cannot drop (`sodium_memzero`).
    public static func wipe(_ bytes: inout [UInt8]) { SecureMemory.wipe(&bytes) }
}
