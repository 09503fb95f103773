// The one public error type: a stable code (API) plus context that rides along as data; and the
// configuration error raised before any token is processed.
#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// Why a token was rejected.
///
/// The ``code`` is the stable identity processors map to decline reasons; ``message``, ``field`` and
/// ``reason`` are context for humans and logs and never contain card data, keys or other secrets.
/// Two errors are equal when their codes are (swift-asn1's `ASN1Error` is the model).
///
/// Every `decrypt` throws exactly this type (`throws(ApplePayError)`), so a typed `do` block needs no
/// cast:
///
/// ```swift
/// do throws(ApplePayError) {
///     let payment = try decryptor.decrypt(token)
///     // …
/// } catch {
///     decline(reason: error.code.rawValue)
/// }
/// ```
///
/// Its ``description`` (and `localizedDescription`, through `LocalizedError`) reads
/// `code: message [field path] (reason)`.
public struct ApplePayError: Error, Sendable, Hashable, CustomStringConvertible, LocalizedError {
    /// A stable code. Its `rawValue` is what result lines and JSON output carry. A struct rather than
    /// an enum, so that a code added later breaks no exhaustive `switch` in a processor's code.
    public struct Code: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
        /// The code's stable text, e.g. `"invalidSignature"`: what result lines and JSON output carry.
        public let rawValue: String
        /// A code from its text; any text is accepted, so codes a later version adds can be read.
        public init(rawValue: String) { self.rawValue = rawValue }
        /// The ``rawValue``.
        public var description: String { rawValue }

        /// Bad JSON, a missing or ill-typed field, bad base64/hex, a field of the wrong size.
        public static let malformedToken = Code(rawValue: "malformedToken")
        /// `version` is neither `EC_v1` nor `RSA_v1`.
        public static let unsupportedVersion = Code(rawValue: "unsupportedVersion")
        /// The CMS signature or its `messageDigest` is wrong, or the signing time is missing.
        public static let invalidSignature = Code(rawValue: "invalidSignature")
        /// A marker OID is missing, there is no chain to the trust anchor, or a certificate was
        /// outside its validity at the signing time.
        public static let untrustedCertificateChain = Code(rawValue: "untrustedCertificateChain")
        /// The signing time is further from the reference time than the policy window allows.
        public static let signingTimeOutOfRange = Code(rawValue: "signingTimeOutOfRange")
        /// No loaded merchant key matches `header.publicKeyHash`.
        public static let unknownMerchantKey = Code(rawValue: "unknownMerchantKey")
        /// Key agreement, key unwrap or the AES-GCM tag failed.
        public static let decryptionFailed = Code(rawValue: "decryptionFailed")
        /// The plaintext is not a JSON object with `applicationPrimaryAccountNumber`.
        public static let invalidPayload = Code(rawValue: "invalidPayload")
        /// The `transactionId` was already seen in this run (batch engine).
        public static let replayedTransaction = Code(rawValue: "replayedTransaction")
        /// The token verified and decrypted, but is not the payment the given ``PaymentRequest`` asked
        /// for; `field` names the request member it contradicts (e.g. `total.amount`).
        public static let paymentRequestMismatch = Code(rawValue: "paymentRequestMismatch")

        /// Google Pay: the intermediate signing key's `keyExpiration` is not after the reference time
        /// (`field` is `intermediateSigningKey.signedKey.keyExpiration`).
        public static let intermediateKeyExpired = Code(rawValue: "intermediateKeyExpired")
        /// Google Pay: the message's `messageExpiration` is not after the reference time (`field` is
        /// `messageExpiration`). Samsung Pay: the payment's `utc` is further from the reference time,
        /// before or after, than the freshness window (`field` is `utc`).
        public static let messageExpired = Code(rawValue: "messageExpired")

        /// Every code this version of the library produces, in documentation order.
        public static let allCases: [Code] = [
            .malformedToken, .unsupportedVersion, .invalidSignature, .untrustedCertificateChain, .signingTimeOutOfRange,
            .unknownMerchantKey, .decryptionFailed, .invalidPayload, .replayedTransaction, .paymentRequestMismatch,
            .intermediateKeyExpired, .messageExpired,
        ]

        /// The codes only Google Pay tokens produce (an archive of Apple Pay tokens never shows them).
        public static let googlePayOnly: [Code] = [.intermediateKeyExpired, .messageExpired]
    }

    /// The stable code: map this, never the message, to a decline reason.
    public let code: Code
    /// What went wrong, in English, for logs and people.
    public let message: String
    /// JSON path of the offending token field, e.g. `header.ephemeralPublicKey`.
    public let field: String?
    /// Library-level reason, e.g. OpenSSL's "certificate signature failure".
    public let reason: String?

    /// An error with a code and its context.
    public init(_ code: Code, _ message: String, field: String? = nil, reason: String? = nil) {
        self.code = code
        self.message = message
        self.field = field
        self.reason = reason
    }

    /// `code: message [field path] (reason)`, e.g.
    /// `unknownMerchantKey: no loaded merchant key has publicKeyHash … [field header.publicKeyHash]`.
    public var description: String {
        var text = "\(code.rawValue): \(message)"
        if let field { text += " [field \(field)]" }
        if let reason { text += " (\(reason))" }
        return text
    }

    /// The ``description``, so that `error.localizedDescription` names the code too.
    public var errorDescription: String? { description }
    /// The ``reason`` given by the library underneath (OpenSSL), if any.
    public var failureReason: String? { reason }

    /// True when the codes are equal; message, field and reason are context, not identity.
    public static func == (lhs: ApplePayError, rhs: ApplePayError) -> Bool { lhs.code == rhs.code }
    /// Hashes the code only, consistent with `==`.
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }

    static func malformed(_ field: String, _ message: String) -> ApplePayError {
        ApplePayError(.malformedToken, message, field: field)
    }
}

/// A problem with the engine's configuration (keys, certificates, trust anchor, inputs), raised before
/// any token is processed.
///
/// Distinct from ``ApplePayError``, which always concerns one token. Equal when the codes are. Its
/// ``description`` (and `localizedDescription`) reads `code: message`; a message about a file names
/// the file, never its contents.
public struct ConfigurationError: Error, Sendable, Hashable, CustomStringConvertible, LocalizedError {
    /// A stable code, as for ``ApplePayError/Code``.
    public struct Code: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
        /// The code's stable text, e.g. `"unreadableKey"`.
        public let rawValue: String
        /// A code from its text.
        public init(rawValue: String) { self.rawValue = rawValue }
        /// The ``rawValue``.
        public var description: String { rawValue }

        /// A private key that cannot be read (bad PEM/DER, wrong password) or encoded.
        public static let unreadableKey = Code(rawValue: "unreadableKey")
        /// A merchant or trust-root certificate that cannot be read.
        public static let unreadableCertificate = Code(rawValue: "unreadableCertificate")
        /// A PKCS#12 file that cannot be read or opened, or that holds no certificate.
        public static let unreadablePKCS12 = Code(rawValue: "unreadablePKCS12")
        /// An EC merchant key on a curve other than P-256.
        public static let wrongCurve = Code(rawValue: "wrongCurve")
        /// An RSA merchant key under 2048 bits.
        public static let weakKey = Code(rawValue: "weakKey")
        /// A merchant key that is neither EC nor RSA.
        public static let unsupportedKeyType = Code(rawValue: "unsupportedKeyType")
        /// The private key does not belong to the merchant certificate.
        public static let keyMismatch = Code(rawValue: "keyMismatch")
        /// An EC merchant without a usable merchant identifier (for the KDF's partyV).
        public static let invalidMerchantIdentifier = Code(rawValue: "invalidMerchantIdentifier")
        /// Two merchant identities with the same public key hash.
        public static let duplicateMerchant = Code(rawValue: "duplicateMerchant")
        /// A `--merchant` text or an option value that is not valid.
        public static let invalidOption = Code(rawValue: "invalidOption")
        /// A file or input that cannot be opened or read.
        public static let unreadableInput = Code(rawValue: "unreadableInput")
        /// A replay ledger journal that is not one this library wrote.
        public static let invalidLedger = Code(rawValue: "invalidLedger")
        /// libsodium or an OpenSSL provider the library needs is unavailable.
        public static let cryptoUnavailable = Code(rawValue: "cryptoUnavailable")
        /// A PKCS#11 module, token, PIN or key object that cannot be used (the message says which and why).
        public static let pkcs11Unusable = Code(rawValue: "pkcs11Unusable")
    }

    /// The stable code.
    public let code: Code
    /// What is wrong, in English; names the file or option concerned.
    public let message: String

    /// An error with a code and a message.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// A configuration error with the general `invalidOption` code (front ends' own checks).
    public init(_ message: String) { self.init(.invalidOption, message) }

    /// `code: message`, e.g. `unreadableInput: cannot read the merchant key file /etc/key.pem: No such file or directory`.
    public var description: String { "\(code.rawValue): \(message)" }

    /// The ``description``.
    public var errorDescription: String? { description }

    /// True when the codes are equal.
    public static func == (lhs: ConfigurationError, rhs: ConfigurationError) -> Bool { lhs.code == rhs.code }
    /// Hashes the code only, consistent with `==`.
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }
}
