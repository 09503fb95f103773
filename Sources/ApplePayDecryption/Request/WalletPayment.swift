// A decrypted payment of any wallet: what the front door returns when a token verified and decrypted.

/// A verified, decrypted payment, whichever the wallet.
public enum WalletPayment: Sendable {
    case applePay(DecryptedPayment)
    case googlePay(GooglePayment)
    case samsungPay(SamsungPayment)

    /// The wallet the token was read as.
    public var wallet: Wallet {
        switch self {
        case .applePay: .applePay
        case .googlePay: .googlePay
        case .samsungPay: .samsungPay
        }
    }

    /// What the token claims against replays.
    public var replayIdentity: ReplayIdentity {
        switch self {
        case let .applePay(payment): payment.replayIdentity
        case let .googlePay(payment): payment.replayIdentity
        case let .samsungPay(payment): payment.replayIdentity
        }
    }

    /// The id a result shows: an Apple Pay `header.transactionId` (lower-case hex), a Google Pay `messageId`,
    /// a Samsung Pay payment's cryptogram key (hex: its token carries no id of its own).
    public var transactionId: String {
        switch self {
        case let .applePay(payment): payment.transactionId
        case let .googlePay(payment): payment.messageId
        case let .samsungPay(payment): payment.transactionId
        }
    }

    /// The Apple Pay payment, nil for another wallet's.
    public var applePay: DecryptedPayment? {
        if case let .applePay(payment) = self { return payment }
        return nil
    }

    /// The Google Pay payment, nil for another wallet's.
    public var googlePay: GooglePayment? {
        if case let .googlePay(payment) = self { return payment }
        return nil
    }

    /// The Samsung Pay payment, nil for another wallet's.
    public var samsungPay: SamsungPayment? {
        if case let .samsungPay(payment) = self { return payment }
        return nil
    }

    /// The decrypted payment data as a JSON tree (see each wallet's `json`).
    public var json: JSONValue? {
        switch self {
        case let .applePay(payment): payment.json
        case let .googlePay(payment): payment.json
        case let .samsungPay(payment): payment.plaintext.withUnsafeBytes { try? JSONValue.parse($0) }
        }
    }

    /// Appends the payment's JSON object, straight from the wiped plaintext (see each wallet's `writeJSON`).
    public func writeJSON(into out: SensitiveBuffer, maskingPAN: Bool = false) {
        switch self {
        case let .applePay(payment): payment.writeJSON(into: out, maskingPAN: maskingPAN)
        case let .googlePay(payment): payment.writeJSON(into: out, maskingPAN: maskingPAN)
        case let .samsungPay(payment): payment.writeJSON(into: out, maskingPAN: maskingPAN)
        }
    }

    /// Appends the payment object every result shows (the batch line's, the service's, the C ABI's):
    /// as ``writeJSON(into:maskingPAN:)``, but a Google Pay payment's starts with its `protocolVersion` and
    /// the `recipientId` that verified (``GooglePayment/writeResultJSON(into:maskingPAN:)``).
    public func writeResultJSON(into out: SensitiveBuffer, maskingPAN: Bool = false) {
        switch self {
        case let .googlePay(payment): payment.writeResultJSON(into: out, maskingPAN: maskingPAN)
        default: writeJSON(into: out, maskingPAN: maskingPAN)
        }
    }

    /// Bytes of plaintext behind the payment (a writer sizes its buffer with it).
    public var plaintextCount: Int {
        switch self {
        case let .applePay(payment): payment.plaintext.count
        case let .googlePay(payment): payment.message.plaintext.count + payment.recipientId.utf8.count + 64
        case let .samsungPay(payment): payment.plaintext.count + 128
        }
    }
}

extension WalletPayment: CustomStringConvertible {
    /// The wallet's own summary, safe to log (the PAN masked, no cryptogram).
    public var description: String {
        switch self {
        case let .applePay(payment): payment.description
        case let .googlePay(payment): payment.description
        case let .samsungPay(payment): payment.description
        }
    }
}
