// ap_config_add_google_protocol_version: the Google Pay protocol versions a decryptor accepts.
import ApplePayDecryption

@c(ap_config_add_google_protocol_version)
public func ap_config_add_google_protocol_version(
    _ config: OpaquePointer?, _ version: UnsafePointer<CChar>?, _ errorOut: UnsafeMutableRawPointer?
) -> Int32 {
    configureGooglePay(config, errorOut, refusal: "the protocol version is NULL") {
        () throws(ConfigurationError) -> ((inout ConfigBox.State) -> Void)? in
        guard let name = string(version) else { return nil }
        let parsed = try GooglePayTokenDecryptor.protocolVersions(named: [name])
        return { $0.googleProtocolVersions.formUnion(parsed) }
    }
}
