// A merchant's Samsung Pay private key (RSA, 2048 bits or more): in OpenSSL from any key form the engine
// reads, or in a PKCS#11 token; named by its kid, the base64 SHA-256 of its public key.
internal import ApplePayCrypto

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// One Samsung Pay merchant private key: the key whose certificate signing request the merchant (or
/// its payment service provider) gave Samsung. Load any number (key rotation): a token names its key
/// by the protected header's `kid`, the standard base64 of SHA-256 over the public key's DER
/// SubjectPublicKeyInfo.
public final class SamsungPayMerchantKey: Sendable, CustomStringConvertible {
    let identity: MerchantIdentity
    /// A label for messages (the file or URI it came from, never the key).
    public let label: String
    /// The `kid` tokens sealed to this key carry.
    public let kid: String
    /// The modulus' size in bytes: a token's encrypted key is exactly this long.
    public let modulusBytes: Int

    /// The spec forms, for help texts (as for Google Pay keys).
    public static let syntax =
        "PATH | key=PATH[,key-password-env=VAR] | p12=PATH[,password-env=VAR] | pkcs11=URI,pub=PATH | pkcs11=URI,cert=PATH"

    private init(identity: MerchantIdentity, publicKey: EVPKey, label: String) {
        self.identity = identity
        self.label = label
        kid = Base64.encode(identity.publicKeyHash)
        modulusBytes = publicKey.size
    }

    /// `label (kid)`.
    public var description: String { "\(label) (kid \(kid))" }

    /// True when the private key is in a PKCS#11 token.
    public var keyIsInToken: Bool { identity.keyIsInToken }

    /// The `kid` of a public key (DER SubjectPublicKeyInfo): what a merchant compares with the `kid`
    /// of the tokens it receives.
    public static func kid(ofSubjectPublicKeyInfo spki: [UInt8]) -> String { Base64.encode(SHA256.hash(spki)) }

    /// A private key in any form the engine reads: PEM (PKCS#1 or PKCS#8, optionally encrypted) or
    /// DER. The library's copy of the bytes is wiped after loading.
    /// - Throws: ``ConfigurationError``: ``ConfigurationError/Code/unreadableKey``,
    ///   ``ConfigurationError/Code/unsupportedKeyType`` for a key that is not RSA, or
    ///   ``ConfigurationError/Code/weakKey`` under 2048 bits.
    public convenience init(
        privateKey: some DataProtocol, keyPassword: String? = nil, label: String = "Samsung Pay key"
    ) throws(ConfigurationError) {
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
        let key = try SecretFile.withContents(atPath: path, what: "Samsung Pay merchant key") {
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
    /// certificate) to check it against: the token does the raw RSA operation (CKM_RSA_X_509), the
    /// padding is checked here with implicit rejection, the key never leaves the token.
    /// - Throws: ``ConfigurationError/Code/pkcs11Unusable`` when the module does not do raw RSA with
    ///   the key, ``ConfigurationError/Code/keyMismatch`` when the token's key is not the public key's.
    public convenience init(
        publicKey: [UInt8], pkcs11 reference: PKCS11KeyReference,
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(ConfigurationError) {
        guard let key = GooglePayMerchantKey.publicKey(publicKey) else {
            throw ConfigurationError(
                .unreadableCertificate, "the public key for \(reference) is neither a public key nor a certificate")
        }
        let label = reference.description
        try Self.checkRSA(key, label: label)
        let token = try PKCS11PrivateKey.load(reference, certificateKey: key, label: label, environment: environment)
        let identity = try Self.identity(.pkcs11(token), publicKey: key, label: label)
        try Self.probeRawRSA(identity, token: token, publicKey: key, label: label)
        self.init(identity: identity, publicKey: key, label: label)
    }

    private convenience init(software key: EVPKey, label: String) throws(ConfigurationError) {
        try Self.checkRSA(key, label: label)
        self.init(
            identity: try Self.identity(.software(key), publicKey: key, label: label), publicKey: key, label: label)
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

    private static func checkRSA(_ key: EVPKey, label: String) throws(ConfigurationError) {
        guard key.kind == .rsa else {
            throw ConfigurationError(
                .unsupportedKeyType, "\(label): Samsung Pay merchant keys are RSA; this key is \(key.describe())")
        }
        guard key.size >= RSAPKCS1Decoding.minimumModulusBytes else {
            throw ConfigurationError(.weakKey, "\(label): this RSA key is too small: \(key.describe())")
        }
    }

    /// A random content key, RSAES-PKCS1-v1_5-wrapped to the public key, comes back through the raw
    /// operation in the token and the decoding here: the module does CKM_RSA_X_509 with this key, and
    /// the key is the public key's.
    private static func probeRawRSA(
        _ identity: MerchantIdentity, token: PKCS11PrivateKey, publicKey: EVPKey, label: String
    )
        throws(ConfigurationError)
    {
        var probe = SecureRandom.bytes(RSAPKCS1Decoding.keyLength)
        var fallback = SecureRandom.bytes(RSAPKCS1Decoding.keyLength)
        defer {
            SensitiveBytes.wipe(&probe)
            SensitiveBytes.wipe(&fallback)
        }
        guard let wrapped = probe.withUnsafeBytes({ PKeyContext.pkcs1Encrypter(publicKey)?.encrypt($0) }) else {
            throw ConfigurationError(
                .pkcs11Unusable, "\(label): cannot wrap a check key: \(OpenSSLErrors.drain() ?? "OpenSSL failed")")
        }
        let block = SensitiveBytes(capacity: publicKey.size)
        let recovered = SensitiveBytes(capacity: RSAPKCS1Decoding.keyLength)
        let sessions = TokenKeySessions()
        do throws(PKCS11PrivateKey.Fault) {
            _ = try wrapped.withBytes { (input) throws(PKCS11PrivateKey.Fault) in
                try block.write { (out) throws(PKCS11PrivateKey.Fault) in
                    try sessions.rawRSA(merchant: identity, token: token, input, into: out)
                    return out.count
                }
            }
        } catch {
            throw ConfigurationError(
                .pkcs11Unusable,
                "\(label): the raw RSA operation (CKM_RSA_X_509) in the token fails, and Samsung Pay's unwrap needs it: \(error.reason)"
            )
        }
        _ = block.withUnsafeBytes { raw in
            fallback.withUnsafeBytes { fallback in
                recovered.write { out in
                    RSAPKCS1Decoding.selectKey(block: raw, fallback: fallback, into: out)
                    return RSAPKCS1Decoding.keyLength
                }
            }
        }
        let same = recovered.withUnsafeBytes { a in probe.withUnsafeBytes { b in SecureMemory.constantTimeEquals(a, b) }
        }
        guard same else {
            throw ConfigurationError(
                .keyMismatch, "\(label): the token's private key does not belong to the public key")
        }
    }

    /// A key described as text, as `--samsung-key` takes it (see ``syntax``; the forms of
    /// ``GooglePayMerchantKey/init(spec:environment:)``): a bare path is a private key file;
    /// passwords come from the environment variables named; `pkcs11=` needs the public key (`pub=`)
    /// or certificate (`cert=`) to check the token's key against.
    public convenience init(spec: String, environment: [String: String] = ProcessInfo.processInfo.environment)
        throws(ConfigurationError)
    {
        if spec.hasPrefix("pkcs11:") {
            throw ConfigurationError(
                .invalidOption, "a PKCS#11 Samsung Pay key is written pkcs11=URI,pub=PATH (the public key to check it)")
        }
        guard spec.contains("=") else {
            try self.init(privateKeyFile: spec)
            return
        }
        var values: [String: String] = [:]
        let fields = ["key", "key-password-env", "p12", "password-env", "pkcs11", "pub", "cert"]
        for part in spec.split(separator: ",", omittingEmptySubsequences: true) {
            guard let eq = part.firstIndex(of: "=") else {
                throw ConfigurationError("'\(MerchantSpec.redacted(String(part)))' is not key=value")
            }
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
