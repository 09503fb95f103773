// Samsung Pay behind the front door: dispatched by shape beside Apple Pay and Google Pay, refused without
// keys, bound to a payment request, its replays (re-wrapped copies included) judged in the same ledger and
// naming its own field; and a mixed archive of all three wallets through `batch`, whose sharded-and-merged
// output equals the unsharded one byte for byte.
import ApplePayDecryption
import ApplePayTestSupport
import Foundation
import Testing

@Suite("Three wallets through one front door")
struct ThreeWalletTests {
    static let samsung = SamsungPayBench.shared
    static let fresh = ReferenceTime.at(signingInstant.addingTimeInterval(30))

    func engine(samsung: Bool = true) throws -> WalletDecryptor {
        try WalletDecryptor(
            applePay: Fixtures.shared.decryptor(),
            googlePay: GooglePayTokenDecryptor(
                merchantKeys: [GooglePayCLIKeys.factory.merchantKey(0)], recipientIds: [GooglePayCLIKeys.recipient],
                rootKeys: GooglePayRootKeys(json: GooglePayCLIKeys.factory.rootKeysDocument(now: signingInstant))),
            samsungPay: samsung ? Self.samsung.decryptor : nil)
    }

    @Test("a Samsung Pay token in each of its wrappers is read by the Samsung Pay engine and says so")
    func dispatch() throws {
        let engine = try engine()
        for wrapper in SamsungPayTestFactory.Wrapper.allCases {
            let outcome = engine.decrypt(Self.samsung.mint { $0.wrapper = wrapper }.token, at: Self.fresh)
            #expect(outcome.wallet == .samsungPay, "\(wrapper)")
            #expect(outcome.error == nil, "\(wrapper): \(String(describing: outcome.error))")
            #expect(outcome.payment?.samsungPay != nil)
        }
        let none = try self.engine(samsung: false).decrypt(Self.samsung.mint().token, at: Self.fresh)
        #expect(none.error?.code == .unknownMerchantKey)
        #expect(none.error?.message == "a Samsung Pay token, but no Samsung Pay key is configured")
    }

    @Test("a payment request binds a Samsung Pay token's amount and currency through the front door")
    func requestBinding() throws {
        let engine = try engine()
        let token = Self.samsung.mint { $0.amount = "1000" }.token
        #expect(engine.decrypt(token, at: Self.fresh, expecting: try RequestJSON().request()).error == nil)
        let other = try RequestJSON().total("12.00").request()
        #expect(engine.decrypt(token, at: Self.fresh, expecting: other).error?.code == .paymentRequestMismatch)
    }

    @Test("one ledger for three wallets: a re-wrapped Samsung Pay copy is a replay naming cryptogram")
    func replays() throws {
        let apple = Fixtures.shared.mint().bytes
        let google = GooglePayCLIKeys.mint().token
        let payment = Self.samsung.mint { $0.wrapper = .paymentCredential }
        let rewrapped = Self.samsung.mint {
            $0.wrapper = .compactJWE
            $0.payload = payment.payload
        }.token
        let batch = BatchDecryptor(wallets: try engine(), lanes: 2, reference: Self.fresh)
        var source = ArrayTokenSource([apple, payment.token, google, rewrapped, apple, google])
        var results: [BatchResult] = []
        try batch.run(&source) { results.append($0) }
        #expect(
            results.map { $0.outcome.code } == ["ok", "ok", "ok"] + Array(repeating: "replayedTransaction", count: 3))
        #expect(results[3...].map { $0.error?.field } == ["cryptogram", "header.transactionId", "messageId"])
    }
}

@Suite("Three wallets: the outside attack's findings")
struct ThreeWalletAttackTests {
    static let fresh = ThreeWalletTests.fresh

    func engine() throws -> WalletDecryptor { try ThreeWalletTests().engine() }

    /// `{…token's members…, "paymentRequest": REQUEST}`: a request beside the token, not in the envelope.
    static func beside(_ token: [UInt8], _ request: [UInt8]) -> [UInt8] {
        var body = token
        while body.last == 0x0A || body.last == 0x20 { body.removeLast() }
        guard body.last == UInt8(ascii: "}") else { return body }
        body.removeLast()
        return body + Array(#","payment\u0052equest":"#.utf8) + request + Array("}".utf8)
    }

    @Test(
        "a payment request beside a Google Pay or Samsung Pay token, or inside an envelope's token, is refused, never skipped"
    )
    func strayPaymentRequest() throws {
        let engine = try engine()
        let request = RequestJSON().total("99.99").bytes
        let samsung = ThreeWalletTests.samsung.mint { $0.wrapper = .paymentCredential }.token
        let web = ThreeWalletTests.samsung.mint { $0.wrapper = .webCheckout }.token
        let google = GooglePayCLIKeys.mint().token
        for (name, token) in [("Samsung Pay", samsung), ("Samsung Pay web checkout", web), ("Google Pay", google)] {
            let bodies = [
                Self.beside(token, request),
                Array(#"{"paymentToken":"#.utf8) + Self.beside(token, request) + Array("}".utf8),
            ]
            for body in bodies {
                let outcome = engine.decrypt(body, at: Self.fresh)
                #expect(outcome.error?.code == .malformedToken, "\(name): \(String(describing: outcome.error))")
                #expect(outcome.error?.field == "paymentRequest", "\(name)")
            }
        }
        // Inside paymentCredential too (one object down).
        let nested = String(decoding: web, as: UTF8.self).replacingOccurrences(
            of: #"{"paymentCredential":{"#, with: #"{"paymentCredential":{"paymentRequest":{},"#)
        #expect(engine.decrypt(Array(nested.utf8), at: Self.fresh).error?.field == "paymentRequest")
    }

    @Test("a Samsung Pay payment re-sealed with its cryptogram respelt (base64url, white space) is still a replay")
    func respeltCryptogram() throws {
        let cryptogram = "M8GiNzluus2zo2R+x+hwLVXNBys="
        let spellings = [cryptogram, "M8GiNzluus2zo2R-x-hwLVXNBys=", "M8GiNzluus2zo2R+x+hwLVXNBys=\n"]
        let tokens = spellings.enumerated().map { k, spelt in
            ThreeWalletTests.samsung.mint {
                $0.cryptogram = spelt
                $0.utcOffset = Int64(k)  // another millisecond: the payment key differs, the cryptogram's must not
            }.token
        }
        let batch = BatchDecryptor(wallets: try engine(), lanes: 1, reference: Self.fresh)
        var source = ArrayTokenSource(tokens)
        var codes: [String] = []
        try batch.run(&source) { codes.append($0.outcome.code) }
        #expect(codes == ["ok", "replayedTransaction", "replayedTransaction"])
    }

    @Test("a payment request whose merchant takes no 3-D Secure payments does not bind a Samsung Pay payment")
    func samsungCapabilities() throws {
        let token = ThreeWalletTests.samsung.mint { $0.amount = "1000" }.token
        let emvOnly = try RequestJSON().with("merchantCapabilities", .array([.string("supportsEMV")])).request()
        let outcome = try engine().decrypt(token, at: Self.fresh, expecting: emvOnly)
        #expect(outcome.error?.code == .paymentRequestMismatch)
        #expect(outcome.error?.field == "merchantCapabilities")
    }
}

@Suite("Three wallets through the CLI")
struct ThreeWalletCLITests {
    @Test(
        "a mixed archive of all three wallets decrypts in one batch, replays judged across them, and shards + merge equal it"
    )
    func mixedArchive() throws {
        let bench = ShardBench()
        let google = GooglePayCLIKeys(bench.dir)
        let samsung = ThreeWalletTests.samsung
        let samsungKey = bench.dir.write("samsung-key.pem", samsung.factory.merchantKeyPEM(0))
        let keys = google.options + ["--samsung-key", samsungKey]
        let f = Fixtures.shared
        let apple = (0..<2).map { f.mint(TestPayload.threeDSecure(pan: "47611200100\(20_000 + $0)")).bytes }
        let gp = (0..<2).map { _ in GooglePayCLIKeys.mint().token }
        let sp = (0..<2).map { k in samsung.mint { $0.tokenPAN = "411111111111\(2000 + k)" } }
        let rewrapped = samsung.mint {
            $0.wrapper = .compactJWE
            $0.payload = sp[0].payload
        }.token
        let stale = samsung.mint { $0.utcOffset = -3_600_000 }.token
        let archive = bench.write(
            "mixed.jsonl",
            [
                apple[0], gp[0], sp[0].token,  // shard 1
                sp[1].token, gp[0], apple[0],  // shard 2: replays of shard 1's Google and Apple tokens
                rewrapped, stale, apple[1], gp[1],  // shard 3: a re-wrapped replay of shard 1's Samsung token
            ])
        let whole = bench.path("whole.jsonl")
        try bench.batch([archive], out: whole, keys)
        let lines = try BatchFixture.lines(whole).map { try JSONValue.parse($0) }
        #expect(
            lines.map { $0["error"]?.stringValue ?? "ok" } == [
                "ok", "ok", "ok", "ok", "replayedTransaction", "replayedTransaction", "replayedTransaction",
                "messageExpired", "ok", "ok",
            ])
        #expect(
            [4, 5, 6].map { lines[$0]["field"]?.stringValue } == ["messageId", "header.transactionId", "cryptogram"])
        #expect(lines[2]["payment"]?["wallet"]?.stringValue == "samsungPay")
        let parts = try bench.shards([archive], 3, keys)
        let merged = bench.path("merged.jsonl")
        let result = try bench.merge(parts, out: merged)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(ShardBench.contents(merged) == ShardBench.contents(whole))
    }
}
