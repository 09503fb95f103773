// The cryptographic steps of Apple's procedure over OpenSSL EVP: signature check, ECDH, the
// concatenation KDF, RSA-OAEP unwrap and AES-GCM with a 16-byte IV. Secrets land in SensitiveBytes.
internal import CShims

enum Primitives {
    static let gcmTagLength = 16
    static let gcmIVLength = 16
    private static let zeroIV = [UInt8](repeating: 0, count: 16)

    /// ECDSA or RSA (PKCS#1 v1.5) signature over a SHA-256 digest, with the lane's reusable
    /// verification context for a trusted signer (a fresh one for others, so that signers of
    /// untrusted chains never push Apple's out of the lane's small context cache).
    ///
    /// ECDSA signatures are malleable: if (r, s) verifies, so does (r, n−s), a different byte string.
    /// That is accepted by design, as OpenSSL and Apple do: nothing keys on the signature bytes (replay
    /// detection keys on the transactionId and the signed content digest, which the variant leaves
    /// unchanged). See TrustHardeningTests.testMalleatedECDSASignatureIsAcceptedByDesign.
    static func verifySignature(_ signature: UnsafeRawBufferPointer, overDigest digest: UnsafeRawBufferPointer,
                                signer: CachedSigner, lane: LaneContexts) -> Bool {
        guard signer.isTrusted else { return digest.withMemoryRebound(to: UInt8.self) { verifySignature(signature, overDigest: $0, key: signer.leafKey) } }
        guard let ctx = lane.verifyContext(for: signer) else { return false }
        return EVP_PKEY_verify(ctx, signature.baseAddress?.assumingMemoryBound(to: UInt8.self), signature.count,
                               digest.baseAddress?.assumingMemoryBound(to: UInt8.self), digest.count) == 1
    }

    /// The same check with a one-off context (cache misses, untrusted signers).
    static func verifySignature(_ signature: UnsafeRawBufferPointer, overDigest digest: UnsafeBufferPointer<UInt8>, key: EVPKey) -> Bool {
        guard let ctx = EVP_PKEY_CTX_new_from_pkey(nil, key.ref, nil) else { return false }
        defer { EVP_PKEY_CTX_free(ctx) }
        return EVP_PKEY_verify_init(ctx) == 1 && EVP_PKEY_CTX_set_signature_md(ctx, EVP_sha256()) == 1
            && EVP_PKEY_verify(ctx, signature.baseAddress?.assumingMemoryBound(to: UInt8.self), signature.count, digest.baseAddress, digest.count) == 1
    }

    static func verifySignature(_ signature: UnsafeRawBufferPointer, overDigest digest: [UInt8], key: EVPKey) -> Bool {
        digest.withUnsafeBufferPointer { verifySignature(signature, overDigest: $0, key: key) }
    }

    /// ECDH with the lane's reusable derive context for this merchant: the 32-byte shared secret Z,
    /// leading zero bytes kept (OpenSSL pads to the field size). The peer point was validated when it
    /// was imported, so the derive skips a second check.
    static func ecdh(merchant: MerchantIdentity, peer: EVPKey, lane: LaneContexts) -> SensitiveBytes? {
        guard let ctx = lane.merchantContext(for: merchant) else { return nil }
        return derive(ctx, peer: peer)
    }

    /// ECDH with a fresh context (token factory).
    static func ecdh(privateKey: EVPKey, peer: EVPKey) -> SensitiveBytes? {
        guard let ctx = EVP_PKEY_CTX_new_from_pkey(nil, privateKey.ref, nil) else { return nil }
        defer { EVP_PKEY_CTX_free(ctx) }
        guard EVP_PKEY_derive_init(ctx) == 1 else { return nil }
        return derive(ctx, peer: peer)
    }

    private static func derive(_ ctx: OpaquePointer, peer: EVPKey) -> SensitiveBytes? {
        guard EVP_PKEY_derive_set_peer_ex(ctx, peer.ref, 0) == 1 else { return nil }
        let secret = SensitiveBytes(capacity: 32)
        var length = 32
        guard EVP_PKEY_derive(ctx, secret.pointer, &length) == 1, length == 32 else { return nil }
        secret.count = 32
        return secret
    }

    /// NIST SP 800-56A single-round concatenation KDF with SHA-256, as Apple specifies it:
    /// SHA-256(00000001 ‖ Z ‖ 0x0D ‖ "id-aes256-GCM" ‖ "Apple" ‖ partyV).
    static func appleKDF(sharedSecret: SensitiveBytes, partyV: [UInt8]) -> SensitiveBytes {
        var hasher = SHA256.Hasher()
        withUnsafeBytes(of: UInt32(1).bigEndian) { hasher.update($0) }
        sharedSecret.withUnsafeBytes { hasher.update($0) }
        hasher.update(kdfAlgorithmAndPartyU)
        hasher.update(partyV)
        let key = SensitiveBytes(capacity: 32)
        hasher.finalize(into: key.pointer)
        key.count = 32
        return key
    }

    private static let kdfAlgorithmAndPartyU: [UInt8] = [0x0D] + Array("id-aes256-GCM".utf8) + Array("Apple".utf8)

    /// RSA-OAEP with SHA-256 for both the digest and MGF1 (RSA_v1's key unwrap), with the lane's
    /// decrypt context for this merchant.
    static func rsaOAEPDecrypt(merchant: MerchantIdentity, ciphertext: UnsafeRawBufferPointer, lane: LaneContexts) -> SensitiveBytes? {
        guard let ctx = lane.merchantContext(for: merchant) else { return nil }
        let out = SensitiveBytes(capacity: Int(EVP_PKEY_get_size(merchant.privateKey.ref)))
        var length = out.capacity
        guard EVP_PKEY_decrypt(ctx, out.pointer, &length, ciphertext.baseAddress?.assumingMemoryBound(to: UInt8.self), ciphertext.count) == 1
        else { return nil }
        out.count = length
        return out
    }

    /// AES-GCM (128 or 256 by key size) with a 16-byte zero IV, no AAD; `sealed` ends with the tag.
    /// Returns nil when the tag does not verify; no plaintext escapes in that case.
    static func aesGCMOpen(key: SensitiveBytes, sealed: UnsafeRawBufferPointer, contexts: LaneContexts) -> SensitiveBytes? {
        guard sealed.count >= gcmTagLength, key.count == 16 || key.count == 32 else { return nil }
        let ctx = contexts.cipher
        defer { EVP_CIPHER_CTX_reset(ctx) }
        let cipher = key.count == 32 ? FetchedAlgorithms.shared.aes256GCM : FetchedAlgorithms.shared.aes128GCM
        let bodyLength = sealed.count - gcmTagLength
        let base = sealed.baseAddress!.assumingMemoryBound(to: UInt8.self)
        let plaintext = SensitiveBytes(capacity: bodyLength + 16)
        var written: Int32 = 0
        var tail: Int32 = 0
        let ok = zeroIV.withUnsafeBufferPointer { iv -> Bool in
            guard EVP_DecryptInit_ex2(ctx, cipher, nil, nil, nil) == 1,
                  EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_IVLEN, Int32(gcmIVLength), nil) == 1,
                  EVP_DecryptInit_ex2(ctx, nil, key.pointer, iv.baseAddress, nil) == 1,
                  EVP_DecryptUpdate(ctx, plaintext.pointer, &written, base, Int32(bodyLength)) == 1,
                  EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, Int32(gcmTagLength), UnsafeMutableRawPointer(mutating: base + bodyLength)) == 1
            else { return false }
            return EVP_DecryptFinal_ex(ctx, plaintext.pointer + Int(written), &tail) == 1
        }
        guard ok else { return nil }
        plaintext.count = Int(written + tail)
        return plaintext
    }

    /// AES-GCM seal with a 16-byte zero IV (token factory). Returns ciphertext ‖ tag.
    static func aesGCMSeal(key: SensitiveBytes, plaintext: [UInt8]) -> [UInt8] {
        guard let ctx = EVP_CIPHER_CTX_new() else { fatalError("EVP_CIPHER_CTX_new failed") }
        defer { EVP_CIPHER_CTX_free(ctx) }
        let cipher = key.count == 32 ? FetchedAlgorithms.shared.aes256GCM : FetchedAlgorithms.shared.aes128GCM
        var out = [UInt8](repeating: 0, count: plaintext.count + 32)
        var written: Int32 = 0
        var tail: Int32 = 0
        let ok = out.withUnsafeMutableBufferPointer { o -> Bool in
            zeroIV.withUnsafeBufferPointer { iv in
                plaintext.withUnsafeBufferPointer { p in
                    guard EVP_EncryptInit_ex2(ctx, cipher, nil, nil, nil) == 1,
                          EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_IVLEN, Int32(gcmIVLength), nil) == 1,
                          EVP_EncryptInit_ex2(ctx, nil, key.pointer, iv.baseAddress, nil) == 1,
                          EVP_EncryptUpdate(ctx, o.baseAddress, &written, p.baseAddress, Int32(p.count)) == 1,
                          EVP_EncryptFinal_ex(ctx, o.baseAddress! + Int(written), &tail) == 1,
                          EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, Int32(gcmTagLength), o.baseAddress! + Int(written + tail)) == 1
                    else { return false }
                    return true
                }
            }
        }
        precondition(ok, "AES-GCM seal failed")
        return Array(out[0..<Int(written + tail) + gcmTagLength])
    }
}
