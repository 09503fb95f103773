// Algorithms fetched from the default provider once per process, and per-lane reusable contexts.
internal import CShims
import Synchronization

/// Fetched EVP_CIPHER objects. Fetching is costly; a fetched cipher is immutable and thread-safe.
final class FetchedAlgorithms: @unchecked Sendable {
    // Sendable: set once at first use, never mutated, OpenSSL documents fetched objects as shareable.
    let aes256GCM: OpaquePointer
    let aes128GCM: OpaquePointer
    /// OpenSSL's SHA-256 (assembly; about twice libsodium's portable C on the kilobytes a token hashes).
    let sha256: OpaquePointer

    static let shared = FetchedAlgorithms()

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

/// The OpenSSL contexts and scratch space one thread of work reuses from token to token. Never
/// shared between threads at the same time; `ContextPool` or a batch lane owns each one.
final class LaneContexts: @unchecked Sendable {
    // Sendable only to travel through the pool's lock: one thread at a time uses a given instance.
    let cipher: OpaquePointer
    let digest: OpaquePointer
    /// A P-256 public key whose point is replaced by each token's ephemeral point: importing into
    /// an existing key reuses its group, where a fresh import (EVP_PKEY_fromdata) rebuilds it.
    let ephemeral: EVPKey
    /// Verification contexts per signing key and private-key contexts per merchant, initialised once.
    /// The entries hold their owners strongly, so identity comparison stays valid.
    private var verifiers: [(CachedSigner, OpaquePointer)] = []
    private var merchantContexts: [(MerchantIdentity, OpaquePointer)] = []
    private static let maxCachedContexts = 16
    /// Two 32-byte digests (signed attributes, signed content).
    private let digests = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: 64)
    /// Where a token's fields are decoded; reused from token to token.
    var tokenStorage: [UInt8] = []

    init() {
        guard let cipher = EVP_CIPHER_CTX_new(), let digest = EVP_MD_CTX_new(), let importer = EVP_PKEY_CTX_new_from_name(nil, "EC", nil) else {
            fatalError("OpenSSL could not allocate contexts")
        }
        defer { EVP_PKEY_CTX_free(importer) }
        guard let ephemeral = Self.p256Generator.withUnsafeBytes({ EVPKey.p256PublicKey(point: $0, context: importer) }) else {
            fatalError("OpenSSL cannot import a P-256 point: \(OpenSSLErrors.drain() ?? "")")
        }
        self.cipher = cipher
        self.digest = digest
        self.ephemeral = ephemeral
        tokenStorage.reserveCapacity(16 << 10)
        verifiers.reserveCapacity(Self.maxCachedContexts)
        merchantContexts.reserveCapacity(Self.maxCachedContexts)
    }

    deinit {
        EVP_CIPHER_CTX_free(cipher)
        EVP_MD_CTX_free(digest)
        for (_, ctx) in verifiers { EVP_PKEY_CTX_free(ctx) }
        for (_, ctx) in merchantContexts { EVP_PKEY_CTX_free(ctx) }
        digests.deallocate()
    }

    /// The P-256 base point G, uncompressed: a valid point to create the reusable ephemeral key with.
    private static let p256Generator: [UInt8] = [0x04]
        + Hex.decode("6b17d1f2e12c4247f8bce6e563a440f277037d812deb33a0f4a13945d898c296")!
        + Hex.decode("4fe342e2fe1a7f9b8ee7eb4a7c0f9e162bce33576b315ececbb6406837bf51f5")!

    /// Loads a token's ephemeral point into the lane's reusable key. OpenSSL rejects points that
    /// are not on the curve here, so the derive can skip its own check.
    func importEphemeral(_ point: UnsafeRawBufferPointer) -> EVPKey? {
        guard point.count == 65, point[0] == 0x04,
              EVP_PKEY_set1_encoded_public_key(ephemeral.ref, point.baseAddress?.assumingMemoryBound(to: UInt8.self), 65) == 1
        else { return nil }
        return ephemeral
    }

    /// SHA-256 over several parts with the lane's reusable digest context, into `out` (32 bytes).
    func sha256(into out: UnsafeMutablePointer<UInt8>, _ parts: UnsafeRawBufferPointer...) {
        EVP_DigestInit_ex2(digest, FetchedAlgorithms.shared.sha256, nil)
        for part in parts where part.count > 0 { EVP_DigestUpdate(digest, part.baseAddress, part.count) }
        var length: UInt32 = 32
        EVP_DigestFinal_ex(digest, out, &length)
    }

    func withDigestScratch<R>(_ body: (UnsafeMutableBufferPointer<UInt8>, UnsafeMutableBufferPointer<UInt8>) -> R) -> R {
        body(UnsafeMutableBufferPointer(rebasing: digests[0..<32]), UnsafeMutableBufferPointer(rebasing: digests[32..<64]))
    }

    /// A verify context for the signer's key, SHA-256 digests, created on first use.
    func verifyContext(for signer: CachedSigner) -> OpaquePointer? {
        Self.context(for: signer, key: signer.leafKey, in: &verifiers) { ctx in
            EVP_PKEY_verify_init(ctx) == 1 && EVP_PKEY_CTX_set_signature_md(ctx, EVP_sha256()) == 1
        }
    }

    /// The merchant's private-key context, created on first use: ECDH derive for an EC key,
    /// RSA-OAEP (SHA-256, MGF1-SHA-256) decrypt for an RSA key.
    func merchantContext(for merchant: MerchantIdentity) -> OpaquePointer? {
        Self.context(for: merchant, key: merchant.privateKey, in: &merchantContexts) { ctx in
            merchant.keyKind == .ec
                ? EVP_PKEY_derive_init(ctx) == 1
                : EVP_PKEY_decrypt_init(ctx) == 1
                    && EVP_PKEY_CTX_set_rsa_padding(ctx, RSA_PKCS1_OAEP_PADDING) == 1
                    && EVP_PKEY_CTX_set_rsa_oaep_md(ctx, EVP_sha256()) == 1
                    && EVP_PKEY_CTX_set_rsa_mgf1_md(ctx, EVP_sha256()) == 1
        }
    }

    /// The cached context for `owner`, or a new one for `key` set up by `prepare` (at most
    /// `maxCachedContexts` kept; when full, all are dropped and rebuilt on demand).
    private static func context<Owner: AnyObject>(for owner: Owner, key: EVPKey, in cache: inout [(Owner, OpaquePointer)],
                                                  prepare: (OpaquePointer) -> Bool) -> OpaquePointer? {
        if let hit = cache.first(where: { $0.0 === owner }) { return hit.1 }
        guard let ctx = EVP_PKEY_CTX_new_from_pkey(nil, key.ref, nil) else { return nil }
        guard prepare(ctx) else {
            EVP_PKEY_CTX_free(ctx)
            return nil
        }
        if cache.count >= maxCachedContexts {
            for (_, old) in cache { EVP_PKEY_CTX_free(old) }
            cache.removeAll(keepingCapacity: true)
        }
        cache.append((owner, ctx))
        return ctx
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
