// Public probes over the engine's P-256 floor (package access inside): the fixed-key verifier and
// the EC_POINT ECDH, each beside its EVP reference, for the rule tests and the benchmarks.
import ApplePayCrypto
import ApplePayDecryption
import Foundation

/// One P-256 public key verified two ways: through a precomputed table for the key (what the engine
/// does for trusted signers) and through `EVP_PKEY_verify` (the reference).
public final class FixedKeyVerificationProbe {
    private let table: P256SignerTable
    private let evp: PKeyContext
    private let verifier: P256FixedKeyVerifier

    /// How the fixed-key verifier compares x(R) with r: in affine coordinates (one field inversion)
    /// or as r·Z² against X in Jacobian ones (the engine's choice). Both must give the same answers.
    public enum Comparison: Sendable { case affine, jacobian }
    /// How it computes s⁻¹ mod n: on four 64-bit limbs (the engine's choice) or with BN_mod_inverse.
    public enum Inversion: Sendable { case limbs, openSSL }

    /// - Parameter publicKey: an uncompressed X9.62 point on P-256 (65 bytes, 04 ‖ X ‖ Y); nil otherwise.
    public init?(publicKey: [UInt8]) {
        guard let table = publicKey.withUnsafeBytes({ P256SignerTable.build(uncompressedPoint: $0) }) else {
            return nil
        }
        let key = EVPKey.reusableP256PublicKey()
        guard publicKey.withUnsafeBytes({ key.setP256Point($0) }), let evp = PKeyContext.verifier(key) else {
            return nil
        }
        self.table = table
        self.evp = evp
        verifier = P256FixedKeyVerifier()
    }

    /// The fixed-key verifier: DER signature over a 32-byte digest.
    public func verifyFixedKey(
        digest: [UInt8], signature: [UInt8], comparison: Comparison = .jacobian, inversion: Inversion = .limbs
    ) -> Bool {
        defer { OpenSSLErrors.clear() }
        verifier.comparison = comparison == .affine ? .affine : .jacobian
        verifier.inversion = inversion == .limbs ? .limbs : .openSSL
        return digest.withUnsafeBytes { d in
            signature.withUnsafeBytes { verifier.verify($0, overDigest: d, with: table) }
        }
    }

    /// SHA-256 of `message` (Wycheproof signs messages; the verifiers take digests).
    public static func sha256(_ message: [UInt8]) -> [UInt8] {
        SHA256.hash(message)
    }

    /// `EVP_PKEY_verify` on the same key.
    public func verifyEVP(digest: [UInt8], signature: [UInt8]) -> Bool {
        defer { OpenSSLErrors.clear() }
        return digest.withUnsafeBytes { d in signature.withUnsafeBytes { evp.verify($0, overDigest: d) } }
    }
}

/// A fresh random P-256 key that signs SHA-256 digests (DER signatures), for differential tests.
public final class P256SigningProbe {
    private let signer: PKeyContext
    /// The uncompressed public point.
    public let publicKey: [UInt8]

    public init() {
        let key = EVPKey.generateEC(curve: "P-256")
        guard let signer = PKeyContext.signer(key), let point = key.p256PublicPoint() else {
            fatalError("P-256 key setup failed")
        }
        self.signer = signer
        publicKey = point
    }

    public func sign(digest: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 80)
        let length = digest.withUnsafeBytes { d in out.withUnsafeMutableBytes { signer.sign(digest: d, into: $0) } }
        guard let length else { fatalError("signing failed") }
        return Array(out[0..<length])
    }
}

/// ECDH P-256 with one private scalar two ways: EC_POINT_mul on preallocated points (the engine's
/// path) and `EVP_PKEY_derive` (the reference). Shared secrets are returned as arrays: test data only.
public final class ECDHProbe {
    private let scalar: P256PrivateScalar
    private let agreement = P256PointAgreement()
    private let evp: PKeyContext
    private let peer = EVPKey.reusableP256PublicKey()

    /// - Parameter privateKey: the scalar, big-endian (leading zero bytes allowed); nil unless 0 < d < n.
    public init?(privateKey: [UInt8]) {
        guard let scalar = privateKey.withUnsafeBytes({ P256PrivateScalar.fromBigEndian($0) }),
            let key = scalar.evpKey(), let evp = PKeyContext.deriver(key)
        else { return nil }
        self.scalar = scalar
        self.evp = evp
    }

    /// x(d·P) through EC_POINT_mul; nil when `peerPoint` is not an uncompressed point on P-256.
    public func sharedSecret(peerPoint: [UInt8]) -> [UInt8]? {
        defer { OpenSSLErrors.clear() }
        let out = SensitiveBytes(capacity: 32)
        guard peerPoint.withUnsafeBytes({ agreement.setPeer($0) }),
            out.write({ agreement.sharedSecret(scalar, into: $0) ? 32 : nil })
        else { return nil }
        return out.withUnsafeBytes { Array($0) }
    }

    /// The same through EVP (the point imported into an EVP key, which checks it is on the curve).
    public func sharedSecretEVP(peerPoint: [UInt8]) -> [UInt8]? {
        defer { OpenSSLErrors.clear() }
        let out = SensitiveBytes(capacity: 32)
        guard peerPoint.withUnsafeBytes({ peer.setP256Point($0) }),
            out.write({ evp.derive(peer: peer, into: $0) == 32 ? 32 : nil })
        else { return nil }
        return out.withUnsafeBytes { Array($0) }
    }
}

/// The two EC_v1 floors, one token at a time on prepared inputs (no token; contexts, table, points
/// and scalar set up once):
/// - classic: `EVP_PKEY_verify` + `EVP_PKEY_derive` with contexts prepared once;
/// - fixed-key: R = u1·G + u2·Q with Q's table, and ECDH through EC_POINT_mul on a decoded point.
/// Both cycle through the same 64 signatures over 64 digests: the order inverse's cost depends on s,
/// so one signature alone would make the fixed-key floor depend on the luck of a single draw. The
/// fixed-key side reads each DER signature (two BN_bin2bn, well under 1 K instructions) as the engine does.
public final class ECFloorProbe {
    private let verifyContext: PKeyContext
    private let deriveContext: PKeyContext
    private let table: P256SignerTable
    private let verifier: P256FixedKeyVerifier
    private let agreement: P256PointAgreement
    private let scalar: P256PrivateScalar
    private let digests: [[UInt8]]
    private let signatures: [[UInt8]]
    private var next = 0
    private let out = SensitiveBytes(capacity: 32)

    /// - Parameters: the fixed-key verifier's variants (for measuring them); the defaults are the engine's.
    public init(
        comparison: FixedKeyVerificationProbe.Comparison = .jacobian,
        inversion: FixedKeyVerificationProbe.Inversion = .limbs
    ) {
        let signing = EVPKey.generateEC(curve: "P-256")
        let mine = EVPKey.generateEC(curve: "P-256")
        let peer = EVPKey.generateEC(curve: "P-256")
        let agreement = P256PointAgreement()
        guard let signer = PKeyContext.signer(signing), let verify = PKeyContext.verifier(signing),
            let derive = PKeyContext.deriver(mine), derive.setPeer(peer),
            let table = P256SignerTable.build(for: signing), let scalar = P256PrivateScalar.of(mine),
            let peerPoint = peer.p256PublicPoint(), peerPoint.withUnsafeBytes({ agreement.setPeer($0) })
        else { fatalError("EC floor setup failed") }
        var digests: [[UInt8]] = []
        var signatures: [[UInt8]] = []
        for i in 0..<64 {
            let digest = SHA256.hash(Array("floor token \(i)".utf8))
            var signature = [UInt8](repeating: 0, count: 80)
            let length = digest.withUnsafeBytes { d in
                signature.withUnsafeMutableBytes { signer.sign(digest: d, into: $0) }
            }
            guard let length else { fatalError("signing failed") }
            digests.append(digest)
            signatures.append(Array(signature[0..<length]))
        }
        verifyContext = verify
        deriveContext = derive
        self.table = table
        self.scalar = scalar
        self.verifier = P256FixedKeyVerifier(
            comparison: comparison == .affine ? .affine : .jacobian,
            inversion: inversion == .limbs ? .limbs : .openSSL)
        self.agreement = agreement
        self.digests = digests
        self.signatures = signatures
    }

    private func advance() -> Int {
        defer { next = (next + 1) & 63 }
        return next
    }

    /// One classic floor token: EVP verify + EVP derive. Not inlined, so profilers can find it.
    @inline(never)
    public func classicECToken() -> Bool {
        let i = advance()
        let verified = signatures[i].withUnsafeBytes { s in
            digests[i].withUnsafeBytes { verifyContext.verify(s, overDigest: $0) }
        }
        return verified && out.write { deriveContext.derive(into: $0) == 32 ? 32 : nil }
    }

    /// One fixed-key floor token: table verify + EC_POINT_mul ECDH on a decoded point.
    @inline(never)
    public func fixedKeyECToken() -> Bool {
        let i = advance()
        let verified = signatures[i].withUnsafeBytes { s in
            digests[i].withUnsafeBytes { verifier.verify(s, overDigest: $0, with: table) }
        }
        return verified && out.write { agreement.sharedSecret(scalar, into: $0) ? 32 : nil }
    }

    /// Nanoseconds for one classic floor token.
    public func classicECTokenNanoseconds() -> UInt64 { time(classicECToken) }
    /// Nanoseconds for one fixed-key floor token.
    public func fixedKeyECTokenNanoseconds() -> UInt64 { time(fixedKeyECToken) }

    private func time(_ body: () -> Bool) -> UInt64 {
        let start = DispatchTime.now().uptimeNanoseconds
        precondition(body(), "a floor primitive failed: \(OpenSSLErrors.drain() ?? "")")
        return DispatchTime.now().uptimeNanoseconds - start
    }
}
