// The Google Pay calls of ap_config: Google's root keys document, recipient ids and merchant keys.
import ApplePayDecryption

/// The shared frame of the Google Pay and Samsung Pay calls: handle check, argument check, errors as codes.
/// `refusal` is AP_INVALID_ARGUMENT's message when `change` gives nil.
func configureGooglePay(
    _ config: OpaquePointer?, _ errorOut: UnsafeMutableRawPointer?,
    refusal: String = "a required pointer is NULL or a length is zero or over 1 MiB",
    _ change: () throws(ConfigurationError) -> ((inout ConfigBox.State) -> Void)?
) -> Int32 {
    guard let box = configs.object(config) else {
        return report(ABICode.invalidHandle, "not a live ap_config", to: errorOut)
    }
    do throws(ConfigurationError) {
        guard let apply = try change() else {
            return report(ABICode.invalidArgument, refusal, to: errorOut)
        }
        box.state.withLock { apply(&$0) }
        return report(ABICode.ok, "", to: errorOut)
    } catch {
        return report(ABICode.invalidConfiguration, error.message, to: errorOut)
    }
}

@c(ap_config_set_google_root_keys)
public func ap_config_set_google_root_keys(
    _ config: OpaquePointer?, _ json: UnsafePointer<UInt8>?, _ length: UInt, _ errorOut: UnsafeMutableRawPointer?
) -> Int32 {
    configureGooglePay(config, errorOut) { () throws(ConfigurationError) -> ((inout ConfigBox.State) -> Void)? in
        guard let json, let count = checkedLength(json, length, limit: maxCredentialLength) else { return nil }
        // Public keys: no wiped copy needed.
        let keys = try GooglePayRootKeys(json: Array(UnsafeBufferPointer(start: json, count: count)))
        return { $0.googleRootKeys = keys }
    }
}

@c(ap_config_add_google_recipient_id)
public func ap_config_add_google_recipient_id(
    _ config: OpaquePointer?, _ recipientId: UnsafePointer<CChar>?, _ errorOut: UnsafeMutableRawPointer?
) -> Int32 {
    configureGooglePay(config, errorOut, refusal: "the recipient id is NULL, empty or over 1,024 bytes") {
        () throws(ConfigurationError) -> ((inout ConfigBox.State) -> Void)? in
        guard let id = string(recipientId), !id.isEmpty, id.utf8.count <= 1024 else { return nil }
        return { $0.googleRecipientIds.append(id) }
    }
}

@c(ap_config_add_google_merchant_key)
public func ap_config_add_google_merchant_key(
    _ config: OpaquePointer?, _ privateKey: UnsafePointer<UInt8>?, _ privateKeyLength: UInt,
    _ keyPassword: UnsafePointer<CChar>?, _ errorOut: UnsafeMutableRawPointer?
) -> Int32 {
    configureGooglePay(config, errorOut) { () throws(ConfigurationError) -> ((inout ConfigBox.State) -> Void)? in
        guard let privateKey, let count = checkedLength(privateKey, privateKeyLength, limit: maxCredentialLength)
        else { return nil }
        let key = try withWipedCopy(privateKey, count) { (bytes) throws(ConfigurationError) in
            try GooglePayMerchantKey(privateKey: bytes, keyPassword: string(keyPassword))
        }
        return { $0.googleMerchantKeys.append(key) }
    }
}

@c(ap_config_add_google_merchant_pkcs11)
public func ap_config_add_google_merchant_pkcs11(
    _ config: OpaquePointer?, _ publicKey: UnsafePointer<UInt8>?, _ publicKeyLength: UInt,
    _ uri: UnsafePointer<CChar>?, _ errorOut: UnsafeMutableRawPointer?
) -> Int32 {
    configureGooglePay(config, errorOut) { () throws(ConfigurationError) -> ((inout ConfigBox.State) -> Void)? in
        guard let publicKey, let uri = string(uri), !uri.isEmpty,
            let count = checkedLength(publicKey, publicKeyLength, limit: maxCredentialLength)
        else { return nil }
        // The public key (or certificate) is public; the PIN comes from the URI's pin-source or pin-env.
        let key = try GooglePayMerchantKey(
            publicKey: Array(UnsafeBufferPointer(start: publicKey, count: count)),
            pkcs11: PKCS11KeyReference(uri: uri))
        return { $0.googleMerchantKeys.append(key) }
    }
}

extension ConfigBox.State {
    /// Whether any Google Pay call was made on this configuration.
    var googlePayConfigured: Bool {
        googleRootKeys != nil || !googleRecipientIds.isEmpty || !googleMerchantKeys.isEmpty
            || !googleProtocolVersions.isEmpty
    }

    /// The Google Pay engine, nil when no Google Pay call was made; a partial Google Pay configuration
    /// (root keys without a recipient id, or the reverse) is refused, as the CLI refuses it.
    func makeGooglePayDecryptor() throws(ConfigurationError) -> GooglePayTokenDecryptor? {
        guard googlePayConfigured else { return nil }
        guard let googleRootKeys else {
            throw ConfigurationError(.invalidOption, "Google Pay needs ap_config_set_google_root_keys")
        }
        guard !googleRecipientIds.isEmpty else {
            throw ConfigurationError(.invalidOption, "Google Pay needs ap_config_add_google_recipient_id")
        }
        return try GooglePayTokenDecryptor(
            merchantKeys: googleMerchantKeys, recipientIds: googleRecipientIds, rootKeys: googleRootKeys,
            protocolVersions: googleProtocolVersions.isEmpty
                ? GooglePayTokenDecryptor.defaultProtocolVersions : googleProtocolVersions)
    }
}
