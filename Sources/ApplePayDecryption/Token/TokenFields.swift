// Where each decoded token field sits inside one contiguous buffer: the shape both the general
// parser and the in-place scanner produce, and the only shape the verification pipeline reads.
internal import ApplePayCrypto

package struct TokenFields {
    package var version: PaymentToken.Version
    /// Ciphertext followed by the 16-byte GCM tag.
    package var data: Range<Int>
    /// The detached CMS SignedData (BER).
    package var signature: Range<Int>
    /// EC_v1: the 91-byte ephemeral SPKI; RSA_v1: the wrapped key. First input of the message digest.
    package var keyMaterial: Range<Int>
    package var publicKeyHash: Range<Int>
    /// The transaction identifier as lower-case hex text (whatever case the token used) and decoded.
    package var transactionIdText: Range<Int>
    package var transactionId: Range<Int>
    package var applicationData: Range<Int>?
    /// The wrapper's `paymentMethod.network` and `.type`. NOT covered by Apple's signature.
    package var paymentMethod = PaymentMethodText()

    /// EC_v1: the 65-byte uncompressed point at the end of the SPKI.
    package var ephemeralPoint: Range<Int> { keyMaterial.upperBound - 65..<keyMaterial.upperBound }
}

/// `paymentMethod.network` and `.type` as the token reader found them beside `paymentData`.
package struct PaymentMethodText {
    package enum Text: Equatable {
        case absent
        /// The decoded string, in the token's buffer.
        case text(Range<Int>)
        /// Present but not a string (or paymentMethod not an object): never matches anything.
        case invalid
    }
    package var network: Text = .absent
    package var type: Text = .absent
}

/// A token's fields over the buffer that holds them.
package struct TokenView {
    package let bytes: UnsafeRawBufferPointer
    package let fields: TokenFields

    package subscript(_ range: Range<Int>) -> UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: bytes[range]) }

    package var transactionIdString: String { String(decoding: self[fields.transactionIdText], as: UTF8.self) }

    /// SHA-256 of `ephemeralPublicKey|wrappedKey ‖ data ‖ transactionId ‖ applicationData`: what the
    /// CMS `messageDigest` attribute must equal.
    func signedContentDigest(into out: UnsafeMutablePointer<UInt8>, digest: DigestContext) {
        digest.start()
        digest.update(self[fields.keyMaterial])
        digest.update(self[fields.data])
        digest.update(self[fields.transactionId])
        if let applicationData = fields.applicationData { digest.update(self[applicationData]) }
        digest.finish(into: out)
    }
}

/// Validates decoded fields the same way on every path, and appends the decoding helpers.
enum TokenFieldRules {
    /// DER prefix of a P-256 SubjectPublicKeyInfo; the 65-byte uncompressed point follows it.
    static let p256SPKIPrefix: [UInt8] = [
        0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x02, 0x01,
        0x06, 0x08, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00,
    ]

    static func isP256SPKI(_ bytes: ArraySlice<UInt8>) -> Bool {
        bytes.count == 91 && bytes.starts(with: p256SPKIPrefix) && bytes[bytes.startIndex + 26] == 0x04
    }

    static let wrappedKeyLengths = 128...1024
    /// Every real token carries 32 bytes. Shorter ones are allowed, longer ones not: with
    /// applicationData fixed at 32 bytes, a cap of 32 makes the unframed split of
    /// `transactionId ‖ applicationData` unique (with 64, T‖A could pose as a transactionId alone).
    static let transactionIdLengths = 1...32
    /// Apple documents applicationData as the SHA-256 of the request's applicationData.
    static let applicationDataLength = 32
}
