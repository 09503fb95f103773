// Reads the detached CMS SignedData of a token (RFC 5652) in place: offsets of the certificates,
// the one signer's identifier, signed attributes, signature, signing time and message digest. One
// function per ASN.1 production, each with its module text, over named tags.
internal import ApplePayCrypto

/// The universal and context tags the productions below use (X.690 identifier octets).
enum ASN1Tag {
    static let integer: UInt8 = 0x02
    static let octetString: UInt8 = 0x04
    static let null: UInt8 = 0x05
    static let objectIdentifier: UInt8 = 0x06
    static let sequence: UInt8 = 0x30
    static let set: UInt8 = 0x31
    /// `[0]` and `[1]`, constructed (certificates, crls, content, signedAttrs, unsignedAttrs).
    static let context0: UInt8 = 0xA0
    static let context1: UInt8 = 0xA1
}

package struct CMSSignedData {
    /// The content of `certificates [0]`: the certificates back to back, in token order.
    let certificates: Range<Int>
    /// The signer identifier (IssuerAndSerialNumber) as encoded, and its two parts' ranges.
    let signerIdentifier: Range<Int>
    let signerIssuer: Range<Int>
    let signerSerial: Range<Int>
    /// The `[0] IMPLICIT` signed attributes as encoded. The signature covers the same bytes with the
    /// first (tag) byte replaced by 0x31, the DER SET OF tag (RFC 5652 §5.4).
    let signedAttributes: Range<Int>
    let signature: Range<Int>
    let signatureAlgorithm: SignatureAlgorithm
    /// Unix seconds; nil when the attribute is absent.
    let signingTime: Int64?
    let messageDigest: Range<Int>

    /// Parses the structure; every failure is an `invalidSignature` naming the CMS field at fault.
    static func parse(_ bytes: UnsafeRawBufferPointer) throws(ApplePayError) -> CMSSignedData {
        do {
            return try parse(BERReader(bytes: bytes))
        } catch {
            throw ApplePayError(
                .invalidSignature, "the signature is not an acceptable CMS SignedData: \(error.message)",
                field: "signature",
                reason: "at byte \(error.offset)")
        }
    }

    private static func parse(_ r: BERReader) throws(BERError) -> CMSSignedData {
        let signedData = try contentInfo(r)
        let (certificates, signerInfoElement) = try Self.signedData(r, signedData)
        let signer = try signerInfo(r, signerInfoElement)
        let attributes = try signedAttributes(r, signer.attributes)
        return CMSSignedData(
            certificates: certificates, signerIdentifier: signer.sid.encodedRange,
            signerIssuer: signer.issuer.encodedRange,
            signerSerial: signer.serial.contentRange, signedAttributes: signer.attributes.encodedRange,
            signature: signer.signature.contentRange,
            signatureAlgorithm: signer.algorithm, signingTime: attributes.signingTime,
            messageDigest: attributes.messageDigest)
    }

    // MARK: the productions, outermost first

    /// ```
    /// ContentInfo ::= SEQUENCE {
    ///   contentType ContentType,                      -- id-signedData
    ///   content [0] EXPLICIT ANY DEFINED BY contentType }
    /// ```
    /// Returns the SignedData inside.
    private static func contentInfo(_ r: BERReader) throws(BERError) -> BERElement {
        let contentInfo = try r.root()
        guard contentInfo.tag == ASN1Tag.sequence else { throw BERError(offset: 0, message: "not a SEQUENCE") }
        var ci = try r.children(of: contentInfo)
        let type = try ci.expect(ASN1Tag.objectIdentifier, "contentType")
        guard r.content(type, equals: OID.signedData) else {
            throw BERError(offset: type.start, message: "not SignedData")
        }
        var wrapped = try r.children(of: try ci.expect(ASN1Tag.context0, "[0] content"))
        return try wrapped.expect(ASN1Tag.sequence, "SignedData")
    }

    /// ```
    /// SignedData ::= SEQUENCE {
    ///   version CMSVersion,
    ///   digestAlgorithms DigestAlgorithmIdentifiers,  -- SET OF, must list SHA-256
    ///   encapContentInfo EncapsulatedContentInfo,     -- id-data, detached (no eContent)
    ///   certificates [0] IMPLICIT CertificateSet OPTIONAL,
    ///   crls [1] IMPLICIT RevocationInfoChoices OPTIONAL,
    ///   signerInfos SignerInfos }                     -- SET OF, exactly one
    /// ```
    /// Returns the certificates' content range (empty when absent) and the one SignerInfo.
    private static func signedData(_ r: BERReader, _ signedData: BERElement) throws(BERError) -> (
        certificates: Range<Int>, signerInfo: BERElement
    ) {
        var sd = try r.children(of: signedData)
        // RFC 5652 §5.1: 1 when every SignerInfo is version 1, the content is id-data and the
        // certificates are plain X.509 — all of which the rest of this parse requires.
        let version = try sd.expect(ASN1Tag.integer, "SignedData version")
        guard isInteger(r, version, 1) else {
            throw BERError(offset: version.start, message: "SignedData version is not 1")
        }
        let digestAlgorithms = try sd.expect(ASN1Tag.set, "digestAlgorithms")
        var listedSHA256 = false
        var algorithms = try r.children(of: digestAlgorithms)
        while !listedSHA256, let algorithm = try algorithms.next() {
            listedSHA256 = try isAlgorithm(r, algorithm, OID.sha256)
        }
        guard listedSHA256 else {
            throw BERError(offset: digestAlgorithms.start, message: "digestAlgorithms does not list SHA-256")
        }
        try encapsulatedContentInfo(r, try sd.expect(ASN1Tag.sequence, "encapContentInfo"))

        guard var element = try sd.next() else { throw BERError(offset: signedData.end, message: "no signerInfos") }
        var certificates = element.contentStart..<element.contentStart
        if element.tag == ASN1Tag.context0 {
            certificates = element.contentRange
            guard let next = try sd.next() else { throw BERError(offset: element.end, message: "no signerInfos") }
            element = next
        }
        if element.tag == ASN1Tag.context1 {  // CRLs: not used by Apple, ignored
            guard let next = try sd.next() else { throw BERError(offset: element.end, message: "no signerInfos") }
            element = next
        }
        guard element.tag == ASN1Tag.set else { throw BERError(offset: element.start, message: "expected signerInfos") }
        guard try sd.next() == nil else { throw BERError(offset: element.end, message: "data after signerInfos") }
        var signers = try r.children(of: element)
        let signerInfo = try signers.expect(ASN1Tag.sequence, "SignerInfo")
        guard try signers.next() == nil else { throw BERError(offset: signerInfo.end, message: "more than one signer") }
        return (certificates, signerInfo)
    }

    /// ```
    /// EncapsulatedContentInfo ::= SEQUENCE {
    ///   eContentType ContentType,                     -- id-data
    ///   eContent [0] EXPLICIT OCTET STRING OPTIONAL } -- absent: the signature is detached
    /// ```
    private static func encapsulatedContentInfo(_ r: BERReader, _ e: BERElement) throws(BERError) {
        var encap = try r.children(of: e)
        let eType = try encap.expect(ASN1Tag.objectIdentifier, "eContentType")
        guard r.content(eType, equals: OID.data) else {
            throw BERError(offset: eType.start, message: "signed content is not id-data")
        }
        guard try encap.next() == nil else {
            throw BERError(offset: eType.end, message: "the signature must be detached")
        }
    }

    /// The parts of the one SignerInfo this engine reads.
    private struct SignerInfoParts {
        var sid: BERElement
        var issuer: BERElement
        var serial: BERElement
        var attributes: BERElement
        var algorithm: SignatureAlgorithm
        var signature: BERElement
    }

    /// ```
    /// SignerInfo ::= SEQUENCE {
    ///   version CMSVersion,                           -- 1: sid is issuerAndSerialNumber
    ///   sid SignerIdentifier,
    ///   digestAlgorithm DigestAlgorithmIdentifier,    -- SHA-256
    ///   signedAttrs [0] IMPLICIT SignedAttributes,    -- required here, DER
    ///   signatureAlgorithm SignatureAlgorithmIdentifier,
    ///   signature SignatureValue,                     -- OCTET STRING
    ///   unsignedAttrs [1] IMPLICIT UnsignedAttributes OPTIONAL }
    /// IssuerAndSerialNumber ::= SEQUENCE { issuer Name, serialNumber CertificateSerialNumber }
    /// ```
    private static func signerInfo(_ r: BERReader, _ signerInfo: BERElement) throws(BERError) -> SignerInfoParts {
        var si = try r.children(of: signerInfo)
        let signerVersion = try si.expect(ASN1Tag.integer, "SignerInfo version")
        // Version 1 goes with issuerAndSerialNumber, the only signer identifier Apple uses (RFC 5652 §5.3).
        guard isInteger(r, signerVersion, 1) else {
            throw BERError(offset: signerVersion.start, message: "SignerInfo version is not 1")
        }
        let sid = try si.expect(ASN1Tag.sequence, "issuerAndSerialNumber")
        var sidParts = try r.children(of: sid)
        let issuer = try sidParts.expect(ASN1Tag.sequence, "issuer")
        let serial = try sidParts.expect(ASN1Tag.integer, "serialNumber")
        guard try sidParts.next() == nil else {
            throw BERError(offset: serial.end, message: "issuerAndSerialNumber has trailing fields")
        }
        let digestAlgorithm = try si.expect(ASN1Tag.sequence, "digestAlgorithm")
        // SHA-256 is the only digest; digestAlgorithms was checked to list it, so the signer's is listed.
        guard try isAlgorithm(r, digestAlgorithm, OID.sha256) else {
            throw BERError(offset: digestAlgorithm.start, message: "digestAlgorithm is not SHA-256")
        }
        let attributes = try si.expect(ASN1Tag.context0, "signed attributes")
        guard !attributes.isIndefinite else {
            throw BERError(offset: attributes.start, message: "signed attributes not DER")
        }
        let algorithm = try signatureAlgorithm(r, try si.expect(ASN1Tag.sequence, "signatureAlgorithm"))
        let signature = try si.expect(ASN1Tag.octetString, "signature OCTET STRING")
        if let unsigned = try si.next() {
            guard unsigned.tag == ASN1Tag.context1, try si.next() == nil else {
                throw BERError(offset: unsigned.start, message: "data after the signature")
            }
        }
        return SignerInfoParts(
            sid: sid, issuer: issuer, serial: serial, attributes: attributes, algorithm: algorithm, signature: signature
        )
    }

    /// ```
    /// SignedAttributes ::= SET SIZE (1..MAX) OF Attribute
    /// Attribute ::= SEQUENCE { attrType OBJECT IDENTIFIER, attrValues SET OF AttributeValue }
    /// ```
    /// contentType (id-data) and messageDigest are required (RFC 5652 §5.3), signingTime optional
    /// here (its absence is refused later, with its own message); each at most once, with one value.
    private static func signedAttributes(_ r: BERReader, _ attributes: BERElement) throws(BERError) -> (
        signingTime: Int64?, messageDigest: Range<Int>
    ) {
        var signingTime: Int64? = nil
        var messageDigest: Range<Int>? = nil
        var sawContentType = false
        var list = try r.children(of: attributes)
        while let attribute = try list.next() {
            guard attribute.tag == ASN1Tag.sequence else {
                throw BERError(offset: attribute.start, message: "malformed attribute")
            }
            var parts = try r.children(of: attribute)
            let attributeType = try parts.expect(ASN1Tag.objectIdentifier, "attribute type")
            var values = try r.children(of: try parts.expect(ASN1Tag.set, "attribute values"))
            let value = try values.next()
            guard let value, try values.next() == nil else {
                throw BERError(offset: attribute.start, message: "attribute must have one value")
            }
            if r.content(attributeType, equals: OID.contentType) {
                guard !sawContentType, value.tag == ASN1Tag.objectIdentifier, r.content(value, equals: OID.data) else {
                    throw BERError(offset: value.start, message: "contentType attribute is not id-data")
                }
                sawContentType = true
            } else if r.content(attributeType, equals: OID.messageDigest) {
                guard messageDigest == nil, value.tag == ASN1Tag.octetString else {
                    throw BERError(offset: value.start, message: "bad messageDigest attribute")
                }
                messageDigest = value.contentRange
            } else if r.content(attributeType, equals: OID.signingTime) {
                guard signingTime == nil, let t = ASN1Time.unixSeconds(tag: value.tag, r.content(value)) else {
                    throw BERError(
                        offset: value.start,
                        message: "signingTime is not a real instant as UTCTime (1950–2049) or GeneralizedTime (2050 on)"
                    )
                }
                signingTime = t
            }
        }
        guard sawContentType else {
            throw BERError(offset: attributes.start, message: "the signed attributes lack contentType")
        }
        guard let messageDigest else {
            throw BERError(offset: attributes.start, message: "the signed attributes lack messageDigest")
        }
        return (signingTime, messageDigest)
    }

    // MARK: small productions

    /// Whether an INTEGER's content is exactly the small value `v`.
    private static func isInteger(_ r: BERReader, _ e: BERElement, _ v: UInt8) -> Bool {
        e.contentEnd - e.contentStart == 1 && r.bytes[e.contentStart] == v
    }

    /// ```
    /// AlgorithmIdentifier ::= SEQUENCE { algorithm OBJECT IDENTIFIER, parameters ANY OPTIONAL }
    /// ```
    /// Whether it names `oid` with parameters absent or NULL (both are seen for SHA-256 in real
    /// tokens: NULL up to 2021, absent since late 2022).
    private static func isAlgorithm(_ r: BERReader, _ e: BERElement, _ oid: [UInt8]) throws(BERError) -> Bool {
        guard e.tag == ASN1Tag.sequence else { return false }
        var parts = try r.children(of: e)
        guard let id = try parts.next(), id.tag == ASN1Tag.objectIdentifier, r.content(id, equals: oid) else {
            return false
        }
        if let parameters = try parts.next() {
            guard parameters.tag == ASN1Tag.null, parameters.contentStart == parameters.contentEnd,
                try parts.next() == nil
            else { return false }
        }
        return true
    }

    /// The SignerInfo's signatureAlgorithm (an AlgorithmIdentifier): ECDSA or RSA with SHA-256.
    private static func signatureAlgorithm(_ r: BERReader, _ e: BERElement) throws(BERError) -> SignatureAlgorithm {
        var parts = try r.children(of: e)
        let id = try parts.expect(ASN1Tag.objectIdentifier, "signatureAlgorithm OID")
        let parameters = try parts.next()
        guard try parts.next() == nil else {
            throw BERError(offset: e.start, message: "signatureAlgorithm has trailing fields")
        }
        let isNull = parameters.map { $0.tag == ASN1Tag.null && $0.contentStart == $0.contentEnd } ?? false
        // ECDSA identifiers take no parameters (RFC 5758 §3.2); RSA ones NULL or none (RFC 4055 §5).
        if r.content(id, equals: OID.ecdsaWithSHA256), parameters == nil { return .ecdsaWithSHA256 }
        if r.content(id, equals: OID.ecPublicKey), parameters == nil { return .ecPublicKey }
        if r.content(id, equals: OID.sha256WithRSA), parameters == nil || isNull { return .sha256WithRSA }
        if r.content(id, equals: OID.rsaEncryption), parameters == nil || isNull { return .rsaEncryption }
        throw BERError(offset: id.start, message: "signatureAlgorithm is not ECDSA or RSA with SHA-256")
    }
}
