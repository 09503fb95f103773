// What the front door made of one body: the wallet it was read as, the payment or the error, and what a
// front end logs beside it. Batch slots, C ABI results and service responses hold this one value.

/// The outcome of one request body through ``WalletDecryptor``.
///
/// Every front end writes it with ``write(_:into:)``: the batch line, the service's bodies and the
/// CLI's output are projections of one writer, and an error has one shape everywhere.
public struct WalletOutcome: Sendable {
    /// The wallet the body was read as (by shape: ``Wallet/of(_:)``).
    public let wallet: Wallet
    /// The id the result shows: an Apple Pay token's `header.transactionId` as lower-case hex when the
    /// token parsed, a Google Pay payment's `messageId`.
    public let transactionId: String?
    /// For logs and metrics: the label of the Apple Pay merchant whose key the token names, or the
    /// Google Pay recipient id the message verified for (not secret).
    public let merchantLabel: String?
    /// The verified, decrypted (and, with a payment request, checked) payment, or why it was refused.
    public private(set) var result: Result<WalletPayment, ApplePayError>
    /// The keys of a token that verified and decrypted, kept when a judge refuses it as a replay (its
    /// payment is then gone from `result`); nil for every other outcome.
    public private(set) var replayIdentity: ReplayIdentity?

    /// An outcome as the engine delivers it.
    public init(
        wallet: Wallet, transactionId: String?, merchantLabel: String? = nil,
        result: Result<WalletPayment, ApplePayError>
    ) {
        self.wallet = wallet
        self.transactionId = transactionId
        self.merchantLabel = merchantLabel
        self.result = result
        self.replayIdentity = (try? result.get())?.replayIdentity
    }

    /// A body refused before any token was read (front ends refuse bodies over their limit with it).
    public init(refusing error: ApplePayError, wallet: Wallet = .applePay) {
        self.init(wallet: wallet, transactionId: nil, result: .failure(error))
    }

    /// The payment, nil for a refusal.
    public var payment: WalletPayment? { try? result.get() }

    /// The refusal, nil for a payment.
    public var error: ApplePayError? {
        if case let .failure(error) = result { return error }
        return nil
    }

    /// `ok` or the error code.
    public var code: String { error?.code.rawValue ?? "ok" }

    /// A verified token whose keys an earlier token claimed: ``ApplePayError/Code/replayedTransaction``,
    /// naming this wallet's field; `claimedBy` is the earlier item's index where the judge numbers items.
    /// The payment goes; ``replayIdentity`` stays.
    public mutating func refuseAsReplay(claimedBy firstClaim: Int?) {
        result = .failure(.replayed(claimedBy: firstClaim, wallet: wallet))
    }

    /// Replaces a payment with a front end's own refusal (a payment request the service checks, say).
    public mutating func refuse(_ error: ApplePayError) {
        result = .failure(error)
        replayIdentity = nil
    }

    /// Appends the outcome to `out` in `projection`'s shape (the engine's one result writer).
    public func write(_ projection: ResultProjection, into out: SensitiveBuffer) {
        ResultWriter.write(transactionId: transactionId, result: result, as: projection, into: out)
    }
}
