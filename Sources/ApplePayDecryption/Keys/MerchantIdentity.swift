// A merchant's payment-processing identity: private key, publicKeyHash and partyV, loaded once.
internal import CShims

/// One merchant key the engine can decrypt for. Load any number; tokens select theirs by
/// `publicKeyHash`, so an old and a new key (key rotation) work side by side.
public final class MerchantIdentity: Sendable {
    public enum KeyKind: String, Sendable { case ec = "EC P-256", rsa = "RSA" }

    /// OID of the merchant certificate extension holding the hex SHA-256 of the merchant identifier.
    static let merchantIdentifierOID = "1.2.840.113635.100.6.32"

    let privateKey: EVPKey
    /// SHA-256 of the merchant certificate's SubjectPublicKeyInfo DER (matches `header.publicKeyHash`).
    public let publicKeyHash: [UInt8]
    /// KDF partyV: SHA-256 of the merchant identifier (32 bytes, leading zeros kept). EC only.
    let partyV: [UInt8]?
    public let keyKind: KeyKind
    /// A human label for messages: the merchant identifier or the certificate subject.
    public let label: String

    private init(privateKey: EVPKey, publicKeyHash: [UInt8], partyV: [UInt8]?, label: String) throws(ConfigurationError) {
        switch privateKey.kind {
        case .ec:
            // By the curve's name: a 256-bit key on secp256k1 or brainpoolP256r1 is not a P-256 key.
            guard privateKey.curveName == "prime256v1" else {
                throw ConfigurationError("\(label): EC merchant keys must be on P-256 (prime256v1); this key is \(privateKey.describe())")
            }
            guard partyV != nil else {
                throw ConfigurationError("\(label): an EC merchant needs a certificate with extension \(Self.merchantIdentifierOID) or a merchant identifier")
            }
            keyKind = .ec
        case .rsa:
            guard privateKey.bits >= 2048 else {
                throw ConfigurationError("\(label): RSA merchant keys must be at least 2048 bits; this key is \(privateKey.describe())")
            }
            keyKind = .rsa
        case .other:
            throw ConfigurationError("\(label): the merchant key must be EC P-256 or RSA; this key is \(privateKey.describe())")
        }
        self.privateKey = privateKey
        self.publicKeyHash = publicKeyHash
        self.partyV = partyV
        self.label = label
    }

    /// SHA-256 of a merchant identifier string: the KDF's partyV, all 32 bytes, leading zeros kept.
    public static func merchantIdentifierHash(_ merchantIdentifier: String) -> [UInt8] {
        SHA256.hash(Array(merchantIdentifier.utf8))
    }

    /// Hex of `publicKeyHash`, for logs and diagnostics (not a secret).
    public var publicKeyHashHex: String { Hex.encode(publicKeyHash) }
    public var publicKeyHashBase64: String { Base64.encode(publicKeyHash) }

    /// A merchant certificate (PEM or DER) and its private key (PEM: SEC1 or PKCS#8, optionally
    /// encrypted; or DER). partyV comes from the certificate's merchant-identifier extension, or from
    /// `merchantIdentifier` when given.
    public convenience init(certificate: [UInt8], privateKey: [UInt8], keyPassword: String? = nil,
                            merchantIdentifier: String? = nil) throws(ConfigurationError) {
        guard let cert = X509Certificate.load(certificate) else { throw ConfigurationError("the merchant certificate cannot be read") }
        let key = try EVPKey.privateKey(from: privateKey, password: keyPassword)
        try self.init(certificate: cert, key: key, merchantIdentifier: merchantIdentifier)
    }

    /// A merchant known only by its identifier (e.g. `merchant.com.example`) and its private key:
    /// partyV is SHA-256 of the identifier; publicKeyHash is computed from the key itself.
    public convenience init(merchantIdentifier: String, privateKey: [UInt8], keyPassword: String? = nil) throws(ConfigurationError) {
        let key = try EVPKey.privateKey(from: privateKey, password: keyPassword)
        guard let spki = key.subjectPublicKeyInfoDER() else { throw ConfigurationError("cannot encode the merchant public key") }
        try self.init(privateKey: key, publicKeyHash: SHA256.hash(spki), partyV: Self.merchantIdentifierHash(merchantIdentifier),
                      label: merchantIdentifier)
    }

    /// A PKCS#12 file holding the merchant certificate and key (legacy RC2-40 files included).
    public convenience init(pkcs12: [UInt8], password: String, merchantIdentifier: String? = nil) throws(ConfigurationError) {
        guard legacyProviderLoaded else { throw ConfigurationError("OpenSSL's legacy provider is not available for PKCS#12") }
        OpenSSLErrors.clear()
        defer { OpenSSLErrors.clear() }
        let p12: OpaquePointer? = pkcs12.withUnsafeBytes { raw in
            var p = raw.baseAddress?.assumingMemoryBound(to: UInt8.self)
            return d2i_PKCS12(nil, &p, raw.count)
        }
        guard let p12 else { throw ConfigurationError("the PKCS#12 file cannot be read: \(OpenSSLErrors.drain() ?? "not DER")") }
        defer { PKCS12_free(p12) }
        var pkey: OpaquePointer? = nil
        var cert: OpaquePointer? = nil
        var ca: OpaquePointer? = nil
        let ok = withPassword(password) { pw in
            PKCS12_parse(p12, pw?.assumingMemoryBound(to: CChar.self), &pkey, &cert, &ca)
        }
        if let ca { CShims_sk_X509_pop_free(ca) }
        guard ok == 1, let pkey else {
            if let cert { X509_free(cert) }
            if let pkey { EVP_PKEY_free(pkey) }
            throw ConfigurationError("the PKCS#12 file cannot be opened (wrong password?): \(OpenSSLErrors.drain() ?? "unknown error")")
        }
        let key = EVPKey(takingOwnership: pkey)
        guard let cert, let der = X509Certificate.encode(cert) else {
            if let cert { X509_free(cert) }
            throw ConfigurationError("the PKCS#12 file holds no merchant certificate")
        }
        try self.init(certificate: X509Certificate(takingOwnership: cert, der: der), key: key, merchantIdentifier: merchantIdentifier)
    }

    private convenience init(certificate cert: X509Certificate, key: EVPKey, merchantIdentifier: String?) throws(ConfigurationError) {
        guard X509_check_private_key(cert.ref, key.ref) == 1 else {
            OpenSSLErrors.clear()
            throw ConfigurationError("the private key does not belong to the merchant certificate")
        }
        guard let certKey = cert.publicKey(), let spki = certKey.subjectPublicKeyInfoDER() else {
            throw ConfigurationError("cannot encode the merchant certificate's public key")
        }
        var partyV: [UInt8]? = nil
        if let merchantIdentifier {
            partyV = Self.merchantIdentifierHash(merchantIdentifier)
        } else if let ext = cert.extensionValue(oid: Self.merchantIdentifierOID) {
            partyV = try Self.partyV(fromExtension: ext)
        }
        let subject = X509_NAME_oneline(X509_get_subject_name(cert.ref), nil, 0).map { p in
            defer { CShims_OPENSSL_free(p) }
            return String(cString: p)
        } ?? "merchant certificate"
        try self.init(privateKey: key, publicKeyHash: SHA256.hash(spki), partyV: partyV, label: merchantIdentifier ?? subject)
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
            throw ConfigurationError("the merchant certificate's \(merchantIdentifierOID) extension is not 64 hex characters")
        }
        return bytes
    }
}
