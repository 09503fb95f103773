// Reads the detached CMS SignedData of a token (RFC 5652) in place: offsets of the certificates,
// the one signer's identifier, signed attributes, signature, signing time and message digest.

struct CMSSignedData {
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
    let signatureAlgorithm: Range<Int>
    /// Unix seconds; nil when the attribute is absent.
    let signingTime: Int64?
    let messageDigest: Range<Int>?

    /// Parses the structure; every failure is an `invalidSignature` naming what is wrong.
    static func parse(_ bytes: UnsafeRawBufferPointer) throws(ApplePayError) -> CMSSignedData {
        do {
            return try parseStructure(BERReader(bytes: bytes))
        } catch {
            throw ApplePayError(.invalidSignature, "the signature is not a well-formed CMS SignedData", field: "signature",
                                reason: "\(error.message) at byte \(error.offset)")
        }
    }

    private static func parseStructure(_ r: BERReader) throws(BERError) -> CMSSignedData {
        // ContentInfo ::= SEQUENCE { contentType OID, content [0] EXPLICIT SignedData }
        let contentInfo = try r.root()
        guard contentInfo.tag == 0x30 else { throw BERError(offset: 0, message: "not a SEQUENCE") }
        var ci = try r.children(of: contentInfo)
        let type = try ci.expect(0x06, "contentType")
        guard r.content(type, equals: OID.signedData) else { throw BERError(offset: type.start, message: "not SignedData") }
        var wrapped = try r.children(of: try ci.expect(0xA0, "[0] content"))
        let signedData = try wrapped.expect(0x30, "SignedData")

        // SignedData ::= SEQUENCE { version, digestAlgorithms SET, encapContentInfo,
        //                           certificates [0] IMPLICIT OPTIONAL, crls [1] OPTIONAL, signerInfos SET }
        var sd = try r.children(of: signedData)
        _ = try sd.expect(0x02, "version")
        _ = try sd.expect(0x31, "digestAlgorithms")
        var encap = try r.children(of: try sd.expect(0x30, "encapContentInfo"))
        let eType = try encap.expect(0x06, "eContentType")
        guard r.content(eType, equals: OID.data) else { throw BERError(offset: eType.start, message: "signed content is not id-data") }
        guard try encap.next() == nil else { throw BERError(offset: eType.end, message: "the signature must be detached") }

        guard var element = try sd.next() else { throw BERError(offset: signedData.end, message: "no signerInfos") }
        var certificates = element.contentStart..<element.contentStart
        if element.tag == 0xA0 {
            certificates = element.contentRange
            guard let next = try sd.next() else { throw BERError(offset: element.end, message: "no signerInfos") }
            element = next
        }
        if element.tag == 0xA1 {  // CRLs: not used by Apple, ignored
            guard let next = try sd.next() else { throw BERError(offset: element.end, message: "no signerInfos") }
            element = next
        }
        guard element.tag == 0x31 else { throw BERError(offset: element.start, message: "expected signerInfos") }
        guard try sd.next() == nil else { throw BERError(offset: element.end, message: "data after signerInfos") }
        var signers = try r.children(of: element)
        let signerInfo = try signers.expect(0x30, "SignerInfo")
        guard try signers.next() == nil else { throw BERError(offset: signerInfo.end, message: "more than one signer") }

        // SignerInfo ::= SEQUENCE { version, sid, digestAlgorithm, signedAttrs [0] IMPLICIT,
        //                           signatureAlgorithm, signature OCTET STRING, unsignedAttrs [1] OPTIONAL }
        var si = try r.children(of: signerInfo)
        _ = try si.expect(0x02, "SignerInfo version")
        let sid = try si.expect(0x30, "issuerAndSerialNumber")
        var sidParts = try r.children(of: sid)
        let issuer = try sidParts.expect(0x30, "issuer")
        let serial = try sidParts.expect(0x02, "serialNumber")
        var digestAlgorithm = try r.children(of: try si.expect(0x30, "digestAlgorithm"))
        let digestOID = try digestAlgorithm.expect(0x06, "digest OID")
        guard r.content(digestOID, equals: OID.sha256) else { throw BERError(offset: digestOID.start, message: "digest is not SHA-256") }
        let attributes = try si.expect(0xA0, "signed attributes")
        guard !attributes.isIndefinite else { throw BERError(offset: attributes.start, message: "signed attributes not DER") }
        var signatureAlgorithm = try r.children(of: try si.expect(0x30, "signatureAlgorithm"))
        let signatureOID = try signatureAlgorithm.expect(0x06, "signature OID")
        let signature = try si.expect(0x04, "signature OCTET STRING")

        var signingTime: Int64? = nil
        var messageDigest: Range<Int>? = nil
        var sawContentType = false
        var list = try r.children(of: attributes)
        while let attribute = try list.next() {
            guard attribute.tag == 0x30 else { throw BERError(offset: attribute.start, message: "malformed attribute") }
            var parts = try r.children(of: attribute)
            let attributeType = try parts.expect(0x06, "attribute type")
            var values = try r.children(of: try parts.expect(0x31, "attribute values"))
            let value = try values.next()
            guard let value, try values.next() == nil else { throw BERError(offset: attribute.start, message: "attribute must have one value") }
            if r.content(attributeType, equals: OID.contentType) {
                guard !sawContentType, value.tag == 0x06, r.content(value, equals: OID.data) else {
                    throw BERError(offset: value.start, message: "contentType attribute is not id-data")
                }
                sawContentType = true
            } else if r.content(attributeType, equals: OID.messageDigest) {
                guard messageDigest == nil, value.tag == 0x04 else { throw BERError(offset: value.start, message: "bad messageDigest attribute") }
                messageDigest = value.contentRange
            } else if r.content(attributeType, equals: OID.signingTime) {
                guard signingTime == nil, let t = ASN1Time.unixSeconds(tag: value.tag, r.content(value)) else {
                    throw BERError(offset: value.start, message: "bad signingTime attribute")
                }
                signingTime = t
            }
        }

        return CMSSignedData(
            certificates: certificates, signerIdentifier: sid.encodedRange, signerIssuer: issuer.encodedRange,
            signerSerial: serial.contentRange, signedAttributes: attributes.encodedRange, signature: signature.contentRange,
            signatureAlgorithm: signatureOID.contentRange, signingTime: signingTime, messageDigest: messageDigest)
    }
}

/// The fields of a certificate the CMS signer identifier is matched against, read from its DER.
enum CertificateFields {
    /// (issuer Name DER, serial INTEGER content), or nil if the certificate is malformed.
    static func issuerAndSerial(_ der: UnsafeRawBufferPointer) -> (issuer: [UInt8], serial: [UInt8])? {
        let r = BERReader(bytes: der)
        do {
            var cert = try r.children(of: try r.root())
            var tbs = try r.children(of: try cert.expect(0x30, "tbsCertificate"))
            var field = try tbs.next()
            if field?.tag == 0xA0 { field = try tbs.next() }  // [0] version
            guard let serial = field, serial.tag == 0x02 else { return nil }
            _ = try tbs.expect(0x30, "signature algorithm")
            let issuer = try tbs.expect(0x30, "issuer")
            return (Array(r.encoded(issuer)), Array(r.content(serial)))
        } catch {
            return nil
        }
    }

    static func issuerAndSerial(_ der: [UInt8]) -> (issuer: [UInt8], serial: [UInt8])? {
        der.withUnsafeBytes { issuerAndSerial($0) }
    }
}
