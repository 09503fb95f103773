// Getting the keys: a merchant key and the certificate signing request Apple's portal takes for a payment
// processing certificate, the check of the certificate Apple returns against its key, and a Google Pay
// key pair with the public key in the form Google's console takes.
internal import ApplePayCrypto

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// Makes and checks the keys a merchant, or the processor decrypting for it, needs before the first token.
///
/// Private keys are written by OpenSSL straight into a new file (created exclusively, mode 0600): they
/// never pass through Swift memory. What these functions return is public: requests, certificates,
/// public keys and their hashes. See <doc:GettingTheKeys>.
public enum MerchantKeyTools {
    /// The key of an Apple Pay payment processing certificate: EC P-256 (`EC_v1` tokens, everywhere) or
    /// RSA-2048 (`RSA_v1` tokens, where Apple uses them).
    public enum AppleKeyAlgorithm: String, Sendable, CaseIterable {
        /// EC on P-256 (prime256v1).
        case ecP256 = "ec"
        /// RSA with a 2048-bit modulus and exponent 65537.
        case rsa2048 = "rsa"
    }

    /// A certificate signing request (PKCS#10) and what it asks to certify.
    public struct CertificateRequest: Sendable {
        /// The request as PEM ("CERTIFICATE REQUEST"), the `.certSigningRequest` Apple's portal takes.
        public let pem: String
        /// The request's DER encoding.
        public let der: [UInt8]
        /// The subject in OpenSSL's one-line form.
        public let subject: String
        /// The requested key's SubjectPublicKeyInfo DER.
        public let subjectPublicKeyInfo: [UInt8]
        /// SHA-256 of ``subjectPublicKeyInfo``: the `header.publicKeyHash` of every token made for the
        /// certificate Apple issues for this request.
        public var publicKeyHash: [UInt8] { SHA256.hash(subjectPublicKeyInfo) }
        /// Base64 of ``publicKeyHash``, as tokens carry it.
        public var publicKeyHashBase64: String { Base64.encode(publicKeyHash) }
    }

    /// Generates a merchant key, writes it to the new file `privateKeyFile` (unencrypted PKCS#8 PEM, mode
    /// 0600; an existing file or link there is never replaced), and returns the request for it, signed
    /// with it over SHA-256.
    ///
    /// Apple's portal reads only the key from the request; the subject is for your records.
    /// - Parameters:
    ///   - algorithm: EC P-256 or RSA-2048.
    ///   - privateKeyFile: the path of the new key file.
    ///   - commonName: the subject's CN, such as your merchant identifier.
    ///   - emailAddress: the subject's emailAddress, when given.
    ///   - country: the subject's two-letter C, when given.
    /// - Throws: ``ConfigurationError`` with ``ConfigurationError/Code/unreadableInput`` when the file
    ///   cannot be created (it exists, or its folder is missing), ``ConfigurationError/Code/invalidOption``
    ///   for a subject OpenSSL refuses.
    public static func makeAppleMerchantKey(
        _ algorithm: AppleKeyAlgorithm, privateKeyFile: String, commonName: String, emailAddress: String? = nil,
        country: String? = nil
    ) throws(ConfigurationError) -> CertificateRequest {
        var subject = [("CN", commonName)]
        if let emailAddress { subject.append(("emailAddress", emailAddress)) }
        if let country { subject.append(("C", country)) }
        let key = algorithm == .ecP256 ? EVPKey.generateEC(curve: "P-256") : EVPKey.generateRSA(bits: 2048)
        let request: CertificateSigningRequest
        do throws(OpenSSLFailure) {
            request = try CertificateSigningRequest.make(subject: subject, key: key)
        } catch {
            throw ConfigurationError(.invalidOption, "cannot make the certificate signing request: \(error.reason)")
        }
        try createKeyFile(privateKeyFile, key: key)
        return CertificateRequest(request)
    }

    /// Reads a certificate signing request (PEM or DER) and checks its signature with the key it carries.
    /// - Throws: ``ConfigurationError`` with ``ConfigurationError/Code/unreadableCertificate`` when it is
    ///   not a request or its signature does not verify.
    public static func readCertificateRequest(_ bytes: [UInt8]) throws(ConfigurationError) -> CertificateRequest {
        do throws(OpenSSLFailure) {
            return CertificateRequest(try CertificateSigningRequest.read(bytes))
        } catch {
            throw ConfigurationError(.unreadableCertificate, "not a valid certificate signing request: \(error.reason)")
        }
    }

    /// What the engine will match a merchant certificate on, and whether a private key belongs to it.
    public struct MerchantCertificateReport: Sendable {
        /// The subject in OpenSSL's one-line form.
        public let subject: String
        /// The subject's UID: Apple writes the merchant identifier there (`merchant.com.example`).
        public let merchantIdentifier: String?
        /// The 32 bytes of the merchant identifier extension (1.2.840.113635.100.6.32), SHA-256 of the
        /// merchant identifier: the KDF's partyV for `EC_v1`. Nil when the certificate has none.
        public let merchantIdentifierHash: [UInt8]?
        /// SHA-256 of the certificate's SubjectPublicKeyInfo: what tokens carry in `header.publicKeyHash`.
        public let publicKeyHash: [UInt8]
        /// The certificate's key, such as "EC on prime256v1 (256 bits)" or "RSA-2048".
        public let keyDescription: String
        /// The start of the certificate's validity.
        public let notBefore: Date
        /// The end of the certificate's validity: tokens for it stop when apps move to the next certificate.
        public let notAfter: Date
        /// Whether the private key belongs to the certificate; nil when no key was given.
        public let keyMatches: Bool?
        /// Why the engine refuses this certificate and key as a merchant (nil when it loads them, or when
        /// no key was given): the same error ``MerchantIdentity`` throws.
        public let engineRefusal: ConfigurationError?

        /// Base64 of ``publicKeyHash``, as tokens carry it.
        public var publicKeyHashBase64: String { Base64.encode(publicKeyHash) }
        /// Hex of ``merchantIdentifierHash``.
        public var merchantIdentifierHashHex: String? { merchantIdentifierHash.map(Hex.encode) }
        /// Whether the extension is SHA-256 of the UID; nil when either is missing.
        public var merchantIdentifierHashMatches: Bool? {
            guard let merchantIdentifier, let merchantIdentifierHash else { return nil }
            return MerchantIdentity.merchantIdentifierHash(merchantIdentifier) == merchantIdentifierHash
        }

        /// Whole days from `now` to ``notAfter``, the part of a day left over dropped (negative once expired:
        /// -3 is three whole days after it).
        public func daysToExpiry(at now: Date = Date()) -> Int {
            Int((notAfter.timeIntervalSince1970 - now.timeIntervalSince1970) / 86_400)
        }
    }

    /// Reads a merchant certificate (PEM or DER, as Apple's portal returns it: `apple_pay.cer` is DER)
    /// and, when `privateKeyFile` is given, checks that the key in it belongs to the certificate and
    /// that the engine loads the pair as a merchant.
    /// - Throws: ``ConfigurationError`` when the certificate or the key file cannot be read.
    public static func checkMerchantCertificate(
        _ certificate: [UInt8], privateKeyFile: String? = nil, keyPassword: String? = nil
    ) throws(ConfigurationError) -> MerchantCertificateReport {
        guard let cert = X509Certificate.load(certificate) else {
            throw ConfigurationError(.unreadableCertificate, "not a certificate (PEM or DER)")
        }
        guard let publicKey = cert.publicKey(), let spki = publicKey.subjectPublicKeyInfoDER(),
            let validity = cert.validity
        else { throw ConfigurationError(.unreadableCertificate, "cannot read the certificate's key or validity") }
        var keyMatches: Bool? = nil
        var refusal: ConfigurationError? = nil
        if let privateKeyFile {
            // The engine's own loader judges the pair, on the key file's bytes (wiped after).
            let key = try SecretFile.withContents(atPath: privateKeyFile, what: "merchant key") {
                (bytes) throws(ConfigurationError) -> EVPKey in
                do throws(ConfigurationError) {
                    _ = try MerchantIdentity(certificate: certificate, privateKey: bytes, keyPassword: keyPassword)
                } catch {
                    refusal = error
                }
                do throws(OpenSSLFailure) {
                    return try EVPKey.privateKey(from: bytes, password: keyPassword)
                } catch {
                    throw ConfigurationError(.unreadableKey, "\(privateKeyFile): \(error.reason)")
                }
            }
            keyMatches = cert.matches(privateKey: key)
        }
        var identifierHash: [UInt8]? = nil
        if let value = cert.extensionValue(oid: OID.merchantIdentifier) {
            identifierHash = try? MerchantIdentity.partyV(fromExtension: value)
        }
        return MerchantCertificateReport(
            subject: cert.subjectLine ?? "", merchantIdentifier: cert.subjectEntry(oid: "0.9.2342.19200300.100.1.1"),
            merchantIdentifierHash: identifierHash, publicKeyHash: SHA256.hash(spki),
            keyDescription: publicKey.describe(),
            notBefore: Date(timeIntervalSince1970: TimeInterval(validity.lowerBound)),
            notAfter: Date(timeIntervalSince1970: TimeInterval(validity.upperBound)), keyMatches: keyMatches,
            engineRefusal: refusal)
    }

    /// A Google Pay public key in the forms Google asks for.
    public struct GooglePayPublicKey: Sendable {
        /// The uncompressed P-256 point (0x04 ‖ X ‖ Y, 65 bytes).
        public let uncompressedPoint: [UInt8]
        /// The key's X.509 SubjectPublicKeyInfo DER.
        public let subjectPublicKeyInfo: [UInt8]
        /// Base64 of ``uncompressedPoint``: what the Google Pay & Wallet Console takes as the public
        /// encryption key.
        public var uncompressedPointBase64: String { Base64.encode(uncompressedPoint) }
        /// Base64 of ``subjectPublicKeyInfo``, for tools that want X.509.
        public var subjectPublicKeyInfoBase64: String { Base64.encode(subjectPublicKeyInfo) }
    }

    /// Generates a Google Pay merchant key (EC P-256), writes it to the new file `privateKeyFile`
    /// (unencrypted PKCS#8 PEM, mode 0600, never replacing a file or link; what
    /// ``GooglePayMerchantKey/init(privateKeyFile:keyPassword:)`` and `--google-merchant-key` read), and returns its
    /// public key.
    /// - Throws: ``ConfigurationError`` with ``ConfigurationError/Code/unreadableInput`` when the file
    ///   cannot be created.
    public static func makeGooglePayKey(privateKeyFile: String) throws(ConfigurationError) -> GooglePayPublicKey {
        let key = EVPKey.generateEC(curve: "P-256")
        guard let point = key.uncompressedP256Point, let spki = key.subjectPublicKeyInfoDER() else {
            throw ConfigurationError(.unreadableKey, "cannot encode the generated public key")
        }
        try createKeyFile(privateKeyFile, key: key)
        return GooglePayPublicKey(uncompressedPoint: point, subjectPublicKeyInfo: spki)
    }

    private static func createKeyFile(_ path: String, key: EVPKey) throws(ConfigurationError) {
        do throws(OpenSSLFailure) {
            try PrivateKeyFile.create(at: path, key: key)
        } catch {
            throw ConfigurationError(.unreadableInput, error.reason)
        }
    }
}

extension MerchantKeyTools.CertificateRequest {
    init(_ request: CertificateSigningRequest) {
        self.init(
            pem: request.pem, der: request.der, subject: request.subjectLine,
            subjectPublicKeyInfo: request.subjectPublicKeyInfo)
    }
}
