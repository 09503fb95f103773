// A merchant's payment-processing identity: private key, publicKeyHash and partyV, loaded once.
internal import ApplePayCrypto
#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// One merchant key the engine can decrypt for: Apple's "payment processing certificate" and its
/// private key.
///
/// Load any number; tokens select theirs by ``publicKeyHash``, so an old and a new key (key rotation,
/// see <doc:KeyRotation>) work side by side. Keys are read from PEM (SEC1 or PKCS#8, encrypted or
/// not), DER or PKCS#12, given as bytes (any `DataProtocol`) or as files. The private key then lives
/// inside OpenSSL, which clears it when freed; the library wipes its own copies of key bytes and
/// files after loading.
public final class MerchantIdentity: Sendable {
    /// The merchant key's algorithm, which decides the token version it opens.
    public enum KeyKind: String, Sendable {
        /// An EC P-256 key: opens EC_v1 tokens.
        case ec = "EC P-256"
        /// An RSA key of 2048 bits or more: opens RSA_v1 tokens.
        case rsa = "RSA"
    }

    /// OID of the merchant certificate extension holding the hex SHA-256 of the merchant identifier.
    package static let merchantIdentifierOID = OID.merchantIdentifier

    /// Where the private key lives: in OpenSSL (software) or in a PKCS#11 token.
    package let key: MerchantKey
    /// SHA-256 of the merchant certificate's SubjectPublicKeyInfo DER (matches `header.publicKeyHash`).
    public let publicKeyHash: [UInt8]
    /// KDF partyV: SHA-256 of the merchant identifier (32 bytes, leading zeros kept). EC only.
    package let partyV: [UInt8]?
    /// EC P-256 or RSA.
    public let keyKind: KeyKind
    /// A human label for messages: the merchant identifier or the certificate subject.
    public let label: String
    /// When the merchant certificate stops being valid (its notAfter), for an operator's expiry alarm;
    /// nil for an identity loaded without a certificate. Tokens keep decrypting after it: Apple's
    /// procedure checks the signing chain's validity, not the merchant certificate's.
    public let certificateNotAfter: Date?

    private convenience init(
        privateKey: EVPKey, publicKeyHash: [UInt8], partyV: [UInt8]?, label: String,
        certificateNotAfter: Date? = nil
    ) throws(ConfigurationError) {
        try self.init(
            key: .software(privateKey), publicKey: privateKey, publicKeyHash: publicKeyHash, partyV: partyV,
            label: label,
            certificateNotAfter: certificateNotAfter)
    }

    /// `publicKey` is the key whose kind, curve and size are checked: the private key itself, or the
    /// certificate's public key for a key in a token.
    init(
        key: MerchantKey, publicKey privateKey: EVPKey, publicKeyHash: [UInt8], partyV: [UInt8]?, label: String,
        certificateNotAfter: Date? = nil, requiresPartyV: Bool = true
    ) throws(ConfigurationError) {
        switch privateKey.kind {
        case .ec:
            // By the curve's name: a 256-bit key on secp256k1 or brainpoolP256r1 is not a P-256 key.
            guard privateKey.curveName == "prime256v1" else {
                throw ConfigurationError(
                    .wrongCurve,
                    "\(label): EC merchant keys must be on P-256 (prime256v1); this key is \(privateKey.describe())")
            }
            // Google Pay keys derive with HKDF and need no merchant identifier.
            guard partyV != nil || !requiresPartyV else {
                throw ConfigurationError(
                    .invalidMerchantIdentifier,
                    "\(label): an EC merchant needs a certificate with extension \(Self.merchantIdentifierOID) or a merchant identifier"
                )
            }
            keyKind = .ec
        case .rsa:
            guard privateKey.bits >= 2048 else {
                throw ConfigurationError(
                    .weakKey,
                    "\(label): RSA merchant keys must be at least 2048 bits; this key is \(privateKey.describe())")
            }
            keyKind = .rsa
        case .other:
            throw ConfigurationError(
                .unsupportedKeyType,
                "\(label): the merchant key must be EC P-256 or RSA; this key is \(privateKey.describe())")
        }
        self.key = key
        self.publicKeyHash = publicKeyHash
        self.partyV = partyV
        self.label = label
        self.certificateNotAfter = certificateNotAfter
    }

    /// The key the load-time checks ran on (PKCS#12 identities are always software keys).
    private var keyForChecks: EVPKey {
        switch key {
        case .software(let privateKey): privateKey
        case .pkcs11(let tokenKey): tokenKey.publicKey
        }
    }

    /// SHA-256 of a merchant identifier string: the KDF's partyV, all 32 bytes, leading zeros kept.
    public static func merchantIdentifierHash(_ merchantIdentifier: String) -> [UInt8] {
        SHA256.hash(Array(merchantIdentifier.utf8))
    }

    /// Hex of `publicKeyHash`, for logs and diagnostics (not a secret).
    public var publicKeyHashHex: String { Hex.encode(publicKeyHash) }
    /// Base64 of `publicKeyHash`, as it appears in a token's `header.publicKeyHash`.
    public var publicKeyHashBase64: String { Base64.encode(publicKeyHash) }

    /// A merchant certificate (PEM or DER) and its private key (PEM: SEC1 or PKCS#8, optionally
    /// encrypted; or DER). partyV comes from the certificate's merchant-identifier extension, or from
    /// `merchantIdentifier` when given.
    public convenience init(
        certificate: [UInt8], privateKey: [UInt8], keyPassword: String? = nil,
        merchantIdentifier: String? = nil
    ) throws(ConfigurationError) {
        guard let cert = X509Certificate.load(certificate) else {
            throw ConfigurationError(.unreadableCertificate, "the merchant certificate cannot be read")
        }
        let key = try Self.loadKey(privateKey, password: keyPassword)
        try self.init(certificate: cert, key: key, merchantIdentifier: merchantIdentifier)
    }

    /// A merchant known only by its identifier (e.g. `merchant.com.example`) and its private key:
    /// partyV is SHA-256 of the identifier; publicKeyHash is computed from the key itself.
    public convenience init(merchantIdentifier: String, privateKey: [UInt8], keyPassword: String? = nil)
        throws(ConfigurationError)
    {
        let key = try Self.loadKey(privateKey, password: keyPassword)
        guard let spki = key.subjectPublicKeyInfoDER() else {
            throw ConfigurationError(.unreadableKey, "cannot encode the merchant public key")
        }
        try self.init(
            privateKey: key, publicKeyHash: SHA256.hash(spki), partyV: Self.merchantIdentifierHash(merchantIdentifier),
            label: merchantIdentifier)
    }

    /// A merchant certificate and private key as any `DataProtocol` (`Data` read from a file, say).
    ///
    /// Same as ``init(certificate:privateKey:keyPassword:merchantIdentifier:)-([UInt8],[UInt8],_,_)``;
    /// the library's copy of the key bytes is wiped after loading.
    public convenience init(
        certificate: some DataProtocol, privateKey: some DataProtocol, keyPassword: String? = nil,
        merchantIdentifier: String? = nil
    ) throws(ConfigurationError) {
        let certificateBytes: [UInt8] = Array(certificate)
        var keyBytes: [UInt8] = Array(privateKey)
        defer { SensitiveBytes.wipe(&keyBytes) }
        try self.init(
            certificate: certificateBytes, privateKey: keyBytes, keyPassword: keyPassword,
            merchantIdentifier: merchantIdentifier)
    }

    /// A merchant identifier and a private key as any `DataProtocol`.
    ///
    /// Same as ``init(merchantIdentifier:privateKey:keyPassword:)-(_,[UInt8],_)``; the library's copy of
    /// the key bytes is wiped after loading.
    public convenience init(merchantIdentifier: String, privateKey: some DataProtocol, keyPassword: String? = nil)
        throws(ConfigurationError)
    {
        var keyBytes: [UInt8] = Array(privateKey)
        defer { SensitiveBytes.wipe(&keyBytes) }
        try self.init(merchantIdentifier: merchantIdentifier, privateKey: keyBytes, keyPassword: keyPassword)
    }

    /// A PKCS#12 archive as any `DataProtocol`; the library's copy is wiped after loading.
    public convenience init(pkcs12: some DataProtocol, password: String, merchantIdentifier: String? = nil)
        throws(ConfigurationError)
    {
        var bytes: [UInt8] = Array(pkcs12)
        defer { SensitiveBytes.wipe(&bytes) }
        try self.init(pkcs12: bytes, password: password, merchantIdentifier: merchantIdentifier)
    }

    /// The merchant certificate and private key from two files (PEM or DER, as for the bytes form).
    ///
    /// The key file is read straight into a buffer that is wiped after loading.
    /// - Throws: ``ConfigurationError`` with ``ConfigurationError/Code/unreadableInput`` naming the
    ///   file that is missing, unreadable, not a regular file or over 16 MiB; otherwise as the bytes form.
    public convenience init(
        certificateFile: URL, privateKeyFile: URL, keyPassword: String? = nil,
        merchantIdentifier: String? = nil
    ) throws(ConfigurationError) {
        let certificate = try SecretFile.withContents(of: certificateFile, what: "merchant certificate") {
            (bytes) throws(ConfigurationError) in bytes
        }
        let key = try SecretFile.withContents(of: privateKeyFile, what: "merchant key") {
            (key) throws(ConfigurationError) in
            try Self.loadKey(key, password: keyPassword)
        }
        guard let cert = X509Certificate.load(certificate) else {
            throw ConfigurationError(
                .unreadableCertificate,
                "the merchant certificate file \(certificateFile.path) cannot be read as a certificate")
        }
        try self.init(certificate: cert, key: key, merchantIdentifier: merchantIdentifier)
    }

    /// A merchant identifier and the private key from a file.
    ///
    /// - Throws: ``ConfigurationError`` naming the file when it cannot be read; otherwise as the bytes form.
    public convenience init(merchantIdentifier: String, privateKeyFile: URL, keyPassword: String? = nil)
        throws(ConfigurationError)
    {
        let key = try SecretFile.withContents(of: privateKeyFile, what: "merchant key") {
            (key) throws(ConfigurationError) in
            try Self.loadKey(key, password: keyPassword)
        }
        guard let spki = key.subjectPublicKeyInfoDER() else {
            throw ConfigurationError(.unreadableKey, "cannot encode the merchant public key")
        }
        try self.init(
            privateKey: key, publicKeyHash: SHA256.hash(spki), partyV: Self.merchantIdentifierHash(merchantIdentifier),
            label: merchantIdentifier)
    }

    /// A PKCS#12 file (`.p12`) holding the merchant certificate and key, read into a wiped buffer.
    ///
    /// - Throws: ``ConfigurationError`` naming the file when it cannot be read; otherwise as the bytes form.
    public convenience init(pkcs12File: URL, password: String, merchantIdentifier: String? = nil)
        throws(ConfigurationError)
    {
        let identity = try SecretFile.withContents(of: pkcs12File, what: "PKCS#12") {
            (bytes) throws(ConfigurationError) in
            try MerchantIdentity(pkcs12: bytes, password: password, merchantIdentifier: merchantIdentifier)
        }
        try self.init(
            key: identity.key, publicKey: identity.keyForChecks, publicKeyHash: identity.publicKeyHash,
            partyV: identity.partyV, label: identity.label,
            certificateNotAfter: identity.certificateNotAfter)
    }

    /// A PKCS#12 file holding the merchant certificate and key (legacy RC2-40 files included).
    public convenience init(pkcs12: [UInt8], password: String, merchantIdentifier: String? = nil)
        throws(ConfigurationError)
    {
        OpenSSLErrors.clear()
        defer { OpenSSLErrors.clear() }
        let contents: (key: EVPKey, certificate: X509Certificate?)
        do throws(OpenSSLFailure) {
            contents = try PKCS12.open(pkcs12, password: password)
        } catch {
            throw ConfigurationError(.unreadablePKCS12, error.reason)
        }
        guard let certificate = contents.certificate else {
            throw ConfigurationError(.unreadablePKCS12, "the PKCS#12 file holds no merchant certificate")
        }
        try self.init(certificate: certificate, key: contents.key, merchantIdentifier: merchantIdentifier)
    }

    private static func loadKey(_ bytes: [UInt8], password: String?) throws(ConfigurationError) -> EVPKey {
        do throws(OpenSSLFailure) {
            return try EVPKey.privateKey(from: bytes, password: password)
        } catch {
            throw ConfigurationError(.unreadableKey, error.reason)
        }
    }

    private convenience init(certificate cert: X509Certificate, key: EVPKey, merchantIdentifier: String?)
        throws(ConfigurationError)
    {
        guard cert.matches(privateKey: key) else {
            throw ConfigurationError(.keyMismatch, "the private key does not belong to the merchant certificate")
        }
        let certified = try Self.certified(by: cert, merchantIdentifier: merchantIdentifier)
        let subject = cert.subjectLine ?? "merchant certificate"
        try self.init(
            privateKey: key, publicKeyHash: certified.publicKeyHash, partyV: certified.partyV,
            label: merchantIdentifier ?? subject, certificateNotAfter: Self.notAfter(cert))
    }

    /// What a merchant certificate gives an identity, in both the software and the PKCS#11 form: its public
    /// key, SHA-256 of its SubjectPublicKeyInfo (`publicKeyHash`) and partyV, SHA-256 of `merchantIdentifier`
    /// when given, else the certificate's merchant-identifier extension (nil without one).
    static func certified(by cert: X509Certificate, merchantIdentifier: String?) throws(ConfigurationError) -> (
        publicKey: EVPKey, publicKeyHash: [UInt8], partyV: [UInt8]?
    ) {
        guard let certKey = cert.publicKey(), let spki = certKey.subjectPublicKeyInfoDER() else {
            throw ConfigurationError(.unreadableCertificate, "cannot encode the merchant certificate's public key")
        }
        var partyV: [UInt8]? = nil
        if let merchantIdentifier {
            partyV = Self.merchantIdentifierHash(merchantIdentifier)
        } else if let ext = cert.extensionValue(oid: Self.merchantIdentifierOID) {
            partyV = try Self.partyV(fromExtension: ext)
        }
        return (certKey, SHA256.hash(spki), partyV)
    }

    static func notAfter(_ cert: X509Certificate) -> Date? {
        cert.validity.map { Date(timeIntervalSince1970: TimeInterval($0.upperBound)) }
    }

    /// The extension holds an ASN.1 string of 64 hex characters; decode them as bytes (not as a
    /// number, which would lose leading zero bytes).
    static func partyV(fromExtension value: [UInt8]) throws(ConfigurationError) -> [UInt8] {
        let decoded: [UInt8]? = value.withUnsafeBytes { raw in
            let r = BERReader(bytes: raw)
            guard let e = try? r.root(), !e.isConstructed else { return nil }
            return Hex.decode(r.content(e))
        }
        guard let bytes = decoded, bytes.count == 32 else {
            throw ConfigurationError(
                .invalidMerchantIdentifier,
                "the merchant certificate's \(merchantIdentifierOID) extension is not 64 hex characters")
        }
        return bytes
    }
}
