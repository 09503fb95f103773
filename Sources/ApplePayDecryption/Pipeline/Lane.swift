// One thread of work's reusable state, composed of small owned contexts, each handed only to the
// step that uses it; and the pool that lends lanes to concurrent callers of a shared decryptor.
internal import ApplePayCrypto
import Synchronization

/// Never shared between threads at the same time; `LanePool` or a batch worker owns each one.
package final class Lane: @unchecked Sendable {
    // Sendable only to travel through the pool's lock: one thread at a time uses a given instance.
    /// Where a token's fields are decoded (the token reader); reused from token to token.
    var tokenStorage: [UInt8] = []
    /// SHA-256 of the signed attributes and of the signed content, and their scratch (step 3).
    let digests = DigestWorkspace()
    /// Verify contexts of trusted signers (step 3).
    let verifiers = SignerVerifiers()
    /// The ephemeral key and the merchants' private-key contexts (key agreement).
    package let keyAgreement = MerchantContexts()
    /// Sessions on the PKCS#11 tokens of merchants whose key is in a token (key agreement).
    let tokenSessions = TokenKeySessions()
    /// AES-GCM (opening the data).
    let cipher = CipherContext()
    /// Google Pay's HKDF, HMAC, AES-CTR and table verifier; made on the first Google Pay token.
    lazy var googlePay = GooglePayLaneState()
    /// Samsung Pay's raw RSA contexts, AES-128-GCM and wiped key buffers; made on the first Samsung Pay token.
    lazy var samsungPay = SamsungPayLaneState()

    package init() {
        tokenStorage.reserveCapacity(16 << 10)
    }
}

/// A reusable SHA-256 context and room for two 32-byte digests.
final class DigestWorkspace {
    let context = DigestContext()
    private let scratch = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: 64)

    deinit { scratch.deallocate() }

    func withScratch<R>(_ body: (UnsafeMutableBufferPointer<UInt8>, UnsafeMutableBufferPointer<UInt8>) -> R) -> R {
        body(
            UnsafeMutableBufferPointer(rebasing: scratch[0..<32]),
            UnsafeMutableBufferPointer(rebasing: scratch[32..<64]))
    }
}

/// A small free list of lanes, so concurrent callers of a shared decryptor each get their own
/// contexts without allocating new ones per token.
final class LanePool: Sendable {
    private let free = Mutex<[Lane]>([])
    private let limit: Int

    init(limit: Int = 64) { self.limit = limit }

    func withLane<R, E: Error>(_ body: (Lane) throws(E) -> R) throws(E) -> R {
        let lane = free.withLock { $0.popLast() } ?? Lane()
        defer { free.withLock { list in if list.count < limit { list.append(lane) } } }
        return try body(lane)
    }
}
