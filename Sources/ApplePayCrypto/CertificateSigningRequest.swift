// A PKCS#10 certificate signing request: made and signed with a merchant key (what Apple's portal takes
// for a payment processing certificate), or read back with its self-signature checked.
internal import CShims

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

package struct CertificateSigningRequest: Sendable {
    /// The request's DER encoding.
    package let der: [UInt8]
    /// The requested key's SubjectPublicKeyInfo DER.
    package let subjectPublicKeyInfo: [UInt8]
    /// The subject in OpenSSL's one-line form ("/CN=…/O=…").
    package let subjectLine: String

    package var pem: String { PEM.encode(der, label: "CERTIFICATE REQUEST") }

    /// A request for `key`'s public half with `subject` (short names and values, in order), signed with
    /// `key` over SHA-256 (ECDSA, or RSA PKCS#1 v1.5).
    package static func make(subject: [(String, String)], key: EVPKey) throws(OpenSSLFailure)
        -> CertificateSigningRequest
    {
        defer { OpenSSLErrors.clear() }
        // Encoding the key and signing look algorithms up: under OpenSSLGlobalState's read lock.
        let der: [UInt8]? = OpenSSLGlobalState.reading {
            guard let request = X509_REQ_new(), let name = X509_NAME_new() else { return nil }
            defer {
                X509_REQ_free(request)
                X509_NAME_free(name)
            }
            for (field, value) in subject {
                guard X509_NAME_add_entry_by_txt(name, field, MBSTRING_UTF8, value, -1, -1, 0) == 1 else { return nil }
            }
            guard X509_REQ_set_version(request, 0) == 1, X509_REQ_set_subject_name(request, name) == 1,
                X509_REQ_set_pubkey(request, key.ref) == 1, X509_REQ_sign(request, key.ref, EVP_sha256()) > 0
            else { return nil }
            return encodedDER { i2d_X509_REQ(request, $0) }
        }
        guard let der else { throw OpenSSLFailure() }
        return try read(der)
    }

    /// Reads a request (PEM or DER) and checks its self-signature; throws when it is not a request or
    /// its signature does not verify with the key it carries.
    package static func read(_ bytes: [UInt8]) throws(OpenSSLFailure) -> CertificateSigningRequest {
        defer { OpenSSLErrors.clear() }
        OpenSSLGlobalState.beginDecoding()
        defer { OpenSSLGlobalState.endDecoding() }
        let request: OpaquePointer?
        if PEM.containsBeginMarker(bytes) {
            request = bytes.withUnsafeBytes { raw in
                guard let bio = BIO_new_mem_buf(raw.baseAddress, Int32(raw.count)) else { return nil }
                defer { BIO_free(bio) }
                return PEM_read_bio_X509_REQ(bio, nil, nil, nil)
            }
        } else {
            request = bytes.withUnsafeBytes { raw in
                var p = raw.baseAddress?.assumingMemoryBound(to: UInt8.self)
                return d2i_X509_REQ(nil, &p, raw.count)
            }
        }
        guard let request else { throw OpenSSLFailure("not a certificate signing request") }
        defer { X509_REQ_free(request) }
        guard let key = X509_REQ_get0_pubkey(request), X509_REQ_verify(request, key) == 1 else {
            throw OpenSSLFailure("the request's signature does not verify with its own key")
        }
        guard let der = encodedDER({ i2d_X509_REQ(request, $0) }), let spki = encodedDER({ i2d_PUBKEY(key, $0) })
        else { throw OpenSSLFailure() }
        let subject = X509_NAME_oneline(X509_REQ_get_subject_name(request), nil, 0).map { p in
            defer { CShims_OPENSSL_free(p) }
            return String(cString: p)
        }
        return CertificateSigningRequest(der: der, subjectPublicKeyInfo: spki, subjectLine: subject ?? "")
    }
}
