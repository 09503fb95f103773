// Owns the EVP_CIPHER_CTXs for AES-CTR (128 or 256) with a zero IV, as Google Pay's ECv1/ECv2 use it;
// reused from call to call by one lane, and re-keyed with zeros after each use.
internal import CShims

package final class CounterModeCipher {
    private static let zeroBlock = [UInt8](repeating: 0, count: 32)
    private var contexts: (aes128: OpaquePointer?, aes256: OpaquePointer?) = (nil, nil)

    package init() {}

    deinit {
        if let ctx = contexts.aes128 { EVP_CIPHER_CTX_free(ctx) }
        if let ctx = contexts.aes256 { EVP_CIPHER_CTX_free(ctx) }
    }

    private func context(keyLength: Int) -> OpaquePointer? {
        if let ctx = keyLength == 32 ? contexts.aes256 : contexts.aes128 { return ctx }
        guard let ctx = EVP_CIPHER_CTX_new() else { return nil }
        guard
            EVP_EncryptInit_ex2(
                ctx, keyLength == 32 ? FetchedAlgorithms.shared.aes256CTR : FetchedAlgorithms.shared.aes128CTR, nil,
                nil, nil) == 1
        else {
            EVP_CIPHER_CTX_free(ctx)
            return nil
        }
        if keyLength == 32 { contexts.aes256 = ctx } else { contexts.aes128 = ctx }
        return ctx
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

    /// AES-CTR with a zero IV under `key` (16 or 32 bytes) over `input` into `out` (at least as long):
    /// encryption and decryption are the same operation. False when OpenSSL fails.
    package func apply(
        key: UnsafeRawBufferPointer, _ input: UnsafeRawBufferPointer, into out: UnsafeMutablePointer<UInt8>
    )
        -> Bool
    {
        guard key.count == 16 || key.count == 32, let ref = context(keyLength: key.count) else { return false }
        // Re-keyed with zeros afterwards so that neither the key schedule nor keystream outlives the call.
        defer {
            let wiped =
                Self.zeroBlock.withUnsafeBufferPointer {
                    EVP_EncryptInit_ex2(ref, nil, $0.baseAddress, $0.baseAddress, nil)
                }
                == 1
            if !wiped { discard(keyLength: key.count) }
        }
        var written: Int32 = 0
        var tail: Int32 = 0
        return Self.zeroBlock.withUnsafeBufferPointer { iv -> Bool in
            guard
                EVP_EncryptInit_ex2(
                    ref, nil, key.baseAddress!.assumingMemoryBound(to: UInt8.self), iv.baseAddress, nil) == 1
            else { return false }
            if input.count > 0 {
                guard
                    EVP_EncryptUpdate(
                        ref, out, &written, input.baseAddress!.assumingMemoryBound(to: UInt8.self), Int32(input.count))
                        == 1
                else { return false }
            }
            return EVP_EncryptFinal_ex(ref, out + Int(written), &tail) == 1 && Int(written + tail) == input.count
        }
    }
}
