// A lane's state for Samsung Pay tokens: each merchant key's raw RSA context, AES-128-GCM, and the wiped
// buffers the unwrap goes through (the RSA block, the random fallback key, the content key).
internal import ApplePayCrypto

final class SamsungPayLaneState {
    /// RSA_NO_PADDING decrypt contexts, one per software merchant key, made on first use.
    var decrypters = ContextCache<MerchantIdentity, PKeyContext>()
    let cipher = NonceCipherContext()
    /// c^d mod n of the token being opened (up to RSA-16384); wiped after each token.
    let block = SensitiveBytes(capacity: SamsungPayToken.maximumEncryptedKeyBytes)
    /// The random key implicit rejection continues with; drawn before every RSA operation, wiped after.
    let fallback = SensitiveBytes(capacity: RSAPKCS1Decoding.keyLength)
    /// The content key: the recovered one or the fallback; wiped once GCM has used it.
    let contentKey = SensitiveBytes(capacity: RSAPKCS1Decoding.keyLength)

    func decrypter(for merchant: MerchantIdentity) -> PKeyContext? {
        decrypters.context(for: merchant) { merchant.key.software.flatMap(PKeyContext.rawRSADecrypter) }
    }

    func wipe() {
        block.wipe()
        fallback.wipe()
        contentKey.wipe()
    }
}
