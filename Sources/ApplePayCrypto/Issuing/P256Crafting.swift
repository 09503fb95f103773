// What only a maker of test signatures needs: arithmetic modulo P-256's order n and on its points,
// on 32-byte big-endian values, so that a test can choose u1, u2, r or s of a signature and compare
// the verifiers' verdicts (the multi-buffer lanes' differential tests). Not constant time: test
// material only.
internal import CShims

/// Scalars mod n and x-coordinates of P-256 points, as 32 big-endian bytes. Every value a method
/// returns is reduced below n. Owned by one thread.
package final class P256Crafting {
    private let ctx: OpaquePointer
    private let a = LaneBignum(), b = LaneBignum(), c = LaneBignum()
    /// `reduce`'s own: the operations reduce their inputs into `a` and `b` first.
    private let input = LaneBignum(), reduced = LaneBignum()
    private let point = LanePoint(), q = LanePoint()

    package init() {
        guard let ctx = BN_CTX_new() else { fatalError("OpenSSL could not allocate a BN_CTX") }
        self.ctx = ctx
    }

    deinit { BN_CTX_free(ctx) }

    /// n, the group order.
    package var order: [UInt8] { P256Group.shared.orderBytes }

    /// `value` (any length, big-endian) mod n.
    package func reduce(_ value: [UInt8]) -> [UInt8] {
        load(value, input)
        check(BN_nnmod(reduced.ref, input.ref, P256Group.shared.order, ctx))
        return bytes(reduced)
    }

    /// `w` mod n.
    package func word(_ w: UInt) -> [UInt8] {
        check(BN_set_word(a.ref, w))
        check(BN_nnmod(c.ref, a.ref, P256Group.shared.order, ctx))
        return bytes(c)
    }

    /// 2^k mod n.
    package func powerOfTwo(_ k: Int) -> [UInt8] {
        check(BN_set_word(a.ref, 1))
        check(BN_lshift(a.ref, a.ref, Int32(k)))
        check(BN_nnmod(c.ref, a.ref, P256Group.shared.order, ctx))
        return bytes(c)
    }

    package func add(_ x: [UInt8], _ y: [UInt8]) -> [UInt8] { binary(x, y, BN_mod_add) }
    package func subtract(_ x: [UInt8], _ y: [UInt8]) -> [UInt8] { binary(x, y, BN_mod_sub) }
    package func multiply(_ x: [UInt8], _ y: [UInt8]) -> [UInt8] { binary(x, y, BN_mod_mul) }
    package func negate(_ x: [UInt8]) -> [UInt8] { subtract(word(0), x) }

    /// x⁻¹ mod n (x ≠ 0 mod n).
    package func inverse(_ x: [UInt8]) -> [UInt8] {
        load(reduce(x), a)
        check(BN_mod_inverse(c.ref, a.ref, P256Group.shared.order, ctx) == nil ? 0 : 1)
        return bytes(c)
    }

    package func isZero(_ x: [UInt8]) -> Bool { reduce(x).allSatisfy { $0 == 0 } }

    /// A scalar in [1, n) from `generator` (reproducible from a seeded generator).
    package func random<G: RandomNumberGenerator>(using generator: inout G) -> [UInt8] {
        while true {
            let value = (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }
            if !isZero(value), value.lexicographicallyPrecedes(order) { return value }
        }
    }

    /// e + n when it is below 2²⁵⁶ (a digest ≥ n that ECDSA reads as e); nil otherwise.
    package func plusOrder(_ e: [UInt8]) -> [UInt8]? {
        load(e, a)
        check(BN_add(c.ref, a.ref, P256Group.shared.order))
        return BN_num_bits(c.ref) <= 256 ? bytes(c) : nil
    }

    /// The uncompressed public point d·G (65 bytes) of a scalar d.
    package func publicKey(_ d: [UInt8]) -> [UInt8] {
        let group = P256Group.shared.ref
        load(d, a)
        check(EC_POINT_mul(group, point.ref, a.ref, nil, nil, ctx))
        var out = [UInt8](repeating: 0, count: 65)
        precondition(EC_POINT_point2oct(group, point.ref, POINT_CONVERSION_UNCOMPRESSED, &out, 65, ctx) == 65)
        return out
    }

    /// x(s·G + t·Q) mod n, with Q an uncompressed point (nil: no Q term); nil at infinity.
    package func x(of s: [UInt8]?, plus t: [UInt8]? = nil, times publicKey: [UInt8]? = nil) -> [UInt8]? {
        let group = P256Group.shared.ref
        if let s { load(s, a) }
        if let t { load(t, b) }
        if let publicKey {
            check(EC_POINT_oct2point(group, q.ref, publicKey, publicKey.count, ctx))
        }
        check(
            EC_POINT_mul(
                group, point.ref, s == nil ? nil : a.ref, publicKey == nil ? nil : q.ref, t == nil ? nil : b.ref, ctx))
        guard EC_POINT_is_at_infinity(group, point.ref) == 0 else { return nil }
        check(EC_POINT_get_affine_coordinates(group, point.ref, c.ref, nil, ctx))
        return reduce(bytes(c))
    }

    /// A DER ECDSA-Sig-Value of r and s (big-endian, any length) with minimal INTEGERs.
    package static func der(r: [UInt8], s: [UInt8]) -> [UInt8] {
        func integer(_ value: [UInt8]) -> [UInt8] {
            var v = Array(value.drop(while: { $0 == 0 }))
            if v.isEmpty { v = [0] }
            if v[0] & 0x80 != 0 { v.insert(0, at: 0) }
            return [0x02, UInt8(v.count)] + v
        }
        let body = integer(r) + integer(s)
        return [0x30, UInt8(body.count)] + body
    }

    private typealias Operation = (
        OpaquePointer?, OpaquePointer?, OpaquePointer?, OpaquePointer?, OpaquePointer?
    ) -> Int32

    private func binary(_ x: [UInt8], _ y: [UInt8], _ operation: Operation) -> [UInt8] {
        load(reduce(x), a)
        load(reduce(y), b)
        check(operation(c.ref, a.ref, b.ref, P256Group.shared.order, ctx))
        return bytes(c)
    }

    private func load(_ value: [UInt8], _ into: LaneBignum) {
        precondition(BN_bin2bn(value, Int32(value.count), into.ref) != nil, "OpenSSL could not read a value")
    }

    private func bytes(_ value: LaneBignum) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        precondition(BN_bn2binpad(value.ref, &out, 32) == 32, "a value is wider than 32 bytes")
        return out
    }

    private func check(_ result: Int32) { precondition(result == 1, "OpenSSL failed: \(OpenSSLErrors.drain() ?? "")") }
}
