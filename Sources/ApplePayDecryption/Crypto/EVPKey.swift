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

    /// The EC group's name (e.g. "prime256v1", "secp256k1"); nil for other key types.
    var curveName: String? {
        var name = [CChar](repeating: 0, count: 80)
        var length = 0
        guard EVP_PKEY_get_group_name(ref, &name, name.count, &length) == 1 else {
            OpenSSLErrors.clear()
            return nil
        }
        return String(decoding: name.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// An RSA key's public exponent when it fits 64 bits; nil otherwise (or for other key types).
    var rsaPublicExponent: UInt64? {
        var e: OpaquePointer? = nil
        guard kind == .rsa, EVP_PKEY_get_bn_param(ref, "e", &e) == 1, let e else {
            OpenSSLErrors.clear()
            return nil
        }
        defer { BN_free(e) }
        guard BN_num_bits(e) <= 64 else { return nil }
        return UInt64(BN_get_word(e))
    }

    /// What the key is, for messages: "EC on secp256k1", "RSA-1024", "ED25519".
    func describe() -> String {
        switch kind {
        case .ec: return "EC on \(curveName ?? "an unnamed curve") (\(bits) bits)"
        case .rsa: return "RSA-\(bits)" + (rsaPublicExponent.map { $0 == 65537 ? "" : " with public exponent \($0)" } ?? " with a public exponent over 64 bits")
        case .other: return EVP_PKEY_get0_type_name(ref).map { String(cString: $0) } ?? "of an unknown type"
        }
    }

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
        // Searched in the bytes themselves: a String made to look would be a copy of the key that
        // nothing wipes. OpenSSL reads the PEM from a BIO over these same bytes and owns its buffers.
        if PEM.containsBeginMarker(bytes) {
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

    /// An RSA key with a chosen public exponent (test PKIs: signers Apple would never use).
    static func generateRSA(bits: Int32, exponent: UInt) -> EVPKey {
        guard let ctx = EVP_PKEY_CTX_new_from_name(nil, "RSA", nil), let e = BN_new() else { fatalError("RSA key generation failed") }
        defer {
            EVP_PKEY_CTX_free(ctx)
            BN_free(e)
        }
        var key: OpaquePointer? = nil
        guard BN_set_word(e, exponent) == 1, EVP_PKEY_keygen_init(ctx) == 1, EVP_PKEY_CTX_set_rsa_keygen_bits(ctx, bits) == 1,
              EVP_PKEY_CTX_set1_rsa_keygen_pubexp(ctx, e) == 1, EVP_PKEY_generate(ctx, &key) == 1, let key
        else { fatalError("RSA key generation failed") }
        return EVPKey(takingOwnership: key)
    }
}

/// Runs `body` with a NUL-terminated password (or NULL), wiping the copy afterwards. The C string is
/// written straight from the String's UTF-8 view into a buffer of our own: `utf8CString` would leave
/// an unwiped intermediate array behind.
func withPassword<R>(_ password: String?, _ body: (UnsafeMutableRawPointer?) -> R) -> R {
    guard let password else { return body(nil) }
    let count = password.utf8.count
    let chars = UnsafeMutableRawBufferPointer.allocate(byteCount: count + 1, alignment: 1)
    defer {
        sodium_memzero(chars.baseAddress, chars.count)
        chars.deallocate()
    }
    _ = chars.initializeMemory(as: UInt8.self, from: password.utf8)
    chars[count] = 0
    return body(chars.baseAddress)
}

enum PEM {
    /// Whether "-----BEGIN" occurs in `bytes`, read in place (no copy of what may be a private key).
    static func containsBeginMarker(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { raw in
            guard raw.count >= marker.count else { return false }
            return marker.withUnsafeBytes { m in
                (0...(raw.count - m.count)).contains { start in bytesEqual(UnsafeRawBufferPointer(rebasing: raw[start..<start + m.count]), m) }
            }
        }
    }

    private static let marker: [UInt8] = Array("-----BEGIN".utf8)
}

enum BIO {
    static func readAll(_ bio: OpaquePointer) -> [UInt8]? {
        var ptr: UnsafeMutablePointer<CChar>? = nil
        let len = BIO_ctrl(bio, BIO_CTRL_INFO, 0, &ptr)
        guard len >= 0, let ptr else { return nil }
        return ptr.withMemoryRebound(to: UInt8.self, capacity: len) { Array(UnsafeBufferPointer(start: $0, count: len)) }
    }
}
