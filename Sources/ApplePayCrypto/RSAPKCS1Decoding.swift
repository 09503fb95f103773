// RSAES-PKCS1-v1_5 decoding of a 16-byte content key with implicit rejection (RFC 7516 §11.5): the
// block a raw RSA decryption gave is checked, and the key or a random one chosen, in constant time.

/// OpenSSL 3.2 and later reject implicitly inside `EVP_PKEY_decrypt`; OpenSSL 3.0 does not, and its
/// PKCS#1 v1.5 decoder fails loudly (an error, and a different path), which is Bleichenbacher's
/// oracle. So the engine takes the raw block (RSA_NO_PADDING, or CKM_RSA_X_509 in a token) and decodes
/// it here: no branch, no memory index and no early exit depends on the block's bytes, and the caller
/// cannot tell which key it got, only whether the GCM tag then verifies.
package enum RSAPKCS1Decoding {
    /// The content key's length: A128GCM's key.
    package static let keyLength = 16

    /// The smallest modulus that can carry a 16-byte message (3 fixed bytes, 8 of padding).
    package static let minimumModulusBytes = 3 + 8 + keyLength

    /// Writes into `out` (16 bytes) the message of `block` when `block` (c^d mod n, exactly the
    /// modulus' size, leading zero bytes kept) is `00 02 PS 00 M` with PS all non-zero and M 16
    /// bytes long; otherwise `fallback` (16 random bytes the caller drew before the RSA operation).
    /// Any other message length is a failure too: A128GCM's key is 16 bytes and nothing else.
    ///
    /// The sizes are public (the modulus' and the key's) and checked by the caller; a size that does
    /// not fit traps, it is never a secret outcome.
    @inline(never)
    package static func selectKey(
        block: UnsafeRawBufferPointer, fallback: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer
    ) {
        let k = block.count
        precondition(k >= minimumModulusBytes && fallback.count == keyLength && out.count >= keyLength)
        let separator = k - keyLength - 1
        // Every byte of the block is read, in order, whatever it holds.
        var bad = UInt32(block[0]) | (UInt32(block[1]) ^ 2) | UInt32(block[separator])
        for i in 2..<separator { bad |= isZero(block[i]) }
        // 0xFF when the block is a valid encoding of a 16-byte message, 0x00 otherwise.
        let keep = UInt8(truncatingIfNeeded: nonZero(bad) &- 1)
        for i in 0..<keyLength {
            out[i] = (block[separator + 1 + i] & keep) | (fallback[i] & ~keep)
        }
    }

    /// 1 when `x` (below 2³¹) is not zero, else 0, without a branch.
    @inline(__always) private static func nonZero(_ x: UInt32) -> UInt32 { (x | (0 &- x)) >> 31 }

    /// 1 when `b` is zero, else 0, without a branch.
    @inline(__always) private static func isZero(_ b: UInt8) -> UInt32 { 1 &- nonZero(UInt32(b)) }
}
