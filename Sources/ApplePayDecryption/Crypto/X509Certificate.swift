// Owns an OpenSSL X509: parsing, fingerprints, validity windows and Apple's marker extensions.
internal import CShims
#if canImport(Glibc)
import Glibc
#endif

/// A parsed certificate. Immutable after parsing, shared across threads through the chain cache.
final class X509Certificate: @unchecked Sendable {
    let ref: OpaquePointer
    /// The DER encoding exactly as received.
    let der: [UInt8]

    init(takingOwnership ref: OpaquePointer, der: [UInt8]) {
        self.ref = ref
        self.der = der
    }
    deinit { X509_free(ref) }

    static func parse(der: [UInt8]) -> X509Certificate? {
        let ref: OpaquePointer? = der.withUnsafeBytes { raw in
            var p = raw.baseAddress?.assumingMemoryBound(to: UInt8.self)
            return d2i_X509(nil, &p, raw.count)
        }
        guard let ref else { return nil }
        return X509Certificate(takingOwnership: ref, der: der)
    }

    /// Every certificate in a PEM text, in order.
    static func parseAll(pem: [UInt8]) -> [X509Certificate] {
        var result: [X509Certificate] = []
        pem.withUnsafeBytes { raw in
            guard let bio = BIO_new_mem_buf(raw.baseAddress, Int32(raw.count)) else { return }
            defer { BIO_free(bio) }
            while let x = PEM_read_bio_X509(bio, nil, nil, nil) {
                if let der = Self.encode(x) { result.append(X509Certificate(takingOwnership: x, der: der)) } else { X509_free(x) }
            }
        }
        OpenSSLErrors.clear()  // the loop ends on a "no start line" error
        return result
    }

    /// Reads PEM (one or more certificates, the first is returned) or DER.
    static func load(_ bytes: [UInt8]) -> X509Certificate? {
        if PEM.containsBeginMarker(bytes) { return parseAll(pem: bytes).first }
        return parse(der: bytes)
    }

    static func encode(_ x: OpaquePointer) -> [UInt8]? {
        var out: UnsafeMutablePointer<UInt8>? = nil
        let len = i2d_X509(x, &out)
        guard len > 0, let out else { return nil }
        defer { CShims_OPENSSL_free(out) }
        return Array(UnsafeBufferPointer(start: out, count: Int(len)))
    }

    var pem: String {
        Base64.encode(der).chunked(64).reduce("-----BEGIN CERTIFICATE-----\n") { $0 + $1 + "\n" } + "-----END CERTIFICATE-----\n"
    }

    var sha256Fingerprint: [UInt8] { SHA256.hash(der) }

    /// The certificate's public key (a new reference to the one inside the certificate).
    func publicKey() -> EVPKey? {
        guard let key = X509_get_pubkey(ref) else { return nil }
        return EVPKey(takingOwnership: key)
    }

    /// notBefore ... notAfter as Unix seconds.
    var validity: ClosedRange<Int64>? {
        guard let nb = Self.unixTime(X509_get0_notBefore(ref)), let na = Self.unixTime(X509_get0_notAfter(ref)), nb <= na
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
    func extensionValue(oid: String) -> [UInt8]? {
        guard let obj = OBJ_txt2obj(oid, 1) else { return nil }
        defer { ASN1_OBJECT_free(obj) }
        let index = X509_get_ext_by_OBJ(ref, obj, -1)
        guard index >= 0, let ext = X509_get_ext(ref, index), let data = X509_EXTENSION_get_data(ext) else { return nil }
        let len = Int(ASN1_STRING_length(data))
        guard let p = ASN1_STRING_get0_data(data) else { return [] }
        return Array(UnsafeBufferPointer(start: p, count: len))
    }

    func hasExtension(oid: String) -> Bool { extensionValue(oid: oid) != nil }
}

extension String {
    func chunked(_ size: Int) -> [String] {
        var chunks: [String] = []
        var rest = Substring(self)
        while !rest.isEmpty {
            chunks.append(String(rest.prefix(size)))
            rest = rest.dropFirst(size)
        }
        return chunks
    }
}
