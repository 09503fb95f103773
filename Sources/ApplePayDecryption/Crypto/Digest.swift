// SHA-256 through libsodium: no contexts to manage, and the inputs here are short.
internal import CShims

enum SHA256 {
    static let byteCount = 32

    static func hash(_ bytes: UnsafeRawBufferPointer) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: byteCount)
        out.withUnsafeMutableBufferPointer { o in
            _ = crypto_hash_sha256(o.baseAddress!, bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(bytes.count))
        }
        return out
    }

    static func hash(_ bytes: [UInt8]) -> [UInt8] { bytes.withUnsafeBytes { hash($0) } }

    /// Incremental hashing over several parts, without concatenating them first.
    struct Hasher: ~Copyable {
        private var state = crypto_hash_sha256_state()
        init() { crypto_hash_sha256_init(&state) }
        mutating func update(_ bytes: UnsafeRawBufferPointer) {
            _ = crypto_hash_sha256_update(&state, bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(bytes.count))
        }
        mutating func update(_ bytes: [UInt8]) { bytes.withUnsafeBytes { update($0) } }
        /// Writes the digest into `out` (32 bytes).
        mutating func finalize(into out: UnsafeMutablePointer<UInt8>) {
            crypto_hash_sha256_final(&state, out)
            sodium_memzero(&state, MemoryLayout<crypto_hash_sha256_state>.size)
        }
        mutating func finalize() -> [UInt8] {
            var out = [UInt8](repeating: 0, count: SHA256.byteCount)
            out.withUnsafeMutableBufferPointer { finalize(into: $0.baseAddress!) }
            return out
        }
    }
}
