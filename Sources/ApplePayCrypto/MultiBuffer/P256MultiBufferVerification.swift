// ECDSA P-256 verification eight at a time through crypto_mb: the benchmark's multi-buffer floor and
// the measurement behind keeping the engine's fixed-key table for verification.
internal import CShims

/// Eight (signature, digest, public key) lanes verified in one `mbx_nistp256_ecdsa_verify_mb8` call.
/// Public data only. Owned by one thread.
package final class P256MultiBufferVerification {
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

    /// Nil when the library lacks the function.
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

    /// Lane `k`: a DER ECDSA-Sig-Value, a 32-byte digest and an uncompressed public point. False when
    /// the signature is not a DER SEQUENCE of two INTEGERs of at most 32 significant bytes.
    package func set(lane k: Int, signature der: [UInt8], digest: [UInt8], publicPoint point: [UInt8]) -> Bool {
        guard (0..<8).contains(k), digest.count == 32, point.count == 65, point[0] == 0x04 else { return false }
        var at = 0
        func integer(into out: UnsafeMutablePointer<UInt8>) -> Bool {
            guard at + 2 <= der.count, der[at] == 0x02 else { return false }
            let length = Int(der[at + 1])
            var start = at + 2
            let end = start + length
            guard end <= der.count else { return false }
            while start < end - 1, der[start] == 0 { start += 1 }
            guard end - start <= 32 else { return false }
            out.initialize(repeating: 0, count: 32)
            for (i, byte) in der[start..<end].enumerated() { out[32 - (end - start) + i] = byte }
            at = end
            return true
        }
        guard der.count >= 2, der[0] == 0x30 else { return false }
        at = 2
        guard integer(into: rs + 32 * k), integer(into: ss + 32 * k) else { return false }
        for i in 0..<32 { digests[32 * k + i] = digest[i] }
        for i in 0..<4 {
            var x: UInt64 = 0, y: UInt64 = 0
            for j in 0..<8 {
                x = x << 8 | UInt64(point[1 + (3 - i) * 8 + j])
                y = y << 8 | UInt64(point[33 + (3 - i) * 8 + j])
            }
            xs[4 * k + i] = x
            ys[4 * k + i] = y
        }
        return true
    }

    /// Verifies the eight lanes as set; the bit mask of lanes whose signature verified.
    package func run() -> UInt8 {
        let status = verify(rPointers, sPointers, digestPointers, xPointers, yPointers, nil, nil)
        var ok: UInt8 = 0
        for k in 0..<8 where (status >> (4 * UInt32(k))) & 0xF == 0 { ok |= 1 << k }
        return ok
    }
}
