// SHA-256, the one implementation: OpenSSL's (assembly; about twice libsodium's portable C on the
// kilobytes a token hashes), fetched once, with an owned reusable digest context for repeated use.
internal import CShims

/// Algorithms fetched from the default provider once per process. Fetching is costly; a fetched
/// algorithm is immutable and thread-safe.
package final class FetchedAlgorithms: @unchecked Sendable {
    // Sendable: set once at first use, never mutated, OpenSSL documents fetched objects as shareable.
    let aes256GCM: OpaquePointer
    let aes128GCM: OpaquePointer
    let sha256: OpaquePointer

    package static let shared = FetchedAlgorithms()

    private init() {
        guard let a256 = EVP_CIPHER_fetch(nil, "AES-256-GCM", nil), let a128 = EVP_CIPHER_fetch(nil, "AES-128-GCM", nil),
              let sha = EVP_MD_fetch(nil, "SHA256", nil)
        else {
            fatalError("OpenSSL cannot provide AES-GCM and SHA-256: \(OpenSSLErrors.drain() ?? "no provider")")
        }
        aes256GCM = a256
        aes128GCM = a128
        sha256 = sha
    }
}

package enum SHA256 {
    package static let byteCount = 32

    /// One-shot digest of non-secret bytes.
    package static func hash(_ bytes: UnsafeRawBufferPointer) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: byteCount)
        out.withUnsafeMutableBufferPointer { o in
            var length: UInt32 = 32
            _ = EVP_Digest(bytes.baseAddress, bytes.count, o.baseAddress, &length, FetchedAlgorithms.shared.sha256, nil)
        }
        return out
    }

    package static func hash(_ bytes: [UInt8]) -> [UInt8] { bytes.withUnsafeBytes { hash($0) } }
}

/// An owned EVP_MD_CTX computing SHA-256, reused from digest to digest by one thread (a lane, a
/// running input digest).
package final class DigestContext {
    private let ref: OpaquePointer

    package init() {
        guard let ref = EVP_MD_CTX_new() else { fatalError("OpenSSL could not allocate a digest context") }
        self.ref = ref
        start()
    }

    deinit { EVP_MD_CTX_free(ref) }

    /// Starts a new SHA-256 computation.
    package func start() { EVP_DigestInit_ex2(ref, FetchedAlgorithms.shared.sha256, nil) }

    package func update(_ bytes: UnsafeRawBufferPointer) {
        if bytes.count > 0 { EVP_DigestUpdate(ref, bytes.baseAddress, bytes.count) }
    }

    package func update(_ bytes: [UInt8]) { bytes.withUnsafeBytes { update($0) } }

    /// Writes the digest into `out` (32 bytes); `start()` before the next use.
    package func finish(into out: UnsafeMutablePointer<UInt8>) {
        var length: UInt32 = 32
        EVP_DigestFinal_ex(ref, out, &length)
    }

    package func finish() -> [UInt8] {
        var out = [UInt8](repeating: 0, count: SHA256.byteCount)
        out.withUnsafeMutableBufferPointer { finish(into: $0.baseAddress!) }
        return out
    }

    /// An independent context in the same state (to read a running digest without ending it).
    package func copy() -> DigestContext {
        let other = DigestContext()
        EVP_MD_CTX_copy_ex(other.ref, ref)
        return other
    }
}
