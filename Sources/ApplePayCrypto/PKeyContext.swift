// Owns an EVP_PKEY_CTX set up for one operation with one key (verify, derive, RSA-OAEP), reused
// from call to call by the lane that owns it, never shared between threads at once.
internal import CShims

package final class PKeyContext {
    private let ref: OpaquePointer
    /// Kept alive for as long as the context refers to it.
    package let key: EVPKey

    private init?(key: EVPKey, prepare: (OpaquePointer) -> Bool) {
        // The operation's algorithm (and a digest named in `prepare`) is fetched from OpenSSL's tables
        // (OpenSSLGlobalState); once per lane and key, not per token.
        let ref: OpaquePointer? = OpenSSLGlobalState.reading {
            guard let ref = EVP_PKEY_CTX_new_from_pkey(nil, key.ref, nil) else { return nil }
            guard prepare(ref) else {
                EVP_PKEY_CTX_free(ref)
                return nil
            }
            return ref
        }
        guard let ref else { return nil }
        self.ref = ref
        self.key = key
    }

    deinit { EVP_PKEY_CTX_free(ref) }

    /// Verifies signatures over SHA-256 digests (ECDSA, or RSA PKCS#1 v1.5).
    package static func verifier(_ key: EVPKey) -> PKeyContext? {
        PKeyContext(key: key) { EVP_PKEY_verify_init($0) == 1 && EVP_PKEY_CTX_set_signature_md($0, EVP_sha256()) == 1 }
    }

    /// Signs SHA-256 digests.
    package static func signer(_ key: EVPKey) -> PKeyContext? {
        PKeyContext(key: key) { EVP_PKEY_sign_init($0) == 1 && EVP_PKEY_CTX_set_signature_md($0, EVP_sha256()) == 1 }
    }

    /// ECDH with this private key.
    package static func deriver(_ key: EVPKey) -> PKeyContext? {
        PKeyContext(key: key) { EVP_PKEY_derive_init($0) == 1 }
    }

    /// RSA-OAEP decryption with SHA-256 for both the digest and MGF1 (RSA_v1's key unwrap).
    package static func oaepDecrypter(_ key: EVPKey) -> PKeyContext? {
        PKeyContext(key: key) { EVP_PKEY_decrypt_init($0) == 1 && setOAEP($0) }
    }

    /// RSA-OAEP encryption, the same parameters.
    package static func oaepEncrypter(_ key: EVPKey) -> PKeyContext? {
        PKeyContext(key: key) { EVP_PKEY_encrypt_init($0) == 1 && setOAEP($0) }
    }

    /// The raw RSA private-key operation (RSA_NO_PADDING, blinded): c^d mod n, the modulus' size with
    /// leading zero bytes kept. Samsung Pay's RSA1_5 unwrap decodes the block itself
    /// (`RSAPKCS1Decoding`), as OpenSSL 3.0's PKCS#1 v1.5 decoder is not implicitly rejecting.
    package static func rawRSADecrypter(_ key: EVPKey) -> PKeyContext? {
        PKeyContext(key: key) {
            EVP_PKEY_decrypt_init($0) == 1 && EVP_PKEY_CTX_set_rsa_padding($0, RSA_NO_PADDING) == 1
        }
    }

    /// RSAES-PKCS1-v1_5 encryption (the Samsung Pay token factory's side, and PKCS#11 load probes).
    package static func pkcs1Encrypter(_ key: EVPKey) -> PKeyContext? {
        PKeyContext(key: key) {
            EVP_PKEY_encrypt_init($0) == 1 && EVP_PKEY_CTX_set_rsa_padding($0, RSA_PKCS1_PADDING) == 1
        }
    }

    /// The raw public-key operation (m^e mod n; the factory's blocks with broken padding).
    package static func rawRSAEncrypter(_ key: EVPKey) -> PKeyContext? {
        PKeyContext(key: key) {
            EVP_PKEY_encrypt_init($0) == 1 && EVP_PKEY_CTX_set_rsa_padding($0, RSA_NO_PADDING) == 1
        }
    }

    /// The one RSA-OAEP setup: SHA-256 digest, MGF1 with SHA-256.
    private static func setOAEP(_ ctx: OpaquePointer) -> Bool {
        EVP_PKEY_CTX_set_rsa_padding(ctx, RSA_PKCS1_OAEP_PADDING) == 1
            && EVP_PKEY_CTX_set_rsa_oaep_md(ctx, EVP_sha256()) == 1
            && EVP_PKEY_CTX_set_rsa_mgf1_md(ctx, EVP_sha256()) == 1
    }

    package func verify(_ signature: UnsafeRawBufferPointer, overDigest digest: UnsafeRawBufferPointer) -> Bool {
        EVP_PKEY_verify(
            ref, signature.baseAddress?.assumingMemoryBound(to: UInt8.self), signature.count,
            digest.baseAddress?.assumingMemoryBound(to: UInt8.self), digest.count) == 1
    }

    /// Signs `digest` into `out`; returns the signature's length, or nil.
    package func sign(digest: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer) -> Int? {
        var length = out.count
        guard
            EVP_PKEY_sign(
                ref, out.baseAddress?.assumingMemoryBound(to: UInt8.self), &length,
                digest.baseAddress?.assumingMemoryBound(to: UInt8.self), digest.count) == 1
        else { return nil }
        return length
    }

    /// ECDH with `peer` into `out`, which must hold the field size (32 bytes for P-256; leading zero
    /// bytes are kept, OpenSSL pads). The peer is not checked again (`setP256Point` validated it).
    package func derive(peer: EVPKey, into out: UnsafeMutableRawBufferPointer) -> Int? {
        guard EVP_PKEY_derive_set_peer_ex(ref, peer.ref, 0) == 1 else { return nil }
        return derive(into: out)
    }

    /// ECDH with the peer set before.
    package func derive(into out: UnsafeMutableRawBufferPointer) -> Int? {
        var length = out.count
        guard EVP_PKEY_derive(ref, out.baseAddress?.assumingMemoryBound(to: UInt8.self), &length) == 1 else {
            return nil
        }
        return length
    }

    package func setPeer(_ peer: EVPKey) -> Bool { EVP_PKEY_derive_set_peer_ex(ref, peer.ref, 0) == 1 }

    /// Decrypts into `out` (at least `key.size` bytes); returns the plaintext length, or nil.
    package func decrypt(_ ciphertext: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer) -> Int? {
        var length = out.count
        guard
            EVP_PKEY_decrypt(
                ref, out.baseAddress?.assumingMemoryBound(to: UInt8.self), &length,
                ciphertext.baseAddress?.assumingMemoryBound(to: UInt8.self), ciphertext.count) == 1
        else { return nil }
        return length
    }

    package func encrypt(_ plaintext: UnsafeRawBufferPointer) -> [UInt8]? {
        var out = [UInt8](repeating: 0, count: key.size)
        var length = out.count
        let ok = out.withUnsafeMutableBufferPointer {
            EVP_PKEY_encrypt(
                ref, $0.baseAddress, &length, plaintext.baseAddress?.assumingMemoryBound(to: UInt8.self),
                plaintext.count) == 1
        }
        return ok ? Array(out[0..<length]) : nil
    }
}

extension EVPKey {
    /// The largest output of an operation with this key (signature, RSA block).
    package var size: Int { Int(EVP_PKEY_get_size(ref)) }

    /// A signature over a SHA-256 digest with a one-off context (cache misses, untrusted signers).
    package func verify(_ signature: UnsafeRawBufferPointer, overDigest digest: UnsafeRawBufferPointer) -> Bool {
        PKeyContext.verifier(self)?.verify(signature, overDigest: digest) ?? false
    }
}
