// The front door: one engine object that owns every configured wallet's decryptor, reads a body once,
// dispatches it by shape, and answers with one outcome, whichever the wallet. Every front end (Swift,
// the CLI, the batch lanes, the C ABI and its bindings, the service, Spark) comes in here.
#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// Verifies and decrypts tokens of every configured wallet: Apple Pay (always; with no merchant it
/// still verifies, then finds no key), Google Pay and Samsung Pay (when given their decryptors).
///
/// ```swift
/// let engine = WalletDecryptor(applePay: try PaymentTokenDecryptor(merchants: [merchant]), googlePay: google)
/// let outcome = engine.decrypt(body, at: .now)       // never throws
/// switch outcome.result { case .success(let payment): … case .failure(let error): error.code … }
/// ```
///
/// A body is a token of either wallet, or the envelope `{"paymentToken", "paymentRequest"}` whose
/// payment request the token must match (Apple Pay's binding; a Google Pay token in an envelope with a
/// payment request is refused, since nothing in it can be checked against one). A wallet with no keys
/// configured refuses its tokens with ``ApplePayError/Code/unknownMerchantKey``. Replays are judged by
/// the caller's ledger or store over ``WalletOutcome/replayIdentity``, each wallet naming its own field
/// (``Wallet/replayField``).
public final class WalletDecryptor: Sendable {
    /// The Apple Pay engine.
    public let applePay: PaymentTokenDecryptor
    /// The Google Pay engine; nil: Google Pay tokens are refused (no key configured).
    public let googlePay: GooglePayTokenDecryptor?
    /// The Samsung Pay engine; nil: Samsung Pay tokens are refused (no key configured).
    public let samsungPay: SamsungPayTokenDecryptor?

    public init(
        applePay: PaymentTokenDecryptor, googlePay: GooglePayTokenDecryptor? = nil,
        samsungPay: SamsungPayTokenDecryptor? = nil
    ) {
        self.applePay = applePay
        self.googlePay = googlePay
        self.samsungPay = samsungPay
    }

    /// Verifies and decrypts one body (a token of any wallet in any accepted form, or an envelope with
    /// its payment request), read once, in place. Never throws: a refusal is the outcome's `result`.
    public func decrypt(_ body: some DataProtocol, at reference: ReferenceTime = .now) -> WalletOutcome {
        if let outcome = body.withContiguousStorageIfAvailable({ decrypt(UnsafeRawBufferPointer($0), at: reference) }) {
            return outcome
        }
        if body.regions.count == 1, let region = body.regions.first {
            return region.withUnsafeBytes { decrypt($0, at: reference) }
        }
        // Several regions: the readers need one buffer. Token bytes are sealed, not secret.
        let gathered: [UInt8] = Array(body)
        return gathered.withUnsafeBytes { decrypt($0, at: reference) }
    }

    /// The same over bytes the caller holds (read in place, not retained).
    public func decrypt(_ body: UnsafeRawBufferPointer, at reference: ReferenceTime = .now) -> WalletOutcome {
        let instant = reference.unixSecondsAndMilliseconds
        return applePay.lanes.withLane { lane in
            decrypt(
                body, referenceSeconds: instant.seconds, referenceMilliseconds: instant.milliseconds, lane: lane,
                expecting: nil)
        }
    }

    /// Verifies and decrypts one token, which must also be the payment `request` asked for (see
    /// ``PaymentTokenDecryptor/decrypt(_:at:expecting:)``): a token that is not gets
    /// ``ApplePayError/Code/paymentRequestMismatch``.
    public func decrypt(
        _ token: some DataProtocol, at reference: ReferenceTime = .now, expecting request: PaymentRequest
    )
        -> WalletOutcome
    {
        let gathered: [UInt8] = Array(token)
        let instant = reference.unixSecondsAndMilliseconds
        return gathered.withUnsafeBytes { body in
            applePay.lanes.withLane { lane in
                decrypt(
                    body, referenceSeconds: instant.seconds, referenceMilliseconds: instant.milliseconds, lane: lane,
                    expecting: request)
            }
        }
    }

    /// Where one body goes: the front door's one dispatch, which the multi-buffer stage follows too.
    enum Route {
        /// Refused before any wallet's verifier ran (a bad envelope, a wallet with no keys, a Google
        /// Pay token sent with a payment request).
        case refused(WalletOutcome)
        /// An Apple Pay token (or envelope) for the Apple Pay engine.
        case applePay(RequestEnvelope)
        /// A Google Pay token for the Google Pay engine.
        case googlePay(UnsafeRawBufferPointer, GooglePayTokenDecryptor)
        /// A Samsung Pay token for the Samsung Pay engine, with the payment request it must match, if any.
        case samsungPay(UnsafeRawBufferPointer, SamsungPayTokenDecryptor, PaymentRequest?)
    }

    /// Picks the wallet by shape (``Wallet/of(_:)``, called here alone: on the body, and on an envelope's
    /// token) and reads the envelope, if any. `request`, when given, binds a bare token as an envelope's
    /// request binds its own. Another wallet's token is never an envelope (it has no top-level
    /// `paymentToken`), so only a body of Apple Pay's shape is read for one.
    func route(_ body: UnsafeRawBufferPointer, expecting request: PaymentRequest? = nil) -> Route {
        var wallet = Wallet.of(body)
        let envelope: RequestEnvelope
        if let request {
            envelope = .envelope(token: body, request: request)
        } else if wallet != .applePay {
            envelope = .token(body)
        } else {
            do throws(ApplePayError) { envelope = try RequestEnvelope.read(body) } catch {
                return .refused(WalletOutcome(refusing: error))
            }
            if case .envelope = envelope { wallet = Wallet.of(envelope.token) }
        }
        // A request outside the envelope, inside a Samsung Pay token: refused, never skipped. (Apple Pay's
        // reader refuses such a member itself, and Google Pay's refuses every member it does not know.)
        if wallet == .samsungPay, RequestEnvelope.carriesPaymentRequest(envelope.token) {
            return .refused(WalletOutcome(refusing: RequestEnvelope.strayPaymentRequest, wallet: wallet))
        }
        switch wallet {
        case .applePay:
            return .applePay(envelope)
        case .googlePay:
            guard let googlePay else {
                return .refused(WalletOutcome(refusing: Wallet.googlePay.noKeys, wallet: .googlePay))
            }
            guard envelope.request == nil else {
                return .refused(WalletOutcome(refusing: Self.unboundGooglePay, wallet: .googlePay))
            }
            return .googlePay(envelope.token, googlePay)
        case .samsungPay:
            guard let samsungPay else {
                return .refused(WalletOutcome(refusing: Wallet.samsungPay.noKeys, wallet: .samsungPay))
            }
            return .samsungPay(envelope.token, samsungPay, envelope.request)
        }
    }

    /// On a lane the caller holds (the batch engine's). `request`, when given, binds a bare token as an
    /// envelope's request binds its own.
    package func decrypt(
        _ body: UnsafeRawBufferPointer, referenceSeconds: Int64?, referenceMilliseconds: Int64?, lane: Lane,
        expecting request: PaymentRequest? = nil
    ) -> WalletOutcome {
        switch route(body, expecting: request) {
        case let .refused(outcome):
            return outcome
        case let .applePay(envelope):
            return applePay.decrypt(envelope, referenceSeconds: referenceSeconds, lane: lane).walletOutcome
        case let .googlePay(token, googlePay):
            let result = Result { () throws(ApplePayError) -> WalletPayment in
                let token = try GooglePayToken.parse(token)
                let message = try googlePay.open(token, referenceMilliseconds: referenceMilliseconds, lane: lane)
                return .googlePay(try GooglePayment.build(message))
            }
            return WalletOutcome(googlePay: result)
        case let .samsungPay(token, samsungPay, request):
            let result = Result { () throws(ApplePayError) -> WalletPayment in
                let token = try SamsungPayToken.parse(token)
                let payment = try samsungPay.decrypt(token, referenceMilliseconds: referenceMilliseconds, lane: lane)
                try request?.check(payment)
                return .samsungPay(payment)
            }
            return WalletOutcome(wallet: .samsungPay, transactionId: (try? result.get())?.transactionId, result: result)
        }
    }

    /// A payment request binds Apple Pay tokens: a Google Pay token carries nothing it could be checked
    /// against, so one sent with a request is refused rather than passed unchecked.
    static let unboundGooglePay = ApplePayError(
        .paymentRequestMismatch,
        "a payment request binds Apple Pay tokens; this is a Google Pay token, which it cannot be checked against",
        field: "paymentRequest")
}

extension WalletOutcome {
    /// A Google Pay token's outcome: its id is the payment's messageId, its label the recipient id.
    init(googlePay result: Result<WalletPayment, ApplePayError>) {
        let payment = (try? result.get())?.googlePay
        self.init(
            wallet: .googlePay, transactionId: payment?.messageId, merchantLabel: payment?.recipientId, result: result)
    }
}

extension DecryptionOutcome {
    /// The Apple Pay engine's outcome as the front door's.
    var walletOutcome: WalletOutcome {
        WalletOutcome(
            wallet: .applePay, transactionId: transactionId, merchantLabel: merchantLabel,
            result: result.map { .applePay($0) })
    }
}
