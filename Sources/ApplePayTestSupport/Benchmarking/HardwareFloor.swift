// The physical floor a token cannot beat on this machine: OpenSSL's own P-256 verify and ECDH
// (and RSA-2048 OAEP decrypt for RSA_v1), each timed with contexts prepared once, as fast as
// libcrypto offers them.
import ApplePayCrypto
import ApplePayDecryption
import Foundation

/// The physical floor of one token on this machine: OpenSSL's own primitives, timed alone.
public enum HardwareFloor {
    /// Operations per second of each primitive on one core.
    public struct Measurement: Sendable, Codable {
        /// ECDSA P-256 verifications per second.
        public let ecdsaP256VerifyPerSecond: Double
        /// ECDH P-256 derivations per second.
        public let ecdhP256PerSecond: Double
        /// RSA-2048 OAEP private decryptions per second.
        public let rsa2048DecryptPerSecond: Double

        /// A measurement from its three rates.
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
        return Measurement(
            ecdsaP256VerifyPerSecond: rate(seconds, probe.verify), ecdhP256PerSecond: rate(seconds, probe.derive),
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
    private let verifyContext: PKeyContext
    private let deriveContext: PKeyContext
    private let rsaContext: PKeyContext
    private let digest = [UInt8](repeating: 0x5A, count: 32)
    private let signature: [UInt8]
    private let wrapped: [UInt8]
    private let out = SensitiveBytes(capacity: 256)

    /// Prepares the contexts and inputs once (keys generated here).
    public init() {
        let signing = EVPKey.generateEC(curve: "P-256")
        let mine = EVPKey.generateEC(curve: "P-256")
        let peer = EVPKey.generateEC(curve: "P-256")
        let rsa = EVPKey.generateRSA(bits: 2048)
        guard let signer = PKeyContext.signer(signing), let verify = PKeyContext.verifier(signing),
            let derive = PKeyContext.deriver(mine), let decrypt = PKeyContext.oaepDecrypter(rsa), derive.setPeer(peer)
        else { fatalError("EVP_PKEY_CTX setup failed") }
        var signature = [UInt8](repeating: 0, count: 80)
        let length = digest.withUnsafeBytes { d in signature.withUnsafeMutableBytes { signer.sign(digest: d, into: $0) }
        }
        guard let length else { fatalError("signing failed") }
        self.signature = Array(signature[0..<length])
        let secret = SensitiveBytes(capacity: 16)
        secret.write { _ in 16 }  // sixteen zero bytes
        wrapped = TestTokenFactory.rsaOAEPEncrypt(secret, to: rsa)
        verifyContext = verify
        deriveContext = derive
        rsaContext = decrypt
    }

    /// One ECDSA P-256 verification of a SHA-256 digest.
    func verify() -> Bool {
        signature.withUnsafeBytes { s in digest.withUnsafeBytes { verifyContext.verify(s, overDigest: $0) } }
    }

    /// One ECDH P-256 derivation.
    func derive() -> Bool {
        out.write { deriveContext.derive(into: UnsafeMutableRawBufferPointer(rebasing: $0[0..<32])) == 32 ? 32 : nil }
    }

    /// One RSA-2048 OAEP (SHA-256) decryption of a 16-byte key.
    func rsaDecrypt() -> Bool {
        wrapped.withUnsafeBytes { w in out.write { rsaContext.decrypt(w, into: $0) } }
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
