// A certificate hierarchy shaped like Apple's (P-384 root, P-256 intermediate and leaf with the
// marker OIDs, merchant certificates with the merchant-identifier extension), for tests and Vectors/.
import ApplePayCrypto
import ApplePayDecryption
import Foundation

/// TESTING ONLY. A private PKI that mimics Apple's. Tokens it signs are accepted only by a decryptor
/// built with `TrustAnchor.insecureTestingOnlyRoot(pem: pki.rootPEM)`.
public final class TestPKI: @unchecked Sendable {
    // Sendable: every stored property is immutable after init.

    /// How the hierarchy is made; the defaults mimic Apple's.
    public struct Options: Sendable {
        /// Give the root Apple Root CA - G3's subject name (a forgery that must still be rejected).
        public var appleNames = true
        /// Put Apple's leaf marker OID (1.2.840.113635.100.6.29) in the signing certificate.
        public var leafMarkerOID = true
        /// Put Apple's intermediate marker OID (1.2.840.113635.100.6.2.14) in the intermediate.
        public var intermediateMarkerOID = true
        /// Validity of the signing (leaf) certificate.
        public var leafValidity: ClosedRange<Date>
        /// Validity of the intermediate certificate.
        public var intermediateValidity: ClosedRange<Date>
        /// Validity of the root certificate.
        public var rootValidity: ClosedRange<Date>
        /// The signing (leaf) certificate's key.
        public var leafKey: KeySpec = .ec(curve: "P-256")
        /// Bytes of padding carried in a private extension of the leaf (certificates of any size).
        public var leafPaddingBytes = 0

        /// Apple-like defaults: validity periods from 2020 on, the leaf's as given.
        public init(leafValidity: ClosedRange<Date>? = nil) {
            let day: TimeInterval = 86_400
            let base = Date(timeIntervalSince1970: 1_577_836_800)  // 2020-01-01
            self.rootValidity = base...base.addingTimeInterval(25 * 365 * day)
            self.intermediateValidity = base.addingTimeInterval(day)...base.addingTimeInterval(15 * 365 * day)
            self.leafValidity =
                leafValidity ?? base.addingTimeInterval(2 * day)...base.addingTimeInterval(10 * 365 * day)
        }
    }

    /// A key to generate.
    public enum KeySpec: Sendable {
        /// An EC key on the named curve (`P-256`, `P-384`…).
        case ec(curve: String)
        /// An RSA key with exponent 65537.
        case rsa(bits: Int)
        /// An RSA key with the given public exponent.
        case rsaWithExponent(bits: Int, exponent: UInt)
    }

    /// A private arc for the factory's padding extension.
    static let paddingOID = "1.3.6.1.4.1.55555.1"

    package let rootKey: EVPKey
    package let root: X509Certificate
    package let intermediateKey: EVPKey
    package let intermediate: X509Certificate
    package let leafKey: EVPKey
    package let leaf: X509Certificate
    /// The options it was made with.
    public let options: Options
    private let serials = SerialCounter()

    /// Generates the keys and certificates (a few milliseconds; RSA leaves take longer).
    public init(options: Options = Options()) {
        self.options = options
        let prefix = options.appleNames ? "" : "Test "
        func name(_ cn: String, ou: String = "Apple Certification Authority") -> [(String, String)] {
            [("CN", cn), ("OU", ou), ("O", options.appleNames ? "Apple Inc." : "Test PKI"), ("C", "US")]
        }
        rootKey = EVPKey.generateEC(curve: "P-384")
        root = CertificateBuilder.make(
            subject: name(prefix + "Apple Root CA - G3"), issuer: nil, subjectKey: rootKey, issuerKey: rootKey,
            serial: 1, validity: options.rootValidity, isCA: true, digest: "SHA384", extensions: [])
        intermediateKey = EVPKey.generateEC(curve: "P-256")
        intermediate = CertificateBuilder.make(
            subject: name(prefix + "Apple Application Integration CA - G3"), issuer: root, subjectKey: intermediateKey,
            issuerKey: rootKey,
            serial: 2, validity: options.intermediateValidity, isCA: true, digest: "SHA384",
            extensions: options.intermediateMarkerOID ? [(OID.appleIntermediateMarker, DER.null)] : [])
        switch options.leafKey {
        case let .ec(curve): leafKey = EVPKey.generateEC(curve: curve)
        case let .rsa(bits): leafKey = EVPKey.generateRSA(bits: bits)
        case let .rsaWithExponent(bits, exponent): leafKey = EVPKey.generateRSA(bits: bits, exponent: exponent)
        }
        var leafExtensions: [(String, [UInt8])] = options.leafMarkerOID ? [(OID.appleLeafMarker, DER.null)] : []
        if options.leafPaddingBytes > 0 {
            leafExtensions.append(
                (Self.paddingOID, DER.octetString([UInt8](repeating: 0x5A, count: options.leafPaddingBytes))))
        }
        leaf = CertificateBuilder.make(
            subject: name(prefix + "ecc-smp-broker-sign_UC4-TEST", ou: "iOS Systems"), issuer: intermediate,
            subjectKey: leafKey,
            issuerKey: intermediateKey, serial: 3, validity: options.leafValidity, isCA: false, digest: "SHA256",
            extensions: leafExtensions)
    }

    /// The root certificate, PEM: pass it to `TrustAnchor.insecureTestingOnlyRoot(pem:)` or `--trust-root`.
    public var rootPEM: String { root.pem }
    /// The intermediate certificate, PEM.
    public var intermediatePEM: String { intermediate.pem }
    /// The signing (leaf) certificate, PEM.
    public var leafPEM: String { leaf.pem }
    /// The certificates' DER, for tests that rearrange a token's certificate set.
    public var leafDER: [UInt8] { leaf.der }
    /// The intermediate certificate, DER.
    public var intermediateDER: [UInt8] { intermediate.der }

    /// A trust anchor for this PKI's root (testing only).
    public var trustAnchor: TrustAnchor {
        // The root was built here, so it always parses.
        try! TrustAnchor.insecureTestingOnlyRoot(pem: Array(rootPEM.utf8))
    }

    /// A merchant with a certificate issued by this PKI.
    /// - Parameters:
    ///   - identifier: the merchant identifier (e.g. `merchant.com.example.shop`).
    ///   - kind: an EC P-256 or an RSA-2048 merchant key.
    ///   - includeIdentifierExtension: false leaves the merchant-identifier extension out.
    ///   - partyV: overrides the 32 bytes written into the 1.2.840.113635.100.6.32 extension
    ///     (normally SHA-256 of the identifier); nil with `includeIdentifierExtension = false` writes none.
    public func makeMerchant(
        identifier: String, kind: MerchantIdentity.KeyKind = .ec, partyV: [UInt8]? = nil,
        includeIdentifierExtension: Bool = true
    ) -> TestMerchant {
        let key = kind == .ec ? EVPKey.generateEC(curve: "P-256") : EVPKey.generateRSA(bits: 2048)
        return makeMerchant(
            identifier: identifier, key: key, partyV: partyV, includeIdentifierExtension: includeIdentifierExtension)
    }

    /// A merchant certificate for a public key whose private half is elsewhere (generated inside a
    /// PKCS#11 token): `publicKeyDER` is its SubjectPublicKeyInfo. The merchant's `identity()` and
    /// private-key exports are unavailable; tokens are minted to it as usual.
    public func makeMerchant(identifier: String, publicKeyDER: [UInt8]) -> TestMerchant {
        guard let key = EVPKey.publicKey(fromDER: publicKeyDER) else { fatalError("not a SubjectPublicKeyInfo") }
        return makeMerchant(identifier: identifier, key: key, partyV: nil, includeIdentifierExtension: true)
    }

    private func makeMerchant(identifier: String, key: EVPKey, partyV: [UInt8]?, includeIdentifierExtension: Bool)
        -> TestMerchant
    {
        let hash = partyV ?? MerchantIdentity.merchantIdentifierHash(identifier)
        var extensions: [(String, [UInt8])] = []
        if includeIdentifierExtension {
            extensions.append((OID.merchantIdentifier, DER.tlv(0x0C, Array(Hex.encode(hash).uppercased().utf8))))
        }
        let validity = options.rootValidity.lowerBound...options.rootValidity.upperBound
        let cert = CertificateBuilder.make(
            subject: [("UID", identifier), ("CN", "Merchant ID: \(identifier)"), ("O", "Test Merchant"), ("C", "US")],
            issuer: intermediate, subjectKey: key, issuerKey: intermediateKey, serial: serials.next(),
            validity: validity,
            isCA: false, digest: "SHA256", extensions: extensions)
        return TestMerchant(identifier: identifier, key: key, certificate: cert, partyV: hash)
    }
}

/// A merchant of a `TestPKI`: its key, certificate and exports in every format the engine loads.
public final class TestMerchant: @unchecked Sendable {
    // Sendable: immutable after init.
    /// The merchant identifier.
    public let identifier: String
    package let key: EVPKey
    package let certificate: X509Certificate
    package let partyV: [UInt8]

    init(identifier: String, key: EVPKey, certificate: X509Certificate, partyV: [UInt8]) {
        self.identifier = identifier
        self.key = key
        self.certificate = certificate
        self.partyV = partyV
    }

    /// EC P-256 or RSA.
    public var kind: MerchantIdentity.KeyKind { key.kind == .rsa ? .rsa : .ec }
    /// The merchant certificate, PEM.
    public var certificatePEM: String { certificate.pem }
    /// The merchant certificate, DER.
    public var certificateDER: [UInt8] { certificate.der }
    /// Unencrypted PKCS#8 PEM.
    public var privateKeyPEM: String { key.privateKeyPEM() ?? "" }

    /// SEC1 ("EC PRIVATE KEY") PEM, EC keys only.
    public var sec1PrivateKeyPEM: String { key.traditionalPrivateKeyPEM() ?? "" }

    /// The private key as DER (SEC1 for EC keys, PKCS#1 for RSA).
    public var privateKeyDER: [UInt8] { key.privateKeyDER() ?? [] }

    /// A PKCS#12 file. `legacy` uses RC2-40 and 3DES (as old Keychain exports do), which need
    /// OpenSSL's legacy provider to read.
    public func pkcs12(password: String, legacy: Bool = false) -> [UInt8] {
        PKCS12.create(key: key, certificate: certificate, password: password, friendlyName: "merchant", legacy: legacy)
    }

    /// The identity the decryptor loads for this merchant (certificate + key; the identifier too
    /// when the certificate has no merchant-identifier extension).
    public func identity() -> MerchantIdentity {
        // Both halves were generated together, so loading cannot fail.
        let needsIdentifier = !certificate.hasExtension(oid: OID.merchantIdentifier)
        return try! MerchantIdentity(
            certificate: certificate.der, privateKey: privateKeyDER,
            merchantIdentifier: needsIdentifier ? identifier : nil)
    }
}

final class SerialCounter: @unchecked Sendable {
    private let lock = NSLock()
    private var value = 100
    func next() -> Int { lock.lock(); defer { lock.unlock() }; value += 1; return value }
}
