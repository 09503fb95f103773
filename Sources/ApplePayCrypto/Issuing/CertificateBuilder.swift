// Builds and signs X.509 v3 certificates through OpenSSL (test PKIs).
internal import CShims
#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

package enum CertificateBuilder {
    /// `extensions` are (dotted OID, DER value) pairs, added non-critical after basicConstraints and keyUsage.
    package static func make(
        subject: [(String, String)], issuer: X509Certificate?, subjectKey: EVPKey, issuerKey: EVPKey, serial: Int,
        validity: ClosedRange<Date>, isCA: Bool, digest: String, extensions: [(String, [UInt8])]
    ) -> X509Certificate {
        // Setting the public key encodes it and signing fetches the algorithms: the whole build under
        // OpenSSLGlobalState's read lock, which nothing called here takes again.
        OpenSSLGlobalState.reading {
            build(
                subject: subject, issuer: issuer, subjectKey: subjectKey, issuerKey: issuerKey, serial: serial,
                validity: validity, isCA: isCA, digest: digest, extensions: extensions)
        }
    }

    private static func build(
        subject: [(String, String)], issuer: X509Certificate?, subjectKey: EVPKey, issuerKey: EVPKey, serial: Int,
        validity: ClosedRange<Date>, isCA: Bool, digest: String, extensions: [(String, [UInt8])]
    ) -> X509Certificate {
        guard let x = X509_new(), let name = X509_NAME_new() else { fatalError("X509_new failed") }
        defer { X509_NAME_free(name) }
        X509_set_version(x, 2)
        ASN1_INTEGER_set(X509_get_serialNumber(x), serial)
        for (field, value) in subject {
            X509_NAME_add_entry_by_txt(name, field, MBSTRING_UTF8, value, -1, -1, 0)
        }
        X509_set_subject_name(x, name)
        X509_set_issuer_name(x, issuer.map { X509_get_subject_name($0.ref) } ?? name)
        ASN1_TIME_set(X509_getm_notBefore(x), time_t(validity.lowerBound.timeIntervalSince1970))
        ASN1_TIME_set(X509_getm_notAfter(x), time_t(validity.upperBound.timeIntervalSince1970))
        X509_set_pubkey(x, subjectKey.ref)
        // basicConstraints and keyUsage, encoded directly.
        add(x, oid: "2.5.29.19", critical: true, value: isCA ? [0x30, 0x03, 0x01, 0x01, 0xFF] : [0x30, 0x00])
        add(x, oid: "2.5.29.15", critical: true, value: isCA ? [0x03, 0x02, 0x01, 0x06] : [0x03, 0x02, 0x07, 0x80])
        for (oid, value) in extensions { add(x, oid: oid, critical: false, value: value) }
        let md = digest == "SHA384" ? EVP_sha384() : EVP_sha256()
        guard X509_sign(x, issuerKey.ref, md) > 0, let der = X509Certificate.encode(x) else {
            fatalError("X509_sign failed: \(OpenSSLErrors.drain() ?? "")")
        }
        return X509Certificate(takingOwnership: x, der: der)
    }

    private static func add(_ x: OpaquePointer, oid: String, critical: Bool, value: [UInt8]) {
        guard let obj = OBJ_txt2obj(oid, 1), let data = ASN1_OCTET_STRING_new() else {
            fatalError("OpenSSL allocation failed")
        }
        defer { ASN1_OBJECT_free(obj); ASN1_OCTET_STRING_free(data) }
        value.withUnsafeBufferPointer { _ = ASN1_OCTET_STRING_set(data, $0.baseAddress, Int32($0.count)) }
        guard let ext = X509_EXTENSION_create_by_OBJ(nil, obj, critical ? 1 : 0, data) else {
            fatalError("extension creation failed")
        }
        defer { X509_EXTENSION_free(ext) }
        X509_add_ext(x, ext, -1)
    }
}
