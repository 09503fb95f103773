// Owns an OpenSSL X509: parsing, fingerprints, validity windows and Apple's marker extensions.
internal import CShims
#if canImport(Glibc)
    import Glibc
#endif

/// A parsed certificate. Immutable after parsing, shared across threads through the chain cache.
package final class X509Certificate: @unchecked Sendable {
    let ref: OpaquePointer
    /// The DER encoding exactly as received.
    package let der: [UInt8]

    init(takingOwnership ref: OpaquePointer, der: [UInt8]) {
        self.ref = ref
        self.der = der
    }
    deinit { X509_free(ref) }

    package static func parse(der: [UInt8]) -> X509Certificate? {
        OpenSSLGlobalState.beginDecoding()
        defer { OpenSSLGlobalState.endDecoding() }
        let ref: OpaquePointer? = der.withUnsafeBytes { raw in
            var p = raw.baseAddress?.assumingMemoryBound(to: UInt8.self)
            return d2i_X509(nil, &p, raw.count)
        }
        guard let ref else { return nil }
        return X509Certificate(takingOwnership: ref, der: der)
    }

    /// Every certificate in a PEM text, in order.
    package static func parseAll(pem: [UInt8]) -> [X509Certificate] {
        OpenSSLGlobalState.beginDecoding()
        defer { OpenSSLGlobalState.endDecoding() }
        var result: [X509Certificate] = []
        pem.withUnsafeBytes { raw in
            guard let bio = BIO_new_mem_buf(raw.baseAddress, Int32(raw.count)) else { return }
            defer { BIO_free(bio) }
            while let x = PEM_read_bio_X509(bio, nil, nil, nil) {
                if let certificate = adopt(x) { result.append(certificate) }
            }
        }
        OpenSSLErrors.clear()  // the loop ends on a "no start line" error
        return result
    }

    /// Reads PEM (one or more certificates, the first is returned) or DER.
    package static func load(_ bytes: [UInt8]) -> X509Certificate? {
        if PEM.containsBeginMarker(bytes) { return parseAll(pem: bytes).first }
        return parse(der: bytes)
    }

    static func encode(_ x: OpaquePointer) -> [UInt8]? { encodedDER { i2d_X509(x, $0) } }

    /// An owning wrapper for a certificate OpenSSL handed over, or nil (and the certificate freed)
    /// when it cannot be encoded.
    static func adopt(_ x: OpaquePointer) -> X509Certificate? {
        guard let der = encode(x) else {
            X509_free(x)
            return nil
        }
        return X509Certificate(takingOwnership: x, der: der)
    }

    package var pem: String { PEM.encode(der, label: "CERTIFICATE") }

    package var sha256Fingerprint: [UInt8] { SHA256.hash(der) }

    /// The certificate's public key (a new reference to the one inside the certificate).
    package func publicKey() -> EVPKey? {
        guard let key = X509_get_pubkey(ref) else { return nil }
        return EVPKey(takingOwnership: key)
    }

    /// notBefore ... notAfter as Unix seconds.
    package var validity: ClosedRange<Int64>? {
        guard let nb = Self.unixTime(X509_get0_notBefore(ref)), let na = Self.unixTime(X509_get0_notAfter(ref)),
            nb <= na
        else { return nil }
        return nb...na
    }

    private static func unixTime(_ t: UnsafePointer<ASN1_TIME>?) -> Int64? {
        guard let t else { return nil }
        var parts = tm()
        guard ASN1_TIME_to_tm(t, &parts) == 1 else { return nil }
        return Int64(timegm(&parts))
    }

    /// The extension with this dotted OID, as the DER bytes inside its OCTET STRING.
    package func extensionValue(oid: String) -> [UInt8]? {
        guard let obj = OBJ_txt2obj(oid, 1) else { return nil }
        defer { ASN1_OBJECT_free(obj) }
        let index = X509_get_ext_by_OBJ(ref, obj, -1)
        guard index >= 0, let ext = X509_get_ext(ref, index), let data = X509_EXTENSION_get_data(ext) else {
            return nil
        }
        let len = Int(ASN1_STRING_length(data))
        guard let p = ASN1_STRING_get0_data(data) else { return [] }
        return Array(UnsafeBufferPointer(start: p, count: len))
    }

    package func hasExtension(oid: String) -> Bool { extensionValue(oid: oid) != nil }
}

extension X509Certificate {
    /// The subject name in OpenSSL's one-line form, for messages.
    package var subjectLine: String? {
        X509_NAME_oneline(X509_get_subject_name(ref), nil, 0).map { p in
            defer { CShims_OPENSSL_free(p) }
            return String(cString: p)
        }
    }

    /// Whether `key` is the private half of this certificate's public key.
    package func matches(privateKey key: EVPKey) -> Bool {
        defer { OpenSSLErrors.clear() }
        // Comparing keys of two key managers exports one into the other (OpenSSLGlobalState).
        return OpenSSLGlobalState.reading { X509_check_private_key(ref, key.ref) == 1 }
    }
}
