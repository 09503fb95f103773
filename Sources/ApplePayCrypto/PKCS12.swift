// Opens a PKCS#12 file into owned objects: its private key and its certificate.
internal import CShims

package enum PKCS12 {
    /// The key and certificate of `der` (legacy RC2-40 files included, through the legacy provider).
    /// Every object OpenSSL hands back is owned (or freed) before this returns.
    package static func open(_ der: [UInt8], password: String) throws(OpenSSLFailure) -> (
        key: EVPKey, certificate: X509Certificate?
    ) {
        guard OpenSSLErrors.legacyProviderLoaded else {
            throw OpenSSLFailure("OpenSSL's legacy provider is not available for PKCS#12")
        }
        OpenSSLGlobalState.beginDecoding()
        defer { OpenSSLGlobalState.endDecoding() }
        let p12: OpaquePointer? = der.withUnsafeBytes { raw in
            var p = raw.baseAddress?.assumingMemoryBound(to: UInt8.self)
            return d2i_PKCS12(nil, &p, raw.count)
        }
        guard let p12 else {
            throw OpenSSLFailure("the PKCS#12 file cannot be read: \(OpenSSLErrors.drain() ?? "not DER")")
        }
        defer { PKCS12_free(p12) }
        var pkey: OpaquePointer? = nil
        var cert: OpaquePointer? = nil
        var ca: OpaquePointer? = nil
        let ok = withPassword(password) { pw in
            PKCS12_parse(p12, pw?.assumingMemoryBound(to: CChar.self), &pkey, &cert, &ca)
        }
        if let ca { CShims_sk_X509_pop_free(ca) }
        let key = pkey.map { EVPKey(takingOwnership: $0) }
        let certificate = cert.flatMap { X509Certificate.adopt($0) }
        guard ok == 1, let key else {
            throw OpenSSLFailure(
                "the PKCS#12 file cannot be opened (wrong password?): \(OpenSSLErrors.drain() ?? "unknown error")")
        }
        return (key, certificate)
    }
}
