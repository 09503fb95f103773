// ECDSA P-256 verification eight lanes at a time for signers with a precomputed table: u1·G for every
// lane in one crypto_mb fixed-base call, u2·Q on the signer's table (OpenSSL, as the engine's verifier),
// s⁻¹ for every lane from one inversion; and the fixed-base call's self-test against OpenSSL.
//
// Why not mbx_nistp256_ecdsa_verify_mb8 (P256MultiBufferVerification): it treats Q as a new point on
// every call, a variable-base multiplication as costly as an ECDH, where the engine has Q's table.
// multibuffer-bench on an AMD EPYC with IFMA (2026-11-25, 4,096 tokens, medians of 5 slices, five
// runs): 13.4-14.3 µs a token this way against 19.4-20.2 µs through mbx_nistp256_ecdsa_verify_mb8.
// Where the time goes (a C program timing each step over the same libraries, 4,096 signatures):
// fixed-base lanes 3.3 µs, the table 7.2, the point addition 0.9, the scalars 1.6 (with BN_mod_inverse
// for the one inversion), and about 0.9 for the conversions and the comparison.
internal import CShims

/// Up to eight (signature, digest, signer table) lanes verified together. R = u1·G + u2·Q with
/// u1 = e·s⁻¹, u2 = r·s⁻¹ (mod n); accepted iff R ≠ ∞ and x(R) ≡ r (mod n), the engine's own rule and
/// comparison. Public data only. Owned by one thread (a batch lane's multi-buffer stage, a test).
package final class P256MultiBufferTableVerification {
    /// Operations per call.
    package static let width = 8

    private let fixedBase: CryptoMBLibrary.FixedBase
    /// The table half and the comparison, exactly as the engine's verifier runs them.
    private let verifier = P256FixedKeyVerifier()
    private let ctx: OpaquePointer
    /// Montgomery arithmetic modulo the group order n (R = 2²⁵⁶).
    private let montgomery: OpaquePointer
    /// R³ mod n: turns the plain inverse of a Montgomery-form value into the Montgomery form of the inverse.
    private let rCubed = LaneBignum()
    /// Per lane: r, s and e mod n as read; s and the running products in Montgomery form; s⁻¹ in
    /// Montgomery form; u1 and u2.
    private let r: [LaneBignum], s: [LaneBignum], e: [LaneBignum]
    private let sMontgomery: [LaneBignum], products: [LaneBignum], sInverse: [LaneBignum]
    private let u1: [LaneBignum], u2: [LaneBignum]
    private let inverse = LaneBignum(), x = LaneBignum(), y = LaneBignum(), z = LaneBignum()
    private let partial = LanePoint()
    private let scratch = UnsafeMutableRawPointer.allocate(byteCount: 32, alignment: 8)
    /// u1 of each lane as four little-endian limbs; u1·G as crypto_mb writes it (Jacobian X, Y, Z).
    private let scalars = UnsafeMutablePointer<UInt64>.allocate(capacity: 8 * 4)
    private let xs = UnsafeMutablePointer<UInt64>.allocate(capacity: 8 * 4)
    private let ys = UnsafeMutablePointer<UInt64>.allocate(capacity: 8 * 4)
    private let zs = UnsafeMutablePointer<UInt64>.allocate(capacity: 8 * 4)
    private let scalarPointers = UnsafeMutablePointer<UnsafePointer<UInt64>?>.allocate(capacity: 8)
    private let xPointers = UnsafeMutablePointer<UnsafeMutablePointer<UInt64>?>.allocate(capacity: 8)
    private let yPointers = UnsafeMutablePointer<UnsafeMutablePointer<UInt64>?>.allocate(capacity: 8)
    private let zPointers = UnsafeMutablePointer<UnsafeMutablePointer<UInt64>?>.allocate(capacity: 8)
    private var tables: [P256SignerTable?] = Array(repeating: nil, count: 8)
    private var used: UInt8 = 0

    /// Nil when the library lacks `mbx_nistp256_ecpublic_key_mb8`.
    package init?(library: CryptoMBLibrary) {
        guard let fixedBase = library.fixedBase else { return nil }
        self.fixedBase = fixedBase
        let order = P256Group.shared.order
        guard let ctx = BN_CTX_new(), let montgomery = BN_MONT_CTX_new() else {
            fatalError("OpenSSL could not allocate a BN_CTX")
        }
        self.ctx = ctx
        self.montgomery = montgomery
        guard BN_MONT_CTX_set(montgomery, order, ctx) == 1, BN_set_word(rCubed.ref, 1) == 1,
            BN_lshift(rCubed.ref, rCubed.ref, 768) == 1, BN_nnmod(rCubed.ref, rCubed.ref, order, ctx) == 1
        else { fatalError("OpenSSL cannot set up Montgomery arithmetic modulo P-256's order") }
        let lanes = { (0..<8).map { _ in LaneBignum() } }
        (r, s, e, sMontgomery, products, sInverse, u1, u2) = (
            lanes(), lanes(), lanes(), lanes(), lanes(), lanes(), lanes(), lanes()
        )
        for buffer in [scalars, xs, ys, zs] { buffer.initialize(repeating: 0, count: 8 * 4) }
        for k in 0..<8 {
            scalarPointers[k] = UnsafePointer(scalars + 4 * k)
            xPointers[k] = xs + 4 * k
            yPointers[k] = ys + 4 * k
            zPointers[k] = zs + 4 * k
        }
    }

    deinit {
        BN_MONT_CTX_free(montgomery)
        BN_CTX_free(ctx)
        scratch.deallocate()
        for buffer in [scalars, xs, ys, zs] { buffer.deallocate() }
        scalarPointers.deallocate()
        for pointers in [xPointers, yPointers, zPointers] { pointers.deallocate() }
    }

    /// Puts one verification in lane `k`: a DER ECDSA-Sig-Value over a 32-byte SHA-256 digest, for the
    /// signer whose table `table` is. The signature is read by the engine's own rules
    /// (`P256FixedKeyVerifier.signatureIntegers`: strict DER, 0 < r, s < n) before anything else. False,
    /// and the lane left empty, when those rules refuse it or the digest is not 32 bytes.
    package func set(
        lane k: Int, signature: UnsafeRawBufferPointer, digest: UnsafeRawBufferPointer, table: P256SignerTable
    ) -> Bool {
        precondition((0..<Self.width).contains(k))
        used &= ~(1 << UInt8(k))
        tables[k] = nil
        let order = P256Group.shared.order
        guard digest.count == 32, let (rBytes, sBytes) = P256FixedKeyVerifier.signatureIntegers(signature),
            let base = signature.baseAddress?.assumingMemoryBound(to: UInt8.self),
            let digestBase = digest.baseAddress?.assumingMemoryBound(to: UInt8.self),
            BN_bin2bn(base + rBytes.lowerBound, Int32(rBytes.count), r[k].ref) != nil,
            BN_bin2bn(base + sBytes.lowerBound, Int32(sBytes.count), s[k].ref) != nil,
            BN_bin2bn(digestBase, 32, e[k].ref) != nil
        else { return false }
        // e mod n, as ECDSA uses it (e < 2²⁵⁶ < 2n: one subtraction); Montgomery products need inputs < n.
        if BN_cmp(e[k].ref, order) >= 0 { guard BN_sub(e[k].ref, e[k].ref, order) == 1 else { return false } }
        tables[k] = table
        used |= 1 << UInt8(k)
        return true
    }

    /// Verifies every lane set since the last run. Returns the bit mask of set lanes whose signature
    /// verified; a set lane missing from it was refused (a bad signature, u1 = 0, a lane crypto_mb
    /// would not take, or a point from crypto_mb that cannot be right: Z = 0 or off the curve): only
    /// the engine's own verifier may then fail it.
    package func run() -> UInt8 {
        let lanes = used
        used = 0
        defer { for k in 0..<Self.width { tables[k] = nil } }
        guard lanes != 0, inverses(of: lanes) else { return 0 }
        // u1 = e·s⁻¹ and u2 = r·s⁻¹, plain (a plain value times a Montgomery-form one); u1 as limbs.
        var fixedLanes: UInt8 = 0
        for k in 0..<Self.width where lanes & (1 << UInt8(k)) != 0 {
            guard BN_mod_mul_montgomery(u1[k].ref, e[k].ref, sInverse[k].ref, montgomery, ctx) == 1,
                BN_mod_mul_montgomery(u2[k].ref, r[k].ref, sInverse[k].ref, montgomery, ctx) == 1,
                // u1 = 0 (e ≡ 0 mod n) is not a fixed-base input: the engine's verifier decides that lane.
                BN_is_zero(u1[k].ref) == 0,
                setScalar(lane: k, u1[k].ref)
            else { continue }
            fixedLanes |= 1 << UInt8(k)
        }
        guard fixedLanes != 0 else { return 0 }
        // Lanes not in this call compute a copy of a real lane's point; their results are not read.
        let model = fixedLanes.trailingZeroBitCount
        for k in 0..<Self.width where fixedLanes & (1 << UInt8(k)) == 0 {
            (scalars + 4 * k).update(from: scalars + 4 * model, count: 4)
        }
        let status = fixedBase(xPointers, yPointers, zPointers, scalarPointers, nil)
        let p256 = P256Group.shared.ref
        var ok: UInt8 = 0
        for k in 0..<Self.width where fixedLanes & (1 << UInt8(k)) != 0 && (status >> (4 * UInt32(k))) & 0xF == 0 {
            guard let table = tables[k], limbsToBignum(xs + 4 * k, x.ref), limbsToBignum(ys + 4 * k, y.ref),
                limbsToBignum(zs + 4 * k, z.ref),
                // 0 < u1 < n, so u1·G ≠ ∞: a Z of 0 is a wrong answer (e.g. an exceptional case of an
                // incomplete addition formula), and read as ∞ it would make R = u2·Q, which a forger
                // can aim at without the key. The engine's verifier then decides.
                BN_is_zero(z.ref) == 0,
                EC_POINT_set_Jprojective_coordinates_GFp(p256, partial.ref, x.ref, y.ref, z.ref, ctx) == 1,
                // Setting Jacobian coordinates checks nothing: a point off the curve is refused here, so a
                // library's wrong answer can only be a point of the curve (which x(R) ≡ r then judges).
                EC_POINT_is_on_curve(p256, partial.ref, ctx) == 1,
                verifier.completes(partial.ref, u2: u2[k].ref, r: r[k].ref, table: table)
            else { continue }
            ok |= 1 << UInt8(k)
        }
        return ok
    }

    /// s⁻¹ (Montgomery form) for every lane in `lanes` from one inversion: the running products
    /// s₁, s₁s₂, …, their product's inverse, then back down the lanes (Montgomery's trick).
    private func inverses(of lanes: UInt8) -> Bool {
        var previous = -1
        for k in 0..<Self.width where lanes & (1 << UInt8(k)) != 0 {
            guard BN_to_montgomery(sMontgomery[k].ref, s[k].ref, montgomery, ctx) == 1,
                previous < 0
                    ? BN_copy(products[k].ref, sMontgomery[k].ref) != nil
                    : BN_mod_mul_montgomery(
                        products[k].ref, products[previous].ref, sMontgomery[k].ref, montgomery, ctx) == 1
            else { return false }
            previous = k
        }
        // products[last] = P·R with P = ∏s (each s ≠ 0 mod n, n prime: P ≠ 0). Its plain inverse is
        // P⁻¹·R⁻¹; times R³ in Montgomery arithmetic, P⁻¹·R, the Montgomery form of P⁻¹.
        guard P256OrderInverse.invert(products[previous].ref, into: inverse.ref, scratch: scratch),
            BN_mod_mul_montgomery(inverse.ref, inverse.ref, rCubed.ref, montgomery, ctx) == 1
        else { return false }
        var k = previous
        while true {
            var j = k - 1
            while j >= 0 && lanes & (1 << UInt8(j)) == 0 { j -= 1 }
            guard j >= 0 else { return BN_copy(sInverse[k].ref, inverse.ref) != nil }
            // inverse = (s₁…s_k)⁻¹: times s₁…s_j gives s_k⁻¹; times s_k, (s₁…s_j)⁻¹ for the next
            // lane down.
            guard BN_mod_mul_montgomery(sInverse[k].ref, inverse.ref, products[j].ref, montgomery, ctx) == 1,
                BN_mod_mul_montgomery(inverse.ref, inverse.ref, sMontgomery[k].ref, montgomery, ctx) == 1
            else { return false }
            k = j
        }
    }

    /// Writes `value` (below 2²⁵⁶) as lane `k`'s scalar: four host-order 64-bit words, low word first.
    private func setScalar(lane k: Int, _ value: OpaquePointer) -> Bool {
        guard
            BN_bn2lebinpad(value, UnsafeMutableRawPointer(scalars + 4 * k).assumingMemoryBound(to: UInt8.self), 32)
                == 32
        else { return false }
        // The bytes were written little-endian; crypto_mb reads host-order words.
        for i in 0..<4 { scalars[4 * k + i] = UInt64(littleEndian: scalars[4 * k + i]) }
        return true
    }

    private func limbsToBignum(_ limbs: UnsafeMutablePointer<UInt64>, _ out: OpaquePointer) -> Bool {
        for i in 0..<4 { scratch.storeBytes(of: limbs[i].littleEndian, toByteOffset: 8 * i, as: UInt64.self) }
        return BN_lebin2bn(scratch.assumingMemoryBound(to: UInt8.self), 32, out) != nil
    }

    // MARK: the known-answer self-test

    /// Eight lanes of fixed-base multiplication on fixed scalars (odd, even, a low byte of 0, 1 and
    /// n − 1), then a partial group of three, each point compared with OpenSSL's k·G. Nil when every lane
    /// agrees; otherwise what went wrong. `corruptExpectedLane` alters one expected point (tests of the
    /// fallback).
    package static func selfTest(_ library: CryptoMBLibrary, corruptExpectedLane: Int? = nil) -> String? {
        guard let verification = P256MultiBufferTableVerification(library: library) else {
            return "\(library.path) lacks mbx_nistp256_ecpublic_key_mb8"
        }
        let p256 = P256Group.shared
        guard let ctx = BN_CTX_new() else { return "OpenSSL could not allocate a BN_CTX" }
        defer { BN_CTX_free(ctx) }
        let k = LaneBignum(), expected = LanePoint(), computed = LanePoint()
        let (ex, ey, cx, cy) = (LaneBignum(), LaneBignum(), LaneBignum(), LaneBignum())
        var scalars: [[UInt8]] = []
        for lane in 0..<8 {
            var bytes = [UInt8](repeating: 0, count: 32)
            for i in 0..<32 { bytes[i] = UInt8((lane * 53 + i * 29 + 7) & 0x7F) }
            // Odd and even scalars, and low bytes of 0 (the fixed-base code takes the scalar in windows
            // from the low end): a library wrong only for some scalars has more ways to show it.
            bytes[31] = lane == 2 ? 0 : lane % 2 == 1 ? bytes[31] | 1 : bytes[31] & 0xFE
            scalars.append(bytes)
        }
        scalars[4] = p256.orderBytes
        scalars[4][31] -= 1  // n − 1: the largest scalar
        scalars[7] = [UInt8](repeating: 0, count: 32)
        scalars[7][31] = 1  // 1: G itself
        for group in [Array(0..<8), [1, 4, 6]] {
            for lane in 0..<8 {
                let bytes = scalars[group.contains(lane) ? lane : group[0]]
                guard BN_bin2bn(bytes, 32, k.ref) != nil, verification.setScalar(lane: lane, k.ref) else {
                    return "OpenSSL could not write a fixed scalar"
                }
            }
            let status = verification.fixedBase(
                verification.xPointers, verification.yPointers, verification.zPointers, verification.scalarPointers,
                nil)
            for lane in group {
                guard (status >> (4 * UInt32(lane))) & 0xF == 0 else {
                    return "mbx_nistp256_ecpublic_key_mb8 refused fixed lane \(lane) of a \(group.count)-lane group"
                }
                guard BN_bin2bn(scalars[lane], 32, k.ref) != nil,
                    EC_POINT_mul(p256.ref, expected.ref, k.ref, nil, nil, ctx) == 1,
                    EC_POINT_get_affine_coordinates(p256.ref, expected.ref, ex.ref, ey.ref, ctx) == 1,
                    verification.limbsToBignum(verification.xs + 4 * lane, verification.x.ref),
                    verification.limbsToBignum(verification.ys + 4 * lane, verification.y.ref),
                    verification.limbsToBignum(verification.zs + 4 * lane, verification.z.ref),
                    EC_POINT_set_Jprojective_coordinates_GFp(
                        p256.ref, computed.ref, verification.x.ref, verification.y.ref, verification.z.ref, ctx) == 1,
                    EC_POINT_get_affine_coordinates(p256.ref, computed.ref, cx.ref, cy.ref, ctx) == 1
                else { return "OpenSSL could not read fixed lane \(lane)'s point" }
                if lane == corruptExpectedLane {
                    guard BN_add_word(ex.ref, 1) == 1 else { return "BN_add_word failed" }
                }
                guard BN_cmp(ex.ref, cx.ref) == 0, BN_cmp(ey.ref, cy.ref) == 0 else {
                    return
                        "mbx_nistp256_ecpublic_key_mb8 lane \(lane) of a \(group.count)-lane group is not OpenSSL's k·G"
                }
            }
        }
        OpenSSLErrors.clear()
        return nil
    }
}
