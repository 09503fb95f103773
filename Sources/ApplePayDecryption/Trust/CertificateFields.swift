// The fields of a certificate that the signer chain is assembled by, read in place from its DER.
internal import ApplePayCrypto

/// The fields of a certificate the chain is assembled by, read in place from its DER.
package enum CertificateFields {
    /// Ranges (in the reader's buffer) of a certificate's serial number content, issuer Name and
    /// subject Name; nil if the certificate is not shaped like one. Allocation-free: runs per token.
    static func locate(_ r: BERReader, _ certificate: BERElement) -> (
        serial: Range<Int>, issuer: Range<Int>, subject: Range<Int>
    )? {
        do {
            guard certificate.tag == ASN1Tag.sequence else { return nil }
            var cert = try r.children(of: certificate)
            var tbs = try r.children(of: try cert.expect(ASN1Tag.sequence, "tbsCertificate"))
            var field = try tbs.next()
            if field?.tag == ASN1Tag.context0 { field = try tbs.next() }  // [0] version
            guard let serial = field, serial.tag == ASN1Tag.integer else { return nil }
            _ = try tbs.expect(ASN1Tag.sequence, "signature algorithm")
            let issuer = try tbs.expect(ASN1Tag.sequence, "issuer")
            _ = try tbs.expect(ASN1Tag.sequence, "validity")
            let subject = try tbs.expect(ASN1Tag.sequence, "subject")
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
