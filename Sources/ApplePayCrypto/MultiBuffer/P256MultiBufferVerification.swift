// ECDSA P-256 verification eight lanes at a time through crypto_mb's own verify call: a signer key in
// crypto_mb's limb format, signatures read by the engine's own DER and range rules, padding for partial
// groups, and the self-test against OpenSSL. The batch lanes verify with the signer's table instead
// (P256MultiBufferTableVerification, faster); this call is the benchmark's multi-buffer floor.
internal import CShims

/// A P-256 public key as crypto_mb reads it: X and Y as four little-endian 64-bit limbs each, made only
/// from a point OpenSSL decoded and found on the curve. Immutable after creation, so lanes may share one.
package final class P256MultiBufferPublicKey: @unchecked Sendable {
    // Sendable: never written after init.
    /// X's limbs, then Y's.
    let limbs: [UInt64]

    /// An uncompressed X9.62 point (65 bytes, 04 ‖ X ‖ Y) that OpenSSL accepts on P-256; nil otherwise.
    package init?(uncompressedPoint point: UnsafeRawBufferPointer) {
        // OpenSSL judges the point (on the curve, coordinates < p), never crypto_mb.
        guard point.count == 65, point[0] == 0x04, P256PointAgreement().setPeer(point) else {
            OpenSSLErrors.clear()
            return nil
        }
        var limbs = [UInt64](repeating: 0, count: 8)
        limbs.withUnsafeMutableBufferPointer { out in
            P256MultiBufferAgreement.limbs(
                fromBigEndian: UnsafeRawBufferPointer(rebasing: point[1..<33]), into: out.baseAddress!)
            P256MultiBufferAgreement.limbs(
                fromBigEndian: UnsafeRawBufferPointer(rebasing: point[33..<65]), into: out.baseAddress! + 4)
        }
        self.limbs = limbs
    }

    /// The public key of an EC P-256 key; nil for other keys.
    package static func of(_ key: EVPKey) -> P256MultiBufferPublicKey? {
        guard let point = key.p256PublicPoint() else { return nil }
        return point.withUnsafeBytes { P256MultiBufferPublicKey(uncompressedPoint: $0) }
    }
}

/// Up to eight (signature, digest, public key) lanes verified in one `mbx_nistp256_ecdsa_verify_mb8`
/// call. Public data only. Owned by one thread (the benchmark's floor, a test).
package final class P256MultiBufferVerification {
    /// Operations per call.
    package static let width = 8

    private let verify: CryptoMBLibrary.Verify
    /// r, s and the digest of each lane, 32 big-endian bytes each; X, Y of each key as limbs.
    private let rs = UnsafeMutablePointer<UInt8>.allocate(capacity: 8 * 32)
    private let ss = UnsafeMutablePointer<UInt8>.allocate(capacity: 8 * 32)
    private let digests = UnsafeMutablePointer<UInt8>.allocate(capacity: 8 * 32)
    private let xs = UnsafeMutablePointer<UInt64>.allocate(capacity: 8 * 4)
    private let ys = UnsafeMutablePointer<UInt64>.allocate(capacity: 8 * 4)
    private let rPointers = UnsafeMutablePointer<UnsafePointer<UInt8>?>.allocate(capacity: 8)
    private let sPointers = UnsafeMutablePointer<UnsafePointer<UInt8>?>.allocate(capacity: 8)
    private let digestPointers = UnsafeMutablePointer<UnsafePointer<UInt8>?>.allocate(capacity: 8)
    private let xPointers = UnsafeMutablePointer<UnsafePointer<UInt64>?>.allocate(capacity: 8)
    private let yPointers = UnsafeMutablePointer<UnsafePointer<UInt64>?>.allocate(capacity: 8)
    private var used: UInt8 = 0

    /// Nil when the library lacks `mbx_nistp256_ecdsa_verify_mb8`.
    package init?(library: CryptoMBLibrary) {
        guard let verify = library.verify else { return nil }
        self.verify = verify
        for buffer in [rs, ss, digests] { buffer.initialize(repeating: 0, count: 8 * 32) }
        for buffer in [xs, ys] { buffer.initialize(repeating: 0, count: 8 * 4) }
        for k in 0..<8 {
            rPointers[k] = UnsafePointer(rs + 32 * k)
            sPointers[k] = UnsafePointer(ss + 32 * k)
            digestPointers[k] = UnsafePointer(digests + 32 * k)
            xPointers[k] = UnsafePointer(xs + 4 * k)
            yPointers[k] = UnsafePointer(ys + 4 * k)
        }
    }

    deinit {
        for buffer in [rs, ss, digests] { buffer.deallocate() }
        for buffer in [xs, ys] { buffer.deallocate() }
        for pointers in [rPointers, sPointers, digestPointers] { pointers.deallocate() }
        for pointers in [xPointers, yPointers] { pointers.deallocate() }
    }

    /// Puts one verification in lane `k`: a DER ECDSA-Sig-Value over a 32-byte SHA-256 digest, for `key`.
    /// The signature is read by the engine's own rules (`P256FixedKeyVerifier.signatureIntegers`, which
    /// its verifier parses with: strict DER, 0 < r, s < n) before crypto_mb sees it. False, and the
    /// lane left empty, when those rules refuse the signature (OpenSSL refuses it too) or the digest
    /// is not 32 bytes.
    package func set(
        lane k: Int, signature: UnsafeRawBufferPointer, digest: UnsafeRawBufferPointer, key: P256MultiBufferPublicKey
    ) -> Bool {
        precondition((0..<Self.width).contains(k))
        used &= ~(1 << UInt8(k))
        guard digest.count == 32, let (r, s) = P256FixedKeyVerifier.signatureIntegers(signature) else { return false }
        // r and s as the engine's rules accepted them, at most 32 bytes each, written right-aligned:
        // what BN_bn2binpad would write, with no BIGNUM made per token (about 3,000 instructions less).
        Self.copyInteger(UnsafeRawBufferPointer(rebasing: signature[r]), into: rs + 32 * k)
        Self.copyInteger(UnsafeRawBufferPointer(rebasing: signature[s]), into: ss + 32 * k)
        // crypto_mb refuses a digest ≥ n (about one SHA-256 in 2^32); OpenSSL uses e mod n, the same
        // u1 = e·s⁻¹ mod n. One subtraction: e < 2^256 < 2n.
        Self.reduce(digest, into: digests + 32 * k)
        key.limbs.withUnsafeBufferPointer { limbs in
            (xs + 4 * k).update(from: limbs.baseAddress!, count: 4)
            (ys + 4 * k).update(from: limbs.baseAddress! + 4, count: 4)
        }
        used |= 1 << UInt8(k)
        return true
    }

    /// A value of at most 32 big-endian bytes as exactly 32.
    private static func copyInteger(_ value: UnsafeRawBufferPointer, into out: UnsafeMutablePointer<UInt8>) {
        let pad = 32 - value.count
        out.update(repeating: 0, count: pad)
        UnsafeMutableRawPointer(out + pad).copyMemory(from: value.baseAddress!, byteCount: value.count)
    }

    /// e mod n for a 32-byte big-endian digest e, written as 32 big-endian bytes: compared with n and
    /// reduced byte by byte, a few dozen instructions against about 1,200 for a BIGNUM round trip.
    private static func reduce(_ digest: UnsafeRawBufferPointer, into out: UnsafeMutablePointer<UInt8>) {
        let order = P256Group.shared.orderBytes
        var below = false
        for i in 0..<32 where digest[i] != order[i] {
            below = digest[i] < order[i]
            break
        }
        guard !below else {
            UnsafeMutableRawPointer(out).copyMemory(from: digest.baseAddress!, byteCount: 32)
            return
        }
        // e ≥ n: e − n (e = n gives zero, as BN_sub did: crypto_mb refuses that lane and the engine decides).
        var borrow = 0
        for i in (0..<32).reversed() {
            let difference = Int(digest[i]) - Int(order[i]) - borrow
            out[i] = UInt8(truncatingIfNeeded: difference)
            borrow = difference < 0 ? 1 : 0
        }
    }

    /// Verifies every lane set since the last run in one call; lanes not set are padded with a copy of
    /// a set lane and their verdicts discarded. Returns the bit mask of set lanes whose signature
    /// crypto_mb verified; a set lane missing from it was refused (a bad signature, or an input
    /// crypto_mb will not take, such as e ≡ 0 mod n): only the OpenSSL path may then fail it.
    package func run() -> UInt8 {
        let lanes = used
        used = 0
        guard lanes != 0 else { return 0 }
        let model = lanes.trailingZeroBitCount
        for k in 0..<Self.width where lanes & (1 << UInt8(k)) == 0 {
            (rs + 32 * k).update(from: rs + 32 * model, count: 32)
            (ss + 32 * k).update(from: ss + 32 * model, count: 32)
            (digests + 32 * k).update(from: digests + 32 * model, count: 32)
            (xs + 4 * k).update(from: xs + 4 * model, count: 4)
            (ys + 4 * k).update(from: ys + 4 * model, count: 4)
        }
        let status = verify(rPointers, sPointers, digestPointers, xPointers, yPointers, nil, nil)
        var ok: UInt8 = 0
        for k in 0..<Self.width where lanes & (1 << UInt8(k)) != 0 && (status >> (4 * UInt32(k))) & 0xF == 0 {
            ok |= 1 << UInt8(k)
        }
        return ok
    }

    // MARK: the known-answer self-test

    /// Eight lanes of verification on fixed keys, digests and nonces (lane 3's digest altered after
    /// signing, so it must fail; lane 6's digest ≥ n), then a partial group of three lanes, each verdict
    /// compared with OpenSSL's (EVP_PKEY_verify) for the same inputs. Nil when every lane agrees;
    /// otherwise what went wrong. `corruptExpectedLane` flips one expected verdict (tests of the fallback).
    static func selfTest(_ library: CryptoMBLibrary, corruptExpectedLane: Int? = nil) -> String? {
        guard let verification = P256MultiBufferVerification(library: library) else {
            return "\(library.path) lacks mbx_nistp256_ecdsa_verify_mb8"
        }
        let failing = 3, largeDigest = 6
        var cases: [(key: P256MultiBufferPublicKey, signature: [UInt8], digest: [UInt8], expected: Bool)] = []
        for k in 0..<8 {
            // Fixed, unremarkable private keys and nonces below n (first byte < 0x80), distinct per lane.
            let d = (0..<32).map { i in UInt8((k * 37 + i * 19 + 11) & 0x7F) | (i == 31 ? 1 : 0) }
            let nonce = (0..<32).map { i in UInt8((k * 61 + i * 43 + 5) & 0x7F) | (i == 31 ? 1 : 0) }
            var digest =
                k == largeDigest
                ? [UInt8](repeating: 0xFF, count: 32) : SHA256.hash(Array("crypto_mb self-test lane \(k)".utf8))
            guard let evpKey = d.withUnsafeBytes({ P256PrivateScalar.fromBigEndian($0) })?.evpKey(),
                let key = P256MultiBufferPublicKey.of(evpKey),
                let signature = fixedSignature(digest: digest, privateKey: d, nonce: nonce)
            else { return "OpenSSL could not build the fixed verification inputs" }
            if k == failing { digest[0] ^= 0x01 }
            var expected = signature.withUnsafeBytes { s in digest.withUnsafeBytes { evpKey.verify(s, overDigest: $0) }
            }
            guard expected == (k != failing) else {
                return "OpenSSL's verdict on fixed verification lane \(k) is not the one built for it"
            }
            if k == corruptExpectedLane { expected.toggle() }
            cases.append((key, signature, digest, expected))
        }
        OpenSSLErrors.clear()
        for group in [Array(0..<8), [2, failing, 7]] {
            for k in group {
                let set = cases[k].signature.withUnsafeBytes { s in
                    cases[k].digest.withUnsafeBytes {
                        verification.set(lane: k, signature: s, digest: $0, key: cases[k].key)
                    }
                }
                guard set else { return "the engine's signature rules refused fixed verification lane \(k)" }
            }
            let ok = verification.run()
            for k in group where (ok & (1 << UInt8(k)) != 0) != cases[k].expected {
                return
                    "mbx_nistp256_ecdsa_verify_mb8 lane \(k) of a \(group.count)-lane group \(cases[k].expected ? "refused" : "accepted") a signature OpenSSL \(cases[k].expected ? "accepts" : "refuses")"
            }
        }
        return nil
    }

    /// The DER ECDSA signature (r, s) of `digest` under the private key `d` with the nonce `nonce`
    /// (32 big-endian bytes each): r = x(k·G) mod n, s = k⁻¹(e + r·d) mod n. Fixed inputs give fixed
    /// signatures, which OpenSSL's randomised signing would not.
    private static func fixedSignature(digest: [UInt8], privateKey d: [UInt8], nonce: [UInt8]) -> [UInt8]? {
        let p256 = P256Group.shared
        guard let ctx = BN_CTX_new() else { return nil }
        defer { BN_CTX_free(ctx) }
        let numbers = (0..<7).compactMap { _ in BN_new() }
        defer { for number in numbers { BN_clear_free(number) } }
        guard numbers.count == 7, let point = EC_POINT_new(p256.ref) else { return nil }
        defer { EC_POINT_clear_free(point) }
        let (dValue, k, e, x, r, s, t) = (
            numbers[0], numbers[1], numbers[2], numbers[3], numbers[4], numbers[5], numbers[6]
        )
        guard BN_bin2bn(d, 32, dValue) != nil, BN_bin2bn(nonce, 32, k) != nil, BN_bin2bn(digest, 32, e) != nil,
            EC_POINT_mul(p256.ref, point, k, nil, nil, ctx) == 1,
            EC_POINT_get_affine_coordinates(p256.ref, point, x, nil, ctx) == 1,
            BN_nnmod(r, x, p256.order, ctx) == 1,
            BN_mod_mul(t, r, dValue, p256.order, ctx) == 1,
            BN_mod_add(t, t, e, p256.order, ctx) == 1,
            BN_mod_inverse(s, k, p256.order, ctx) != nil,
            BN_mod_mul(s, s, t, p256.order, ctx) == 1,
            BN_is_zero(r) == 0, BN_is_zero(s) == 0
        else { return nil }
        func integer(_ value: OpaquePointer) -> [UInt8] {
            var bytes = [UInt8](repeating: 0, count: 32)
            _ = BN_bn2binpad(value, &bytes, 32)
            var minimal = Array(bytes.drop { $0 == 0 })
            if minimal[0] & 0x80 != 0 { minimal.insert(0, at: 0) }
            return [0x02, UInt8(minimal.count)] + minimal
        }
        let body = integer(r) + integer(s)
        return [0x30, UInt8(body.count)] + body
    }
}
