// A token parsed once and kept: its decoded, size-checked fields (read by `TokenReader`, the one
// reader of the token format, which the engine also uses in place for every decrypt).

/// The decoded `paymentData` of an Apple Pay token.
public struct PaymentToken: Sendable {
    public enum Version: String, Sendable {
        case ecV1 = "EC_v1"
        case rsaV1 = "RSA_v1"
    }

    /// Every decoded field, back to back; `fields` says where each one is.
    let storage: [UInt8]
    let fields: TokenFields

    public var version: Version { fields.version }
    /// The transaction identifier as lower-case hex, whatever case the token used.
    public var transactionId: String { String(decoding: storage[fields.transactionIdText], as: UTF8.self) }
    public var publicKeyHash: [UInt8] { Array(storage[fields.publicKeyHash]) }

    func withView<R, E: Error>(_ body: (TokenView) throws(E) -> R) throws(E) -> R {
        // Result carries the typed error through `withUnsafeBytes`, which only rethrows `any Error`.
        try storage.withUnsafeBytes { bytes in Result { () throws(E) -> R in try body(TokenView(bytes: bytes, fields: fields)) } }.get()
    }

    /// Parses raw token bytes in any accepted form: bare `paymentData`; a whole `PKPaymentToken`;
    /// `{"paymentData": …}`; Apple Pay JS `{"token": {…}}`; or the `paymentData` JSON base64-encoded
    /// (as the whole input, as a JSON string, or as the value of `paymentData`).
    public static func parse(_ bytes: [UInt8]) throws(ApplePayError) -> PaymentToken {
        var storage: [UInt8] = []
        let fields = try bytes.withUnsafeBytes { raw in Result { () throws(ApplePayError) in try parse(raw, into: &storage) } }.get()
        return PaymentToken(storage: storage, fields: fields)
    }

    /// Parses into `storage` (cleared first, capacity kept).
    static func parse(_ bytes: UnsafeRawBufferPointer, into storage: inout [UInt8]) throws(ApplePayError) -> TokenFields {
        try TokenReader.read(bytes, into: &storage)
    }
}
