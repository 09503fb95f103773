// ap_config_add_merchant_spec, ap_config_add_google_merchant_key_spec and ap_config_add_samsung_key_spec:
// keys described as the CLI's --merchant, --google-merchant-key and --samsung-key take them, read by the
// engine's own spec readers.
import ApplePayDecryption

@c(ap_config_add_merchant_spec)
public func ap_config_add_merchant_spec(
    _ config: OpaquePointer?, _ spec: UnsafePointer<CChar>?, _ errorOut: UnsafeMutableRawPointer?
) -> Int32 {
    addMerchant(config, errorOut) { () throws(ConfigurationError) -> MerchantIdentity? in
        guard let text = string(spec), !text.isEmpty, text.utf8.count <= maxSpecLength else { return nil }
        do throws(ConfigurationError) {
            return try MerchantSpec(text).load()
        } catch {
            // The spec as the CLI shows it: a PIN put in a URI by mistake is never echoed.
            throw ConfigurationError(error.code, "merchant '\(MerchantSpec.redacted(text))': \(error.message)")
        }
    }
}

@c(ap_config_add_google_merchant_key_spec)
public func ap_config_add_google_merchant_key_spec(
    _ config: OpaquePointer?, _ spec: UnsafePointer<CChar>?, _ errorOut: UnsafeMutableRawPointer?
) -> Int32 {
    addWalletKey(config, spec, errorOut, "Google Pay merchant key") { (text) throws(ConfigurationError) in
        let key = try GooglePayMerchantKey(spec: text)
        return { $0.googleMerchantKeys.append(key) }
    }
}

@c(ap_config_add_samsung_key_spec)
public func ap_config_add_samsung_key_spec(
    _ config: OpaquePointer?, _ spec: UnsafePointer<CChar>?, _ errorOut: UnsafeMutableRawPointer?
) -> Int32 {
    addWalletKey(config, spec, errorOut, "Samsung Pay merchant key") { (text) throws(ConfigurationError) in
        let key = try SamsungPayMerchantKey(spec: text)
        return { $0.samsungKeys.append(key) }
    }
}

/// The frame both wallet key specs share: the spec's bounds, the engine's reader, the spec (redacted)
/// named in a refusal.
private func addWalletKey(
    _ config: OpaquePointer?, _ spec: UnsafePointer<CChar>?, _ errorOut: UnsafeMutableRawPointer?, _ what: String,
    _ load: (String) throws(ConfigurationError) -> ((inout ConfigBox.State) -> Void)
) -> Int32 {
    configureGooglePay(config, errorOut, refusal: "the spec is NULL, empty or over 4,096 bytes") {
        () throws(ConfigurationError) -> ((inout ConfigBox.State) -> Void)? in
        guard let text = string(spec), !text.isEmpty, text.utf8.count <= maxSpecLength else { return nil }
        do throws(ConfigurationError) {
            return try load(text)
        } catch {
            throw ConfigurationError(error.code, "\(what) '\(MerchantSpec.redacted(text))': \(error.message)")
        }
    }
}

/// The longest key spec the two calls accept (paths and a PKCS#11 URI fit many times over).
let maxSpecLength = 4096
