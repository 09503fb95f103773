// The service refuses a Google Pay payment whose message has no messageExpiration (issue 44).
import ApplePayDecryption

extension DecryptController {
    /// The service's replay claims are kept for a bounded time: the store's retention, or until a Google
    /// Pay message's `messageExpiration`. A message without one (an ECv1 message may omit it; the engine
    /// then applies no expiry) would verify at any time, and be a payment again once its claim is
    /// dropped. Keeping such claims for good instead would grow the store without bound (a full memory
    /// store refuses every new claim) for messages Google does not send: its payment messages carry
    /// `messageExpiration` in every version. So the service refuses them, `invalidPayload` on
    /// `messageExpiration`, and claims nothing. The CLI, the bindings and the Spark job judge replays
    /// over a whole run or hand the claims to the caller, so they keep accepting such messages.
    static func requiringExpiration(_ outcome: WalletOutcome) -> WalletOutcome {
        guard case let .googlePay(payment)? = outcome.payment, payment.messageExpiration == nil else { return outcome }
        var refused = outcome
        refused.refuse(
            ApplePayError(
                .invalidPayload,
                "the message has no messageExpiration: the service keeps replay claims for a bounded time, and such a message would verify again after its claim is dropped",
                field: "messageExpiration"))
        return refused
    }
}
