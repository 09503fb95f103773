// Owns the EVP_CIPHER_CTXs for AES-GCM (one per key size: 128 or 256) with a 16-byte zero IV and no AAD,
// as Apple Pay uses it; reused from call to call by one lane.
internal import CShims

package final class CipherContext {
    package static let tagLength = 16
    package static let ivLength = 16
    private static let zeroIV = [UInt8](repeating: 0, count: 16)

    /// One context per key size, each set up once with its cipher and the 16-byte IV length. In
    /// OpenSSL 3.0, resetting a context (or passing the cipher again) frees the provider's GCM state
    /// and allocates it anew; re-keying a set-up context does not: one heap allocation and about
    /// 2.5 K instructions less per token (callgrind, `Benchmarks/instruction-ratio.sh`).
    private var contexts: (aes128: OpaquePointer?, aes256: OpaquePointer?) = (nil, nil)
    private static let zeroKey = [UInt8](repeating: 0, count: 32)

    package init() {}

    deinit {
        if let ctx = contexts.aes128 { EVP_CIPHER_CTX_free(ctx) }
        if let ctx = contexts.aes256 { EVP_CIPHER_CTX_free(ctx) }
    }

    private static func cipher(keyLength: Int) -> OpaquePointer {
        keyLength == 32 ? FetchedAlgorithms.shared.aes256GCM : FetchedAlgorithms.shared.aes128GCM
    }

    private func discard(keyLength: Int) {
        if keyLength == 32 {
            if let ctx = contexts.aes256 { EVP_CIPHER_CTX_free(ctx) }
            contexts.aes256 = nil
        } else {
            if let ctx = contexts.aes128 { EVP_CIPHER_CTX_free(ctx) }
            contexts.aes128 = nil
        }
    }

    /// The set-up decryption context for a key of `keyLength` bytes (16 or 32); nil if OpenSSL fails.
    private func context(keyLength: Int) -> OpaquePointer? {
        if let ctx = keyLength == 32 ? contexts.aes256 : contexts.aes128 { return ctx }
        guard let ctx = EVP_CIPHER_CTX_new() else { return nil }
        guard EVP_DecryptInit_ex2(ctx, Self.cipher(keyLength: keyLength), nil, nil, nil) == 1,
            EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_IVLEN, Int32(Self.ivLength), nil) == 1
        else {
            EVP_CIPHER_CTX_free(ctx)
            return nil
        }
        if keyLength == 32 { contexts.aes256 = ctx } else { contexts.aes128 = ctx }
        return ctx
    }

    /// Opens `sealed` (ciphertext ‖ tag) into `out` (at least `sealed.count` bytes); returns the
    /// plaintext length, or nil when the tag does not verify (what was written is then not plaintext
    /// to use; the caller's buffer is wiped as usual).
    package func open(
        key: UnsafeRawBufferPointer, sealed: UnsafeRawBufferPointer, into out: UnsafeMutablePointer<UInt8>
    ) -> Int? {
        guard sealed.count >= Self.tagLength, key.count == 16 || key.count == 32,
            let ref = context(keyLength: key.count)
        else { return nil }
        // Re-keyed with zeros afterwards, whatever happened: OpenSSL's GCM set-up clears its whole
        // state (key schedule, hash key, counter and keystream blocks), so neither the key nor any
        // keystream outlives the call. The context stays set up for the next token.
        // If the zero re-key ever failed, the context is freed instead (EVP_CIPHER_CTX_free clears the
        // provider's state) and set up afresh for the next token: the wipe fails closed.
        defer {
            let wiped =
                Self.zeroKey.withUnsafeBufferPointer { EVP_DecryptInit_ex2(ref, nil, $0.baseAddress, nil, nil) } == 1
            if !wiped { discard(keyLength: key.count) }
        }
        let bodyLength = sealed.count - Self.tagLength
        let base = sealed.baseAddress!.assumingMemoryBound(to: UInt8.self)
        let keyBytes = key.baseAddress!.assumingMemoryBound(to: UInt8.self)
        var written: Int32 = 0
        var tail: Int32 = 0
        let ok = Self.zeroIV.withUnsafeBufferPointer { iv -> Bool in
            guard EVP_DecryptInit_ex2(ref, nil, keyBytes, iv.baseAddress, nil) == 1,
                EVP_DecryptUpdate(ref, out, &written, base, Int32(bodyLength)) == 1,
                EVP_CIPHER_CTX_ctrl(
                    ref, EVP_CTRL_GCM_SET_TAG, Int32(Self.tagLength),
                    UnsafeMutableRawPointer(mutating: base + bodyLength)) == 1
            else { return false }
            return EVP_DecryptFinal_ex(ref, out + Int(written), &tail) == 1
        }
        return ok ? Int(written + tail) : nil
    }

    /// Seals `plaintext`; returns ciphertext ‖ tag (the token factory's side).
    package func seal(key: UnsafeRawBufferPointer, plaintext: [UInt8]) -> [UInt8] {
        guard let ref = EVP_CIPHER_CTX_new() else { fatalError("OpenSSL could not allocate a cipher context") }
        defer { EVP_CIPHER_CTX_free(ref) }
        let keyBytes = key.baseAddress!.assumingMemoryBound(to: UInt8.self)
        var out = [UInt8](repeating: 0, count: plaintext.count + 32)
        var written: Int32 = 0
        var tail: Int32 = 0
        let ok = out.withUnsafeMutableBufferPointer { o -> Bool in
            Self.zeroIV.withUnsafeBufferPointer { iv in
                plaintext.withUnsafeBufferPointer { p in
                    EVP_EncryptInit_ex2(ref, Self.cipher(keyLength: key.count), nil, nil, nil) == 1
                        && EVP_CIPHER_CTX_ctrl(ref, EVP_CTRL_GCM_SET_IVLEN, Int32(Self.ivLength), nil) == 1
                        && EVP_EncryptInit_ex2(ref, nil, keyBytes, iv.baseAddress, nil) == 1
                        && EVP_EncryptUpdate(ref, o.baseAddress, &written, p.baseAddress, Int32(p.count)) == 1
                        && EVP_EncryptFinal_ex(ref, o.baseAddress! + Int(written), &tail) == 1
                        && EVP_CIPHER_CTX_ctrl(
                            ref, EVP_CTRL_GCM_GET_TAG, Int32(Self.tagLength), o.baseAddress! + Int(written + tail)) == 1
                }
            }
        }
        precondition(ok, "AES-GCM seal failed")
        return Array(out[0..<Int(written + tail) + Self.tagLength])
    }
}
