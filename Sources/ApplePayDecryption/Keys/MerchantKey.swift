// Where a merchant's private key lives: in this process (OpenSSL) or in a PKCS#11 token (HSM).
package import ApplePayCrypto

/// The software path is unchanged by the token path: lanes branch once per token on this enum.
package enum MerchantKey: Sendable {
    /// A private key inside OpenSSL, which clears it when freed.
    case software(EVPKey)
    /// A private key object in a PKCS#11 token; only ECDH and RSA-OAEP decryption happen in the token.
    case pkcs11(PKCS11PrivateKey)

    /// The OpenSSL key, for software keys.
    package var software: EVPKey? {
        if case .software(let key) = self { return key }
        return nil
    }

    /// The token key, for PKCS#11 keys.
    package var token: PKCS11PrivateKey? {
        if case .pkcs11(let key) = self { return key }
        return nil
    }
}
