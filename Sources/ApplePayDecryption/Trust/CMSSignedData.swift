// Reads the detached CMS SignedData of a token (RFC 5652) in place: offsets of the certificates,
// the one signer's identifier, signed attributes, signature, signing time and message digest.
internal import ApplePayCrypto

/// The signature algorithms a token's SignerInfo may name, with the key type each one needs.
enum SignatureAlgorithm {
    case ecdsaWithSHA256
    /// id-ecPublicKey in place of ecdsa-with-SHA256, as some CMS writers put it; SHA-256 comes from digestAlgorithm.
    case ecPublicKey
    case sha256WithRSA
    /// rsaEncryption in place of sha256WithRSAEncryption (RFC 5754 §3.2 allows both).
    case rsaEncryption

    var keyType: SigningKeyType {
        switch self {
        case .ecdsaWithSHA256, .ecPublicKey: return .ecP256
        case .sha256WithRSA, .rsaEncryption: return .rsa
        }
    }
}

/// The key types Apple signs tokens with: EC P-256 (EC_v1 tokens and most others) and RSA
/// (the leaf of RSA_v1 tokens is an RSA-2048 certificate; see basistheory-2024-rsa).
enum SigningKeyType: String, Sendable {
    case ecP256 = "EC P-256"
    case rsa = "RSA"
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
            return try parseStructure(BERReader(bytes: bytes))
        } catch {
            throw ApplePayError(.invalidSignature, "the signature is not an acceptable CMS SignedData: \(error.message)", field: "signature",
                                reason: "at byte \(error.offset)")
        }
    }

    /// Whether an INTEGER's content is exactly the small value `v`.
    private static func isInteger(_ r: BERReader, _ e: BERElement, _ v: UInt8) -> Bool {
        e.contentEnd - e.contentStart == 1 && r.bytes[e.contentStart] == v
    }

    /// An AlgorithmIdentifier whose OID is `oid`; the parameters must be absent or NULL
    /// (both are seen for SHA-256 in real tokens: NULL up to 2021, absent since late 2022).
    private static func isAlgorithm(_ r: BERReader, _ e: BERElement, _ oid: [UInt8]) throws(BERError) -> Bool {
        guard e.tag == 0x30 else { return false }
        var parts = try r.children(of: e)
        guard let id = try parts.next(), id.tag == 0x06, r.content(id, equals: oid) else { return false }
        if let parameters = try parts.next() {
            guard parameters.tag == 0x05, parameters.contentStart == parameters.contentEnd, try parts.next() == nil else { return false }
        }
        return true
    }

    private static func signatureAlgorithm(_ r: BERReader, _ e: BERElement) throws(BERError) -> SignatureAlgorithm {
        var parts = try r.children(of: e)
        let id = try parts.expect(0x06, "signatureAlgorithm OID")
        let parameters = try parts.next()
        guard try parts.next() == nil else { throw BERError(offset: e.start, message: "signatureAlgorithm has trailing fields") }
        let isNull = parameters.map { $0.tag == 0x05 && $0.contentStart == $0.contentEnd } ?? false
        // ECDSA identifiers take no parameters (RFC 5758 §3.2); RSA ones NULL or none (RFC 4055 §5).
        if r.content(id, equals: OID.ecdsaWithSHA256), parameters == nil { return .ecdsaWithSHA256 }
        if r.content(id, equals: OID.ecPublicKey), parameters == nil { return .ecPublicKey }
        if r.content(id, equals: OID.sha256WithRSA), parameters == nil || isNull { return .sha256WithRSA }
        if r.content(id, equals: OID.rsaEncryption), parameters == nil || isNull { return .rsaEncryption }
        throw BERError(offset: id.start, message: "signatureAlgorithm is not ECDSA or RSA with SHA-256")
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
        // RFC 5652 §5.1: 1 when every SignerInfo is version 1, the content is id-data and the
        // certificates are plain X.509 — all of which the rest of this parse requires.
        let version = try sd.expect(0x02, "SignedData version")
        guard isInteger(r, version, 1) else { throw BERError(offset: version.start, message: "SignedData version is not 1") }
        let digestAlgorithms = try sd.expect(0x31, "digestAlgorithms")
        var listedSHA256 = false
        var algorithms = try r.children(of: digestAlgorithms)
        while !listedSHA256, let algorithm = try algorithms.next() {
            listedSHA256 = try isAlgorithm(r, algorithm, OID.sha256)
        }
        guard listedSHA256 else { throw BERError(offset: digestAlgorithms.start, message: "digestAlgorithms does not list SHA-256") }
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
        let signerVersion = try si.expect(0x02, "SignerInfo version")
        // Version 1 goes with issuerAndSerialNumber, the only signer identifier Apple uses (RFC 5652 §5.3).
        guard isInteger(r, signerVersion, 1) else { throw BERError(offset: signerVersion.start, message: "SignerInfo version is not 1") }
        let sid = try si.expect(0x30, "issuerAndSerialNumber")
        var sidParts = try r.children(of: sid)
        let issuer = try sidParts.expect(0x30, "issuer")
        let serial = try sidParts.expect(0x02, "serialNumber")
        guard try sidParts.next() == nil else { throw BERError(offset: serial.end, message: "issuerAndSerialNumber has trailing fields") }
        let digestAlgorithm = try si.expect(0x30, "digestAlgorithm")
        // SHA-256 is the only digest; digestAlgorithms was checked to list it, so the signer's is listed.
        guard try isAlgorithm(r, digestAlgorithm, OID.sha256) else {
            throw BERError(offset: digestAlgorithm.start, message: "digestAlgorithm is not SHA-256")
        }
        let attributes = try si.expect(0xA0, "signed attributes")
        guard !attributes.isIndefinite else { throw BERError(offset: attributes.start, message: "signed attributes not DER") }
        let algorithm = try signatureAlgorithm(r, try si.expect(0x30, "signatureAlgorithm"))
        let signature = try si.expect(0x04, "signature OCTET STRING")
        if let unsigned = try si.next() {
            guard unsigned.tag == 0xA1, try si.next() == nil else { throw BERError(offset: unsigned.start, message: "data after the signature") }
        }

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
                    throw BERError(offset: value.start, message: "signingTime is not a real instant as UTCTime (1950–2049) or GeneralizedTime (2050 on)")
                }
                signingTime = t
            }
        }
        // RFC 5652 §5.3: with signed attributes present, contentType and messageDigest MUST be among them.
        guard sawContentType else { throw BERError(offset: attributes.start, message: "the signed attributes lack contentType") }
        guard let messageDigest else { throw BERError(offset: attributes.start, message: "the signed attributes lack messageDigest") }

        return CMSSignedData(
            certificates: certificates, signerIdentifier: sid.encodedRange, signerIssuer: issuer.encodedRange,
            signerSerial: serial.contentRange, signedAttributes: attributes.encodedRange, signature: signature.contentRange,
            signatureAlgorithm: algorithm, signingTime: signingTime, messageDigest: messageDigest)
    }
}

/// The fields of a certificate the chain is assembled by, read in place from its DER.
package enum CertificateFields {
    /// Ranges (in the reader's buffer) of a certificate's serial number content, issuer Name and
    /// subject Name; nil if the certificate is not shaped like one. Allocation-free: runs per token.
    static func locate(_ r: BERReader, _ certificate: BERElement) -> (serial: Range<Int>, issuer: Range<Int>, subject: Range<Int>)? {
        do {
            guard certificate.tag == 0x30 else { return nil }
            var cert = try r.children(of: certificate)
            var tbs = try r.children(of: try cert.expect(0x30, "tbsCertificate"))
            var field = try tbs.next()
            if field?.tag == 0xA0 { field = try tbs.next() }  // [0] version
            guard let serial = field, serial.tag == 0x02 else { return nil }
            _ = try tbs.expect(0x30, "signature algorithm")
            let issuer = try tbs.expect(0x30, "issuer")
            _ = try tbs.expect(0x30, "validity")
            let subject = try tbs.expect(0x30, "subject")
            return (serial.contentRange, issuer.encodedRange, subject.encodedRange)
        } catch {
            return nil
        }
    }

    /// (issuer Name DER, serial INTEGER content), or nil if the certificate is malformed.
    package static func issuerAndSerial(_ der: [UInt8]) -> (issuer: [UInt8], serial: [UInt8])? {
        der.withUnsafeBytes { raw in
            let r = BERReader(bytes: raw)
            guard let root = try? r.root(), let fields = locate(r, root) else { return nil }
            return (Array(raw[fields.issuer]), Array(raw[fields.serial]))
        }
    }
}
