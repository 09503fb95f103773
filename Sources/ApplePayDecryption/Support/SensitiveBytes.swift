// A fixed-capacity byte buffer for secrets that C writes into directly and that is wiped on release.
internal import ApplePayCrypto

/// Owns a heap buffer whose whole capacity is wiped with `sodium_memzero` when released.
/// Secrets (shared secret, derived key, plaintext) live here and never in `Data`/`Array`/`String`.
public final class SensitiveBytes: @unchecked Sendable {
    // Sendable: the contents are written once while decrypting and only read afterwards.
    private let base: UnsafeMutableRawPointer
    /// Size of the allocation, all of it wiped on release.
    public let capacity: Int
    /// Number of meaningful bytes (<= capacity), set by the write that filled them.
    public private(set) var count: Int

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

    /// Fills the buffer: `body` writes into the whole capacity and returns how many bytes it wrote,
    /// which become `count`; nil (a failed write) leaves nothing: the capacity is wiped and `count` is
    /// 0. A throwing body leaves nothing too.
    @discardableResult
    package func write<E: Error>(_ body: (UnsafeMutableRawBufferPointer) throws(E) -> Int?) throws(E) -> Bool {
        count = 0
        let written: Int?
        do throws(E) { written = try body(UnsafeMutableRawBufferPointer(start: base, count: capacity)) } catch {
            wipe()
            throw error
        }
        guard let written else {
            wipe()
            return false
        }
        precondition(
            written >= 0 && written <= capacity, "a write into SensitiveBytes claimed \(written) of \(capacity) bytes")
        count = written
        return true
    }

    /// Where a deferred writer (crypto_mb's eight lanes, written by one later call) puts its bytes;
    /// `adoptWritten(_:)` says how many it wrote once that call says it did.
    package var deferredWriteTarget: UnsafeMutablePointer<UInt8> { base.assumingMemoryBound(to: UInt8.self) }

    /// The count of a deferred write that succeeded (see `deferredWriteTarget`).
    package func adoptWritten(_ written: Int) {
        precondition(written >= 0 && written <= capacity)
        count = written
    }

    /// Zeroes the whole capacity and empties the buffer (it can be written again).
    package func wipe() {
        SecureMemory.wipe(base, count: capacity)
        count = 0
    }

    /// Overwrites a caller's copy of a secret (a private key file read into memory) with zeros,
    /// in a way the compiler cannot drop (`sodium_memzero`).
    public static func wipe(_ bytes: inout [UInt8]) { SecureMemory.wipe(&bytes) }
}
