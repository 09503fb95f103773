// What only an issuer of test material does with keys: generate them, export them in every format
// a loader accepts, sign messages, and draw random bytes.
internal import CShims

extension EVPKey {
    package static func generateEC(curve: String) -> EVPKey {
        OpenSSLGlobalState.beginDecoding()
        defer { OpenSSLGlobalState.endDecoding() }
        guard let key = CShims_EVP_EC_gen(curve) else {
            fatalError("EC key generation failed: \(OpenSSLErrors.drain() ?? "")")
        }
        return EVPKey(takingOwnership: key)
    }

    package static func generateRSA(bits: Int) -> EVPKey {
        OpenSSLGlobalState.beginDecoding()
        defer { OpenSSLGlobalState.endDecoding() }
        guard let key = CShims_EVP_RSA_gen(UInt32(bits)) else { fatalError("RSA key generation failed") }
        return EVPKey(takingOwnership: key)
    }

    /// An RSA key with a chosen public exponent (test PKIs: signers Apple would never use).
    package static func generateRSA(bits: Int, exponent: UInt) -> EVPKey {
        OpenSSLGlobalState.beginDecoding()
        defer { OpenSSLGlobalState.endDecoding() }
        guard let ctx = EVP_PKEY_CTX_new_from_name(nil, "RSA", nil), let e = BN_new() else {
            fatalError("RSA key generation failed")
        }
        defer {
            EVP_PKEY_CTX_free(ctx)
            BN_free(e)
        }
        var key: OpaquePointer? = nil
        guard BN_set_word(e, exponent) == 1, EVP_PKEY_keygen_init(ctx) == 1,
            EVP_PKEY_CTX_set_rsa_keygen_bits(ctx, Int32(bits)) == 1,
            EVP_PKEY_CTX_set1_rsa_keygen_pubexp(ctx, e) == 1, EVP_PKEY_generate(ctx, &key) == 1, let key
        else { fatalError("RSA key generation failed") }
        return EVPKey(takingOwnership: key)
    }

    // Exports look their encoders up in OpenSSL's tables, and signing fetches its algorithms: both under
    // OpenSSLGlobalState's read lock, as decodes are, so that no PKCS#11 module's C_Initialize runs meanwhile.

    /// Private key as unencrypted PKCS#8 PEM.
    package func privateKeyPEM() -> String? {
        exportingCopy { key in
            BIO.capture { PEM_write_bio_PrivateKey($0, key, nil, nil, 0, nil, nil) == 1 }.map {
                String(decoding: $0, as: UTF8.self)
            }
        }
    }

    /// Private key in its traditional PEM form (SEC1 "EC PRIVATE KEY" for EC keys).
    package func traditionalPrivateKeyPEM() -> String? {
        exportingCopy { key in
            BIO.capture { PEM_write_bio_PrivateKey_traditional($0, key, nil, nil, 0, nil, nil) == 1 }.map {
                String(decoding: $0, as: UTF8.self)
            }
        }
    }

    /// Private key as DER in the form i2d_PrivateKey picks: the type's own (SEC1 for EC, PKCS#1 for RSA).
    package func privateKeyDER() -> [UInt8]? { exportingCopy { key in encodedDER { i2d_PrivateKey(key, $0) } } }

    /// `export` run on a copy of this key, never on the key itself: OpenSSL 3.0's PKCS#8 encoder for EC
    /// keys (ec_pki_priv_to_der) sets EC_PKEY_NO_PARAMETERS on the key it encodes and restores it after,
    /// so an export of a key shared between threads could omit the curve (a 109-byte SEC1 key that nothing
    /// reads back: "unsupported public key type", the flaky TestPKI.identity() crash), and two PKCS#8
    /// exports at once could leave the flag set for good. A copy costs microseconds (test material only).
    func exportingCopy<R>(_ export: (OpaquePointer) -> R?) -> R? {
        OpenSSLGlobalState.reading {
            // Test material: a key that cannot be copied is a broken run, not an empty export.
            guard let copy = EVP_PKEY_dup(ref) else {
                fatalError("EVP_PKEY_dup failed: \(OpenSSLErrors.drain() ?? "")")
            }
            defer { EVP_PKEY_free(copy) }
            return export(copy)
        }
    }

    /// A signature over SHA-256 of `message` (ECDSA as DER Ecdsa-Sig-Value, or RSA PKCS#1 v1.5).
    package func signSHA256(_ message: [UInt8]) -> [UInt8] {
        guard let ctx = EVP_MD_CTX_new() else { fatalError("EVP_MD_CTX_new failed") }
        defer { EVP_MD_CTX_free(ctx) }
        var signature = [UInt8](repeating: 0, count: max(size, 64))
        var length = signature.count
        let ok = OpenSSLGlobalState.reading {
            message.withUnsafeBufferPointer { m in
                signature.withUnsafeMutableBufferPointer { s in
                    EVP_DigestSignInit_ex(ctx, nil, "SHA256", nil, nil, ref, nil) == 1
                        && EVP_DigestSign(ctx, s.baseAddress, &length, m.baseAddress, m.count) == 1
                }
            }
        }
        precondition(ok, "signing failed: \(OpenSSLErrors.drain() ?? "")")
        return Array(signature[0..<length])
    }
}

package enum SecureRandom {
    package static func bytes(_ count: Int) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        fill(&bytes)
        return bytes
    }

    package static func fill(_ out: UnsafeMutableRawBufferPointer) {
        precondition(
            RAND_bytes(out.baseAddress?.assumingMemoryBound(to: UInt8.self), Int32(out.count)) == 1, "RAND_bytes failed"
        )
    }

    package static func fill(_ bytes: inout [UInt8]) { bytes.withUnsafeMutableBytes { fill($0) } }
}

extension PKCS12 {
    /// A PKCS#12 file holding `key` and `certificate`. `legacy` uses RC2-40 and 3DES (as old Keychain
    /// exports do), which need OpenSSL's legacy provider to read.
    package static func create(
        key: EVPKey, certificate: X509Certificate, password: String, friendlyName: String, legacy: Bool
    ) -> [UInt8] {
        _ = OpenSSLErrors.legacyProviderLoaded  // takes the write lock: before the read lock below, never inside
        let keyNID = legacy ? NID_pbe_WithSHA1And3_Key_TripleDES_CBC : 0
        let certNID = legacy ? NID_pbe_WithSHA1And40BitRC2_CBC : 0
        // Encodes a copy of the key as PKCS#8 (`exportingCopy` says why a copy; under the read lock, as
        // the ciphers and KDFs are fetched) and encrypts it and the certificate.
        let p12: [UInt8]? = key.exportingCopy { copy in
            let p12 = withPassword(password) { pw in
                PKCS12_create(
                    pw?.assumingMemoryBound(to: CChar.self), friendlyName, copy, certificate.ref, nil, keyNID, certNID,
                    0, 0, 0)
            }
            guard let p12 else { fatalError("PKCS12_create failed: \(OpenSSLErrors.drain() ?? "")") }
            defer { PKCS12_free(p12) }
            return encodedDER { i2d_PKCS12(p12, $0) }
        }
        return p12 ?? []
    }
}
