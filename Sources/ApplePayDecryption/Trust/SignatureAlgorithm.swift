// The signature algorithms a token's SignerInfo may name, and the signing key type each one needs.

/// The signature algorithms a token's SignerInfo may name, with the key type each one needs.
enum SignatureAlgorithm {
    case ecdsaWithSHA256
    /// id-ecPublicKey in place of ecdsa-with-SHA256, as some CMS writers put it; SHA-256 comes from digestAlgorithm.
    case ecPublicKey
    case sha256WithRSA
    /// rsaEncryption in place of sha256WithRSAEncryption (RFC 5754 §3.2 allows both).
    case rsaEncryption

    var keyType: SigningKeyType {
        switch self {
        case .ecdsaWithSHA256, .ecPublicKey: return .ecP256
        case .sha256WithRSA, .rsaEncryption: return .rsa
        }
    }
}

/// The key types Apple signs tokens with: EC P-256 (EC_v1 tokens and most others) and RSA
/// (the leaf of RSA_v1 tokens is an RSA-2048 certificate; see basistheory-2024-rsa).
enum SigningKeyType: String, Sendable {
    case ecP256 = "EC P-256"
    case rsa = "RSA"
}
