// A lane's key-agreement state: P-256 ECDH on preallocated points with each merchant's scalar (EVP
// derive as the fallback and reference), each merchant's RSA-OAEP decrypt context, created on first use.
internal import ApplePayCrypto

package final class MerchantContexts {
    /// Each token's ephemeral point is decoded into this lane's point (see `P256PointAgreement`).
    private let agreement = P256PointAgreement()
    /// The reference path: the ephemeral point loaded into one reusable EVP key. Made on first use:
    /// only merchants whose scalar does not export take this path, and building the key (about
    /// 220,000 instructions, callgrind) cost every lane, and each of a multi-buffer stage's eight
    /// sub-lanes, at every batch run.
    private lazy var ephemeral = EVPKey.reusableP256PublicKey()
    private var contexts = ContextCache<MerchantIdentity, PKeyContext>()
    /// Merchant scalars for `agreement` (nil-valued merchants, whose key does not export its scalar,
    /// are retried per token and go through EVP).
    private var scalars = ContextCache<MerchantIdentity, P256PrivateScalar>()
    /// Z, reused from token to token and wiped as soon as the KDF has read it.
    private let sharedSecretBuffer = SensitiveBytes(capacity: 32)
    /// EC_v1's symmetric key, reused from token to token; the decryptor wipes it once GCM has used it.
    let derivedKey = SensitiveBytes(capacity: 32)

    /// Loads a token's ephemeral point; false when it is not an uncompressed point on P-256.
    package func importEphemeral(_ point: UnsafeRawBufferPointer) -> Bool {
        agreement.setPeer(point)
    }

    /// Runs `body` with the 32-byte shared secret Z between the merchant's key and the point loaded by
    /// `importEphemeral` (leading zero bytes kept), then wipes Z; nil when the agreement fails.
    func withSharedSecret<R>(merchant: MerchantIdentity, _ body: (SensitiveBytes) -> R) -> R? {
        let secret = sharedSecretBuffer
        defer { secret.wipe() }
        let derived: Bool
        if let scalar = scalars.context(for: merchant, make: { merchant.key.software.flatMap(P256PrivateScalar.of) }) {
            derived = secret.write { agreement.sharedSecret(scalar, into: $0) ? 32 : nil }
        } else {
            derived = evpSharedSecret(merchant: merchant, into: secret)
        }
        guard derived else { return nil }
        return body(secret)
    }

    /// The EVP reference path for the same agreement (keys that do not export their scalar).
    private func evpSharedSecret(merchant: MerchantIdentity, into secret: SensitiveBytes) -> Bool {
        guard let point = agreement.peerPoint(), let context = context(for: merchant),
            point.withUnsafeBytes({ ephemeral.setP256Point($0) })
        else { return false }
        return secret.write {
            context.derive(peer: ephemeral, into: UnsafeMutableRawBufferPointer(rebasing: $0[0..<32])) == 32 ? 32 : nil
        }
    }

    /// RSA-OAEP (SHA-256, MGF1-SHA-256) unwrap of RSA_v1's symmetric key.
    func unwrap(merchant: MerchantIdentity, _ wrapped: UnsafeRawBufferPointer) -> SensitiveBytes? {
        guard let context = context(for: merchant), let privateKey = merchant.key.software else { return nil }
        let out = SensitiveBytes(capacity: privateKey.size)
        guard out.write({ context.decrypt(wrapped, into: $0) }) else { return nil }
        return out
    }

    private func context(for merchant: MerchantIdentity) -> PKeyContext? {
        contexts.context(for: merchant) {
            guard let privateKey = merchant.key.software else { return nil }
            return merchant.keyKind == .ec ? PKeyContext.deriver(privateKey) : PKeyContext.oaepDecrypter(privateKey)
        }
    }
}
