// A growable wiped buffer for output that holds card data: result lines and decrypted JSON.
internal import ApplePayCrypto

/// A growable byte buffer for output that holds card data (result lines, decrypted JSON). Old storage
/// is wiped before it is freed when the buffer grows, `removeAll` wipes what was written, and the whole
/// capacity is wiped on release.
public final class SensitiveBuffer {
    private var base: UnsafeMutableRawPointer
    /// Bytes the buffer holds before it grows.
    public private(set) var capacity: Int
    /// Bytes written so far.
    public private(set) var count = 0

    /// An empty buffer with room for `capacity` bytes (at least 16).
    public init(capacity: Int = 4096) {
        self.capacity = max(capacity, 16)
        self.base = UnsafeMutableRawPointer.allocate(byteCount: self.capacity, alignment: 16)
    }

    deinit {
        SecureMemory.wipe(base, count: capacity)
        base.deallocate()
    }

    private func reserve(_ extra: Int) {
        guard count + extra > capacity else { return }
        var newCapacity = capacity * 2
        while newCapacity < count + extra { newCapacity *= 2 }
        let bigger = UnsafeMutableRawPointer.allocate(byteCount: newCapacity, alignment: 16)
        bigger.copyMemory(from: base, byteCount: count)
        SecureMemory.wipe(base, count: capacity)
        base.deallocate()
        base = bigger
        capacity = newCapacity
    }

    /// Appends bytes, growing the buffer (and wiping the old storage) when needed.
    public func append(_ bytes: UnsafeRawBufferPointer) {
        guard let source = bytes.baseAddress, bytes.count > 0 else { return }
        reserve(bytes.count)
        (base + count).copyMemory(from: source, byteCount: bytes.count)
        count += bytes.count
    }

    /// Appends one byte.
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
        SecureMemory.wipe(base, count: count)
        count = 0
    }

    /// Read-only, scoped access to the bytes written.
    public func withUnsafeBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        try body(UnsafeRawBufferPointer(start: base, count: count))
    }
}
