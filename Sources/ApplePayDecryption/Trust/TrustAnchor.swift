// The pinned trust anchor (Apple Root CA - G3, checked by fingerprint when loaded) and the
// explicitly named way to replace it in tests.
package import ApplePayCrypto
#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// The root a token's certificate chain must lead to.
///
/// In production this is always ``appleRootCAG3``, the default of
/// ``PaymentTokenDecryptor/init(merchants:trustAnchor:signingTimeWindow:)``. Tests that mint their own
/// tokens (see the ApplePayTestSupport module) replace it, by name, with
/// ``insecureTestingOnlyRoot(pem:)-([UInt8])``.
public struct TrustAnchor: Sendable {
    package let root: X509Certificate
    /// True only for the pinned Apple Root CA - G3.
    public let isAppleRootCAG3: Bool

    /// SHA-256 of Apple Root CA - G3's DER encoding.
    public static let appleRootCAG3Fingerprint = "63343abfb89a6a03ebb57e9b3f5fa7be7c4f5c756f3017b3a8c488c3653e9179"

    /// Apple Root CA - G3, embedded in the library and checked against its published fingerprint.
    public static let appleRootCAG3: TrustAnchor = {
        guard let root = X509Certificate.load(Array(appleRootCAG3PEM.utf8)),
            Hex.encode(root.sha256Fingerprint) == appleRootCAG3Fingerprint
        else { fatalError("the embedded Apple Root CA - G3 does not match its pinned fingerprint") }
        return TrustAnchor(root: root, isAppleRootCAG3: true)
    }()

    /// TESTING ONLY: trusts `pem` instead of Apple Root CA - G3. Tokens accepted under this anchor
    /// were NOT proven to come from Apple. Use it for a test PKI, never in an authorization path.
    public static func insecureTestingOnlyRoot(pem: [UInt8]) throws(ConfigurationError) -> TrustAnchor {
        guard let root = X509Certificate.load(pem) else {
            throw ConfigurationError(.unreadableCertificate, "the trust root is not a readable certificate")
        }
        let isApple = Hex.encode(root.sha256Fingerprint) == appleRootCAG3Fingerprint
        return TrustAnchor(root: root, isAppleRootCAG3: isApple)
    }

    /// TESTING ONLY: as ``insecureTestingOnlyRoot(pem:)-([UInt8])``, from any `DataProtocol`.
    public static func insecureTestingOnlyRoot(pem: some DataProtocol) throws(ConfigurationError) -> TrustAnchor {
        let bytes: [UInt8] = Array(pem)
        return try insecureTestingOnlyRoot(pem: bytes)
    }

    /// TESTING ONLY: as ``insecureTestingOnlyRoot(pem:)-([UInt8])``, from a PEM or DER file.
    ///
    /// - Throws: ``ConfigurationError`` naming the file when it cannot be read or holds no certificate.
    public static func insecureTestingOnlyRoot(pemFile: URL) throws(ConfigurationError) -> TrustAnchor {
        let pem = try SecretFile.withContents(of: pemFile, what: "trust root") { (bytes) throws(ConfigurationError) in
            bytes
        }
        do throws(ConfigurationError) {
            return try insecureTestingOnlyRoot(pem: pem)
        } catch {
            throw ConfigurationError(error.code, "the trust root file \(pemFile.path) is not a readable certificate")
        }
    }

    /// Hex SHA-256 fingerprint of the root in use.
    public var fingerprint: String { Hex.encode(root.sha256Fingerprint) }
}

private let appleRootCAG3PEM = """
    -----BEGIN CERTIFICATE-----
    MIICQzCCAcmgAwIBAgIILcX8iNLFS5UwCgYIKoZIzj0EAwMwZzEbMBkGA1UEAwwS
    QXBwbGUgUm9vdCBDQSAtIEczMSYwJAYDVQQLDB1BcHBsZSBDZXJ0aWZpY2F0aW9u
    IEF1dGhvcml0eTETMBEGA1UECgwKQXBwbGUgSW5jLjELMAkGA1UEBhMCVVMwHhcN
    MTQwNDMwMTgxOTA2WhcNMzkwNDMwMTgxOTA2WjBnMRswGQYDVQQDDBJBcHBsZSBS
    b290IENBIC0gRzMxJjAkBgNVBAsMHUFwcGxlIENlcnRpZmljYXRpb24gQXV0aG9y
    aXR5MRMwEQYDVQQKDApBcHBsZSBJbmMuMQswCQYDVQQGEwJVUzB2MBAGByqGSM49
    AgEGBSuBBAAiA2IABJjpLz1AcqTtkyJygRMc3RCV8cWjTnHcFBbZDuWmBSp3ZHtf
    TjjTuxxEtX/1H7YyYl3J6YRbTzBPEVoA/VhYDKX1DyxNB0cTddqXl5dvMVztK517
    IDvYuVTZXpmkOlEKMaNCMEAwHQYDVR0OBBYEFLuw3qFYM4iapIqZ3r6966/ayySr
    MA8GA1UdEwEB/wQFMAMBAf8wDgYDVR0PAQH/BAQDAgEGMAoGCCqGSM49BAMDA2gA
    MGUCMQCD6cHEFl4aXTQY2e3v9GwOAEZLuN+yRhHFD/3meoyhpmvOwgPUnPWTxnS4
    at+qIxUCMG1mihDK1A3UT82NQz60imOlM27jbdoXt2QfyFMm+YhidDkLF1vLUagM
    6BgD56KyKA==
    -----END CERTIFICATE-----
    """
