// Owns an OpenSSL EVP_PKEY: loading from PEM/DER, exporting the public half, P-256 point import.
internal import CShims

/// An OpenSSL key. Immutable after creation, so it may be used from many threads at once
/// (OpenSSL 3 reference-counts and locks EVP_PKEY internally).
package final class EVPKey: @unchecked Sendable {
    let ref: OpaquePointer

    init(takingOwnership ref: OpaquePointer) { self.ref = ref }
    deinit { EVP_PKEY_free(ref) }

    package enum Kind { case ec, rsa, other }

    package var kind: Kind {
        if EVP_PKEY_is_a(ref, "EC") == 1 { return .ec }
        if EVP_PKEY_is_a(ref, "RSA") == 1 { return .rsa }
        return .other
    }

    package var bits: Int { Int(EVP_PKEY_get_bits(ref)) }

    /// The EC group's name (e.g. "prime256v1", "secp256k1"); nil for other key types.
    package var curveName: String? {
        var name = [CChar](repeating: 0, count: 80)
        var length = 0
        guard EVP_PKEY_get_group_name(ref, &name, name.count, &length) == 1 else {
            OpenSSLErrors.clear()
            return nil
        }
        return String(decoding: name.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// An RSA key's public exponent when it fits 64 bits; nil otherwise (or for other key types).
    package var rsaPublicExponent: UInt64? {
        var e: OpaquePointer? = nil
        guard kind == .rsa, EVP_PKEY_get_bn_param(ref, "e", &e) == 1, let e else {
            OpenSSLErrors.clear()
            return nil
        }
        defer { BN_free(e) }
        guard BN_num_bits(e) <= 64 else { return nil }
        return UInt64(BN_get_word(e))
    }

    /// An RSA key's modulus, big-endian without leading zero bytes; nil for other key types.
    package var rsaModulus: [UInt8]? {
        var n: OpaquePointer? = nil
        guard kind == .rsa, EVP_PKEY_get_bn_param(ref, "n", &n) == 1, let n else {
            OpenSSLErrors.clear()
            return nil
        }
        defer { BN_free(n) }
        var bytes = [UInt8](repeating: 0, count: Int((BN_num_bits(n) + 7) / 8))
        _ = BN_bn2bin(n, &bytes)
        return bytes
    }

    /// What the key is, for messages: "EC on secp256k1", "RSA-1024", "ED25519".
    package func describe() -> String {
        switch kind {
        case .ec: return "EC on \(curveName ?? "an unnamed curve") (\(bits) bits)"
        case .rsa:
            return "RSA-\(bits)"
                + (rsaPublicExponent.map { $0 == 65537 ? "" : " with public exponent \($0)" }
                    ?? " with a public exponent over 64 bits")
        case .other: return EVP_PKEY_get0_type_name(ref).map { String(cString: $0) } ?? "of an unknown type"
        }
    }

    /// DER SubjectPublicKeyInfo of the public half (what `publicKeyHash` is computed over).
    package func subjectPublicKeyInfoDER() -> [UInt8]? {
        // The encoder is looked up in OpenSSL's tables (OpenSSLGlobalState).
        OpenSSLGlobalState.reading { encodedDER { i2d_PUBKEY(ref, $0) } }
    }

    /// Loads a private key from PEM (SEC1 or PKCS#8, encrypted or not; text before the BEGIN line,
    /// such as a "Bag Attributes" block, is skipped) or DER (SEC1, PKCS#1 or PKCS#8).
    package static func privateKey(from bytes: [UInt8], password: String?) throws(OpenSSLFailure) -> EVPKey {
        OpenSSLGlobalState.beginDecoding()
        defer { OpenSSLGlobalState.endDecoding() }
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
                throw OpenSSLFailure("cannot read the private key PEM: \(OpenSSLErrors.drain() ?? "unknown error")")
            }
            return EVPKey(takingOwnership: key)
        }
        let key: OpaquePointer? = bytes.withUnsafeBytes { raw in
            var p = raw.baseAddress?.assumingMemoryBound(to: UInt8.self)
            return d2i_AutoPrivateKey(nil, &p, raw.count)
        }
        guard let key else {
            throw OpenSSLFailure("cannot read the private key DER: \(OpenSSLErrors.drain() ?? "unknown error")")
        }
        return EVPKey(takingOwnership: key)
    }

    /// A public key from SubjectPublicKeyInfo DER (a key kept in a PKCS#11 token, for its certificate).
    package static func publicKey(fromDER der: [UInt8]) -> EVPKey? {
        OpenSSLGlobalState.beginDecoding()
        defer { OpenSSLGlobalState.endDecoding() }
        let key: OpaquePointer? = der.withUnsafeBytes { raw in
            var p = raw.baseAddress?.assumingMemoryBound(to: UInt8.self)
            return d2i_PUBKEY(nil, &p, raw.count)
        }
        OpenSSLErrors.clear()
        return key.map(EVPKey.init(takingOwnership:))
    }

    /// A P-256 public key whose point is replaced by each `setPoint` call: importing into an existing
    /// key reuses its group, where a fresh import (EVP_PKEY_fromdata) rebuilds it. Starts at the
    /// base point G. Owned by one lane.
    package static func reusableP256PublicKey() -> EVPKey {
        // The key manager is fetched by name (OpenSSLGlobalState); a lane's set-up, not per token.
        let key: OpaquePointer? = OpenSSLGlobalState.reading {
            guard let importer = EVP_PKEY_CTX_new_from_name(nil, "EC", nil) else {
                fatalError("OpenSSL could not allocate a key context")
            }
            defer { EVP_PKEY_CTX_free(importer) }
            return p256Generator.withUnsafeBufferPointer { CShims_EVP_PKEY_fromP256Point(importer, $0.baseAddress, 65) }
        }
        guard let key else { fatalError("OpenSSL cannot import a P-256 point: \(OpenSSLErrors.drain() ?? "")") }
        return EVPKey(takingOwnership: key)
    }

    /// Replaces the point of a key from `reusableP256PublicKey()`. OpenSSL rejects points that are not
    /// on the curve here, so a derive with this key can skip its own check.
    package func setP256Point(_ point: UnsafeRawBufferPointer) -> Bool {
        guard point.count == 65, point[0] == 0x04 else { return false }
        return EVP_PKEY_set1_encoded_public_key(ref, point.baseAddress?.assumingMemoryBound(to: UInt8.self), 65) == 1
    }

    /// The P-256 base point G, uncompressed.
    private static let p256Generator: [UInt8] = [
        0x04, 0x6b, 0x17, 0xd1, 0xf2, 0xe1, 0x2c, 0x42, 0x47, 0xf8, 0xbc, 0xe6, 0xe5, 0x63, 0xa4, 0x40, 0xf2, 0x77,
        0x03, 0x7d, 0x81,
        0x2d, 0xeb, 0x33, 0xa0, 0xf4, 0xa1, 0x39, 0x45, 0xd8, 0x98, 0xc2, 0x96, 0x4f, 0xe3, 0x42, 0xe2, 0xfe, 0x1a,
        0x7f, 0x9b,
        0x8e, 0xe7, 0xeb, 0x4a, 0x7c, 0x0f, 0x9e, 0x16, 0x2b, 0xce, 0x33, 0x57, 0x6b, 0x31, 0x5e, 0xce, 0xcb, 0xb6,
        0x40, 0x68,
        0x37, 0xbf, 0x51, 0xf5,
    ]
}

enum BIO {
    static func readAll(_ bio: OpaquePointer) -> [UInt8]? {
        var ptr: UnsafeMutablePointer<CChar>? = nil
        let len = BIO_ctrl(bio, BIO_CTRL_INFO, 0, &ptr)
        guard len >= 0, let ptr else { return nil }
        return ptr.withMemoryRebound(to: UInt8.self, capacity: len) {
            Array(UnsafeBufferPointer(start: $0, count: len))
        }
    }

    /// What `write` puts into a memory BIO, or nil when it fails.
    static func capture(_ write: (OpaquePointer) -> Bool) -> [UInt8]? {
        guard let bio = BIO_new(BIO_s_mem()) else { return nil }
        defer { BIO_free(bio) }
        guard write(bio) else { return nil }
        return readAll(bio)
    }
}

/// DER from an i2d_* call, copied out and the OpenSSL buffer freed.
func encodedDER(_ encode: (UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>) -> Int32) -> [UInt8]? {
    var out: UnsafeMutablePointer<UInt8>? = nil
    let len = encode(&out)
    guard len > 0, let out else { return nil }
    defer { CShims_OPENSSL_free(out) }
    return Array(UnsafeBufferPointer(start: out, count: Int(len)))
}
