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

    /// The wallet a body is for, by its shape alone (nothing is verified here): a top-level `data` or
    /// `header` is Apple Pay's; a Google Pay token has a top-level `signedMessage` or `protocolVersion`
    /// (names read leniently, so a damaged Google Pay token still gets Google Pay's precise error); a
    /// Samsung Pay token is a compact JWE (five base64url parts), bare or as a JSON string, or an object
    /// with `3DS` or `paymentCredential`. Anything else is read as Apple Pay's, whose reader refuses what
    /// is not a token.
    ///
    /// The one shape dispatch of the engine: every front end reaches a wallet through ``WalletDecryptor``,
    /// which asks this.
    public static func of(_ body: UnsafeRawBufferPointer) -> Wallet {
        // One walk over the top-level names (the rules of GooglePayToken.hasShape and SamsungPayToken.hasShape
        // at once), ended by Apple Pay's own `data` or `header`: an Apple Pay token pays for a name or two.
        let scan = JSONScan(body)
        let n = body.count
        var i = n >= 3 && body[0] == 0xEF && body[1] == 0xBB && body[2] == 0xBF ? 3 : 0
        i = scan.skipWhitespace(i)
        guard i < n else { return .applePay }
        if body[i] == 0x22 {
            return SamsungPayToken.isCompactJWE(body, from: i + 1, quoted: true) ? .samsungPay : .applePay
        }
        guard body[i] == UInt8(ascii: "{") else {
            return SamsungPayToken.isCompactJWE(body, from: i, quoted: false) ? .samsungPay : .applePay
        }
        i = scan.skipWhitespace(i + 1)
        var google = false
        var samsung = false
        while i < n, body[i] == 0x22 {
            guard let name = try? scan.string(at: i) else { break }
            func named(_ text: StaticString) -> Bool { scan.content(name.content, escaped: name.escaped, equals: text) }
            if named("data") || named("header") {
                return .applePay
            } else if named("signedMessage") || named("protocolVersion") {
                google = true
            } else if named("3DS") || named("paymentCredential") {
                samsung = true
            }
            let colon = scan.skipWhitespace(name.end)
            guard colon < n, body[colon] == UInt8(ascii: ":") else { break }
            let value = scan.skipWhitespace(colon + 1)
            guard value < n else { break }
            i = scan.skipWhitespace(scan.skipValidated(value))
            guard i < n, body[i] == UInt8(ascii: ",") else { break }
            i = scan.skipWhitespace(i + 1)
        }
        return google ? .googlePay : samsung ? .samsungPay : .applePay
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
