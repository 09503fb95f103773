// The one public error type: a stable code (API) plus context that rides along as data.

/// Why a token was rejected. The `code` is the stable identity processors map to decline reasons;
/// `message`, `field` and `reason` are context for humans and logs and never contain secrets.
public struct ApplePayError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Code: String, Sendable, CaseIterable, Codable {
        /// Bad JSON, a missing or ill-typed field, bad base64/hex, a field of the wrong size.
        case malformedToken
        /// `version` is neither `EC_v1` nor `RSA_v1`.
        case unsupportedVersion
        /// The CMS signature or its `messageDigest` is wrong, or the signing time is missing.
        case invalidSignature
        /// A marker OID is missing, there is no chain to the trust anchor, or a certificate was
        /// outside its validity at the signing time.
        case untrustedCertificateChain
        /// The signing time is further from the reference time than the policy window allows.
        case signingTimeOutOfRange
        /// No loaded merchant key matches `header.publicKeyHash`.
        case unknownMerchantKey
        /// Key agreement, key unwrap or the AES-GCM tag failed.
        case decryptionFailed
        /// The plaintext is not a JSON object with `applicationPrimaryAccountNumber`.
        case invalidPayload
        /// The `transactionId` was already seen in this run (batch engine).
        case replayedTransaction
    }

    public let code: Code
    public let message: String
    /// JSON path of the offending token field, e.g. `header.ephemeralPublicKey`.
    public let field: String?
    /// Library-level reason, e.g. OpenSSL's "certificate signature failure".
    public let reason: String?

    public init(_ code: Code, _ message: String, field: String? = nil, reason: String? = nil) {
        self.code = code
        self.message = message
        self.field = field
        self.reason = reason
    }

    public var description: String {
        var text = "\(code.rawValue): \(message)"
        if let field { text += " [field \(field)]" }
        if let reason { text += " (\(reason))" }
        return text
    }

    static func malformed(_ field: String, _ message: String) -> ApplePayError {
        ApplePayError(.malformedToken, message, field: field)
    }
}

/// A problem with the engine's configuration (keys, certificates, trust anchor), raised before any
/// token is processed. Distinct from `ApplePayError`, which always concerns one token.
public struct ConfigurationError: Error, Sendable, CustomStringConvertible {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
