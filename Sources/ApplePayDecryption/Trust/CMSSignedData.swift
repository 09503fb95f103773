// Reads the detached CMS SignedData of a token (RFC 5652): certificates, the one signer, its
// signed attributes re-encoded for verification, the signing time and the message digest.

struct CMSSignedData {
    /// Certificates in the order the token carries them (DER each).
    let certificates: [[UInt8]]
    /// The signer's issuer Name (DER) and serial number (INTEGER content) from `sid`.
    let signerIssuer: [UInt8]
    let signerSerial: [UInt8]
    /// The signed attributes as the DER `SET OF Attribute` the signature covers.
    let signedAttributesDER: [UInt8]
    let signature: [UInt8]
    let signatureAlgorithm: [UInt8]
    /// Unix seconds; nil when the attribute is absent.
    let signingTime: Int64?
    let messageDigest: [UInt8]?

    /// Parses the structure; every failure is an `invalidSignature` naming what is wrong.
    static func parse(_ der: [UInt8]) throws(ApplePayError) -> CMSSignedData {
        do {
            return try parseStructure(BERReader(bytes: der))
        } catch let e as ApplePayError {
            throw e
        } catch let e as BERError {
            throw ApplePayError(.invalidSignature, "the signature is not a well-formed CMS structure", field: "signature",
                                reason: "\(e.message) at byte \(e.offset)")
        } catch {
            throw ApplePayError(.invalidSignature, "the signature is not a well-formed CMS structure", field: "signature")
        }
    }

    private static func fail(_ message: String) -> ApplePayError {
        ApplePayError(.invalidSignature, message, field: "signature")
    }

    private static func parseStructure(_ r: BERReader) throws -> CMSSignedData {
        // ContentInfo ::= SEQUENCE { contentType OID, content [0] EXPLICIT SignedData }
        let contentInfo = try r.root()
        let ci = try r.children(of: contentInfo)
        guard contentInfo.tag == 0x30, ci.count == 2, ci[0].tag == 0x06, Array(r.content(ci[0])) == OID.signedData, ci[1].tag == 0xA0
        else { throw fail("the signature is not CMS SignedData") }
        let wrapped = try r.children(of: ci[1])
        guard wrapped.count == 1, wrapped[0].tag == 0x30 else { throw fail("the SignedData is malformed") }

        // SignedData ::= SEQUENCE { version, digestAlgorithms SET, encapContentInfo,
        //                           certificates [0] IMPLICIT OPTIONAL, crls [1] OPTIONAL, signerInfos SET }
        let sd = try r.children(of: wrapped[0])
        guard sd.count >= 4, sd[0].tag == 0x02, sd[1].tag == 0x31, sd[2].tag == 0x30 else { throw fail("the SignedData is malformed") }
        let encap = try r.children(of: sd[2])
        guard encap.count >= 1, encap[0].tag == 0x06, Array(r.content(encap[0])) == OID.data else {
            throw fail("the signed content type is not id-data")
        }
        guard encap.count == 1 else { throw fail("the signature must be detached (no embedded content)") }

        var certificates: [[UInt8]] = []
        var index = 3
        if sd[index].tag == 0xA0 {
            for cert in try r.children(of: sd[index]) where cert.tag == 0x30 {
                guard !cert.isIndefinite else { throw fail("a certificate is not DER-encoded") }
                certificates.append(Array(r.bytes[cert.encodedRange]))
            }
            index += 1
        }
        if index < sd.count, sd[index].tag == 0xA1 { index += 1 }  // CRLs: not used by Apple, ignored
        guard index == sd.count - 1, sd[index].tag == 0x31 else { throw fail("the SignedData has no signerInfos") }
        let signers = try r.children(of: sd[index])
        guard signers.count == 1, signers[0].tag == 0x30 else { throw fail("the signature must have exactly one signer") }

        // SignerInfo ::= SEQUENCE { version, sid, digestAlgorithm, signedAttrs [0] IMPLICIT,
        //                           signatureAlgorithm, signature OCTET STRING, unsignedAttrs [1] OPTIONAL }
        let si = try r.children(of: signers[0])
        guard si.count >= 6, si[0].tag == 0x02, si[1].tag == 0x30, si[2].tag == 0x30, si[3].tag == 0xA0,
              si[4].tag == 0x30, si[5].tag == 0x04 || si[5].tag == 0x24
        else { throw fail("the SignerInfo is malformed or has no signed attributes") }
        let sid = try r.children(of: si[1])
        guard sid.count == 2, sid[0].tag == 0x30, sid[1].tag == 0x02 else {
            throw fail("the signer is not identified by issuer and serial number")
        }
        let digestAlgorithm = try r.children(of: si[2])
        guard let digestOID = digestAlgorithm.first, digestOID.tag == 0x06, Array(r.content(digestOID)) == OID.sha256 else {
            throw fail("the signer's digest algorithm is not SHA-256")
        }
        let signatureAlgorithm = try r.children(of: si[4])
        guard let signatureOID = signatureAlgorithm.first, signatureOID.tag == 0x06 else { throw fail("the signature algorithm is malformed") }

        // The signature covers the DER encoding of the attributes with the SET OF tag (RFC 5652 §5.4).
        let attributes = si[3]
        guard !attributes.isIndefinite else { throw fail("the signed attributes are not DER-encoded") }
        var signedAttributesDER = Array(r.bytes[attributes.encodedRange])
        signedAttributesDER[0] = 0x31

        var signingTime: Int64? = nil
        var messageDigest: [UInt8]? = nil
        var seen = Set<[UInt8]>()
        for attribute in try r.children(of: attributes) {
            let parts = try r.children(of: attribute)
            guard attribute.tag == 0x30, parts.count == 2, parts[0].tag == 0x06, parts[1].tag == 0x31 else {
                throw fail("a signed attribute is malformed")
            }
            let type = Array(r.content(parts[0]))
            guard seen.insert(type).inserted else { throw fail("a signed attribute appears twice") }
            let values = try r.children(of: parts[1])
            switch type {
            case OID.contentType:
                guard values.count == 1, values[0].tag == 0x06, Array(r.content(values[0])) == OID.data else {
                    throw fail("the contentType attribute is not id-data")
                }
            case OID.messageDigest:
                guard values.count == 1, values[0].tag == 0x04 else { throw fail("the messageDigest attribute is malformed") }
                messageDigest = Array(r.content(values[0]))
            case OID.signingTime:
                guard values.count == 1, let t = ASN1Time.unixSeconds(tag: values[0].tag, r.content(values[0])) else {
                    throw fail("the signingTime attribute is malformed")
                }
                signingTime = t
            default:
                continue
            }
        }

        return CMSSignedData(
            certificates: certificates,
            signerIssuer: Array(r.bytes[sid[0].encodedRange]),
            signerSerial: Array(r.content(sid[1])),
            signedAttributesDER: signedAttributesDER,
            signature: try r.flattenedContent(si[5]),
            signatureAlgorithm: Array(r.content(signatureOID)),
            signingTime: signingTime,
            messageDigest: messageDigest
        )
    }
}

/// The fields of a certificate the CMS signer identifier is matched against, read from its DER.
enum CertificateFields {
    /// (issuer Name DER, serial INTEGER content), or nil if the certificate is malformed.
    static func issuerAndSerial(_ der: [UInt8]) -> (issuer: [UInt8], serial: [UInt8])? {
        let r = BERReader(bytes: der)
        guard let cert = try? r.root(), let parts = try? r.children(of: cert), let tbsElement = parts.first,
              let tbs = try? r.children(of: tbsElement) else { return nil }
        var i = 0
        if tbs.first?.tag == 0xA0 { i = 1 }  // [0] version
        guard tbs.count > i + 2, tbs[i].tag == 0x02, tbs[i + 2].tag == 0x30 else { return nil }
        return (Array(r.bytes[tbs[i + 2].encodedRange]), Array(r.content(tbs[i])))
    }
}
