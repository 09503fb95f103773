// A token parsed once and kept: its decoded, size-checked fields (read by `TokenReader`, the one
// reader of the token format, which the engine also uses in place for every decrypt).
#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// The decoded `paymentData` of an Apple Pay token, parsed and size-checked but not yet verified.
///
/// Parse once when a token is looked at before it is decrypted (to route it by
/// ``publicKeyHash``, say), then pass it to ``PaymentTokenDecryptor/decrypt(_:at:)-(PaymentToken,_)``.
public struct PaymentToken: Sendable {
    /// The token format: `version`.
    public enum Version: String, Sendable {
        /// ECDH P-256, AES-256-GCM.
        case ecV1 = "EC_v1"
        /// RSA-OAEP, AES-128-GCM.
        case rsaV1 = "RSA_v1"
    }

    /// Every decoded field, back to back; `fields` says where each one is.
    let storage: [UInt8]
    let fields: TokenFields

    /// The token's `version`.
    public var version: Version { fields.version }
    /// The transaction identifier as lower-case hex, whatever case the token used.
    public var transactionId: String { String(decoding: storage[fields.transactionIdText], as: UTF8.self) }
    /// `header.publicKeyHash`: SHA-256 of the merchant certificate's public key (32 bytes).
    public var publicKeyHash: [UInt8] { Array(storage[fields.publicKeyHash]) }

    func withView<R, E: Error>(_ body: (TokenView) throws(E) -> R) throws(E) -> R {
        try storage.withBytes { (bytes) throws(E) -> R in try body(TokenView(bytes: bytes, fields: fields)) }
    }

    /// Parses raw token bytes in any accepted form: bare `paymentData`; a whole `PKPaymentToken`;
    /// `{"paymentData": …}`; Apple Pay JS `{"token": {…}}`; or the `paymentData` JSON base64-encoded
    /// (as the whole input, as a JSON string, or as the value of `paymentData`).
    ///
    /// - Throws: ``ApplePayError`` with ``ApplePayError/Code/malformedToken`` or
    ///   ``ApplePayError/Code/unsupportedVersion``.
    public static func parse(_ bytes: [UInt8]) throws(ApplePayError) -> PaymentToken {
        var storage: [UInt8] = []
        let fields = try bytes.withBytes { (raw) throws(ApplePayError) in try parse(raw, into: &storage) }
        return PaymentToken(storage: storage, fields: fields)
    }

    /// Parses a token from any `DataProtocol` (`Data`, `ByteBuffer` views…); contiguous bytes are read
    /// in place.
    ///
    /// - Throws: ``ApplePayError``, as ``parse(_:)-([UInt8])``.
    public static func parse(_ bytes: some DataProtocol) throws(ApplePayError) -> PaymentToken {
        var storage: [UInt8] = []
        if let fields = try bytes.withContiguousBytesIfAvailable({ (raw) throws(ApplePayError) in
            try parse(raw, into: &storage)
        }) {
            return PaymentToken(storage: storage, fields: fields)
        }
        if bytes.regions.count == 1, let region = bytes.regions.first {
            let fields = try region.withBytes { (raw) throws(ApplePayError) in try parse(raw, into: &storage) }
            return PaymentToken(storage: storage, fields: fields)
        }
        let gathered: [UInt8] = Array(bytes)
        return try parse(gathered)
    }

    /// Parses into `storage` (cleared first, capacity kept).
    static func parse(_ bytes: UnsafeRawBufferPointer, into storage: inout [UInt8]) throws(ApplePayError) -> TokenFields
    {
        try TokenReader.read(bytes, into: &storage)
    }
}
