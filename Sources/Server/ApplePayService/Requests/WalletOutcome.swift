// What one token came to, for either wallet: the Apple Pay engine's outcome or the Google Pay engine's
// result, claimed in the one replay store and written by the one result writer.
import ApplePayDecryption

/// One token's outcome, Apple Pay or Google Pay (the engine tells them apart by shape).
enum WalletOutcome: Sendable {
    case applePay(DecryptionOutcome)
    case googlePay(Result<GooglePayment, ApplePayError>)

    /// A request refused before any token was read.
    init(refusing error: ApplePayError) { self = .applePay(DecryptionOutcome(refusing: error)) }

    /// Apple Pay: `header.transactionId`; Google Pay: the message's `messageId`.
    var transactionId: String? {
        switch self {
        case let .applePay(outcome): outcome.transactionId
        case let .googlePay(result): (try? result.get())?.messageId
        }
    }

    /// For logs and metrics: the Apple Pay merchant's label, or the Google Pay recipient id the message
    /// verified for.
    var merchantLabel: String? {
        switch self {
        case let .applePay(outcome): outcome.merchantLabel
        case let .googlePay(result): (try? result.get())?.recipientId
        }
    }

    /// What a verified token claims in the replay store (nil for a refusal).
    var replayIdentity: ReplayIdentity? {
        switch self {
        case let .applePay(outcome): (try? outcome.result.get())?.replayIdentity
        case let .googlePay(result): (try? result.get())?.replayIdentity
        }
    }

    /// `ok` or the error code.
    var code: String {
        switch self {
        case let .applePay(outcome):
            if case let .failure(error) = outcome.result { return error.code.rawValue }
        case let .googlePay(result):
            if case let .failure(error) = result { return error.code.rawValue }
        }
        return "ok"
    }

    var succeeded: Bool { code == "ok" }

    /// A verified token whose identity was claimed before: `replayedTransaction`.
    mutating func refuseAsReplay() {
        switch self {
        case var .applePay(outcome):
            outcome.result = .failure(
                ApplePayError(
                    .replayedTransaction, "this token's transactionId or signed contents were already claimed",
                    field: "header.transactionId"))
            self = .applePay(outcome)
        case .googlePay:
            self = .googlePay(
                .failure(
                    ApplePayError(
                        .replayedTransaction, "this token's messageId or signed message was already claimed",
                        field: "messageId")))
        }
    }

    /// Appends the outcome in `projection`'s shape (the engine's one result writer).
    func write(_ projection: ResultProjection, into out: SensitiveBuffer) {
        switch self {
        case let .applePay(outcome):
            outcome.write(projection, into: out)
        case let .googlePay(result):
            ResultWriter.write(transactionId: transactionId, googlePay: result, as: projection, into: out)
        }
    }
}
