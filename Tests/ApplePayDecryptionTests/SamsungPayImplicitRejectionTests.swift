// The two primitives under Samsung Pay's reader and unwrap, tested directly: the constant-time PKCS#1
// v1.5 selection (a 16-byte key from a valid block, the fallback from anything else) and strict base64url.
import ApplePayCrypto
import ApplePayDecryption
import Testing

@Suite("Samsung Pay primitives")
struct SamsungPayImplicitRejectionTests {
    let key: [UInt8] = (0..<16).map { UInt8(0xA0 + $0) }
    let fallback = [UInt8](repeating: 0x5A, count: 16)

    /// `00 02 PS 00 M` for a modulus of `k` bytes.
    func block(k: Int = 256, message: [UInt8]? = nil, _ change: (inout [UInt8]) -> Void = { _ in }) -> [UInt8] {
        let m = message ?? key
        var block = [UInt8](repeating: 0x11, count: k)
        block[0] = 0
        block[1] = 2
        block[k - m.count - 1] = 0
        block.replaceSubrange(k - m.count..<k, with: m)
        change(&block)
        return block
    }

    func select(_ block: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 16)
        block.withUnsafeBytes { b in
            fallback.withUnsafeBytes { f in
                out.withUnsafeMutableBytes { RSAPKCS1Decoding.selectKey(block: b, fallback: f, into: $0) }
            }
        }
        return out
    }

    @Test("a valid encoding of a 16-byte key gives the key, at every modulus size from the smallest")
    func validBlockGivesKey() {
        for k in [RSAPKCS1Decoding.minimumModulusBytes, 128, 256, 384, 512] {
            #expect(select(block(k: k)) == key)
        }
    }

    @Test(
        "any other block gives the fallback: first byte, block type, zero in the padding, no separator, another length")
    func invalidBlocksGiveFallback() {
        #expect(select(block { $0[0] = 1 }) == fallback)
        #expect(select(block { $0[1] = 1 }) == fallback)
        #expect(select(block { $0[1] = 0x82 }) == fallback)
        #expect(select(block { $0[2] = 0 }) == fallback)
        #expect(select(block { $0[238] = 0 }) == fallback)
        #expect(select(block { $0[239] = 0x11 }) == fallback)
        #expect(select(block(message: key + [1])) == fallback)
        #expect(select(block(message: Array(key.dropLast()))) == fallback)
        #expect(select([UInt8](repeating: 0, count: 256)) == fallback)
    }

    @Test("base64url is strict: its alphabet only, no padding, no length of 4n+1, canonical last symbol")
    func strictBase64URL() {
        func decode(_ text: String) -> [UInt8]? { Array(text.utf8).withUnsafeBytes { Base64URL.decode($0) } }
        #expect(decode("AQID") == [1, 2, 3])
        #expect(decode("AQI") == [1, 2])
        #expect(decode("AQ") == [1])
        #expect(decode("-_8") == [0xFB, 0xFF])
        #expect(decode("AQ==") == nil)
        #expect(decode("A+8") == nil)
        #expect(decode("A/8") == nil)
        #expect(decode("AQIDB") == nil)
        #expect(decode("AR") == nil)
        #expect(decode("AQJ") == nil)
        #expect(decode("AQ I") == nil)
        for bytes in [[UInt8](), [0], [0xFF, 0xEE], [1, 2, 3, 4, 5]] {
            #expect(decode(Base64URL.encode(bytes)) == bytes)
        }
    }
}
