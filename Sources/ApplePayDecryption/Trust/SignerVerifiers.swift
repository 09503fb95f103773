// The CMS signature check of step 3: a lane's fixed-key verifier for trusted P-256 signers (their
// table kept with the cached signer), a reusable EVP verify context per other trusted signer.
internal import ApplePayCrypto

final class SignerVerifiers {
    private var contexts = ContextCache<CachedSigner, PKeyContext>()
    private let fixedKey = P256FixedKeyVerifier()

    /// ECDSA or RSA (PKCS#1 v1.5) signature over a SHA-256 digest, with this lane's context for a
    /// trusted signer (a fresh one for others, so that signers of untrusted chains never push Apple's
    /// out of the small cache).
    ///
    /// ECDSA signatures are malleable: if (r, s) verifies, so does (r, n−s), a different byte string.
    /// That is accepted by design, as OpenSSL and Apple do: nothing keys on the signature bytes (replay
    /// detection keys on the transactionId and the signed content digest, which the variant leaves
    /// unchanged). See TrustHardeningTests.testMalleatedECDSASignatureIsAcceptedByDesign.
    func verify(_ signature: UnsafeRawBufferPointer, overDigest digest: UnsafeRawBufferPointer, signer: CachedSigner)
        -> Bool
    {
        guard signer.isTrusted else { return signer.leafKey.verify(signature, overDigest: digest) }
        if let table = signer.fixedKeyTable { return fixedKey.verify(signature, overDigest: digest, with: table) }
        guard let context = contexts.context(for: signer, make: { PKeyContext.verifier(signer.leafKey) }) else {
            return false
        }
        return context.verify(signature, overDigest: digest)
    }
}
