// Mints EC_v1 and RSA_v1 tokens signed by a TestPKI, with control over every field, for tests,
// Vectors/ and the benchmark.
import ApplePayCrypto
import ApplePayDecryption
import Foundation

/// TESTING ONLY. Seals payment data the way Apple does and signs it with a `TestPKI`.
public struct TestTokenFactory: Sendable {
    /// The PKI whose leaf signs.
    public let pki: TestPKI

    /// A factory signing with `pki`.
    public init(pki: TestPKI) { self.pki = pki }

    /// Everything a test may want to control or break.
    public struct Options: Sendable {
        /// The CMS signing time.
        public var signingTime: Date
        /// Hex; random 32 bytes when nil.
        public var transactionId: String?
        /// Hex SHA-256 of the merchant's applicationData; covered by the signature when present.
        public var applicationData: String?
        /// When false, the signed attributes carry no signing time.
        public var includeSigningTime = true
        /// Flip a bit of the GCM tag before signing: the signature is valid, decryption must fail.
        public var corruptTagBeforeSigning = false
        /// Retry the ephemeral key until the ECDH shared secret starts with a zero byte (EC_v1).
        public var requireLeadingZeroSharedSecret = false
        /// Sign an ephemeral public key whose point is not on P-256 (EC_v1): the token verifies, but key
        /// agreement must refuse the point.
        public var ephemeralPointOffCurve = false
        /// Encode the SHA-256 AlgorithmIdentifier with NULL parameters (tokens up to 2021).
        public var digestAlgorithmWithNullParameters = false
        /// SignedData and SignerInfo `version` (Apple: 1 and 1).
        public var signedDataVersion = 1
        /// SignerInfo `version` (Apple: 1).
        public var signerInfoVersion = 1
        /// When false, `digestAlgorithms` lists SHA-384 instead of SHA-256.
        public var digestAlgorithmsListSHA256 = true
        /// When false, the signed attributes carry no `contentType`.
        public var includeContentType = true
        /// How the signing time is encoded.
        public var signingTimeEncoding: SigningTimeEncoding = .rfc5280
        /// DER elements added to the certificate set, after the leaf and intermediate (or before them).
        public var extraCertificates: [[UInt8]] = []
        /// Put `extraCertificates` before the leaf and intermediate.
        public var extraCertificatesFirst = false
        /// The SignerInfo's signatureAlgorithm; nil names the one that matches the leaf's key.
        public var signatureAlgorithm: CMSSignatureAlgorithm? = nil
        /// Replace the ECDSA signature (r, s) over the signed attributes by (r, n−s), which also verifies.
        public var malleateSignature = false

        /// A well-formed token signed at `signingTime`; every other option at Apple's value.
        public init(signingTime: Date, transactionId: String? = nil, applicationData: String? = nil) {
            self.signingTime = signingTime
            self.transactionId = transactionId
            self.applicationData = applicationData
        }
    }

    /// How the signingTime attribute is encoded.
    public enum SigningTimeEncoding: Sendable {
        /// UTCTime for 1950–2049, GeneralizedTime otherwise (what RFC 5280 and Apple do).
        case rfc5280
        /// Always GeneralizedTime, whatever the year.
        case generalizedTime
        /// This tag (0x17 UTCTime, 0x18 GeneralizedTime) and text exactly, e.g. an impossible date.
        case literal(tag: UInt8, text: String)
    }

    /// A SignerInfo `signatureAlgorithm` OID: the two ECDSA and the two RSA names a CMS signature may carry.
    public enum CMSSignatureAlgorithm: Sendable {
        /// 1.2.840.10045.4.3.2.
        case ecdsaWithSHA256
        /// 1.2.840.10045.2.1 (the key type's OID).
        case ecPublicKey
        /// 1.2.840.113549.1.1.11.
        case sha256WithRSA
        /// 1.2.840.113549.1.1.1.
        case rsaEncryption
    }

    /// The minted token and facts about how it was made.
    public struct Minted: Sendable {
        /// The bare `paymentData` JSON (compact).
        public let paymentData: JSONValue
        /// `header.transactionId`, hex.
        public let transactionId: String
        /// True when the EC shared secret began with a zero byte (EC_v1).
        public let sharedSecretHasLeadingZero: Bool
        /// The bare `paymentData` JSON as bytes.
        public var bytes: [UInt8] { Array(paymentData.description.utf8) }
    }

    /// Seals `payload` (the plaintext JSON) for `merchant` and signs it.
    public func mint(payload: [UInt8], for merchant: TestMerchant, options: Options) -> Minted {
        let transactionId = options.transactionId ?? Hex.encode(Self.randomBytes(32))
        var header: [(String, JSONValue)] = []
        var keyMaterial: [UInt8]
        var sealed: [UInt8]
        var leadingZero = false
        let publicKeyHash = SHA256.hash(merchant.certificate.publicKey()?.subjectPublicKeyInfoDER() ?? [])

        switch merchant.kind {
        case .ec:
            guard let merchantPublic = merchant.certificate.publicKey() else {
                fatalError("merchant certificate has no key")
            }
            var ephemeral: EVPKey
            let shared = SensitiveBytes(capacity: 32)
            repeat {
                ephemeral = EVPKey.generateEC(curve: "P-256")
                guard let ctx = PKeyContext.deriver(ephemeral),
                    shared.write({ ctx.derive(peer: merchantPublic, into: $0) == 32 ? 32 : nil })
                else { fatalError("ECDH failed") }
                leadingZero = shared.withUnsafeBytes { $0[0] } == 0
            } while options.requireLeadingZeroSharedSecret && !leadingZero
            let key = AppleKDF.derive(sharedSecret: shared, partyV: merchant.partyV, digest: DigestContext())
            sealed = key.withUnsafeBytes { CipherContext().seal(key: $0, plaintext: payload) }
            keyMaterial = ephemeral.subjectPublicKeyInfoDER() ?? []
            if options.ephemeralPointOffCurve { keyMaterial[keyMaterial.count - 1] ^= 0x01 }
            header.append(("ephemeralPublicKey", .string(Base64.encode(keyMaterial))))
        case .rsa:
            let key = SensitiveBytes(capacity: 16)
            key.write { out in
                SecureRandom.fill(out)
                return 16
            }
            sealed = key.withUnsafeBytes { CipherContext().seal(key: $0, plaintext: payload) }
            keyMaterial = Self.rsaOAEPEncrypt(key, to: merchant.key)
            header.append(("wrappedKey", .string(Base64.encode(keyMaterial))))
        }
        if options.corruptTagBeforeSigning { sealed[sealed.count - 1] ^= 0x01 }
        header.append(("publicKeyHash", .string(Base64.encode(publicKeyHash))))
        header.append(("transactionId", .string(transactionId)))
        if let applicationData = options.applicationData {
            header.append(("applicationData", .string(applicationData)))
        }

        let hasher = DigestContext()
        hasher.update(keyMaterial)
        hasher.update(sealed)
        hasher.update(Hex.decode(transactionId) ?? [])
        if let applicationData = options.applicationData { hasher.update(Hex.decode(applicationData) ?? []) }
        let signature = signedData(messageDigest: hasher.finish(), options: options)

        let paymentData = JSONValue.object([
            ("version", .string(merchant.kind == .ec ? "EC_v1" : "RSA_v1")),
            ("data", .string(Base64.encode(sealed))),
            ("signature", .string(Base64.encode(signature))),
            ("header", .object(header)),
        ])
        return Minted(paymentData: paymentData, transactionId: transactionId, sharedSecretHasLeadingZero: leadingZero)
    }

    /// Detached CMS SignedData in Apple's shape: BER indefinite lengths, leaf before intermediate.
    func signedData(messageDigest: [UInt8], options: Options) -> [UInt8] {
        let sha256 = DER.sequence(
            options.digestAlgorithmWithNullParameters ? [DER.oid(OID.sha256), DER.null] : [DER.oid(OID.sha256)])
        var attributes: [[UInt8]] = []
        if options.includeContentType {
            attributes.append(DER.sequence([DER.oid(OID.contentType), DER.set([DER.oid(OID.data)])]))
        }
        if options.includeSigningTime {
            let seconds = Int64(options.signingTime.timeIntervalSince1970.rounded(.down))
            let time: [UInt8]
            switch options.signingTimeEncoding {
            case .rfc5280: time = DER.time(unixSeconds: seconds)
            case .generalizedTime: time = DER.generalizedTime(unixSeconds: seconds)
            case let .literal(tag, text): time = DER.tlv(tag, Array(text.utf8))
            }
            attributes.append(DER.sequence([DER.oid(OID.signingTime), DER.set([time])]))
        }
        attributes.append(DER.sequence([DER.oid(OID.messageDigest), DER.set([DER.octetString(messageDigest)])]))
        let attributesSet = DER.set(attributes)
        var signature = pki.leafKey.signSHA256(attributesSet)
        if options.malleateSignature { signature = Self.negateS(signature) }
        guard let (issuer, serial) = CertificateFields.issuerAndSerial(pki.leaf.der) else {
            fatalError("leaf certificate unreadable")
        }
        var signedAttributes = attributesSet
        signedAttributes[0] = 0xA0  // [0] IMPLICIT
        let algorithm: [UInt8]
        switch options.signatureAlgorithm ?? (pki.leafKey.kind == .rsa ? .sha256WithRSA : .ecdsaWithSHA256) {
        case .ecdsaWithSHA256: algorithm = DER.sequence([DER.oid(OID.ecdsaWithSHA256)])
        case .ecPublicKey: algorithm = DER.sequence([DER.oid(OID.ecPublicKey)])
        case .sha256WithRSA: algorithm = DER.sequence([DER.oid(OID.sha256WithRSA), DER.null])
        case .rsaEncryption: algorithm = DER.sequence([DER.oid(OID.rsaEncryption), DER.null])
        }
        let signerInfo = DER.sequence([
            DER.integer(options.signerInfoVersion),
            DER.sequence([issuer, DER.tlv(0x02, serial)]),
            sha256,
            signedAttributes,
            algorithm,
            DER.octetString(signature),
        ])
        let listed = options.digestAlgorithmsListSHA256 ? sha256 : DER.sequence([DER.oid(OID.sha384)])
        let extras = options.extraCertificates.flatMap { $0 }
        let chain = pki.leaf.der + pki.intermediate.der
        let signedData = DER.indefinite(
            0x30,
            DER.integer(options.signedDataVersion)
                + DER.set([listed])
                + DER.indefinite(0x30, DER.oid(OID.data))
                + DER.indefinite(0xA0, options.extraCertificatesFirst ? extras + chain : chain + extras)
                + DER.set([signerInfo]))
        return DER.indefinite(0x30, DER.oid(OID.signedData) + DER.indefinite(0xA0, signedData))
    }

    /// P-256's group order n.
    private static let p256Order: [UInt8] = Hex.decode(
        "ffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551")!

    /// DER ECDSA-Sig-Value (r, s) → (r, n−s): the other signature that verifies for the same message.
    static func negateS(_ der: [UInt8]) -> [UInt8] {
        func integers(_ bytes: [UInt8]) -> [[UInt8]] {
            var result: [[UInt8]] = []
            var i = 2  // a P-256 signature is shorter than 128 bytes: one length byte
            while i < bytes.count {
                let length = Int(bytes[i + 1])
                result.append(Array(bytes[(i + 2)..<(i + 2 + length)]))
                i += 2 + length
            }
            return result
        }
        let parts = integers(der)
        let s = [UInt8](repeating: 0, count: 32 - parts[1].drop { $0 == 0 }.count) + parts[1].drop { $0 == 0 }
        var difference = [UInt8](repeating: 0, count: 32)
        var borrow = 0
        for i in stride(from: 31, through: 0, by: -1) {
            var v = Int(p256Order[i]) - Int(s[i]) - borrow
            borrow = v < 0 ? 1 : 0
            if v < 0 { v += 256 }
            difference[i] = UInt8(v)
        }
        var minimal = Array(difference.drop { $0 == 0 })
        if minimal.first.map({ $0 & 0x80 != 0 }) ?? true { minimal.insert(0, at: 0) }
        return DER.sequence([DER.tlv(0x02, parts[0]), DER.tlv(0x02, minimal)])
    }

    static func rsaOAEPEncrypt(_ key: SensitiveBytes, to recipient: EVPKey) -> [UInt8] {
        guard let ctx = PKeyContext.oaepEncrypter(recipient), let wrapped = key.withUnsafeBytes({ ctx.encrypt($0) })
        else {
            preconditionFailure("RSA-OAEP wrap failed")
        }
        return wrapped
    }

    static func randomBytes(_ count: Int) -> [UInt8] { SecureRandom.bytes(count) }
}

/// The wrappings tokens arrive in.
public enum TokenWrapping: String, Sendable, CaseIterable {
    /// The `paymentData` object itself.
    case bare
    /// A whole PKPaymentToken: paymentData, paymentMethod, transactionIdentifier.
    case pkPaymentToken
    /// `{"paymentData": …}` only.
    case paymentDataOnly
    /// Apple Pay JS: `{"token": {paymentData, paymentMethod, transactionIdentifier}}`.
    case applePayJS
    /// The paymentData JSON base64-encoded, as one string (what some gateways ask for).
    case base64String

    /// The token in this wrapping; `network` and `cardType` fill the wrappers' `paymentMethod`
    /// (nil leaves the member out).
    public func wrap(
        _ paymentData: JSONValue, transactionId: String, network: String? = "Visa", cardType: String? = "debit"
    ) -> [UInt8] {
        var methodMembers: [(String, JSONValue)] = [("displayName", .string("\(network ?? "Card") 0492"))]
        if let network { methodMembers.append(("network", .string(network))) }
        if let cardType { methodMembers.append(("type", .string(cardType))) }
        let method = JSONValue.object(methodMembers)
        let pkToken = JSONValue.object([
            ("paymentData", paymentData), ("paymentMethod", method),
            ("transactionIdentifier", .string(transactionId.uppercased())),
        ])
        switch self {
        case .bare: return Array(paymentData.description.utf8)
        case .pkPaymentToken: return Array(pkToken.description.utf8)
        case .paymentDataOnly: return Array(JSONValue.object([("paymentData", paymentData)]).description.utf8)
        case .applePayJS: return Array(JSONValue.object([("token", pkToken)]).description.utf8)
        case .base64String: return Array(Base64.encode(Array(paymentData.description.utf8)).utf8)
        }
    }
}

/// Plaintext payment data in Apple's format, for minting tokens.
public enum TestPayload {
    /// A 3-D Secure payload with these values.
    public static func threeDSecure(
        pan: String = "4761120010000492", expiry: String = "291231", currency: String = "840",
        amount: Int = 1000, cryptogram: String = "AgAAAAAABk4DWZ4C28yUQAAAAAA=", eci: String? = "7",
        cardholderName: String? = nil, extra: [(String, JSONValue)] = []
    ) -> [UInt8] {
        var details: [(String, JSONValue)] = [("onlinePaymentCryptogram", .string(cryptogram))]
        if let eci { details.append(("eciIndicator", .string(eci))) }
        return payload(
            pan: pan, expiry: expiry, currency: currency, amount: amount, cardholderName: cardholderName,
            type: "3DSecure", details: details, extra: extra)
    }

    /// An EMV payload with these values.
    public static func emv(
        pan: String = "5204240250197840", expiry: String = "300131", currency: String = "978", amount: Int = 2599,
        emvData: String = "nyYIY2hpcHBlZA==", encryptedPINData: String? = "b2ZmbGluZQ==",
        extra: [(String, JSONValue)] = []
    ) -> [UInt8] {
        var details: [(String, JSONValue)] = [("emvData", .string(emvData))]
        if let encryptedPINData { details.append(("encryptedPINData", .string(encryptedPINData))) }
        return payload(
            pan: pan, expiry: expiry, currency: currency, amount: amount, cardholderName: nil, type: "EMV",
            details: details, extra: extra)
    }

    /// A payload with any `paymentDataType` (nil leaves it out) and a 3-D Secure-shaped `paymentData`.
    public static func withPaymentDataType(_ type: String?, currency: String = "840", amount: Int = 1000) -> [UInt8] {
        var members: [(String, JSONValue)] = [
            ("applicationPrimaryAccountNumber", .string("4761120010000492")),
            ("applicationExpirationDate", .string("291231")),
            ("currencyCode", .string(currency)),
            ("transactionAmount", .number(String(amount))),
            ("deviceManufacturerIdentifier", .string("040010030273")),
        ]
        if let type { members.append(("paymentDataType", .string(type))) }
        members.append(("paymentData", .object([("onlinePaymentCryptogram", .string("AgAAAAAABk4DWZ4C28yUQAAAAAA="))])))
        return Array(JSONValue.object(members).description.utf8)
    }

    /// Fields newer tokens carry for merchant tokens (MPAN).
    public static let merchantTokenFields: [(String, JSONValue)] = [
        ("merchantTokenIdentifier", .string("DNITHE302308980427388297")),
        (
            "merchantTokenMetadata",
            .object([
                ("cardArtImageURL", .string("https://example.invalid/art.png")),
                ("merchantTokenSource", .string("recurring")),
            ])
        ),
        (
            "authenticationResponses",
            .array([
                .object([
                    ("authenticationDataType", .string("3DSecure")),
                    ("authenticationData", .string("AOW0aBDqIJYsAAHsI8qMAoABFA==")),
                    ("transactionAmount", .number("1000")),
                ])
            ])
        ),
    ]

    static func payload(
        pan: String, expiry: String, currency: String, amount: Int, cardholderName: String?, type: String,
        details: [(String, JSONValue)], extra: [(String, JSONValue)]
    ) -> [UInt8] {
        var members: [(String, JSONValue)] = [
            ("applicationPrimaryAccountNumber", .string(pan)),
            ("applicationExpirationDate", .string(expiry)),
            ("currencyCode", .string(currency)),
            ("transactionAmount", .number(String(amount))),
        ]
        if let cardholderName { members.append(("cardholderName", .string(cardholderName))) }
        members.append(("deviceManufacturerIdentifier", .string("040010030273")))
        members.append(("paymentDataType", .string(type)))
        members.append(("paymentData", .object(details)))
        members += extra
        return Array(JSONValue.object(members).description.utf8)
    }
}
