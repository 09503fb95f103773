// A fixed-capacity byte buffer for secrets that C writes into directly and that is wiped on release.
internal import CShims
import Foundation

/// Owns a heap buffer whose whole capacity is wiped with `sodium_memzero` when released.
/// Secrets (shared secret, derived key, plaintext) live here and never in `Data`/`Array`/`String`.
public final class SensitiveBytes: @unchecked Sendable {
    // Sendable: the contents are written once while decrypting and only read afterwards.
    private let base: UnsafeMutableRawPointer
    public let capacity: Int
    /// Number of meaningful bytes (<= capacity).
    public internal(set) var count: Int

    init(capacity: Int) {
        self.capacity = max(capacity, 1)
        self.base = UnsafeMutableRawPointer.allocate(byteCount: self.capacity, alignment: 16)
        self.count = 0
    }

    deinit {
        sodium_memzero(base, capacity)
        base.deallocate()
    }

    /// Read-only, scoped access to the meaningful bytes.
    public func withUnsafeBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        try body(UnsafeRawBufferPointer(start: base, count: count))
    }

    func withUnsafeMutableBytes<R, E: Error>(_ body: (UnsafeMutableRawBufferPointer) throws(E) -> R) throws(E) -> R {
        try body(UnsafeMutableRawBufferPointer(start: base, count: capacity))
    }

    var pointer: UnsafeMutablePointer<UInt8> { base.assumingMemoryBound(to: UInt8.self) }

    /// Overwrites a caller's copy of a secret (a private key file read into memory) with zeros,
    /// in a way the compiler cannot drop (`sodium_memzero`).
    public static func wipe(_ bytes: inout [UInt8]) {
        bytes.withUnsafeMutableBytes { raw in
            if let base = raw.baseAddress { sodium_memzero(base, raw.count) }
        }
    }
}

/// libsodium must be initialised once before its functions are used.
let sodiumIsReady: Bool = sodium_init() >= 0

/// Constant-time equality for hashes and other secrets.
func constantTimeEquals(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Bool {
    guard a.count == b.count, let pa = a.baseAddress, let pb = b.baseAddress else {
        return a.count == 0 && b.count == 0
    }
    return sodium_memcmp(pa, pb, a.count) == 0
}

/// Plain equality of non-secret bytes (certificates, OIDs, hashes of public keys) with memcmp.
func bytesEqual(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Bool {
    guard a.count == b.count else { return false }
    guard a.count > 0, let pa = a.baseAddress, let pb = b.baseAddress else { return true }
    return memcmp(pa, pb, a.count) == 0
}

func bytesEqual(_ a: [UInt8], _ b: UnsafeRawBufferPointer) -> Bool {
    a.withUnsafeBytes { bytesEqual($0, b) }
}

func constantTimeEquals(_ a: [UInt8], _ b: [UInt8]) -> Bool {
    a.withUnsafeBytes { ra in b.withUnsafeBytes { rb in constantTimeEquals(ra, rb) } }
}

/// A growable byte buffer for output that holds card data (result lines, decrypted JSON). Old storage
/// is wiped before it is freed when the buffer grows, `removeAll` wipes what was written, and the whole
/// capacity is wiped on release.
public final class SensitiveBuffer {
    private var base: UnsafeMutableRawPointer
    public private(set) var capacity: Int
    public private(set) var count = 0

    public init(capacity: Int = 4096) {
        self.capacity = max(capacity, 16)
        self.base = UnsafeMutableRawPointer.allocate(byteCount: self.capacity, alignment: 16)
    }

    deinit {
        sodium_memzero(base, capacity)
        base.deallocate()
    }

    private func reserve(_ extra: Int) {
        guard count + extra > capacity else { return }
        var newCapacity = capacity * 2
        while newCapacity < count + extra { newCapacity *= 2 }
        let bigger = UnsafeMutableRawPointer.allocate(byteCount: newCapacity, alignment: 16)
        bigger.copyMemory(from: base, byteCount: count)
        sodium_memzero(base, capacity)
        base.deallocate()
        base = bigger
        capacity = newCapacity
    }

    public func append(_ bytes: UnsafeRawBufferPointer) {
        guard let source = bytes.baseAddress, bytes.count > 0 else { return }
        reserve(bytes.count)
        (base + count).copyMemory(from: source, byteCount: bytes.count)
        count += bytes.count
    }

    public func append(byte: UInt8) {
        reserve(1)
        base.storeBytes(of: byte, toByteOffset: count, as: UInt8.self)
        count += 1
    }

    /// Appends text that carries no secret (names, codes, numbers).
    public func append(_ text: String) {
        var text = text
        text.withUTF8 { append(UnsafeRawBufferPointer($0)) }
    }

    /// Wipes what was written; the capacity is kept.
    public func removeAll() {
        sodium_memzero(base, count)
        count = 0
    }

    public func withUnsafeBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        try body(UnsafeRawBufferPointer(start: base, count: count))
    }
}
