// A merchant identity whose private key stays in a PKCS#11 token (HSM): the certificate gives the
// public key, publicKeyHash and partyV; the token does ECDH (EC_v1) or RSA-OAEP (RSA_v1).
internal import ApplePayCrypto
#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif
#if canImport(Glibc)
    import Glibc
#endif

extension MerchantIdentity {
    /// A merchant certificate (PEM or DER) and a private key in a PKCS#11 token.
    ///
    /// Loads the module (`module-path`), finds the token and the key, logs in with the PIN from
    /// `pin-source` or `pin-env` (read into a wiped buffer, wiped after login; a refused PIN is not
    /// retried), and checks that the key is P-256 with CKA_DERIVE or RSA ≥ 2048 with CKA_DECRYPT, and
    /// that it belongs to the certificate (one ECDH or OAEP decryption compared with OpenSSL's).
    /// - Parameters:
    ///   - certificate: the merchant (payment processing) certificate, PEM or DER; it gives the public
    ///     key, `publicKeyHash` and partyV.
    ///   - reference: the RFC 7512 PKCS#11 URI naming the private key, with its module and PIN source.
    ///   - merchantIdentifier: when given, partyV is SHA-256 of it instead of the certificate's
    ///     merchant-identifier extension.
    ///   - environment: where `pin-env` is looked up at load (a later re-login after the token forgot
    ///     it reads the process environment).
    /// - Throws: ``ConfigurationError`` with ``ConfigurationError/Code/pkcs11Unusable`` (module, token,
    ///   PIN, object, permission), ``ConfigurationError/Code/keyMismatch``, or the codes of the
    ///   software forms for the certificate.
    public convenience init(
        certificate: [UInt8], pkcs11 reference: PKCS11KeyReference, merchantIdentifier: String? = nil,
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(ConfigurationError) {
        guard let cert = X509Certificate.load(certificate) else {
            throw ConfigurationError(.unreadableCertificate, "the merchant certificate cannot be read")
        }
        let (certificateKey, publicKeyHash, partyV) = try Self.certified(
            by: cert, merchantIdentifier: merchantIdentifier)
        let label = merchantIdentifier ?? cert.subjectLine ?? "merchant certificate"
        // The certificate's key is checked (curve, size, identifier) before the token is touched.
        _ = try MerchantIdentity(
            key: .software(certificateKey), publicKey: certificateKey, publicKeyHash: [], partyV: partyV, label: label)
        let token = try PKCS11PrivateKey.load(
            reference, certificateKey: certificateKey, label: label, environment: environment)
        try self.init(
            key: .pkcs11(token), publicKey: certificateKey, publicKeyHash: publicKeyHash, partyV: partyV,
            label: label,
            certificateNotAfter: Self.notAfter(cert))
    }

    /// The same with the certificate read from a file.
    public convenience init(
        certificateFile: URL, pkcs11 reference: PKCS11KeyReference, merchantIdentifier: String? = nil,
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(ConfigurationError) {
        let certificate = try SecretFile.withContents(of: certificateFile, what: "merchant certificate") {
            (bytes) throws(ConfigurationError) in bytes
        }
        try self.init(
            certificate: certificate, pkcs11: reference, merchantIdentifier: merchantIdentifier,
            environment: environment)
    }

    /// True when the private key is in a PKCS#11 token.
    public var keyIsInToken: Bool { key.token != nil }

    /// True for an RSA key in a PKCS#11 token whose module refused RSA-OAEP with SHA-256 at load
    /// (SoftHSM2 2.6 implements it with SHA-1 only): each RSA_v1 token then takes the raw RSA
    /// operation from the token and decodes OAEP here, so the whole decrypted block, which holds the
    /// 16-byte key, leaves the device rather than the key alone.
    public var rsaOAEPDecodedInProcess: Bool { key.token?.decodesOAEPInProcess ?? false }

    /// A warning when the token's PIN file can be read by a group or other users (as ssh warns about a
    /// private key file): nil when there is no PIN file or only its owner can read it.
    public var pinFileWarning: String? {
        guard let file = key.token?.reference.pinFile else { return nil }
        var info = stat()
        guard stat(file, &info) == 0, info.st_mode & 0o077 != 0 else { return nil }
        return "the PIN file \(file) can be read by other users (mode \(String(info.st_mode & 0o7777, radix: 8))); "
            + "anyone who reads it can use the token's keys: chmod 600 it"
    }

    /// Nil when the key can be used now (always for software keys); otherwise why a token key cannot
    /// (token removed, PIN refused, object gone), for readiness checks. Opens and closes one session.
    public func keyProblem() -> String? {
        key.token?.problem()
    }
}
