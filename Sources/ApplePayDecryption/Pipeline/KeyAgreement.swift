// Apple's key derivation for EC_v1: the NIST SP 800-56A single-round concatenation KDF with SHA-256.
package import ApplePayCrypto

package enum AppleKDF {
    /// SHA-256(00000001 ‖ Z ‖ 0x0D ‖ "id-aes256-GCM" ‖ "Apple" ‖ partyV), into a wiped buffer.
    package static func derive(sharedSecret: SensitiveBytes, partyV: [UInt8], digest: DigestContext) -> SensitiveBytes {
        derive(sharedSecret: sharedSecret, partyV: partyV, digest: digest, into: SensitiveBytes(capacity: 32))
    }

    /// The same into `key` (at least 32 bytes of capacity; a lane's reused buffer), which is returned.
    package static func derive(
        sharedSecret: SensitiveBytes, partyV: [UInt8], digest: DigestContext, into key: SensitiveBytes
    ) -> SensitiveBytes {
        precondition(key.capacity >= 32)
        digest.start()
        withUnsafeBytes(of: UInt32(1).bigEndian) { digest.update($0) }
        sharedSecret.withUnsafeBytes { digest.update($0) }
        digest.update(kdfAlgorithmAndPartyU)
        digest.update(partyV)
        key.write { out in
            digest.finish(into: out.baseAddress!.assumingMemoryBound(to: UInt8.self))
            return 32
        }
        return key
    }

    private static let kdfAlgorithmAndPartyU: [UInt8] = [0x0D] + Array("id-aes256-GCM".utf8) + Array("Apple".utf8)
}
