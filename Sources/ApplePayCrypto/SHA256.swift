// SHA-256, the one implementation: OpenSSL's (assembly; about twice libsodium's portable C on the
// kilobytes a token hashes), with an owned reusable digest state for repeated use.
internal import CShims

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

/// A SHA-256 state owned by one thread (a lane, a running input digest), reused from digest to digest.
///
/// OpenSSL's low-level SHA256_Init/Update/Final on a state of our own, not an EVP_MD_CTX: same
/// assembly, but EVP_DigestInit_ex2 in OpenSSL 3.0 frees and reallocates the provider context on every
/// start (one heap allocation per digest, four per EC_v1 token) and adds about 450 instructions of
/// dispatch per digest (callgrind, `Benchmarks/instruction-ratio.sh`). The state is wiped after every
/// `finish`: the KDF's digest absorbs the shared secret and ends holding the symmetric key.
package final class DigestContext {
    private let state: UnsafeMutablePointer<CShims_SHA256State>

    package init() {
        state = .allocate(capacity: 1)
        state.initialize(to: CShims_SHA256State())
        start()
    }

    deinit {
        SecureMemory.wipe(UnsafeMutableRawPointer(state), count: MemoryLayout<CShims_SHA256State>.size)
        state.deallocate()
    }

    /// Starts a new SHA-256 computation.
    package func start() { SHA256_Init(state) }

    package func update(_ bytes: UnsafeRawBufferPointer) {
        if bytes.count > 0 { SHA256_Update(state, bytes.baseAddress, bytes.count) }
    }

    package func update(_ bytes: [UInt8]) { bytes.withUnsafeBytes { update($0) } }

    /// Writes the digest into `out` (32 bytes), wipes the state and starts a new computation (so an
    /// `update` without `start()` hashes from SHA-256's initial values, never from a zeroed state).
    package func finish(into out: UnsafeMutablePointer<UInt8>) {
        SHA256_Final(out, state)
        SecureMemory.wipe(UnsafeMutableRawPointer(state), count: MemoryLayout<CShims_SHA256State>.size)
        SHA256_Init(state)
    }

    package func finish() -> [UInt8] {
        var out = [UInt8](repeating: 0, count: SHA256.byteCount)
        out.withUnsafeMutableBufferPointer { finish(into: $0.baseAddress!) }
        return out
    }

    /// An independent context in the same state (to read a running digest without ending it).
    package func copy() -> DigestContext {
        let other = DigestContext()
        other.state.pointee = state.pointee
        return other
    }
}
