// A merchant's Google Pay private key (EC P-256): in OpenSSL from any key form the engine reads, or
// in a PKCS#11 token; held as a `MerchantIdentity` so that lanes reuse their ECDH and session state.
internal import ApplePayCrypto

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// One Google Pay merchant private key: the key whose public half the merchant registered with
/// Google. Load any number (key rotation): a token is opened with each in turn until its tag verifies.
public final class GooglePayMerchantKey: Sendable, CustomStringConvertible {
    let identity: MerchantIdentity
    /// A label for messages (the file or URI it came from, never the key).
    public let label: String

    /// The spec forms, for help texts.
    public static let syntax =
        "PATH | key=PATH[,key-password-env=VAR] | p12=PATH[,password-env=VAR] | pkcs11=URI,pub=PATH | pkcs11=URI,cert=PATH"

    private init(identity: MerchantIdentity, label: String) {
        self.identity = identity
        self.label = label
    }

    /// `label`.
    public var description: String { label }

    /// True when the private key is in a PKCS#11 token.
    public var keyIsInToken: Bool { identity.keyIsInToken }

    /// SHA-256 of the public key (DER SubjectPublicKeyInfo), hex: names the key without its secret.
    public var publicKeyHashHex: String { identity.publicKeyHashHex }

    /// A private key in any form the engine reads: PEM (SEC1 or PKCS#8, optionally encrypted) or DER.
    /// The library's copy of the bytes is wiped after loading.
    /// - Throws: ``ConfigurationError``: ``ConfigurationError/Code/unreadableKey``, or
    ///   ``ConfigurationError/Code/wrongCurve`` / ``ConfigurationError/Code/unsupportedKeyType`` for a
    ///   key that is not EC P-256.
    public convenience init(privateKey: some DataProtocol, keyPassword: String? = nil, label: String = "Google Pay key")
        throws(ConfigurationError)
    {
        var bytes: [UInt8] = Array(privateKey)
        defer { SensitiveBytes.wipe(&bytes) }
        let key: EVPKey
        do throws(OpenSSLFailure) {
            key = try EVPKey.privateKey(from: bytes, password: keyPassword)
        } catch {
            throw ConfigurationError(.unreadableKey, "\(label): \(error.reason)")
        }
        try self.init(software: key, label: label)
    }

    /// A private key read from a file (into a buffer wiped after loading).
    public convenience init(privateKeyFile path: String, keyPassword: String? = nil) throws(ConfigurationError) {
        let key = try SecretFile.withContents(atPath: path, what: "Google Pay merchant key") {
            (bytes) throws(ConfigurationError) -> EVPKey in
            do throws(OpenSSLFailure) {
                return try EVPKey.privateKey(from: bytes, password: keyPassword)
            } catch {
                throw ConfigurationError(.unreadableKey, "\(path): \(error.reason)")
            }
        }
        try self.init(software: key, label: path)
    }

    /// The key of a PKCS#12 file.
    public convenience init(pkcs12File path: String, password: String) throws(ConfigurationError) {
        let key = try SecretFile.withContents(atPath: path, what: "PKCS#12") {
            (bytes) throws(ConfigurationError) -> EVPKey in
            do throws(OpenSSLFailure) {
                return try PKCS12.open(bytes, password: password).key
            } catch {
                throw ConfigurationError(.unreadablePKCS12, "\(path): \(error.reason)")
            }
        }
        try self.init(software: key, label: path)
    }

    /// A private key in a PKCS#11 token, with its public key (PEM or DER SubjectPublicKeyInfo, or a
    /// certificate) to check it against: the token does the ECDH, the key never leaves it.
    public convenience init(
        publicKey: [UInt8], pkcs11 reference: PKCS11KeyReference,
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(ConfigurationError) {
        guard let key = Self.publicKey(publicKey) else {
            throw ConfigurationError(
                .unreadableCertificate, "the public key for \(reference) is neither a public key nor a certificate")
        }
        let label = reference.description
        try Self.checkP256(key, label: label)
        let token = try PKCS11PrivateKey.load(reference, certificateKey: key, label: label, environment: environment)
        try self.init(
            identity: Self.identity(.pkcs11(token), publicKey: key, label: label), label: label)
    }

    private convenience init(software key: EVPKey, label: String) throws(ConfigurationError) {
        try Self.checkP256(key, label: label)
        self.init(identity: try Self.identity(.software(key), publicKey: key, label: label), label: label)
    }

    private static func identity(_ key: MerchantKey, publicKey: EVPKey, label: String) throws(ConfigurationError)
        -> MerchantIdentity
    {
        guard let spki = publicKey.subjectPublicKeyInfoDER() else {
            throw ConfigurationError(.unreadableKey, "\(label): cannot encode the public key")
        }
        return try MerchantIdentity(
            key: key, publicKey: publicKey, publicKeyHash: SHA256.hash(spki), partyV: nil, label: label,
            requiresPartyV: false)
    }

    private static func checkP256(_ key: EVPKey, label: String) throws(ConfigurationError) {
        guard key.kind == .ec else {
            throw ConfigurationError(
                .unsupportedKeyType, "\(label): Google Pay merchant keys are EC P-256; this key is \(key.describe())")
        }
        guard key.curveName == "prime256v1" else {
            throw ConfigurationError(
                .wrongCurve, "\(label): Google Pay merchant keys are on P-256; this key is \(key.describe())")
        }
    }

    /// A public key from SPKI (PEM or DER) or from a certificate (PEM or DER).
    static func publicKey(_ bytes: [UInt8]) -> EVPKey? {
        if let certificate = X509Certificate.load(bytes), let key = certificate.publicKey() { return key }
        if let key = EVPKey.publicKey(fromDER: bytes) { return key }
        // Byte search, not String.range(of:) (full Foundation only: this module ships on FoundationEssentials).
        func find(_ marker: String, from: Int) -> Range<Int>? {
            let needle = Array(marker.utf8)
            guard bytes.count >= needle.count + from else { return nil }
            for i in from...(bytes.count - needle.count) where bytes[i..<i + needle.count].elementsEqual(needle) {
                return i..<i + needle.count
            }
            return nil
        }
        guard let start = find("-----BEGIN PUBLIC KEY-----", from: 0),
            let stop = find("-----END PUBLIC KEY-----", from: start.upperBound)
        else { return nil }
        let body = bytes[start.upperBound..<stop.lowerBound].filter { $0 != 0x20 && !(0x09...0x0D).contains($0) }
        return Base64.decode(String(decoding: body, as: UTF8.self)).flatMap { EVPKey.publicKey(fromDER: $0) }
    }

    /// A key described as text, as `--google-merchant-key` takes it (see ``syntax``): a bare path is a
    /// private key file; passwords come from the environment variables named; `pkcs11=` needs the
    /// public key (`pub=`) or certificate (`cert=`) to check the token's key against.
    public convenience init(spec: String, environment: [String: String] = ProcessInfo.processInfo.environment)
        throws(ConfigurationError)
    {
        if spec.hasPrefix("pkcs11:") {
            throw ConfigurationError(
                .invalidOption, "a PKCS#11 Google Pay key is written pkcs11=URI,pub=PATH (the public key to check it)")
        }
        guard spec.contains("=") else {
            try self.init(privateKeyFile: spec)
            return
        }
        var values: [String: String] = [:]
        let fields = ["key", "key-password-env", "p12", "password-env", "pkcs11", "pub", "cert"]
        for part in spec.split(separator: ",", omittingEmptySubsequences: true) {
            guard let eq = part.firstIndex(of: "=") else { throw ConfigurationError("'\(part)' is not key=value") }
            let name = String(part[..<eq]), value = String(part[part.index(after: eq)...])
            guard fields.contains(name) else {
                throw ConfigurationError("unknown field '\(name)' (\(fields.joined(separator: ", ")))")
            }
            guard values.updateValue(value, forKey: name) == nil else {
                throw ConfigurationError("'\(name)' given twice")
            }
        }
        func secret(_ field: String) throws(ConfigurationError) -> String? {
            guard let variable = values[field] else { return nil }
            guard let value = environment[variable] else {
                throw ConfigurationError(.invalidOption, "environment variable \(variable) is not set")
            }
            return value
        }
        if let uri = values["pkcs11"] {
            guard let publicPath = values["pub"] ?? values["cert"], values["key"] == nil, values["p12"] == nil else {
                throw ConfigurationError("pkcs11=URI takes pub=PATH or cert=PATH, and excludes key= and p12=")
            }
            let publicKey = try SecretFile.withContents(atPath: publicPath, what: "public key") {
                (bytes) throws(ConfigurationError) in bytes
            }
            try self.init(publicKey: publicKey, pkcs11: PKCS11KeyReference(uri: uri), environment: environment)
        } else if let p12 = values["p12"] {
            guard values["key"] == nil else { throw ConfigurationError("p12= excludes key=") }
            try self.init(pkcs12File: p12, password: try secret("password-env") ?? "")
        } else if let path = values["key"] {
            try self.init(privateKeyFile: path, keyPassword: try secret("key-password-env"))
        } else {
            throw ConfigurationError("give PATH, key=PATH, p12=PATH or pkcs11=URI,pub=PATH")
        }
    }
}
