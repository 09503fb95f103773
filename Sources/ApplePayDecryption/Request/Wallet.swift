// Which wallet a token comes from, told by its shape: the one place a body is dispatched to a wallet,
// and each wallet's own wording of what the front door says about it.

/// A wallet whose tokens the engine verifies and decrypts.
public enum Wallet: String, Sendable, CaseIterable {
    /// Apple Pay (`EC_v1`, `RSA_v1`): also the envelope `{"paymentToken", "paymentRequest"}`.
    case applePay
    /// Google Pay (`ECv1`, `ECv2`, `ECv2SigningOnly`).
    case googlePay
    /// Samsung Pay (a compact JWE, `RSA1_5` + `A128GCM`, bare or in its app or web envelope). Nothing in
    /// such a token is signed: a result never says where it came from.
    case samsungPay

    /// The wallet a body is for, by its shape alone (nothing is verified here): a Google Pay token has a
    /// top-level `signedMessage` or `protocolVersion` and no `data` or `header` (names read leniently, so
    /// a damaged Google Pay token still gets Google Pay's precise error); a Samsung Pay token is a compact
    /// JWE (five base64url parts), bare or at `3DS.data` or in the web checkout's envelope. Anything else is
    /// read as Apple Pay's, whose reader refuses what is not a token.
    ///
    /// The one shape dispatch of the engine: every front end reaches a wallet through ``WalletDecryptor``,
    /// which asks this.
    public static func of(_ body: UnsafeRawBufferPointer) -> Wallet {
        if GooglePayToken.hasShape(body) { return .googlePay }
        return SamsungPayToken.hasShape(body) ? .samsungPay : .applePay
    }

    /// The member a replay names: what identifies the payment in this wallet's token.
    public var replayField: String {
        switch self {
        case .applePay: "header.transactionId"
        case .googlePay: "messageId"
        case .samsungPay: "cryptogram"
        }
    }

    /// What the replay's message says was claimed.
    var replayedContents: String {
        switch self {
        case .applePay: "this token's transactionId or signed contents were already claimed"
        case .googlePay: "this token's messageId or signed message was already claimed"
        case .samsungPay: "this token's cryptogram or payment (tokenPAN, utc, amount) was already claimed"
        }
    }

    /// The refusal of a token of this wallet when no key of the wallet is configured: one wording for
    /// every front end (each front end's help names its own options).
    var noKeys: ApplePayError {
        let name =
            switch self {
            case .applePay: "an Apple Pay token, but no Apple Pay merchant is configured"
            case .googlePay: "a Google Pay token, but no Google Pay key is configured"
            case .samsungPay: "a Samsung Pay token, but no Samsung Pay key is configured"
            }
        return ApplePayError(.unknownMerchantKey, name)
    }
}

extension ApplePayError {
    /// The verdict on a verified token of `wallet` whose keys item `firstClaim` claimed first (one wording
    /// for the batch engine, the merge of shards and the C ABI's lines, whose outputs must agree byte for
    /// byte); `firstClaim` nil for a front end that keeps no item numbers (the service).
    public static func replayed(claimedBy firstClaim: Int?, wallet: Wallet) -> ApplePayError {
        ApplePayError(
            .replayedTransaction,
            firstClaim.map { "\(wallet.replayedContents) by item \($0)" } ?? wallet.replayedContents,
            field: wallet.replayField)
    }
}
