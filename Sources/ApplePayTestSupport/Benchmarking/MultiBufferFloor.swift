// The multi-buffer floor: crypto_mb's P-256 ECDH and ECDSA verification, eight at a time, per token,
// beside the engine's own primitives (fixed-key table verify, EC_POINT ECDH) and the verification the
// batch lanes run with `on` (crypto_mb fixed-base u1·G, u2·Q on the table), timed on the same inputs.
import ApplePayCrypto
import ApplePayDecryption
import Foundation

/// Eight tokens' worth of P-256 work on crypto_mb: one verify call and one ECDH call (the floor),
/// and the table lanes' verification the batch runs with `on`, with fresh-looking peer points and
/// signatures (64 of each, cycled), one signer and one merchant key as in a batch.
public final class MultiBufferFloorProbe {
    private let agreement: P256MultiBufferAgreement
    private let verification: P256MultiBufferVerification
    private let tableVerification: P256MultiBufferTableVerification
    private let scalar: P256MultiBufferScalar
    private let peers: [[UInt8]]
    private let signatures: [[UInt8]]
    private let digests: [[UInt8]]
    private let signerKey: P256MultiBufferPublicKey
    private let outputs = UnsafeMutablePointer<UInt8>.allocate(capacity: 8 * 32)
    // The engine's own primitives on the same keys: the signer's fixed-key table, EC_POINT ECDH.
    private let table: P256SignerTable
    private let verifier = P256FixedKeyVerifier()
    private let pointAgreement = P256PointAgreement()
    private let engineScalar: P256PrivateScalar
    private var next = 0
    /// Where crypto_mb was loaded from.
    public let libraryPath: String

    /// Nil when crypto_mb is not ready here (see `MultiBufferBackend`); `reason` then says why.
    public init?() {
        guard let library = CryptoMB.shared.library, let verification = P256MultiBufferVerification(library: library),
            let tableVerification = P256MultiBufferTableVerification(library: library)
        else { return nil }
        let merchant = EVPKey.generateEC(curve: "P-256"), signing = EVPKey.generateEC(curve: "P-256")
        guard let scalar = P256MultiBufferScalar.of(merchant), let signer = PKeyContext.signer(signing),
            let signerKey = P256MultiBufferPublicKey.of(signing),
            let table = P256SignerTable.build(for: signing), let engineScalar = P256PrivateScalar.of(merchant)
        else { return nil }
        self.table = table
        self.engineScalar = engineScalar
        var peers: [[UInt8]] = [], signatures: [[UInt8]] = [], digests: [[UInt8]] = []
        for i in 0..<64 {
            guard let peer = EVPKey.generateEC(curve: "P-256").p256PublicPoint() else { return nil }
            peers.append(peer)
            let digest = SHA256.hash(Array("multi-buffer floor token \(i)".utf8))
            var signature = [UInt8](repeating: 0, count: 80)
            guard
                let length = digest.withUnsafeBytes({ d in
                    signature.withUnsafeMutableBytes { signer.sign(digest: d, into: $0) }
                })
            else { return nil }
            digests.append(digest)
            signatures.append(Array(signature[0..<length]))
        }
        self.agreement = P256MultiBufferAgreement(library: library)
        self.verification = verification
        self.tableVerification = tableVerification
        self.scalar = scalar
        self.peers = peers
        self.signatures = signatures
        self.digests = digests
        self.signerKey = signerKey
        self.libraryPath = library.path
    }

    deinit { outputs.deallocate() }

    /// Why there is no probe: crypto_mb's status in words.
    public static var reason: String {
        switch CryptoMB.shared {
        case let .ready(library): return "crypto_mb ready (\(library.path))"
        case let .unavailable(why): return why
        }
    }

    /// One ECDH call for eight tokens; false if any lane failed.
    @inline(never)
    public func ecdhEight() -> Bool {
        for k in 0..<8 {
            let i = (next + k) & 63
            _ = peers[i].withUnsafeBytes { agreement.set(lane: k, scalar: scalar, peer: $0, into: outputs + 32 * k) }
        }
        next = (next + 8) & 63
        return agreement.run() == 0xFF
    }

    /// One verify call for eight tokens (each signature read by the engine's DER rules first, as in the
    /// batch lanes); false if any lane failed.
    @inline(never)
    public func verifyEight() -> Bool {
        setEight { k, signature, digest in
            verification.set(lane: k, signature: signature, digest: digest, key: signerKey)
        }
        return verification.run() == 0xFF
    }

    /// One verification of eight signatures as the batch lanes run it with `on`: u1·G in one crypto_mb
    /// fixed-base call, u2·Q on the signer's table, s⁻¹ from one inversion; false if any lane failed.
    @inline(never)
    public func tableVerifyEight() -> Bool {
        setEight { k, signature, digest in
            tableVerification.set(lane: k, signature: signature, digest: digest, table: table)
        }
        return tableVerification.run() == 0xFF
    }

    /// The next eight (signature, digest) pairs into lanes 0-7 through `set`.
    private func setEight(_ set: (Int, UnsafeRawBufferPointer, UnsafeRawBufferPointer) -> Bool) {
        for k in 0..<8 {
            let i = (next + k) & 63
            _ = signatures[i].withUnsafeBytes { s in digests[i].withUnsafeBytes { set(k, s, $0) } }
        }
        next = (next + 8) & 63
    }

    /// Nanoseconds per token of the engine's primitives on the same inputs: fixed-key table verify, and
    /// EC_POINT ECDH (point decoding included, as the engine does it per token).
    public func engineNanoseconds(tokens: Int = 512) -> (verify: Double, ecdh: Double) {
        var verify: UInt64 = 0, ecdh: UInt64 = 0
        for t in 0..<tokens {
            let i = t & 63
            var start = DispatchTime.now().uptimeNanoseconds
            let verified = digests[i].withUnsafeBytes { d in
                signatures[i].withUnsafeBytes { verifier.verify($0, overDigest: d, with: table) }
            }
            verify += DispatchTime.now().uptimeNanoseconds - start
            start = DispatchTime.now().uptimeNanoseconds
            let agreed =
                peers[i].withUnsafeBytes { pointAgreement.setPeer($0) }
                && pointAgreement.sharedSecret(
                    engineScalar, into: UnsafeMutableRawBufferPointer(start: outputs, count: 32))
            ecdh += DispatchTime.now().uptimeNanoseconds - start
            precondition(verified && agreed, "an engine primitive failed in the floor")
        }
        return (Double(verify) / Double(tokens), Double(ecdh) / Double(tokens))
    }

    /// Nanoseconds per token of the multi-buffer floor (verify + ECDH, eight at a time) and of the `on`
    /// lanes' verification (`tableVerifyEight`), interleaved over `groups` groups.
    public func tokenNanoseconds(groups: Int = 64) -> (verify: Double, tableVerify: Double, ecdh: Double) {
        var totals: [UInt64] = [0, 0, 0]
        for _ in 0..<groups {
            for (step, run) in [verifyEight, tableVerifyEight, ecdhEight].enumerated() {
                let start = DispatchTime.now().uptimeNanoseconds
                precondition(run(), "a crypto_mb step failed in the floor")
                totals[step] += DispatchTime.now().uptimeNanoseconds - start
            }
        }
        let tokens = Double(groups * 8)
        return (Double(totals[0]) / tokens, Double(totals[1]) / tokens, Double(totals[2]) / tokens)
    }
}
