// Owns the EVP_CIPHER_CTX for AES-128-GCM with a 12-byte IV carried by the message and no AAD, as
// Samsung Pay's JWE uses it (A128GCM); reused from call to call by one lane.
internal import CShims

/// AES-128-GCM with a per-message 12-byte IV and an empty AAD (`CipherContext` is Apple Pay's, with a
/// fixed zero IV of 16 bytes).
package final class NonceCipherContext {
    package static let keyLength = 16
    package static let ivLength = 12
    package static let tagLength = 16
    private static let zeroKey = [UInt8](repeating: 0, count: 16)

    /// Set up once with its cipher and IV length; re-keyed per message (see `CipherContext` for why
    /// a set-up context is kept rather than reset).
    private var context: OpaquePointer?

    package init() {}

    deinit { if let context { EVP_CIPHER_CTX_free(context) } }

    private func setUp() -> OpaquePointer? {
        if let context { return context }
        guard let ctx = EVP_CIPHER_CTX_new() else { return nil }
        guard EVP_DecryptInit_ex2(ctx, FetchedAlgorithms.shared.aes128GCM, nil, nil, nil) == 1,
            EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_IVLEN, Int32(Self.ivLength), nil) == 1
        else {
            EVP_CIPHER_CTX_free(ctx)
            return nil
        }
        context = ctx
        return ctx
    }

    /// Opens `ciphertext` with `tag` into `out` (at least `ciphertext.count` bytes, never fewer than
    /// one); true when the tag verifies (OpenSSL compares it in constant time). What was written when
    /// it does not is not plaintext to use; the caller wipes its buffer.
    package func open(
        key: UnsafeRawBufferPointer, iv: UnsafeRawBufferPointer, ciphertext: UnsafeRawBufferPointer,
        tag: UnsafeRawBufferPointer, into out: UnsafeMutablePointer<UInt8>
    ) -> Bool {
        guard key.count == Self.keyLength, iv.count == Self.ivLength, tag.count == Self.tagLength,
            let ref = setUp()
        else { return false }
        // Re-keyed with zeros afterwards whatever happened, so neither the key nor any keystream
        // outlives the call; a failed wipe frees the context instead (fails closed).
        defer {
            let wiped =
                Self.zeroKey.withUnsafeBufferPointer { EVP_DecryptInit_ex2(ref, nil, $0.baseAddress, nil, nil) } == 1
            if !wiped {
                EVP_CIPHER_CTX_free(ref)
                context = nil
            }
        }
        var written: Int32 = 0
        var tail: Int32 = 0
        guard
            EVP_DecryptInit_ex2(
                ref, nil, key.baseAddress!.assumingMemoryBound(to: UInt8.self),
                iv.baseAddress!.assumingMemoryBound(to: UInt8.self), nil) == 1,
            EVP_DecryptUpdate(
                ref, out, &written, ciphertext.baseAddress?.assumingMemoryBound(to: UInt8.self),
                Int32(ciphertext.count)) == 1,
            EVP_CIPHER_CTX_ctrl(
                ref, EVP_CTRL_GCM_SET_TAG, Int32(Self.tagLength), UnsafeMutableRawPointer(mutating: tag.baseAddress!))
                == 1
        else { return false }
        return EVP_DecryptFinal_ex(ref, out + Int(written), &tail) == 1
    }

    /// Seals `plaintext` under `key` and `iv` with `aad` (empty for Samsung Pay); returns ciphertext
    /// and tag (the token factory's side).
    package static func seal(key: [UInt8], iv: [UInt8], plaintext: [UInt8], aad: [UInt8] = [])
        -> (ciphertext: [UInt8], tag: [UInt8])
    {
        precondition(key.count == keyLength && iv.count == ivLength)
        guard let ref = EVP_CIPHER_CTX_new() else { fatalError("OpenSSL could not allocate a cipher context") }
        defer { EVP_CIPHER_CTX_free(ref) }
        var out = [UInt8](repeating: 0, count: plaintext.count + 16)
        var tag = [UInt8](repeating: 0, count: tagLength)
        var written: Int32 = 0
        var tail: Int32 = 0
        var ignored: Int32 = 0
        let ok = out.withUnsafeMutableBufferPointer { o -> Bool in
            guard EVP_EncryptInit_ex2(ref, FetchedAlgorithms.shared.aes128GCM, nil, nil, nil) == 1,
                EVP_CIPHER_CTX_ctrl(ref, EVP_CTRL_GCM_SET_IVLEN, Int32(ivLength), nil) == 1,
                EVP_EncryptInit_ex2(ref, nil, key, iv, nil) == 1
            else { return false }
            if !aad.isEmpty, EVP_EncryptUpdate(ref, nil, &ignored, aad, Int32(aad.count)) != 1 { return false }
            return EVP_EncryptUpdate(ref, o.baseAddress, &written, plaintext, Int32(plaintext.count)) == 1
                && EVP_EncryptFinal_ex(ref, o.baseAddress! + Int(written), &tail) == 1
                && tag.withUnsafeMutableBytes {
                    EVP_CIPHER_CTX_ctrl(ref, EVP_CTRL_GCM_GET_TAG, Int32(tagLength), $0.baseAddress) == 1
                }
        }
        precondition(ok, "AES-GCM seal failed")
        return (Array(out[0..<Int(written + tail)]), tag)
    }
}
