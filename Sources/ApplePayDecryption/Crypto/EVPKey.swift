// Owns an OpenSSL EVP_PKEY: loading from PEM/DER, exporting the public half, P-256 point import.
internal import CShims

/// An OpenSSL key. Immutable after creation, so it may be used from many threads at once
/// (OpenSSL 3 reference-counts and locks EVP_PKEY internally).
final class EVPKey: @unchecked Sendable {
    let ref: OpaquePointer

    init(takingOwnership ref: OpaquePointer) { self.ref = ref }
    deinit { EVP_PKEY_free(ref) }

    enum Kind { case ec, rsa, other }

    var kind: Kind {
        if EVP_PKEY_is_a(ref, "EC") == 1 { return .ec }
        if EVP_PKEY_is_a(ref, "RSA") == 1 { return .rsa }
        return .other
    }

    var bits: Int { Int(EVP_PKEY_get_bits(ref)) }

    /// DER SubjectPublicKeyInfo of the public half (what `publicKeyHash` is computed over).
    func subjectPublicKeyInfoDER() -> [UInt8]? {
        var out: UnsafeMutablePointer<UInt8>? = nil
        let len = i2d_PUBKEY(ref, &out)
        guard len > 0, let out else { return nil }
        defer { CShims_OPENSSL_free(out) }
        return Array(UnsafeBufferPointer(start: out, count: Int(len)))
    }

    /// Private key as unencrypted PKCS#8 PEM (for the token factory's exports).
    func privateKeyPEM() -> String? {
        guard let bio = BIO_new(BIO_s_mem()) else { return nil }
        defer { BIO_free(bio) }
        guard PEM_write_bio_PrivateKey(bio, ref, nil, nil, 0, nil, nil) == 1 else { return nil }
        return BIO.readAll(bio).map { String(decoding: $0, as: UTF8.self) }
    }

    /// Loads a private key from PEM (SEC1 or PKCS#8, encrypted or not; text before the BEGIN line,
    /// such as a "Bag Attributes" block, is skipped) or DER (SEC1, PKCS#1 or PKCS#8).
    static func privateKey(from bytes: [UInt8], password: String?) throws(ConfigurationError) -> EVPKey {
        OpenSSLErrors.clear()
        defer { OpenSSLErrors.clear() }
        let isPEM = bytes.count >= 10 && String(decoding: bytes, as: UTF8.self).contains("-----BEGIN")
        if isPEM {
            let key: OpaquePointer? = bytes.withUnsafeBytes { raw in
                guard let bio = BIO_new_mem_buf(raw.baseAddress, Int32(raw.count)) else { return nil }
                defer { BIO_free(bio) }
                return withPassword(password) { pw in PEM_read_bio_PrivateKey(bio, nil, nil, pw) }
            }
            guard let key else {
                throw ConfigurationError("cannot read the private key PEM: \(OpenSSLErrors.drain() ?? "unknown error")")
            }
            return EVPKey(takingOwnership: key)
        }
        let key: OpaquePointer? = bytes.withUnsafeBytes { raw in
            var p = raw.baseAddress?.assumingMemoryBound(to: UInt8.self)
            return d2i_AutoPrivateKey(nil, &p, raw.count)
        }
        guard let key else {
            throw ConfigurationError("cannot read the private key DER: \(OpenSSLErrors.drain() ?? "unknown error")")
        }
        return EVPKey(takingOwnership: key)
    }

    /// Imports an uncompressed P-256 point; nil when the bytes are not a point on the curve.
    /// `context` is a reusable EVP_PKEY_CTX for "EC" (see `ECImportContext`).
    static func p256PublicKey(point: UnsafeRawBufferPointer, context: OpaquePointer) -> EVPKey? {
        guard point.count == 65, point[0] == 0x04 else { return nil }
        guard let key = CShims_EVP_PKEY_fromP256Point(context, point.baseAddress?.assumingMemoryBound(to: UInt8.self), 65)
        else { return nil }
        return EVPKey(takingOwnership: key)
    }

    static func generateEC(curve: String) -> EVPKey {
        guard let key = CShims_EVP_EC_gen(curve) else { fatalError("EC key generation failed: \(OpenSSLErrors.drain() ?? "")") }
        return EVPKey(takingOwnership: key)
    }

    static func generateRSA(bits: UInt32) -> EVPKey {
        guard let key = CShims_EVP_RSA_gen(bits) else { fatalError("RSA key generation failed") }
        return EVPKey(takingOwnership: key)
    }
}

/// Runs `body` with a NUL-terminated password (or NULL), wiping the copy afterwards.
func withPassword<R>(_ password: String?, _ body: (UnsafeMutableRawPointer?) -> R) -> R {
    guard let password else { return body(nil) }
    var chars = Array(password.utf8CString)
    defer { chars.withUnsafeMutableBytes { sodium_memzero($0.baseAddress, $0.count) } }
    return chars.withUnsafeMutableBytes { body($0.baseAddress) }
}

enum BIO {
    static func readAll(_ bio: OpaquePointer) -> [UInt8]? {
        var ptr: UnsafeMutablePointer<CChar>? = nil
        let len = BIO_ctrl(bio, BIO_CTRL_INFO, 0, &ptr)
        guard len >= 0, let ptr else { return nil }
        return ptr.withMemoryRebound(to: UInt8.self, capacity: len) { Array(UnsafeBufferPointer(start: $0, count: len)) }
    }
}
