// What the engine made of one request: the payment or the error, with what a front end logs beside it.

/// The outcome of one request body (a token, or an envelope with its payment request) through
/// ``PaymentTokenDecryptor/decryptRequest(_:at:)-(DataProtocol,_)``.
///
/// Every front end writes it with ``write(_:into:)``: the batch line, the service's bodies and the
/// CLI's output are projections of one writer, and an error has one shape everywhere.
public struct DecryptionOutcome: Sendable {
    /// The token's `header.transactionId` as lower-case hex, when the token parsed.
    public let transactionId: String?
    /// The label of the loaded merchant whose key the token names, when it parsed and one does
    /// (labels are not secret: for logs and metrics).
    public let merchantLabel: String?
    /// The verified, decrypted (and, with a payment request, checked) payment, or why it was refused.
    public var result: Result<DecryptedPayment, ApplePayError>

    /// An outcome as the engine delivers it (front ends that refuse a request before the engine sees
    /// it, e.g. a body over its limit, make their own).
    public init(transactionId: String?, merchantLabel: String? = nil, result: Result<DecryptedPayment, ApplePayError>) {
        self.transactionId = transactionId
        self.merchantLabel = merchantLabel
        self.result = result
    }

    /// A request refused before any token was read.
    public init(refusing error: ApplePayError) {
        self.init(transactionId: nil, result: .failure(error))
    }
}
