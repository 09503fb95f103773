// ap_config and ap_decryptor: merchants loaded from caller bytes through wiped copies, then the engine.
import ApplePayDecryption
import Synchronization

final class ConfigBox: Sendable {
    struct State {
        var merchants: [MerchantIdentity] = []
        var trustAnchor: TrustAnchor = .appleRootCAG3
        var signingTimeWindow = PaymentTokenDecryptor.defaultSigningTimeWindow
        /// ap_config_set_multibuffer's choice, resolved when set; nil: auto (MultiBufferConfig.swift).
        var multiBuffer: MultiBufferBackend?
        /// Google Pay (GooglePayConfig.swift): Google's root keys document, recipient ids, merchant keys.
        var googleRootKeys: GooglePayRootKeys?
        var googleRecipientIds: [String] = []
        var googleMerchantKeys: [GooglePayMerchantKey] = []
        /// ap_config_add_google_protocol_version's versions; none: the engine's default (ECv1 and ECv2).
        var googleProtocolVersions: Set<GooglePayToken.ProtocolVersion> = []
        /// Samsung Pay (KeySpecs.swift): the merchant keys, selected by kid.
        var samsungKeys: [SamsungPayMerchantKey] = []
        /// What a `reference` argument counts (ReferenceUnit.swift): seconds unless set.
        var referenceUnit = ReferenceUnit.seconds
    }
    // A config may be filled from several threads; its calls are serialised here.
    let state = Mutex(State())
}

final class DecryptorBox: Sendable {
    /// The front door: every configured wallet's engine (a Google Pay one only when the configuration
    /// has Google Pay keys).
    let wallets: WalletDecryptor
    /// The backend ap_decrypt_batch's lanes use for EC_v1 key agreement.
    let multiBuffer: MultiBufferBackend
    /// What the `reference` arguments of calls on this decryptor count.
    let referenceUnit: ReferenceUnit
    init(wallets: WalletDecryptor, multiBuffer: MultiBufferBackend? = nil, referenceUnit: ReferenceUnit = .seconds) {
        self.wallets = wallets
        self.multiBuffer = multiBuffer ?? .automatic
        self.referenceUnit = referenceUnit
    }

    /// A call's `reference` argument as the engine's reference time.
    func referenceTime(_ reference: Int64) -> ReferenceTime { referenceUnit.referenceTime(reference) }
}

/// Copies a caller's secret bytes into an array that is wiped once `body` is done with it.
func withWipedCopy<R>(_ pointer: UnsafePointer<UInt8>, _ length: Int, _ body: ([UInt8]) throws(ConfigurationError) -> R)
    throws(ConfigurationError) -> R
{
    var copy = Array(UnsafeBufferPointer(start: pointer, count: length))
    defer { SensitiveBytes.wipe(&copy) }
    return try body(copy)
}

/// Validates a (pointer, length) input; nil means the call must fail with AP_INVALID_ARGUMENT.
func checkedLength(_ pointer: UnsafePointer<UInt8>?, _ length: UInt, limit: Int) -> Int? {
    guard pointer != nil, length > 0, length <= UInt(limit) else { return nil }
    return Int(length)
}

/// Keys, certificates and PKCS#12 files larger than this are rejected before any copy.
let maxCredentialLength = 1 << 20

func string(_ text: UnsafePointer<CChar>?) -> String? { text.map { String(cString: $0) } }

@c(ap_config_new)
public func ap_config_new(_ config: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    guard let config else { return ABICode.invalidArgument }
    config.pointee = configs.open(ConfigBox())
    return ABICode.ok
}

@c(ap_config_free)
public func ap_config_free(_ config: OpaquePointer?) -> Int32 {
    configs.close(config) == nil ? ABICode.invalidHandle : ABICode.ok
}

/// The shared frame of the three merchant loaders: handle and argument checks, errors as codes.
func addMerchant(
    _ config: OpaquePointer?, _ errorOut: UnsafeMutableRawPointer?,
    _ load: () throws(ConfigurationError) -> MerchantIdentity?
) -> Int32 {
    guard let box = configs.object(config) else {
        return report(ABICode.invalidHandle, "not a live ap_config", to: errorOut)
    }
    do throws(ConfigurationError) {
        guard let merchant = try load() else {
            return report(
                ABICode.invalidArgument, "a required pointer is NULL or a length is zero or over 1 MiB", to: errorOut)
        }
        box.state.withLock { $0.merchants.append(merchant) }
        return report(ABICode.ok, "", to: errorOut)
    } catch {
        return report(ABICode.invalidConfiguration, error.message, to: errorOut)
    }
}

@c(ap_config_add_merchant_certificate)
public func ap_config_add_merchant_certificate(
    _ config: OpaquePointer?, _ certificate: UnsafePointer<UInt8>?, _ certificateLength: UInt,
    _ privateKey: UnsafePointer<UInt8>?, _ privateKeyLength: UInt,
    _ keyPassword: UnsafePointer<CChar>?, _ merchantIdentifier: UnsafePointer<CChar>?,
    _ errorOut: UnsafeMutableRawPointer?
) -> Int32 {
    addMerchant(config, errorOut) { () throws(ConfigurationError) -> MerchantIdentity? in
        guard let certificate, let privateKey,
            let certCount = checkedLength(certificate, certificateLength, limit: maxCredentialLength),
            let keyCount = checkedLength(privateKey, privateKeyLength, limit: maxCredentialLength)
        else { return nil }
        return try withWipedCopy(certificate, certCount) { (cert) throws(ConfigurationError) in
            try withWipedCopy(privateKey, keyCount) { (key) throws(ConfigurationError) in
                try MerchantIdentity(
                    certificate: cert, privateKey: key, keyPassword: string(keyPassword),
                    merchantIdentifier: string(merchantIdentifier))
            }
        }
    }
}

@c(ap_config_add_merchant_identifier)
public func ap_config_add_merchant_identifier(
    _ config: OpaquePointer?, _ merchantIdentifier: UnsafePointer<CChar>?,
    _ privateKey: UnsafePointer<UInt8>?, _ privateKeyLength: UInt,
    _ keyPassword: UnsafePointer<CChar>?, _ errorOut: UnsafeMutableRawPointer?
) -> Int32 {
    addMerchant(config, errorOut) { () throws(ConfigurationError) -> MerchantIdentity? in
        guard let identifier = string(merchantIdentifier), !identifier.isEmpty, let privateKey,
            let keyCount = checkedLength(privateKey, privateKeyLength, limit: maxCredentialLength)
        else { return nil }
        return try withWipedCopy(privateKey, keyCount) { (key) throws(ConfigurationError) in
            try MerchantIdentity(merchantIdentifier: identifier, privateKey: key, keyPassword: string(keyPassword))
        }
    }
}

@c(ap_config_add_merchant_pkcs12)
public func ap_config_add_merchant_pkcs12(
    _ config: OpaquePointer?, _ pkcs12: UnsafePointer<UInt8>?, _ pkcs12Length: UInt,
    _ password: UnsafePointer<CChar>?, _ merchantIdentifier: UnsafePointer<CChar>?, _ errorOut: UnsafeMutableRawPointer?
) -> Int32 {
    addMerchant(config, errorOut) { () throws(ConfigurationError) -> MerchantIdentity? in
        guard let pkcs12, let password, let count = checkedLength(pkcs12, pkcs12Length, limit: maxCredentialLength)
        else { return nil }
        return try withWipedCopy(pkcs12, count) { (bytes) throws(ConfigurationError) in
            try MerchantIdentity(
                pkcs12: bytes, password: String(cString: password), merchantIdentifier: string(merchantIdentifier))
        }
    }
}

@c(ap_config_set_signing_time_window)
public func ap_config_set_signing_time_window(
    _ config: OpaquePointer?, _ seconds: Int64, _ errorOut: UnsafeMutableRawPointer?
) -> Int32 {
    guard let box = configs.object(config) else {
        return report(ABICode.invalidHandle, "not a live ap_config", to: errorOut)
    }
    guard seconds >= 0 else {
        return report(ABICode.invalidConfiguration, "the signing time window must not be negative", to: errorOut)
    }
    box.state.withLock { $0.signingTimeWindow = seconds }
    return report(ABICode.ok, "", to: errorOut)
}

@c(ap_config_set_insecure_test_root_pem)
public func ap_config_set_insecure_test_root_pem(
    _ config: OpaquePointer?, _ pem: UnsafePointer<UInt8>?, _ length: UInt,
    _ errorOut: UnsafeMutableRawPointer?
) -> Int32 {
    guard let box = configs.object(config) else {
        return report(ABICode.invalidHandle, "not a live ap_config", to: errorOut)
    }
    guard let pem, let count = checkedLength(pem, length, limit: maxCredentialLength) else {
        return report(
            ABICode.invalidArgument, "the PEM pointer is NULL or its length is zero or over 1 MiB", to: errorOut)
    }
    do throws(ConfigurationError) {
        let anchor = try TrustAnchor.insecureTestingOnlyRoot(pem: Array(UnsafeBufferPointer(start: pem, count: count)))
        box.state.withLock { $0.trustAnchor = anchor }
        return report(ABICode.ok, "", to: errorOut)
    } catch {
        return report(ABICode.invalidConfiguration, error.message, to: errorOut)
    }
}

@c(ap_decryptor_new)
public func ap_decryptor_new(
    _ config: OpaquePointer?, _ decryptor: UnsafeMutablePointer<OpaquePointer?>?,
    _ errorOut: UnsafeMutableRawPointer?
) -> Int32 {
    guard let decryptor else {
        return report(ABICode.invalidArgument, "the decryptor out-pointer is NULL", to: errorOut)
    }
    decryptor.pointee = nil
    guard let box = configs.object(config) else {
        return report(ABICode.invalidHandle, "not a live ap_config", to: errorOut)
    }
    let state = box.state.withLock { $0 }
    do throws(ConfigurationError) {
        let googlePay = try state.makeGooglePayDecryptor()
        let samsungPay =
            state.samsungKeys.isEmpty
            ? nil
            : try SamsungPayTokenDecryptor(merchantKeys: state.samsungKeys, freshnessWindow: state.signingTimeWindow)
        // Another wallet's keys alone (no merchant): Apple Pay tokens meet an engine without merchants
        // (unknownMerchantKey once their chain verifies), as in the CLI.
        let engine =
            (googlePay != nil || samsungPay != nil) && state.merchants.isEmpty
            ? try PaymentTokenDecryptor.withoutMerchants(
                trustAnchor: state.trustAnchor, signingTimeWindow: state.signingTimeWindow)
            : try PaymentTokenDecryptor(
                merchants: state.merchants, trustAnchor: state.trustAnchor,
                signingTimeWindow: state.signingTimeWindow)
        decryptor.pointee = decryptors.open(
            DecryptorBox(
                wallets: WalletDecryptor(applePay: engine, googlePay: googlePay, samsungPay: samsungPay),
                multiBuffer: state.multiBuffer,
                referenceUnit: state.referenceUnit))
        return report(ABICode.ok, "", to: errorOut)
    } catch {
        return report(ABICode.invalidConfiguration, error.message, to: errorOut)
    }
}

@c(ap_decryptor_free)
public func ap_decryptor_free(_ decryptor: OpaquePointer?) -> Int32 {
    decryptors.close(decryptor) == nil ? ABICode.invalidHandle : ABICode.ok
}
