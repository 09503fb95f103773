// The physical floor a token cannot beat on this machine: OpenSSL's own P-256 verify and ECDH
// (and RSA-2048 OAEP decrypt for RSA_v1), each timed with contexts prepared once, as fast as
// libcrypto offers them.
internal import CShims
import Foundation

public enum HardwareFloor {
    public struct Measurement: Sendable, Codable {
        public let ecdsaP256VerifyPerSecond: Double
        public let ecdhP256PerSecond: Double
        public let rsa2048DecryptPerSecond: Double

        public init(ecdsaP256VerifyPerSecond: Double, ecdhP256PerSecond: Double, rsa2048DecryptPerSecond: Double) {
            self.ecdsaP256VerifyPerSecond = ecdsaP256VerifyPerSecond
            self.ecdhP256PerSecond = ecdhP256PerSecond
            self.rsa2048DecryptPerSecond = rsa2048DecryptPerSecond
        }

        /// Tokens per second one core could reach if verify + ECDH were all an EC_v1 token cost.
        public var ecV1TokensPerSecond: Double { 1 / (1 / ecdsaP256VerifyPerSecond + 1 / ecdhP256PerSecond) }
        /// The same for RSA_v1: verify + RSA-2048 private decrypt.
        public var rsaV1TokensPerSecond: Double { 1 / (1 / ecdsaP256VerifyPerSecond + 1 / rsa2048DecryptPerSecond) }
    }

    /// Measures each primitive for about `seconds` on the calling thread.
    public static func measure(seconds: Double = 2) -> Measurement {
        OpenSSLErrors.clear()
        defer { OpenSSLErrors.clear() }
        let probe = FloorProbe()
        return Measurement(ecdsaP256VerifyPerSecond: rate(seconds, probe.verify), ecdhP256PerSecond: rate(seconds, probe.derive),
                           rsa2048DecryptPerSecond: rate(seconds / 2, probe.rsaDecrypt))
    }

    /// Runs `body` in batches until `seconds` have passed; returns calls per second.
    private static func rate(_ seconds: Double, _ body: () -> Bool) -> Double {
        var count = 0
        let start = DispatchTime.now().uptimeNanoseconds
        let limit = UInt64(seconds * 1e9)
        var elapsed: UInt64 = 0
        repeat {
            for _ in 0..<32 { precondition(body(), "a floor primitive failed: \(OpenSSLErrors.drain() ?? "")") }
            count += 32
            elapsed = DispatchTime.now().uptimeNanoseconds - start
        } while elapsed < limit
        return Double(count) / (Double(elapsed) / 1e9)
    }
}

/// One floor token at a time (ECDSA verify + ECDH with prepared contexts, or verify + RSA-2048
/// OAEP decrypt), so a benchmark can alternate floor and engine samples token by token and
/// compare medians that saw the same machine.
public final class FloorProbe {
    private let verifyKey = EVPKey.generateEC(curve: "P-256")
    private let verifyContext: OpaquePointer
    private let deriveContext: OpaquePointer
    private let rsaContext: OpaquePointer
    private var digest = [UInt8](repeating: 0x5A, count: 32)
    private var signature = [UInt8](repeating: 0, count: 80)
    private var signatureLength = 80
    private var wrapped: [UInt8] = []
    private var out = [UInt8](repeating: 0, count: 256)
    private let keys: [EVPKey]

    public init() {
        let mine = EVPKey.generateEC(curve: "P-256")
        let peer = EVPKey.generateEC(curve: "P-256")
        let rsa = EVPKey.generateRSA(bits: 2048)
        keys = [mine, peer, rsa]
        guard let sign = EVP_PKEY_CTX_new_from_pkey(nil, verifyKey.ref, nil), let verify = EVP_PKEY_CTX_new_from_pkey(nil, verifyKey.ref, nil),
              let derive = EVP_PKEY_CTX_new_from_pkey(nil, mine.ref, nil), let decrypt = EVP_PKEY_CTX_new_from_pkey(nil, rsa.ref, nil)
        else { fatalError("EVP_PKEY_CTX_new failed") }
        defer { EVP_PKEY_CTX_free(sign) }
        precondition(EVP_PKEY_sign_init(sign) == 1 && EVP_PKEY_sign(sign, &signature, &signatureLength, &digest, 32) == 1)
        precondition(EVP_PKEY_verify_init(verify) == 1)
        precondition(EVP_PKEY_derive_init(derive) == 1 && EVP_PKEY_derive_set_peer_ex(derive, peer.ref, 0) == 1)
        precondition(EVP_PKEY_decrypt_init(decrypt) == 1 && EVP_PKEY_CTX_set_rsa_padding(decrypt, RSA_PKCS1_OAEP_PADDING) == 1
            && EVP_PKEY_CTX_set_rsa_oaep_md(decrypt, EVP_sha256()) == 1 && EVP_PKEY_CTX_set_rsa_mgf1_md(decrypt, EVP_sha256()) == 1)
        let secret = SensitiveBytes(capacity: 16)
        secret.count = 16
        wrapped = TestTokenFactory.rsaOAEPEncrypt(secret, to: rsa)
        verifyContext = verify
        deriveContext = derive
        rsaContext = decrypt
    }

    deinit {
        EVP_PKEY_CTX_free(verifyContext)
        EVP_PKEY_CTX_free(deriveContext)
        EVP_PKEY_CTX_free(rsaContext)
        sodium_memzero(&out, out.count)
    }

    /// One ECDSA P-256 verification of a SHA-256 digest.
    func verify() -> Bool { EVP_PKEY_verify(verifyContext, signature, signatureLength, digest, 32) == 1 }

    /// One ECDH P-256 derivation.
    func derive() -> Bool {
        var length = 32
        return EVP_PKEY_derive(deriveContext, &out, &length) == 1
    }

    /// One RSA-2048 OAEP (SHA-256) decryption of a 16-byte key.
    func rsaDecrypt() -> Bool {
        var length = out.count
        return EVP_PKEY_decrypt(rsaContext, &out, &length, wrapped, wrapped.count) == 1
    }

    /// Nanoseconds for one EC_v1 floor token: one verify and one ECDH.
    public func ecTokenNanoseconds() -> UInt64 { time { verify() && derive() } }

    /// Nanoseconds for one RSA_v1 floor token: one verify and one RSA-2048 OAEP decrypt.
    public func rsaTokenNanoseconds() -> UInt64 { time { verify() && rsaDecrypt() } }

    private func time(_ body: () -> Bool) -> UInt64 {
        let start = DispatchTime.now().uptimeNanoseconds
        precondition(body(), "a floor primitive failed: \(OpenSSLErrors.drain() ?? "")")
        return DispatchTime.now().uptimeNanoseconds - start
    }
}
