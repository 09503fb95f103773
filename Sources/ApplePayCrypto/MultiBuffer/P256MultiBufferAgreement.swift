// P-256 ECDH eight lanes at a time through crypto_mb: the merchant scalar in crypto_mb's limb format,
// a lane set of peers already validated by OpenSSL, padding for partial groups, and the self-test.
internal import CShims

/// A merchant's P-256 private scalar as crypto_mb reads it (four little-endian 64-bit limbs), in its
/// own allocation wiped on release. Immutable after creation, so lanes may share one.
package final class P256MultiBufferScalar: @unchecked Sendable {
    // Sendable: never written after init.
    let limbs: UnsafeMutablePointer<UInt64>

    private init?(_ d: OpaquePointer) {
        defer { BN_clear_free(d) }
        limbs = .allocate(capacity: 4)
        limbs.initialize(repeating: 0, count: 4)
        // 0 < d < n, as OpenSSL's own key checks; crypto_mb reduces nothing.
        guard BN_is_zero(d) == 0, BN_is_negative(d) == 0, BN_cmp(d, P256Group.shared.order) < 0,
            BN_bn2lebinpad(d, UnsafeMutableRawPointer(limbs).assumingMemoryBound(to: UInt8.self), 32) == 32
        else {
            SecureMemory.wipe(limbs, count: 32)
            limbs.deallocate()
            return nil
        }
        // Limbs are little-endian words; on a big-endian host the bytes would need swapping.
        for i in 0..<4 { limbs[i] = UInt64(littleEndian: limbs[i]) }
    }

    deinit {
        SecureMemory.wipe(limbs, count: 32)
        limbs.deallocate()
    }

    /// The scalar of an EC P-256 private key; nil for other keys and for keys that do not export
    /// their scalar (a key held in an HSM: that merchant keeps the OpenSSL path).
    package static func of(_ key: EVPKey) -> P256MultiBufferScalar? {
        guard key.kind == .ec, key.curveName == "prime256v1" else { return nil }
        var d: OpaquePointer? = nil
        guard EVP_PKEY_get_bn_param(key.ref, "priv", &d) == 1, let d else {
            OpenSSLErrors.clear()
            return nil
        }
        return P256MultiBufferScalar(d)
    }

    /// A scalar from 32 big-endian bytes (the self-test's fixed keys).
    package static func fromBigEndian(_ bytes: [UInt8]) -> P256MultiBufferScalar? {
        guard let d = BN_secure_new() else { return nil }
        guard BN_bin2bn(bytes, Int32(bytes.count), d) != nil else {
            BN_clear_free(d)
            return nil
        }
        return P256MultiBufferScalar(d)
    }
}

/// One lane group's ECDH state: up to eight (scalar, peer point, output) triples, run in one
/// `mbx_nistp256_ecdh_mb8` call. Owned by one batch lane; never shared between threads.
package final class P256MultiBufferAgreement {
    /// Operations per call.
    package static let width = 8

    private let library: CryptoMBLibrary
    /// Eight scalars' limbs, copied in per group and wiped after every call.
    private let keys = UnsafeMutablePointer<UInt64>.allocate(capacity: 32)
    /// Peer coordinates (public): X, Y as limbs; Z = 1 (affine).
    private let xs = UnsafeMutablePointer<UInt64>.allocate(capacity: 32)
    private let ys = UnsafeMutablePointer<UInt64>.allocate(capacity: 32)
    private let zs = UnsafeMutablePointer<UInt64>.allocate(capacity: 32)
    /// Where padding lanes write: their result is a copy of a real lane's secret, so wiped too.
    private let discard = UnsafeMutablePointer<UInt8>.allocate(capacity: 32 * 8)
    private let keyPointers = UnsafeMutablePointer<UnsafePointer<UInt64>?>.allocate(capacity: 8)
    private let xPointers = UnsafeMutablePointer<UnsafePointer<UInt64>?>.allocate(capacity: 8)
    private let yPointers = UnsafeMutablePointer<UnsafePointer<UInt64>?>.allocate(capacity: 8)
    private let zPointers = UnsafeMutablePointer<UnsafePointer<UInt64>?>.allocate(capacity: 8)
    private let outPointers = UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>.allocate(capacity: 8)
    private var used: UInt8 = 0

    package init(library: CryptoMBLibrary) {
        self.library = library
        keys.initialize(repeating: 0, count: 32)
        xs.initialize(repeating: 0, count: 32)
        ys.initialize(repeating: 0, count: 32)
        zs.initialize(repeating: 0, count: 32)
        discard.initialize(repeating: 0, count: 32 * 8)
        for k in 0..<8 {
            keyPointers[k] = UnsafePointer(keys + 4 * k)
            xPointers[k] = UnsafePointer(xs + 4 * k)
            yPointers[k] = UnsafePointer(ys + 4 * k)
            zs[4 * k] = 1
            zPointers[k] = UnsafePointer(zs + 4 * k)
            outPointers[k] = discard + 32 * k
        }
    }

    deinit {
        wipe()
        for buffer in [keys, xs, ys, zs] { buffer.deallocate() }
        discard.deallocate()
        keyPointers.deallocate()
        xPointers.deallocate()
        yPointers.deallocate()
        zPointers.deallocate()
        outPointers.deallocate()
    }

    /// Puts one operation in lane `k`: the 32-byte secret x(d·P) will be written (big-endian, leading
    /// zeros kept) to `out`. `peer` must be an uncompressed point OpenSSL has already accepted
    /// (on the curve, coordinates < p, not infinity): crypto_mb is never the one to judge a point.
    /// False, and the lane left empty, when `peer` is not 65 bytes starting 04.
    package func set(
        lane k: Int, scalar: P256MultiBufferScalar, peer: UnsafeRawBufferPointer, into out: UnsafeMutablePointer<UInt8>
    ) -> Bool {
        precondition((0..<Self.width).contains(k))
        guard peer.count == 65, peer[0] == 0x04 else { return false }
        (keys + 4 * k).update(from: scalar.limbs, count: 4)
        Self.limbs(fromBigEndian: UnsafeRawBufferPointer(rebasing: peer[1..<33]), into: xs + 4 * k)
        Self.limbs(fromBigEndian: UnsafeRawBufferPointer(rebasing: peer[33..<65]), into: ys + 4 * k)
        outPointers[k] = out
        used |= 1 << k
        return true
    }

    /// Runs every lane set since the last run in one call; lanes not set are padded with a copy of a
    /// set lane whose output goes to a wiped discard buffer. Returns the bit mask of set lanes whose
    /// secret crypto_mb computed (status OK); a lane missing from it must take the OpenSSL path.
    /// Scalars and padding outputs are wiped before returning.
    package func run() -> UInt8 {
        let lanes = used
        defer { wipe() }
        guard lanes != 0 else { return 0 }
        let model = lanes.trailingZeroBitCount
        for k in 0..<Self.width where lanes & (1 << k) == 0 {
            (keys + 4 * k).update(from: keys + 4 * model, count: 4)
            (xs + 4 * k).update(from: xs + 4 * model, count: 4)
            (ys + 4 * k).update(from: ys + 4 * model, count: 4)
            outPointers[k] = discard + 32 * k
        }
        let status = library.ecdh(outPointers, keyPointers, xPointers, yPointers, zPointers, nil)
        var ok: UInt8 = 0
        for k in 0..<Self.width where lanes & (1 << k) != 0 && (status >> (4 * UInt32(k))) & 0xF == 0 {
            ok |= 1 << k
        }
        return ok
    }

    private func wipe() {
        SecureMemory.wipe(keys, count: 32 * 8)
        SecureMemory.wipe(discard, count: 32 * 8)
        for k in 0..<8 { outPointers[k] = discard + 32 * k }
        used = 0
    }

    static func limbs(fromBigEndian bytes: UnsafeRawBufferPointer, into limbs: UnsafeMutablePointer<UInt64>) {
        for i in 0..<4 {
            var word: UInt64 = 0
            for j in 0..<8 { word = word << 8 | UInt64(bytes[(3 - i) * 8 + j]) }
            limbs[i] = word
        }
    }

    // MARK: the known-answer self-test

    /// Eight lanes of ECDH on fixed scalars and points, then a partial group of three lanes, each
    /// secret compared with OpenSSL's for the same inputs. Nil when every lane matches; otherwise what
    /// went wrong. `corruptExpectedLane` flips a bit of one expected secret (tests of the fallback).
    static func selfTest(_ library: CryptoMBLibrary, corruptExpectedLane: Int? = nil) -> String? {
        let agreement = P256MultiBufferAgreement(library: library)
        let reference = P256PointAgreement()
        var cases: [(scalar: P256MultiBufferScalar, peer: [UInt8], expected: [UInt8])] = []
        for k in 0..<8 {
            // Fixed, unremarkable scalars below n (first byte < 0x80), distinct per lane.
            let d = (0..<32).map { i in UInt8((k * 53 + i * 29 + 7) & 0x7F) | (i == 31 ? 1 : 0) }
            let e = (0..<32).map { i in UInt8((k * 17 + i * 71 + 3) & 0x7F) | (i == 31 ? 1 : 0) }
            guard let scalar = P256MultiBufferScalar.fromBigEndian(d),
                let referenceScalar = d.withUnsafeBytes({ P256PrivateScalar.fromBigEndian($0) }),
                let peerKey = e.withUnsafeBytes({ P256PrivateScalar.fromBigEndian($0) })?.evpKey(),
                let peer = peerKey.p256PublicPoint()
            else { return "OpenSSL could not build the fixed inputs" }
            var expected = [UInt8](repeating: 0, count: 32)
            let derived =
                peer.withUnsafeBytes { reference.setPeer($0) }
                && expected.withUnsafeMutableBytes { reference.sharedSecret(referenceScalar, into: $0) }
            guard derived else { return "OpenSSL could not compute the reference secrets" }
            if k == corruptExpectedLane { expected[31] ^= 1 }
            cases.append((scalar, peer, expected))
        }
        OpenSSLErrors.clear()
        let outputs = UnsafeMutablePointer<UInt8>.allocate(capacity: 32 * 8)
        defer {
            SecureMemory.wipe(outputs, count: 32 * 8)
            outputs.deallocate()
        }
        for group in [Array(0..<8), [1, 4, 6]] {
            outputs.initialize(repeating: 0xA5, count: 32 * 8)
            for k in group {
                _ = cases[k].peer.withUnsafeBytes {
                    agreement.set(lane: k, scalar: cases[k].scalar, peer: $0, into: outputs + 32 * k)
                }
            }
            let ok = agreement.run()
            for k in group {
                guard ok & (1 << k) != 0 else {
                    return "mbx_nistp256_ecdh_mb8 refused lane \(k) of a \(group.count)-lane group"
                }
                let matches = cases[k].expected.withUnsafeBytes { expected in
                    SecureMemory.constantTimeEquals(
                        expected, UnsafeRawBufferPointer(start: outputs + 32 * k, count: 32))
                }
                guard matches else {
                    return "lane \(k) of a \(group.count)-lane group differs from OpenSSL's shared secret"
                }
            }
        }
        return nil
    }
}
