// ap_config_add_merchant_pkcs11: a merchant whose private key stays in a PKCS#11 token (HSM).
import ApplePayDecryption

@c(ap_config_add_merchant_pkcs11)
public func ap_config_add_merchant_pkcs11(
    _ config: OpaquePointer?, _ certificate: UnsafePointer<UInt8>?, _ certificateLength: UInt,
    _ uri: UnsafePointer<CChar>?, _ merchantIdentifier: UnsafePointer<CChar>?, _ errorOut: UnsafeMutableRawPointer?
) -> Int32 {
    addMerchant(config, errorOut) { () throws(ConfigurationError) -> MerchantIdentity? in
        guard let certificate, let uri = string(uri), !uri.isEmpty,
            let certCount = checkedLength(certificate, certificateLength, limit: maxCredentialLength)
        else { return nil }
        // The certificate is public: no wiped copy needed. The PIN is read by the engine from the
        // URI's pin-source file or pin-env variable, never passed through this call.
        let cert = Array(UnsafeBufferPointer(start: certificate, count: certCount))
        return try MerchantIdentity(
            certificate: cert, pkcs11: PKCS11KeyReference(uri: uri), merchantIdentifier: string(merchantIdentifier))
    }
}
