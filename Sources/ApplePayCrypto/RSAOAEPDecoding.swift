// OAEP decoding (SHA-256, MGF1-SHA-256, no label) of the block a raw RSA decryption gave, through
// OpenSSL's constant-time decoder: for PKCS#11 modules that do the raw operation but OAEP with SHA-1 only.
internal import CShims

package enum RSAOAEPDecoding {
    /// Decodes `block` (c^d mod n: the modulus' size, or shorter when the module dropped leading zero
    /// bytes, which OpenSSL's decoder puts back in constant time) into `out`; the message's length, or
    /// nil when the block is not a valid encoding. Every failure looks the same, and the decoder runs in
    /// constant time whatever the block holds (Manger's attack): no check here may depend on its bytes.
    package static func decodeSHA256(
        block: UnsafeRawBufferPointer, modulusBytes: Int, into out: UnsafeMutableRawBufferPointer
    ) -> Int? {
        guard block.count > 0, block.count <= modulusBytes, modulusBytes >= 2 * 32 + 2, out.count > 0,
            let sha256 = EVP_sha256()
        else { return nil }
        let length = RSA_padding_check_PKCS1_OAEP_mgf1(
            out.baseAddress?.assumingMemoryBound(to: UInt8.self), Int32(out.count),
            block.baseAddress?.assumingMemoryBound(to: UInt8.self), Int32(block.count), Int32(modulusBytes),
            nil, 0, sha256, sha256)
        // The decoder reports why on the error queue; the reason would only help an attacker.
        ERR_clear_error()
        return length >= 0 ? Int(length) : nil
    }
}
