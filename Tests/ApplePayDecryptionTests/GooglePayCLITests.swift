// Google Pay through the CLI: `decrypt` tells the wallets apart by shape and needs no --merchant with
// Google keys alone; `batch` decrypts an archive that mixes both wallets, judges replays across both
// in one ledger, and its sharded-and-merged output equals the unsharded one byte for byte.
import ApplePayDecryption
import ApplePayTestSupport
import Foundation
import Testing

/// The Google Pay side of a scratch directory: the factory's root keys document and merchant key on
/// disk, and the CLI options that name them.
struct GooglePayCLIKeys {
    static let factory = GooglePayTestFactory()
    static let recipient = "merchant:12345678901234567890"
    let options: [String]

    init(_ dir: ScratchDirectory) {
        let f = Self.factory
        options = [
            "--google-root-keys", dir.write("google-root-keys.json", f.rootKeysDocument(now: signingInstant)),
            "--google-recipient-id", "gateway:other", "--google-recipient-id", Self.recipient,
            "--google-merchant-key", dir.write("google-key.pem", f.merchantKeyPEM(0)),
        ]
    }

    /// A token sent at `signingInstant`; its message expires an hour later.
    static func mint(_ change: (inout GooglePayTestFactory.Options) -> Void = { _ in }) -> GooglePayTestFactory.Minted {
        var options = GooglePayTestFactory.Options(now: signingInstant)
        options.recipientId = recipient
        change(&options)
        return factory.mint(options)
    }
}

@Suite("Google Pay through the CLI")
struct GooglePayCLITests {
    @Test("decrypt prints a Google Pay token's payment with Google keys alone (no --merchant)")
    func decryptGooglePay() throws {
        let dir = ScratchDirectory()
        let keys = GooglePayCLIKeys(dir)
        let minted = GooglePayCLIKeys.mint()
        let token = dir.write("token.json", minted.token)
        let result = try runCLI(["decrypt", token, "--now", "2026-03-01T12:00:30Z"] + keys.options)
        #expect(result.status == 0, "\(result.stderr)")
        // The message's members after the token's protocolVersion and the recipient id that verified it.
        guard case let .object(message) = try JSONValue.parse(minted.payload) else { throw CancellationError() }
        #expect(
            try JSONValue.parse(result.stdout)
                == .object(
                    [("protocolVersion", .string("ECv2")), ("recipientId", .string(GooglePayCLIKeys.recipient))]
                        + message))
    }

    @Test(
        "decrypt's --now takes milliseconds: a message is good 1 ms before its messageExpiration and messageExpired at it"
    )
    func fractionalNow() throws {
        let dir = ScratchDirectory()
        let keys = GooglePayCLIKeys(dir)
        let token = dir.write("token.json", GooglePayCLIKeys.mint { $0.messageLifetime = 1_123 }.token)
        let before = try runCLI(["decrypt", token, "--now", "2026-03-01T12:00:01.122Z"] + keys.options)
        #expect(before.status == 0, "\(before.stdout)\(before.stderr)")
        let at = try runCLI(["decrypt", token, "--now", "2026-03-01T12:00:01.123Z"] + keys.options)
        #expect(at.status == 1)
        #expect(try JSONValue.parse(at.stdout)["error"]?.stringValue == "messageExpired")
        #expect(try JSONValue.parse(at.stdout)["field"]?.stringValue == "messageExpiration")
    }

    @Test(
        "decrypt: each shared vector gives its expected outcome through the CLI (an ok vector's message, not a payment, is invalidPayload once verified and decrypted)",
        SharedVectors.google, arguments: GooglePayVector.all)
    func vectorOutcome(_ vector: GooglePayVector) throws {
        let meta = try vector.json("meta.json"), expected = try vector.json("expected.json")
        guard case let .array(files)? = meta["merchantKeyFiles"], case let .number(ms)? = meta["now"],
            let milliseconds = Int64(ms), let recipient = meta["recipientId"]?.stringValue
        else { throw GooglePayVector.VectorError.incomplete(vector.name) }
        // --now to the millisecond: the vectors' keys and messages expire to it.
        let seconds = ISO8601DateFormatter().string(
            from: Date(timeIntervalSince1970: TimeInterval(milliseconds / 1000)))
        let stamp = seconds.dropLast() + String(format: ".%03dZ", Int(milliseconds % 1000))
        var arguments = [
            "decrypt", vector.folder.appendingPathComponent("token.json").path,
            "--google-root-keys", vector.folder.appendingPathComponent("root_keys.json").path,
            "--google-recipient-id", recipient, "--now", String(stamp),
        ]
        for file in files {
            arguments += ["--google-merchant-key", vector.folder.appendingPathComponent(file.stringValue!).path]
        }
        let result = try runCLI(arguments)
        let line = try JSONValue.parse(result.stdout)
        let outcome = try #require(expected["outcome"]?.stringValue)
        #expect(result.status == 1, "\(result.stdout)\(result.stderr)")
        switch outcome {
        case "ok":
            #expect(line["error"]?.stringValue == "invalidPayload")
            #expect(line["message"]?.stringValue?.hasPrefix("the decrypted message") == true, "\(result.stdout)")
        case "malformed": #expect(line["error"]?.stringValue == "malformedToken")
        case "decryptionFailed":
            #expect(["decryptionFailed", "unknownMerchantKey"].contains(line["error"]?.stringValue ?? ""))
        default: #expect(line["error"]?.stringValue == outcome)
        }
    }

    @Test(
        "decrypt: under a root keys document whose root is listed for ECv1 only, or whose ECv2 entry expired, a good ECv2 token is invalidSignature"
    )
    func rootOfAnotherVersionOrExpired() throws {
        let dir = ScratchDirectory()
        let keys = GooglePayCLIKeys(dir)
        let token = dir.write("token.json", GooglePayCLIKeys.mint().token)
        let expired = Int64(signingInstant.timeIntervalSince1970 * 1000) - 1
        let documents: [(String, [GooglePayTestFactory.RootKeyEntry])] = [
            ("ecv1-only.json", [.init(protocolVersion: "ECv1", keyExpiration: nil)]),
            (
                "ecv2-expired.json",
                [
                    .init(protocolVersion: "ECv1", keyExpiration: nil),
                    .init(protocolVersion: "ECv2", keyExpiration: expired),
                ]
            ),
        ]
        let good = try runCLI(["decrypt", token, "--now", "2026-03-01T12:00:30Z"] + keys.options)
        #expect(good.status == 0, "\(good.stdout)\(good.stderr)")
        for (name, entries) in documents {
            let roots = dir.write(name, GooglePayCLIKeys.factory.rootKeysDocument(entries))
            var options = keys.options
            options[options.firstIndex(of: "--google-root-keys")! + 1] = roots
            let result = try runCLI(["decrypt", token, "--now", "2026-03-01T12:00:30Z"] + options)
            #expect(result.status == 1, "\(name): \(result.stdout)\(result.stderr)")
            #expect(try JSONValue.parse(result.stdout)["error"]?.stringValue == "invalidSignature", "\(name)")
        }
    }

    @Test(
        "decrypt: a shared vector with the wrong recipient id is invalidSignature through the CLI", SharedVectors.google
    )
    func vectorWrongRecipient() throws {
        let vector = GooglePayVector(name: "tink-ecv1-wrong-recipient").folder
        let result = try runCLI([
            "decrypt", vector.appendingPathComponent("token.json").path,
            "--google-root-keys", vector.appendingPathComponent("root_keys.json").path,
            "--google-recipient-id", "not someRecipient",
            "--google-merchant-key", vector.appendingPathComponent("merchant_key.pem").path,
            "--now", "2018-11-15T22:09:53.000Z",
        ])
        #expect(result.status == 1)
        #expect(try JSONValue.parse(result.stdout)["error"]?.stringValue == "invalidSignature")
    }

    @Test(
        "decrypt with Google keys alone: an Apple Pay token that verifies is unknownMerchantKey, one that does not keeps its code, junk is malformedToken; no keys at all is a usage error"
    )
    func walletWithoutKeys() throws {
        let dir = ScratchDirectory()
        let keys = GooglePayCLIKeys(dir)
        let apple = dir.write("apple.json", Fixtures.shared.mint().bytes)
        let root = ["--trust-root", dir.write("root.pem", Fixtures.shared.pki.rootPEM)]
        func code(_ file: String, _ extra: [String]) throws -> String? {
            let result = try runCLI(["decrypt", file, "--now", "2026-03-01T12:00:30Z"] + keys.options + extra)
            #expect(result.status == 1, "\(result.stdout)\(result.stderr)")
            return try JSONValue.parse(result.stdout)["error"]?.stringValue
        }
        #expect(try code(apple, root) == "unknownMerchantKey")
        // Under Apple's own root, the test token's chain is not trusted: that, not a missing key, is its fault.
        #expect(try code(apple, []) == "untrustedCertificateChain")
        #expect(try code(dir.write("junk.json", "{not json"), []) == "malformedToken")
        let none = try runCLI(["decrypt", apple])
        #expect(none.status == 64 || none.status == 2, "\(none.stderr)")
        #expect(none.stderr.contains("--merchant"))
    }

    /// Apple and Google tokens interleaved, with replays of each across shard boundaries of 3 and a
    /// Google token whose message expired.
    static func mixedArchive() -> [[UInt8]] {
        let f = Fixtures.shared
        let apple = (0..<4).map { f.mint(TestPayload.threeDSecure(pan: "47611200100\(10_000 + $0)")).bytes }
        let google = (0..<4).map { _ in GooglePayCLIKeys.mint().token }
        let expired = GooglePayCLIKeys.mint { $0.messageLifetime = 10_000 }.token
        let badTag = GooglePayCLIKeys.mint { $0.corruptTag = true }.token
        return [
            apple[0], google[0], apple[1], google[1],  // shard 1
            google[0], apple[0], expired, google[2],  // shard 2: replays of shard 1's
            apple[2], badTag, google[3], google[2], apple[3], apple[1],  // shard 3
        ]
    }

    @Test("batch with Google keys alone: Google Pay tokens decrypt, an Apple Pay token is refused, replays are judged")
    func googleOnlyBatch() throws {
        let dir = ScratchDirectory()
        let keys = GooglePayCLIKeys(dir)
        let google = (0..<3).map { _ in GooglePayCLIKeys.mint().token }
        let archive = dir.write(
            "google.jsonl",
            [google[0], google[1], Fixtures.shared.mint().bytes, google[0], google[2]].flatMap { $0 + [0x0A] })
        let out = dir.url.appendingPathComponent("out.jsonl").path
        let result = try runCLI(
            ["batch", archive, "--out", out, "--quiet", "--lanes", "1", "--now", "2026-03-01T12:00:30Z"] + keys.options)
        #expect(result.status == 0, "\(result.stderr)")
        let lines = try BatchFixture.lines(out).map { try JSONValue.parse($0) }
        #expect(
            lines.map { $0["error"]?.stringValue ?? "ok" } == [
                "ok", "ok", lines[2]["error"]?.stringValue ?? "ok", "replayedTransaction", "ok",
            ])
        #expect(lines[2]["error"] != nil, "an Apple Pay token without Apple keys must be refused")
        // A Google Pay replay names a Google Pay field, not Apple's header.transactionId.
        #expect(lines[3]["field"]?.stringValue == "messageId")
        // A Google Pay line's transactionId is its messageId.
        #expect(lines[0]["transactionId"]?.stringValue != nil)
        #expect(lines[0]["transactionId"]?.stringValue == lines[0]["payment"]?["messageId"]?.stringValue)
    }

    @Test("batch decrypts a mixed archive in one run, judges replays across both wallets, and shards + merge equal it")
    func mixedBatch() throws {
        let bench = ShardBench()
        let keys = GooglePayCLIKeys(bench.dir)
        let archive = bench.write("mixed.jsonl", Self.mixedArchive())
        let whole = bench.path("whole.jsonl")
        try bench.batch([archive], out: whole, keys.options)
        let lines = try BatchFixture.lines(whole).map { try JSONValue.parse($0) }
        let codes = lines.map { $0["error"]?.stringValue ?? "ok" }
        #expect(
            codes == [
                "ok", "ok", "ok", "ok",
                "replayedTransaction", "replayedTransaction", "messageExpired", "ok",
                "ok", "decryptionFailed", "ok", "replayedTransaction", "ok", "replayedTransaction",
            ])
        // Each replay names its own wallet's field: items 4 and 11 are Google Pay, 5 and 13 Apple Pay
        // (11 and 13 replay items of other shards: the merge's rewrite names them the same way).
        #expect([4, 11].map { lines[$0]["field"]?.stringValue } == ["messageId", "messageId"])
        #expect([5, 13].map { lines[$0]["field"]?.stringValue } == ["header.transactionId", "header.transactionId"])
        let parts = try bench.shards([archive], 3, keys.options)
        let merged = bench.path("merged.jsonl")
        let result = try bench.merge(parts, out: merged)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(ShardBench.contents(merged) == ShardBench.contents(whole))
    }

    // MARK: review of issue 36

    @Test(
        "decrypt's --now is rounded down to the millisecond, as Tink's clock: 1.1225 s is still before an expiry at 1.123 s"
    )
    func nowRoundsDown() throws {
        let dir = ScratchDirectory()
        let keys = GooglePayCLIKeys(dir)
        let token = dir.write("token.json", GooglePayCLIKeys.mint { $0.messageLifetime = 1_123 }.token)
        let result = try runCLI(["decrypt", token, "--now", "2026-03-01T12:00:01.1225Z"] + keys.options)
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
    }

    /// A genuine token, then one with the same signedKey whose intermediate signature is a stranger's.
    static func genuineThenJunkSignatures() -> [[UInt8]] {
        [GooglePayCLIKeys.mint().token, GooglePayCLIKeys.mint { $0.breakIntermediateSignature = true }.token]
    }

    @Test(
        "batch: a token whose intermediate signatures are junk is invalidSignature after a genuine one with the same signedKey, with 1 lane or 2, sharded or not"
    )
    func junkIntermediateSignaturesInBatch() throws {
        let bench = ShardBench()
        let keys = GooglePayCLIKeys(bench.dir)
        let archive = bench.write("junk.jsonl", Self.genuineThenJunkSignatures())
        var outputs: [Data] = []
        for lanes in ["1", "2"] {
            let out = bench.path("lanes\(lanes).jsonl")
            let result = try runCLI(
                ["batch", archive, "--out", out, "--quiet", "--lanes", lanes, "--now", "2026-03-01T12:00:30Z"]
                    + keys.options)
            #expect(result.status == 0, "\(result.stderr)")
            let codes = try BatchFixture.lines(out).map { try JSONValue.parse($0)["error"]?.stringValue ?? "ok" }
            #expect(codes == ["ok", "invalidSignature"], "lanes \(lanes)")
            outputs.append(ShardBench.contents(out))
        }
        #expect(outputs[0] == outputs[1])
        let merged = bench.path("merged.jsonl")
        #expect(try bench.merge(try bench.shards([archive], 2, keys.options), out: merged).status == 0)
        let codes = try BatchFixture.lines(merged).map { try JSONValue.parse($0)["error"]?.stringValue ?? "ok" }
        #expect(codes == ["ok", "invalidSignature"])
    }

    /// A genuine Google Pay token damaged outside its signed parts, each way a strict reader refuses
    /// (and the Apple Pay path would misreport): with the code each gets.
    static func damagedTokens() -> [(name: String, bytes: [UInt8], code: String)] {
        let token = GooglePayCLIKeys.mint().token
        let text = String(decoding: token, as: UTF8.self)
        let escaped = text.replacingOccurrences(of: "\"signedMessage\":", with: "\"signedM\\u0065ssage\":")
        return [
            ("escaped member name", Array(escaped.utf8), "ok"),
            ("duplicate signedMessage", Array((text.dropLast() + ",\"signedMessage\":\"{}\"}").utf8), "malformedToken"),
            ("trailing bytes", token + Array(" x".utf8), "malformedToken"),
            ("byte order mark", [0xEF, 0xBB, 0xBF] + token, "malformedToken"),
        ]
    }

    @Test(
        "decrypt routes a damaged Google Pay token to the Google Pay reader: escaped names decrypt, duplicates, trailing bytes and a BOM are malformedToken"
    )
    func damagedTokenRouting() throws {
        let dir = ScratchDirectory()
        let keys = GooglePayCLIKeys(dir)
        for (index, item) in Self.damagedTokens().enumerated() {
            let token = dir.write("token\(index).json", item.bytes)
            let result = try runCLI(["decrypt", token, "--now", "2026-03-01T12:00:30Z"] + keys.options)
            let output = try JSONValue.parse(result.stdout)
            #expect((output["error"]?.stringValue ?? "ok") == item.code, "\(item.name): \(result.stdout)")
            if item.name == "duplicate signedMessage" {
                #expect(output["field"]?.stringValue == "signedMessage")
            }
            #expect(result.status == (item.code == "ok" ? 0 : 1), "\(item.name)")
        }
    }

    @Test("batch routes damaged Google Pay tokens the same way, through the CLI and the batch engine")
    func damagedTokenRoutingInBatch() async throws {
        let damaged = Self.damagedTokens()
        // The batch engine, Apple and Google engines both configured.
        let f = GooglePayCLIKeys.factory
        let google = try GooglePayTokenDecryptor(
            merchantKeys: [f.merchantKey(0)], recipientIds: [GooglePayCLIKeys.recipient],
            rootKeys: GooglePayRootKeys(json: f.rootKeysDocument(now: signingInstant)))
        var source = ArrayTokenSource(damaged.map(\.bytes))
        var codes: [String] = []
        try BatchDecryptor(
            decryptor: Fixtures.shared.decryptor(), lanes: 1, reference: .at(signingInstant.addingTimeInterval(30)),
            googlePay: google
        ).run(
            &source,
            deliver: { result in
                switch result.googlePay {
                case .success?: codes.append("ok")
                case .failure(let error)?: codes.append(error.code.rawValue)
                case nil: codes.append("Apple Pay path")
                }
            })
        #expect(codes == damaged.map(\.code))
        // The CLI (the BOM last: a first line's BOM could be taken as the file's).
        let dir = ScratchDirectory()
        let keys = GooglePayCLIKeys(dir)
        let archive = dir.write("damaged.jsonl", damaged.flatMap { $0.bytes + [0x0A] })
        let out = dir.url.appendingPathComponent("out.jsonl").path
        let result = try runCLI(
            ["batch", archive, "--out", out, "--quiet", "--lanes", "1", "--now", "2026-03-01T12:00:30Z"] + keys.options)
        #expect(result.status == 0, "\(result.stderr)")
        let lines = try BatchFixture.lines(out).map { try JSONValue.parse($0)["error"]?.stringValue ?? "ok" }
        #expect(lines == damaged.map(\.code))
    }

    @Test("merge refuses shards made under different Google root keys documents, even at the same path")
    func shardsBindRootKeys() throws {
        let bench = ShardBench()
        let keys = GooglePayCLIKeys(bench.dir)
        let archive = bench.write("google.jsonl", (0..<4).map { _ in GooglePayCLIKeys.mint().token })
        let first = try bench.shards([archive], 2, keys.options)[0]
        // The same path, rewritten: the same key with another expiration.
        let rootsPath = bench.path("google-root-keys.json")
        _ = bench.dir.write(
            "google-root-keys.json",
            GooglePayCLIKeys.factory.rootKeysDocument(now: signingInstant, rootLifetime: 86_400_000))
        #expect(keys.options.contains(rootsPath))
        let second = bench.path("other2.jsonl")
        try bench.batch([archive], out: second, ["--shard", "2/2"] + keys.options)
        let merged = bench.path("merged.jsonl")
        let result = try bench.merge([first, second], out: merged)
        #expect(result.status != 0, "\(result.stderr)")
    }
}
