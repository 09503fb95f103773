// Algorithms fetched from the default provider once per process, and per-lane reusable contexts.
internal import CShims
import Synchronization

/// Fetched EVP_CIPHER objects. Fetching is costly; a fetched cipher is immutable and thread-safe.
final class FetchedAlgorithms: @unchecked Sendable {
    // Sendable: set once at first use, never mutated, OpenSSL documents fetched objects as shareable.
    let aes256GCM: OpaquePointer
    let aes128GCM: OpaquePointer

    static let shared = FetchedAlgorithms()

    private init() {
        guard let a256 = EVP_CIPHER_fetch(nil, "AES-256-GCM", nil), let a128 = EVP_CIPHER_fetch(nil, "AES-128-GCM", nil) else {
            fatalError("OpenSSL cannot provide AES-GCM: \(OpenSSLErrors.drain() ?? "no provider")")
        }
        aes256GCM = a256
        aes128GCM = a128
    }
}

/// The OpenSSL contexts one thread of work reuses from token to token. Never shared between
/// threads at the same time; `ContextPool` hands them out.
final class LaneContexts: @unchecked Sendable {
    // Sendable only to travel through the pool's lock: one thread at a time uses a given instance.
    let cipher: OpaquePointer
    let ecImport: OpaquePointer
    let digestVerify: OpaquePointer

    init() {
        guard let cipher = EVP_CIPHER_CTX_new(),
              let ecImport = EVP_PKEY_CTX_new_from_name(nil, "EC", nil),
              let digestVerify = EVP_MD_CTX_new()
        else { fatalError("OpenSSL could not allocate contexts") }
        self.cipher = cipher
        self.ecImport = ecImport
        self.digestVerify = digestVerify
    }

    deinit {
        EVP_CIPHER_CTX_free(cipher)
        EVP_PKEY_CTX_free(ecImport)
        EVP_MD_CTX_free(digestVerify)
    }
}

/// A small free list of `LaneContexts`, so concurrent callers of a shared decryptor each get
/// their own contexts without allocating new ones per token.
final class ContextPool: Sendable {
    private let free = Mutex<[LaneContexts]>([])
    private let limit: Int

    init(limit: Int = 64) { self.limit = limit }

    func withContexts<R, E: Error>(_ body: (LaneContexts) throws(E) -> R) throws(E) -> R {
        let contexts = free.withLock { $0.popLast() } ?? LaneContexts()
        defer { free.withLock { list in if list.count < limit { list.append(contexts) } } }
        return try body(contexts)
    }
}
