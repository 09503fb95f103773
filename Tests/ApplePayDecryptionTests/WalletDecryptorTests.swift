// The front door: one engine object dispatches every wallet by shape, refuses a wallet with no keys
// in one wording, binds payment requests to Apple Pay tokens only, and each wallet's replay names its
// own field, in the Swift API and in the batch lanes alike.
import ApplePayDecryption
import ApplePayTestSupport
import Foundation
import Testing

@Suite("One front door for every wallet")
struct WalletDecryptorTests {
    static let google = GooglePayCLIKeys.factory

    func googleDecryptor() throws -> GooglePayTokenDecryptor {
        try GooglePayTokenDecryptor(
            merchantKeys: [Self.google.merchantKey(0)], recipientIds: [GooglePayCLIKeys.recipient],
            rootKeys: GooglePayRootKeys(json: Self.google.rootKeysDocument(now: signingInstant)))
    }

    func engine(google: Bool = true) throws -> WalletDecryptor {
        WalletDecryptor(applePay: Fixtures.shared.decryptor(), googlePay: google ? try googleDecryptor() : nil)
    }

    static let fresh = ReferenceTime.at(signingInstant.addingTimeInterval(30))

    @Test("each wallet's token is read by its own engine, told apart by shape, and says which wallet it was")
    func dispatchByShape() throws {
        let engine = try engine()
        let apple = engine.decrypt(Fixtures.shared.mint().bytes, at: Self.fresh)
        #expect(apple.wallet == .applePay && apple.error == nil, "\(String(describing: apple.error))")
        #expect(apple.payment?.applePay != nil && apple.payment?.googlePay == nil)
        let minted = GooglePayCLIKeys.mint()
        let google = engine.decrypt(minted.token, at: Self.fresh)
        #expect(google.wallet == .googlePay && google.error == nil, "\(String(describing: google.error))")
        #expect(google.transactionId == minted.messageId)
        #expect(google.merchantLabel == GooglePayCLIKeys.recipient)
        #expect(google.payment?.googlePay != nil && google.payment?.applePay == nil)
        #expect(Wallet.allCases.map(\.replayField) == ["header.transactionId", "messageId", "cryptogram"])
    }

    @Test("a Google Pay token with no Google Pay key configured is unknownMerchantKey, in one wording")
    func walletWithoutKeys() throws {
        let outcome = try engine(google: false).decrypt(GooglePayCLIKeys.mint().token, at: Self.fresh)
        #expect(outcome.wallet == .googlePay)
        #expect(outcome.error?.code == .unknownMerchantKey)
        #expect(outcome.error?.message == "a Google Pay token, but no Google Pay key is configured")
    }

    @Test(
        "a payment request binds Apple Pay tokens: a Google Pay token sent with one is refused, never passed unchecked")
    func googlePayWithRequest() throws {
        let engine = try engine()
        let token = GooglePayCLIKeys.mint().token
        let request = try RequestJSON().request()
        let bound = engine.decrypt(token, at: Self.fresh, expecting: request)
        #expect(bound.error?.code == .paymentRequestMismatch)
        #expect(bound.error?.field == "paymentRequest")
        let envelope =
            Array(#"{"paymentToken":"#.utf8) + token + Array(#","paymentRequest":"#.utf8)
            + RequestJSON().bytes + Array("}".utf8)
        let enveloped = engine.decrypt(envelope, at: Self.fresh)
        #expect(enveloped.error?.code == .paymentRequestMismatch && enveloped.wallet == .googlePay)
        // Without a request, the same token in an envelope is a payment.
        let bare = Array(#"{"paymentToken":"#.utf8) + token + Array("}".utf8)
        #expect(engine.decrypt(bare, at: Self.fresh).error == nil)
    }

    @Test("the batch lanes judge replays across wallets in one ledger, each replay naming its wallet's field")
    func replaysNameTheirWalletsField() throws {
        let apple = Fixtures.shared.mint().bytes
        let google = GooglePayCLIKeys.mint().token
        let batch = BatchDecryptor(wallets: try engine(), lanes: 2, reference: Self.fresh)
        var source = ArrayTokenSource([apple, google, google, apple])
        var results: [BatchResult] = []
        try batch.run(&source) { results.append($0) }
        #expect(results.map { $0.outcome.code } == ["ok", "ok", "replayedTransaction", "replayedTransaction"])
        #expect(results.map { $0.outcome.wallet } == [.applePay, .googlePay, .googlePay, .applePay])
        #expect(results[2].error?.field == "messageId")
        #expect(results[2].error?.message == "this token's messageId or signed message was already claimed by item 1")
        #expect(results[3].error?.field == "header.transactionId")
        // A replay keeps its keys (what a merge or a store needs), not its payment.
        #expect(results[2].replayIdentity == results[1].replayIdentity && results[2].payment == nil)
    }
}
