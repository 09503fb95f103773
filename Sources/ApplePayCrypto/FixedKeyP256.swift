// P-256 below the EVP layer: ECDSA verification with a precomputed table for one signer's key
// (u2·Q becomes a fixed-base multiplication like u1·G), and ECDH through EC_POINT_mul; each with
// objects a lane allocates once and reuses. The EVP paths (PKeyContext) stay as the reference.
//
// Why the low-level EC calls (deprecated ones included; figures from callgrind and the benchmark's
// stage profile on this machine, OpenSSL 3.0.19, Benchmarks/RESULTS.md): EVP_PKEY_verify costs ~832 K
// instructions per P-256 verification (38 heap allocations in the signature stage) because it treats
// Q as a new point every time; with a table for Q (EC_GROUP_precompute_mult, deprecated, ~150 KB, built
// once per trusted leaf) the same verification costs ~265 K (9 allocations). ECDH through EVP (point
// import + derive) allocated 41 times per token in key agreement; EC_POINT_mul on preallocated points
// allocates 4 times there, inside OpenSSL, for the same ~650 K instructions.
internal import CShims

/// The standard P-256 group and its constants, created once and only read afterwards:
/// EC_POINT_mul, EC_POINT_add and friends never write to the group they are given.
final class P256Group: @unchecked Sendable {
    // Sendable: immutable after creation; OpenSSL only reads a group during arithmetic.
    let ref: OpaquePointer
    let order: OpaquePointer
    let field: OpaquePointer
    /// p − n: x(R) mod n can equal r for x(R) = r + n only when r < p − n.
    let fieldMinusOrder: OpaquePointer
    /// n as 32 big-endian bytes: signatures' r and s are checked against it before any BIGNUM is made.
    let orderBytes: [UInt8]

    static let shared = P256Group()

    private init() {
        guard let group = EC_GROUP_new_by_curve_name(NID_X9_62_prime256v1), let order = EC_GROUP_get0_order(group),
            let field = BN_new(), let difference = BN_new(), let ctx = BN_CTX_new()
        else { fatalError("OpenSSL cannot set up P-256") }
        defer { BN_CTX_free(ctx) }
        guard EC_GROUP_get_curve(group, field, nil, nil, ctx) == 1, BN_sub(difference, field, order) == 1 else {
            fatalError("OpenSSL cannot read P-256's parameters")
        }
        var orderBytes = [UInt8](repeating: 0, count: 32)
        guard BN_bn2binpad(order, &orderBytes, 32) == 32 else { fatalError("OpenSSL cannot write P-256's order") }
        (ref, self.order, self.field, fieldMinusOrder, self.orderBytes) = (group, order, field, difference, orderBytes)
    }
}

/// A signer's P-256 public key Q with a precomputed table of its multiples: a copy of the P-256
/// group whose generator is Q. Built only for leaves whose chain verified to the trust anchor (about
/// 282 M instructions, tens of milliseconds, and 150 KB each), so a sender cannot make us build
/// tables. Immutable after construction.
package final class P256SignerTable: @unchecked Sendable {
    // Sendable: the group is only read after `precompute`.
    fileprivate let group: OpaquePointer

    private init(group: OpaquePointer) { self.group = group }
    deinit { EC_GROUP_free(group) }

    /// The table for an EC P-256 key (nil for other keys, or when OpenSSL fails).
    package static func build(for key: EVPKey) -> P256SignerTable? {
        guard let point = key.p256PublicPoint() else { return nil }
        return point.withUnsafeBytes { build(uncompressedPoint: $0) }
    }

    /// The table for Q given as an uncompressed X9.62 point (65 bytes, 04 ‖ X ‖ Y) on P-256.
    package static func build(uncompressedPoint point: UnsafeRawBufferPointer) -> P256SignerTable? {
        guard point.count == 65, point[0] == 0x04 else { return nil }
        let shared = P256Group.shared
        guard let ctx = BN_CTX_new() else { return nil }
        defer { BN_CTX_free(ctx) }
        guard let group = EC_GROUP_dup(shared.ref) else { return nil }
        guard let q = EC_POINT_new(group) else {
            EC_GROUP_free(group)
            return nil
        }
        defer { EC_POINT_free(q) }
        // EC_GROUP_precompute_mult is deprecated in OpenSSL 3 with no replacement; it is what makes
        // u2·Q a fixed-base multiplication (~265 K instructions per verification instead of ~832 K).
        guard EC_POINT_oct2point(group, q, point.baseAddress?.assumingMemoryBound(to: UInt8.self), 65, ctx) == 1,
            EC_POINT_is_on_curve(group, q, ctx) == 1, EC_POINT_is_at_infinity(group, q) == 0,
            EC_GROUP_set_generator(group, q, shared.order, BN_value_one()) == 1,
            EC_GROUP_precompute_mult(group, ctx) == 1
        else {
            EC_GROUP_free(group)
            return nil
        }
        return P256SignerTable(group: group)
    }
}

/// s⁻¹ mod n for P-256's group order n, by the binary extended Euclidean algorithm on four 64-bit
/// limbs. Variable-time, which is right for s: it is part of a public signature. Measured with
/// callgrind: about 40 K instructions against about 157 K for BN_mod_inverse, whose generic BIGNUM
/// steps cost more than the arithmetic (the only public order inverse; OpenSSL's fast one for P-256,
/// ecp_nistz256_inv_mod_ord, is internal).
struct P256OrderInverse {
    /// 256-bit unsigned integer, little-endian limbs.
    struct U256: Equatable {
        var w0: UInt64, w1: UInt64, w2: UInt64, w3: UInt64

        var isZero: Bool { (w0 | w1 | w2 | w3) == 0 }
        var isOne: Bool { w0 == 1 && (w1 | w2 | w3) == 0 }
        var isEven: Bool { w0 & 1 == 0 }

        /// self >> 1, with `top` shifted into bit 255.
        mutating func shiftRight(top: UInt64 = 0) {
            w0 = (w0 >> 1) | (w1 << 63)
            w1 = (w1 >> 1) | (w2 << 63)
            w2 = (w2 >> 1) | (w3 << 63)
            w3 = (w3 >> 1) | (top << 63)
        }

        /// self += other; returns the carry out.
        @discardableResult
        mutating func add(_ other: U256) -> UInt64 {
            var carry: UInt64 = 0
            (w0, carry) = Self.addWithCarry(w0, other.w0, carry)
            (w1, carry) = Self.addWithCarry(w1, other.w1, carry)
            (w2, carry) = Self.addWithCarry(w2, other.w2, carry)
            (w3, carry) = Self.addWithCarry(w3, other.w3, carry)
            return carry
        }

        /// self −= other; returns the borrow out.
        @discardableResult
        mutating func subtract(_ other: U256) -> UInt64 {
            var borrow: UInt64 = 0
            (w0, borrow) = Self.subtractWithBorrow(w0, other.w0, borrow)
            (w1, borrow) = Self.subtractWithBorrow(w1, other.w1, borrow)
            (w2, borrow) = Self.subtractWithBorrow(w2, other.w2, borrow)
            (w3, borrow) = Self.subtractWithBorrow(w3, other.w3, borrow)
            return borrow
        }

        static func >= (a: U256, b: U256) -> Bool {
            if a.w3 != b.w3 { return a.w3 > b.w3 }
            if a.w2 != b.w2 { return a.w2 > b.w2 }
            if a.w1 != b.w1 { return a.w1 > b.w1 }
            return a.w0 >= b.w0
        }

        @inline(__always)
        static func addWithCarry(_ a: UInt64, _ b: UInt64, _ carry: UInt64) -> (UInt64, UInt64) {
            let (s1, c1) = a.addingReportingOverflow(b)
            let (s2, c2) = s1.addingReportingOverflow(carry)
            return (s2, (c1 ? 1 : 0) | (c2 ? 1 : 0))
        }

        @inline(__always)
        static func subtractWithBorrow(_ a: UInt64, _ b: UInt64, _ borrow: UInt64) -> (UInt64, UInt64) {
            let (d1, b1) = a.subtractingReportingOverflow(b)
            let (d2, b2) = d1.subtractingReportingOverflow(borrow)
            return (d2, (b1 ? 1 : 0) | (b2 ? 1 : 0))
        }
    }

    /// n, the order of the P-256 base point.
    static let order = U256(
        w0: 0xf3b9_cac2_fc63_2551, w1: 0xbce6_faad_a717_9e84, w2: 0xffff_ffff_ffff_ffff, w3: 0xffff_ffff_0000_0000)

    /// a⁻¹ mod n for 0 < a < n; nil otherwise.
    static func inverse(_ a: U256) -> U256? {
        let n = order
        guard !a.isZero, !(a >= n) else { return nil }
        // Invariants: x1·a ≡ u and x2·a ≡ v (mod n), with 0 ≤ x1, x2 < n. gcd(a, n) = 1 (n is prime),
        // so u and v never reach 0 and one of them reaches 1.
        var u = a, v = n
        var x1 = U256(w0: 1, w1: 0, w2: 0, w3: 0), x2 = U256(w0: 0, w1: 0, w2: 0, w3: 0)
        func halve(_ x: inout U256) {
            if x.isEven { x.shiftRight() } else { let carry = x.add(n); x.shiftRight(top: carry) }
        }
        while !u.isOne && !v.isOne {
            guard !u.isZero, !v.isZero else { return nil }
            while u.isEven { u.shiftRight(); halve(&x1) }
            while v.isEven { v.shiftRight(); halve(&x2) }
            if u >= v {
                u.subtract(v)
                if x1.subtract(x2) != 0 { x1.add(n) }
            } else {
                v.subtract(u)
                if x2.subtract(x1) != 0 { x2.add(n) }
            }
        }
        return u.isOne ? x1 : x2
    }

    /// w = s⁻¹ mod n between BIGNUMs, through a lane's 32-byte scratch.
    static func invert(_ s: OpaquePointer, into w: OpaquePointer, scratch: UnsafeMutableRawPointer) -> Bool {
        guard BN_bn2lebinpad(s, scratch.assumingMemoryBound(to: UInt8.self), 32) == 32 else { return false }
        let a = U256(
            w0: UInt64(littleEndian: scratch.loadUnaligned(fromByteOffset: 0, as: UInt64.self)),
            w1: UInt64(littleEndian: scratch.loadUnaligned(fromByteOffset: 8, as: UInt64.self)),
            w2: UInt64(littleEndian: scratch.loadUnaligned(fromByteOffset: 16, as: UInt64.self)),
            w3: UInt64(littleEndian: scratch.loadUnaligned(fromByteOffset: 24, as: UInt64.self)))
        guard let inverse = inverse(a) else { return false }
        scratch.storeBytes(of: inverse.w0.littleEndian, toByteOffset: 0, as: UInt64.self)
        scratch.storeBytes(of: inverse.w1.littleEndian, toByteOffset: 8, as: UInt64.self)
        scratch.storeBytes(of: inverse.w2.littleEndian, toByteOffset: 16, as: UInt64.self)
        scratch.storeBytes(of: inverse.w3.littleEndian, toByteOffset: 24, as: UInt64.self)
        return BN_lebin2bn(scratch.assumingMemoryBound(to: UInt8.self), 32, w) != nil
    }
}

/// A lane's ECDSA P-256 verifier for signers with a table. Never shared between threads at once.
package final class P256FixedKeyVerifier {
    /// How x(R) is compared with r. `.affine` converts R to affine coordinates (one field inversion);
    /// `.jacobian` compares r·Z² with X instead (no inversion).
    package enum Comparison: Sendable { case affine, jacobian }
    /// How s⁻¹ mod n is computed: `P256OrderInverse` (four 64-bit limbs) or BN_mod_inverse.
    package enum Inversion: Sendable { case limbs, openSSL }

    private let ctx: OpaquePointer
    private let r = LaneBignum(), s = LaneBignum(), e = LaneBignum(), w = LaneBignum()
    private let u1 = LaneBignum(), u2 = LaneBignum(), x = LaneBignum(), z = LaneBignum(), t = LaneBignum()
    private let sum = LanePoint(), signerPart = LanePoint()
    private let scratch = UnsafeMutableRawPointer.allocate(byteCount: 32, alignment: 8)
    package var comparison: Comparison
    package var inversion: Inversion

    /// The defaults are the variants that measured fastest (Benchmarks/RESULTS.md).
    package init(comparison: Comparison = .jacobian, inversion: Inversion = .limbs) {
        guard let ctx = BN_CTX_new() else { fatalError("OpenSSL could not allocate a BN_CTX") }
        self.ctx = ctx
        self.comparison = comparison
        self.inversion = inversion
    }

    deinit {
        BN_CTX_free(ctx)
        scratch.deallocate()
    }

    /// Verifies a DER ECDSA signature over a 32-byte SHA-256 digest with the signer's table.
    /// R = u1·G + u2·Q with u1 = e·s⁻¹, u2 = r·s⁻¹ (both fixed-base); accepted iff R ≠ ∞ and
    /// x(R) ≡ r (mod n).
    package func verify(
        _ signature: UnsafeRawBufferPointer, overDigest digest: UnsafeRawBufferPointer, with table: P256SignerTable
    ) -> Bool {
        Self.parseSignature(signature, r: r.ref, s: s.ref)
            && verifyParsed(overDigest: digest, with: table)
    }

    /// The arithmetic of `verify` on the (r, s) just parsed.
    private func verifyParsed(overDigest digest: UnsafeRawBufferPointer, with table: P256SignerTable) -> Bool {
        let p256 = P256Group.shared
        guard digest.count == 32, let digestBase = digest.baseAddress,
            BN_bin2bn(digestBase.assumingMemoryBound(to: UInt8.self), 32, e.ref) != nil,
            inversion == .limbs
                ? P256OrderInverse.invert(s.ref, into: w.ref, scratch: scratch)
                : BN_mod_inverse(w.ref, s.ref, p256.order, ctx) != nil,
            BN_mod_mul(u1.ref, e.ref, w.ref, p256.order, ctx) == 1,
            BN_mod_mul(u2.ref, r.ref, w.ref, p256.order, ctx) == 1
        else { return false }
        // u1 = 0 when e ≡ 0 (mod n): the fixed-base code is not asked for 0·G.
        if BN_is_zero(u1.ref) == 1 {
            guard EC_POINT_set_to_infinity(p256.ref, sum.ref) == 1 else { return false }
        } else {
            guard EC_POINT_mul(p256.ref, sum.ref, u1.ref, nil, nil, ctx) == 1 else { return false }
        }
        return completes(sum.ref, u2: u2.ref, r: r.ref, table: table)
    }

    /// The end of a verification: R = `partial` + u2·Q with Q's table (`partial` is u1·G, from OpenSSL
    /// here or from crypto_mb's fixed-base lanes), accepted iff R ≠ ∞ and x(R) ≡ r (mod n). `partial`
    /// is overwritten with R.
    func completes(_ partial: OpaquePointer, u2: OpaquePointer, r: OpaquePointer, table: P256SignerTable) -> Bool {
        let p256 = P256Group.shared
        guard EC_POINT_mul(table.group, signerPart.ref, u2, nil, nil, ctx) == 1,
            EC_POINT_add(p256.ref, partial, partial, signerPart.ref, ctx) == 1,
            EC_POINT_is_at_infinity(p256.ref, partial) == 0
        else { return false }
        switch comparison {
        case .affine:
            guard EC_POINT_get_affine_coordinates(p256.ref, partial, x.ref, nil, ctx) == 1 else { return false }
            if BN_cmp(x.ref, p256.order) >= 0 { guard BN_sub(x.ref, x.ref, p256.order) == 1 else { return false } }
            return BN_cmp(x.ref, r) == 0
        case .jacobian:
            // X / Z² ≡ r or r + n (mod p); the second only when r + n < p. Deprecated call: it reads
            // the Jacobian coordinates, the only way to skip the field inversion of
            // get_affine_coordinates: ~265 K instructions per verification instead of ~300 K.
            guard EC_POINT_get_Jprojective_coordinates_GFp(p256.ref, partial, x.ref, nil, z.ref, ctx) == 1,
                BN_mod_sqr(z.ref, z.ref, p256.field, ctx) == 1,
                BN_mod_mul(t.ref, r, z.ref, p256.field, ctx) == 1
            else { return false }
            if BN_cmp(t.ref, x.ref) == 0 { return true }
            guard BN_cmp(r, p256.fieldMinusOrder) < 0,
                BN_add(t.ref, r, p256.order) == 1,
                BN_mod_mul(t.ref, t.ref, z.ref, p256.field, ctx) == 1
            else { return false }
            return BN_cmp(t.ref, x.ref) == 0
        }
    }

    /// Strict DER ECDSA-Sig-Value: SEQUENCE { INTEGER r, INTEGER s } in short-form lengths, minimal
    /// positive integers, nothing after the sequence, and 0 < r, s < n. BER (long-form or indefinite
    /// lengths, padded integers), negative values, zero, values ≥ n and trailing bytes are refused.
    static func parseSignature(_ der: UnsafeRawBufferPointer, r: OpaquePointer, s: OpaquePointer) -> Bool {
        guard let (rBytes, sBytes) = signatureIntegers(der),
            let base = der.baseAddress?.assumingMemoryBound(to: UInt8.self)
        else { return false }
        return BN_bin2bn(base + rBytes.lowerBound, Int32(rBytes.count), r) != nil
            && BN_bin2bn(base + sBytes.lowerBound, Int32(sBytes.count), s) != nil
    }

    /// Where r's and s's big-endian bytes (without a sign byte, at most 32 each) are in `der`, when it
    /// is a signature `parseSignature` accepts; nil otherwise. The rules are all here, on the bytes,
    /// so that the engine's verifier and the multi-buffer lanes (which need no BIGNUM) read a
    /// signature the same way.
    static func signatureIntegers(_ der: UnsafeRawBufferPointer) -> (r: Range<Int>, s: Range<Int>)? {
        // 8 bytes at least (two one-byte integers); 72 at most (two 33-byte integers): so every
        // DER length here is short form, and a long-form length byte (0x81…) can never match.
        guard der.count >= 8, der.count <= 72, der[0] == 0x30, Int(der[1]) == der.count - 2 else { return nil }
        var offset = 2
        func integer() -> Range<Int>? {
            guard offset + 2 <= der.count, der[offset] == 0x02 else { return nil }
            let length = Int(der[offset + 1])
            guard length >= 1, length <= 33, offset + 2 + length <= der.count else { return nil }
            let first = der[offset + 2]
            guard first & 0x80 == 0 else { return nil }  // negative
            // zero, or a padding byte not needed
            if first == 0, length == 1 || der[offset + 3] & 0x80 == 0 { return nil }
            let value = (first == 0 ? offset + 3 : offset + 2)..<(offset + 2 + length)
            offset += 2 + length
            return value
        }
        guard let r = integer(), let s = integer(), offset == der.count else { return nil }
        // 0 < value < n. A minimal positive integer's first byte (after any sign byte) is never 0, so
        // the value is not zero; it is below n when it has fewer than 32 bytes, or 32 bytes that
        // compare below n's (big-endian: the first byte that differs decides).
        let order = P256Group.shared.orderBytes
        func inRange(_ value: Range<Int>) -> Bool {
            guard der[value.lowerBound] != 0, value.count <= 32 else { return false }
            if value.count < 32 { return true }
            for i in 0..<32 where der[value.lowerBound + i] != order[i] { return der[value.lowerBound + i] < order[i] }
            return false  // r or s = n
        }
        return inRange(r) && inRange(s) ? (r, s) : nil
    }
}

/// A merchant's P-256 private scalar d as a BIGNUM flagged constant-time, wiped when released.
/// Immutable after creation: EC_POINT_mul only reads its scalar, so lanes may share one.
package final class P256PrivateScalar: @unchecked Sendable {
    // Sendable: never written after init.
    fileprivate let ref: OpaquePointer

    private init(ref: OpaquePointer) {
        BN_set_flags(ref, BN_FLG_CONSTTIME)
        self.ref = ref
    }

    deinit { BN_clear_free(ref) }

    /// The scalar of an EC P-256 private key; nil for other keys.
    package static func of(_ key: EVPKey) -> P256PrivateScalar? {
        guard key.kind == .ec, key.curveName == "prime256v1" else { return nil }
        var d: OpaquePointer? = nil
        guard EVP_PKEY_get_bn_param(key.ref, "priv", &d) == 1, let d else {
            OpenSSLErrors.clear()
            return nil
        }
        return validated(d)
    }

    /// A scalar from big-endian bytes (at most 32 significant bytes; tests start from raw keys).
    package static func fromBigEndian(_ bytes: UnsafeRawBufferPointer) -> P256PrivateScalar? {
        guard let d = BN_secure_new() else { return nil }
        guard BN_bin2bn(bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), Int32(bytes.count), d) != nil else {
            BN_clear_free(d)
            return nil
        }
        return validated(d)
    }

    /// 0 < d < n, or nothing.
    private static func validated(_ d: OpaquePointer) -> P256PrivateScalar? {
        guard BN_is_zero(d) == 0, BN_is_negative(d) == 0, BN_cmp(d, P256Group.shared.order) < 0 else {
            BN_clear_free(d)
            return nil
        }
        return P256PrivateScalar(ref: d)
    }

    /// The matching EVP key (reference path for tests): the public point is d·G.
    package func evpKey() -> EVPKey? {
        let group = P256Group.shared.ref
        guard let ctx = BN_CTX_new(), let point = EC_POINT_new(group) else { return nil }
        defer {
            BN_CTX_free(ctx)
            EC_POINT_free(point)
        }
        var encoded = [UInt8](repeating: 0, count: 65)
        guard EC_POINT_mul(group, point, ref, nil, nil, ctx) == 1,
            EC_POINT_point2oct(group, point, POINT_CONVERSION_UNCOMPRESSED, &encoded, 65, ctx) == 65,
            // Imported through a key manager fetched by name (OpenSSLGlobalState).
            let key = OpenSSLGlobalState.reading({
                encoded.withUnsafeBufferPointer { CShims_EVP_PKEY_fromP256Private(ref, $0.baseAddress, 65) }
            })
        else { return nil }
        return EVPKey(takingOwnership: key)
    }
}

/// A lane's ECDH on P-256 without the EVP layer: the peer point decoded into a preallocated
/// EC_POINT (on-curve check kept), d·P into another, x(d·P) written straight into the caller's
/// wiped buffer; the result point and the BIGNUM for x are cleared after each use.
package final class P256PointAgreement {
    private let ctx: OpaquePointer
    private let peer = LanePoint(), product = LanePoint()
    private let x = LaneBignum()

    package init() {
        guard let ctx = BN_CTX_new() else { fatalError("OpenSSL could not allocate a BN_CTX") }
        self.ctx = ctx
    }

    deinit { BN_CTX_free(ctx) }

    /// Decodes the peer's point: an uncompressed X9.62 point (65 bytes) on P-256, or false.
    package func setPeer(_ point: UnsafeRawBufferPointer) -> Bool {
        let group = P256Group.shared.ref
        hasPeer =
            point.count == 65 && point[0] == 0x04
            && EC_POINT_oct2point(group, peer.ref, point.baseAddress?.assumingMemoryBound(to: UInt8.self), 65, ctx) == 1
            && (Self.decoderChecksCurve || EC_POINT_is_on_curve(group, peer.ref, ctx) == 1)
        return hasPeer
    }

    /// Whether this libcrypto's point decoder refuses points off the curve by itself. OpenSSL 1.1.1
    /// and 3.x do: EC_POINT_oct2point goes through EC_POINT_set_affine_coordinates, which runs
    /// EC_POINT_is_on_curve and fails (callgrind shows the call on every token), so a second explicit
    /// check costs 2.8 K instructions per token for nothing. Probed once rather than assumed: P-256's
    /// generator must decode and the same point with y + 1 must not; otherwise every point is checked
    /// explicitly, as before.
    static let decoderChecksCurve: Bool = {
        let group = P256Group.shared.ref
        guard let ctx = BN_CTX_new(), let point = EC_POINT_new(group) else { return false }
        defer {
            EC_POINT_free(point)
            BN_CTX_free(ctx)
        }
        var generator: [UInt8] = [
            0x04,
            0x6B, 0x17, 0xD1, 0xF2, 0xE1, 0x2C, 0x42, 0x47, 0xF8, 0xBC, 0xE6, 0xE5, 0x63, 0xA4, 0x40, 0xF2,
            0x77, 0x03, 0x7D, 0x81, 0x2D, 0xEB, 0x33, 0xA0, 0xF4, 0xA1, 0x39, 0x45, 0xD8, 0x98, 0xC2, 0x96,
            0x4F, 0xE3, 0x42, 0xE2, 0xFE, 0x1A, 0x7F, 0x9B, 0x8E, 0xE7, 0xEB, 0x4A, 0x7C, 0x0F, 0x9E, 0x16,
            0x2B, 0xCE, 0x33, 0x57, 0x6B, 0x31, 0x5E, 0xCE, 0xCB, 0xB6, 0x40, 0x68, 0x37, 0xBF, 0x51, 0xF5,
        ]
        let decodesGenerator =
            EC_POINT_oct2point(group, point, generator, 65, ctx) == 1 && EC_POINT_is_on_curve(group, point, ctx) == 1
        generator[64] = 0xF6  // y + 1: not on the curve
        let refusesOffCurve = EC_POINT_oct2point(group, point, generator, 65, ctx) != 1
        OpenSSLErrors.clear()
        return decodesGenerator && refusesOffCurve
    }()

    private var hasPeer = false

    /// The peer point as loaded, uncompressed (for the EVP fallback).
    package func peerPoint() -> [UInt8]? {
        guard hasPeer else { return nil }
        var out = [UInt8](repeating: 0, count: 65)
        guard EC_POINT_point2oct(P256Group.shared.ref, peer.ref, POINT_CONVERSION_UNCOMPRESSED, &out, 65, ctx) == 65
        else { return nil }
        return out
    }

    /// Writes the 32-byte shared secret x(d·P) (leading zero bytes kept) into `out` for the peer P
    /// loaded by `setPeer`; false when no valid peer is loaded or the arithmetic fails.
    package func sharedSecret(_ scalar: P256PrivateScalar, into out: UnsafeMutableRawBufferPointer) -> Bool {
        let group = P256Group.shared.ref
        guard hasPeer, out.count >= 32, let outBase = out.baseAddress else { return false }
        defer {
            BN_clear(x.ref)
            // Overwrites the coordinates of d·P (EC_POINT has no clear-in-place; copying a public
            // point over it replaces every word of X, Y and Z).
            _ = EC_POINT_copy(product.ref, peer.ref)
        }
        guard EC_POINT_mul(group, product.ref, nil, peer.ref, scalar.ref, ctx) == 1,
            EC_POINT_is_at_infinity(group, product.ref) == 0,
            EC_POINT_get_affine_coordinates(group, product.ref, x.ref, nil, ctx) == 1
        else { return false }
        return BN_bn2binpad(x.ref, outBase.assumingMemoryBound(to: UInt8.self), 32) == 32
    }
}

extension EVPKey {
    /// The uncompressed public point (65 bytes) of an EC P-256 key; nil for other keys.
    package func p256PublicPoint() -> [UInt8]? {
        guard kind == .ec, curveName == "prime256v1" else { return nil }
        var point = [UInt8](repeating: 0, count: 65)
        var length = 0
        guard EVP_PKEY_get_octet_string_param(ref, "encoded-pub-key", &point, 65, &length) == 1, length == 65,
            point[0] == 0x04
        else {
            OpenSSLErrors.clear()
            return nil
        }
        return point
    }
}
