// A lane's key-agreement state: the reusable ephemeral P-256 key and each merchant's private-key
// context (ECDH derive for EC keys, RSA-OAEP decrypt for RSA keys), created on first use.
package import ApplePayCrypto

package final class MerchantContexts {
    /// Each token's ephemeral point is loaded into this one key (see `EVPKey.reusableP256PublicKey`).
    private let ephemeral = EVPKey.reusableP256PublicKey()
    private var contexts = ContextCache<MerchantIdentity>()

    /// Loads a token's ephemeral point; nil when it is not a point on P-256.
    package func importEphemeral(_ point: UnsafeRawBufferPointer) -> EVPKey? {
        ephemeral.setP256Point(point) ? ephemeral : nil
    }

    /// ECDH between the merchant's key and `peer`: the 32-byte shared secret Z, leading zero bytes kept.
    func sharedSecret(merchant: MerchantIdentity, peer: EVPKey) -> SensitiveBytes? {
        guard let context = context(for: merchant) else { return nil }
        let secret = SensitiveBytes(capacity: 32)
        guard secret.withUnsafeMutableBytes({ context.derive(peer: peer, into: $0) }) == 32 else { return nil }
        secret.count = 32
        return secret
    }

    /// RSA-OAEP (SHA-256, MGF1-SHA-256) unwrap of RSA_v1's symmetric key.
    func unwrap(merchant: MerchantIdentity, _ wrapped: UnsafeRawBufferPointer) -> SensitiveBytes? {
        guard let context = context(for: merchant) else { return nil }
        let out = SensitiveBytes(capacity: merchant.privateKey.size)
        guard let length = out.withUnsafeMutableBytes({ context.decrypt(wrapped, into: $0) }) else { return nil }
        out.count = length
        return out
    }

    private func context(for merchant: MerchantIdentity) -> PKeyContext? {
        contexts.context(for: merchant) {
            merchant.keyKind == .ec ? PKeyContext.deriver(merchant.privateKey) : PKeyContext.oaepDecrypter(merchant.privateKey)
        }
    }
}
