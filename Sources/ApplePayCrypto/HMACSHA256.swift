// HMAC-SHA256 (RFC 2104) and HKDF-SHA256 (RFC 5869) over the lane's own SHA-256 state, with the
// padded keys and the pseudorandom key in memory this object owns and wipes after every use.
internal import CShims

/// A lane's HMAC-SHA256: `start(key:)`, any number of `update`s, `finish(into:)`. Never shared
/// between threads at once. Built on `DigestContext` (OpenSSL's SHA-256 assembly without the EVP
/// layer), so a MAC costs no heap allocation.
package final class HMACSHA256 {
    package static let byteCount = 32
    private static let blockSize = 64
    private let digest = DigestContext()
    /// The key XOR opad (64 bytes), the inner digest (32), and HKDF's PRK and previous block (32 + 32).
    private let scratch = UnsafeMutableRawPointer.allocate(byteCount: 192, alignment: 16)
    private var outerPad: UnsafeMutablePointer<UInt8> { scratch.assumingMemoryBound(to: UInt8.self) }
    private var inner: UnsafeMutablePointer<UInt8> { (scratch + 64).assumingMemoryBound(to: UInt8.self) }
    private var prk: UnsafeMutablePointer<UInt8> { (scratch + 96).assumingMemoryBound(to: UInt8.self) }
    private var block: UnsafeMutablePointer<UInt8> { (scratch + 128).assumingMemoryBound(to: UInt8.self) }

    package init() {}

    deinit {
        SecureMemory.wipe(scratch, count: 192)
        scratch.deallocate()
    }

    /// Starts a MAC under `key` (at most 64 bytes: every key this engine uses is 32).
    package func start(key: UnsafeRawBufferPointer) {
        precondition(key.count <= Self.blockSize, "HMAC keys over 64 bytes are not used here")
        let pad = outerPad
        for i in 0..<Self.blockSize { pad[i] = (i < key.count ? key[i] : 0) ^ 0x36 }
        digest.start()
        digest.update(UnsafeRawBufferPointer(start: pad, count: Self.blockSize))
        // ipad → opad in place: 0x36 ^ 0x5c.
        for i in 0..<Self.blockSize { pad[i] ^= 0x36 ^ 0x5C }
    }

    package func update(_ bytes: UnsafeRawBufferPointer) { digest.update(bytes) }

    /// Writes the 32-byte MAC into `out` and wipes the key material.
    package func finish(into out: UnsafeMutablePointer<UInt8>) {
        digest.finish(into: inner)
        digest.update(UnsafeRawBufferPointer(start: outerPad, count: Self.blockSize))
        digest.update(UnsafeRawBufferPointer(start: inner, count: 32))
        digest.finish(into: out)
        SecureMemory.wipe(scratch, count: 96)
    }

    /// HKDF-SHA256 with `salt`, input keying material given in two parts (`ikm1 ‖ ikm2`, so that a
    /// point and a shared secret need not be copied together) and `info`, into `out` (at most 64
    /// bytes, all this engine needs).
    package func hkdf(
        salt: UnsafeRawBufferPointer, ikm1: UnsafeRawBufferPointer, ikm2: UnsafeRawBufferPointer,
        info: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer
    ) {
        precondition(out.count <= 64)
        start(key: salt)
        update(ikm1)
        update(ikm2)
        finish(into: prk)
        let prkBytes = UnsafeRawBufferPointer(start: prk, count: 32)
        var produced = 0
        var counter: UInt8 = 1
        while produced < out.count {
            start(key: prkBytes)
            if counter > 1 { update(UnsafeRawBufferPointer(start: block, count: 32)) }
            update(info)
            withUnsafeBytes(of: counter) { update($0) }
            finish(into: block)
            let take = min(32, out.count - produced)
            (out.baseAddress! + produced).copyMemory(from: block, byteCount: take)
            produced += take
            counter += 1
        }
        SecureMemory.wipe(scratch + 96, count: 96)
    }
}
