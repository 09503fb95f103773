// Google Pay through the service's decrypt endpoints: the shared public vectors give their documented
// outcome, factory tokens decrypt (alone, beside Apple Pay tokens in one batch) and are claimed in the
// replay store like Apple Pay ones, and each broken rule gives its code.
import ApplePayDecryption
import ApplePayService
import ApplePayTestSupport
import Foundation
import XCTest

/// Keys and tokens from `GooglePayTestFactory`, written out for the service.
final class GooglePayKeys: @unchecked Sendable {  // used by one test at a time
    let factory = GooglePayTestFactory()
    let scratch = Scratch()
    let recipientId = "merchant:12345678901234567890"

    /// The service options for this factory's keys, with a root keys document valid from `now`.
    func options(now: Date) -> [String] {
        let roots = scratch.write("root-keys.json", String(decoding: factory.rootKeysDocument(now: now), as: UTF8.self))
        let key = scratch.write("merchant.pem", factory.merchantKeyPEM(0))
        return ["--google-root-keys", roots, "--google-recipient-id", recipientId, "--google-merchant-key", key]
    }

    func token(now: Date, _ change: (inout GooglePayTestFactory.Options) -> Void = { _ in }) -> Data {
        var options = GooglePayTestFactory.Options(now: now)
        change(&options)
        return Data(factory.mint(options).token)
    }
}

/// The shared vectors (../shared/vectors/google beside the project, or $APPLEPAY_SHARED_VECTORS/../google).
enum GoogleVectors {
    static var folder: URL {
        if let apple = ProcessInfo.processInfo.environment["APPLEPAY_SHARED_VECTORS"] {
            // A relative path is .ci/run's, from the repository root (these tests run in Sources/Server).
            let base =
                apple.hasPrefix("/") ? URL(fileURLWithPath: apple) : Paths.repository.appendingPathComponent(apple)
            return base.deletingLastPathComponent().appendingPathComponent("google")
        }
        return Paths.repository.deletingLastPathComponent().appendingPathComponent("shared/vectors/google")
    }

    static func json(_ url: URL) throws -> [String: Any] {
        try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as! [String: Any]
    }

    /// The reference time `now` (milliseconds) as the ISO 8601 text --insecure-testing-fixed-now takes.
    static func iso(milliseconds: Int64) -> String {
        let format = Date.ISO8601FormatStyle(includingFractionalSeconds: true)
        return Date(timeIntervalSince1970: Double(milliseconds) / 1000).formatted(format)
    }
}

final class GooglePayDecryptTests: XCTestCase {
    /// Every shared vector through POST /v1/decrypt, with its folder's keys, recipient id and `now`.
    /// The vectors that verify and decrypt carry Tink's sample plaintexts ("plaintext", "blah"), which
    /// are not payments: the service answers `invalidPayload` for them, as the CLI and the C ABI do.
    func testEverySharedVectorGivesItsDocumentedOutcome() async throws {
        let folders = try FileManager.default.contentsOfDirectory(
            at: GoogleVectors.folder, includingPropertiesForKeys: [.isDirectoryKey]
        ).filter { $0.hasDirectoryPath }.sorted { $0.path < $1.path }
        XCTAssertGreaterThanOrEqual(folders.count, 9, "the shared Google Pay vectors are missing")
        for folder in folders {
            let meta = try GoogleVectors.json(folder.appendingPathComponent("meta.json"))
            let expected = try GoogleVectors.json(folder.appendingPathComponent("expected.json"))
            var arguments = [
                "--google-root-keys", folder.appendingPathComponent(meta["rootKeysFile"] as! String).path,
                "--google-recipient-id", meta["recipientId"] as! String,
                "--insecure-testing-fixed-now", GoogleVectors.iso(milliseconds: (meta["now"] as! NSNumber).int64Value),
            ]
            for key in meta["merchantKeyFiles"] as! [String] {
                arguments += ["--google-merchant-key", folder.appendingPathComponent(key).path]
            }
            let token = try Data(contentsOf: folder.appendingPathComponent("token.json"))
            let outcome = expected["outcome"] as! String
            let accepted: [String] =
                switch outcome {
                case "ok": ["invalidPayload"]  // verified and decrypted, then not a payment
                case "malformed": ["malformedToken"]
                default: [outcome] + (expected["accept"] as? [String] ?? [])
                }
            let name = folder.lastPathComponent
            try await withService(arguments) { client in
                let answer = try await client.post("/v1/decrypt", token)
                XCTAssertEqual(answer.status, 422, "\(name): \(answer.text)")
                XCTAssertTrue(accepted.contains(answer.code ?? ""), "\(name): expected \(accepted), got \(answer.text)")
                if outcome == "ok" {
                    // Refused only as a payment: the message verified and opened (its JSON reading failed).
                    XCTAssertFalse(answer.text.contains("invalidSignature"), "\(name): \(answer.text)")
                }
            }
        }
    }

    /// Google Pay keys alone (no --merchant): factory tokens of each version accepted by default decrypt, a
    /// replay is refused by the replay store, and an Apple Pay token finds no key.
    func testGooglePayOnlyServiceDecryptsAndRefusesReplays() async throws {
        let keys = GooglePayKeys()
        try await withService(keys.options(now: Date())) { client in
            for version in [GooglePayToken.ProtocolVersion.ecV2, .ecV1] {
                let token = keys.token(now: Date()) { $0.protocolVersion = version }
                let first = try await client.post("/v1/decrypt", token)
                XCTAssertEqual(first.status, 200, "\(version): \(first.text)")
                let payment = first.json["payment"] as? [String: Any]
                XCTAssertEqual(payment?["paymentMethod"] as? String, "CARD", first.text)
                XCTAssertNotNil(first.json["transactionId"] as? String, first.text)
                let again = try await client.post("/v1/decrypt", token)
                XCTAssertEqual(again.status, 422, again.text)
                XCTAssertEqual(again.code, "replayedTransaction", again.text)
            }
            // Under the pinned Apple root, the bundled test token's chain is not trusted (the CLI's code too).
            let apple = try await client.post("/v1/decrypt", try Bundled.token("ec-3dsecure.json"))
            XCTAssertEqual(apple.code, "untrustedCertificateChain", apple.text)
            let metrics = try await client.get("/metrics")
            XCTAssertTrue(metrics.text.contains("applepay_tokens_total{outcome=\"ok\"} 2"), metrics.text)
        }
    }

    /// With Google Pay keys alone, an Apple Pay token is still verified as by the CLI and the C ABI: under
    /// its own (test) root it verifies and finds no key, unknownMerchantKey; junk is malformedToken.
    func testWithGooglePayKeysAloneAnAppleTokenIsVerifiedBeforeItFindsNoKey() async throws {
        let keys = GooglePayKeys()
        let options =
            keys.options(now: Date()) + [
                "--trust-root", "\(Paths.vectors)/trust/test-root.pem", "--insecure-testing-fixed-now", Bundled.now,
            ]
        try await withService(options) { client in
            let apple = try await client.post("/v1/decrypt", try Bundled.token("ec-3dsecure.json"))
            XCTAssertEqual(apple.code, "unknownMerchantKey", apple.text)
            let junk = try await client.post("/v1/decrypt", Data("{\"data\": 1}".utf8))
            XCTAssertEqual(junk.code, "malformedToken", junk.text)
        }
    }

    /// A Google Pay message valid for an hour is claimed for that hour, not only for the store's
    /// retention (2 × window + skew, here 1 s): replayed after the retention, it is still refused.
    func testAGooglePayClaimLastsUntilItsMessageExpires() async throws {
        let keys = GooglePayKeys()
        try await withService(keys.options(now: Date()) + ["--window", "0", "--clock-skew", "1"]) { client in
            let token = keys.token(now: Date()) { $0.messageLifetime = 3_600_000 }
            let first = try await client.post("/v1/decrypt", token)
            XCTAssertEqual(first.status, 200, first.text)
            try await Task.sleep(for: .milliseconds(2500))
            let replay = try await client.post("/v1/decrypt", token)
            XCTAssertEqual(replay.code, "replayedTransaction", replay.text)
        }
    }

    /// Both wallets in one service and one batch: each line decrypts by its shape, and a Google Pay
    /// token repeated in the stream is a replay.
    func testOneBatchDecryptsBothWallets() async throws {
        let keys = GooglePayKeys()
        let now = try Date(Bundled.now, strategy: .iso8601)
        let google = keys.token(now: now)
        let lines = [
            String(decoding: try Bundled.token("ec-3dsecure.json"), as: UTF8.self),
            String(decoding: google, as: UTF8.self),
            String(decoding: keys.token(now: now) { $0.protocolVersion = .ecV1 }, as: UTF8.self),
            String(decoding: google, as: UTF8.self),
        ]
        try await withService(Bundled.options + keys.options(now: now)) { client in
            let answer = try await client.post(
                "/v1/decrypt/batch", Data((lines.joined(separator: "\n") + "\n").utf8),
                headers: ["Content-Type": "application/jsonl"])
            XCTAssertEqual(answer.status, 200, answer.text)
            let results = answer.text.split(separator: "\n").map {
                try! JSONSerialization.jsonObject(with: Data($0.utf8)) as! [String: Any]
            }
            XCTAssertEqual(results.count, 4, answer.text)
            for i in 0..<3 { XCTAssertNotNil(results[i]["payment"], "line \(i): \(answer.text)") }
            XCTAssertEqual(results[3]["error"] as? String, "replayedTransaction", answer.text)
        }
    }

    /// Each broken rule gives its documented code through POST /v1/decrypt.
    func testEachBrokenRuleGivesItsCode() async throws {
        let keys = GooglePayKeys()
        let now = try Date(Bundled.now, strategy: .iso8601)
        let early = now.addingTimeInterval(-7200)
        let cases: [(String, String, Data)] = [
            (
                "intermediate signature", "invalidSignature",
                keys.token(now: now) { $0.breakIntermediateSignature = true }
            ),
            ("message signature", "invalidSignature", keys.token(now: now) { $0.breakMessageSignature = true }),
            (
                "ECv1 message signature", "invalidSignature",
                keys.token(now: now) {
                    $0.protocolVersion = .ecV1
                    $0.breakMessageSignature = true
                }
            ),
            (
                "expired intermediate key", "intermediateKeyExpired",
                keys.token(now: early) {
                    $0.intermediateLifetime = 3_600_000
                    $0.messageLifetime = 3 * 3_600_000
                }
            ),
            ("expired message", "messageExpired", keys.token(now: early) { $0.messageLifetime = 3_600_000 }),
            (
                "wrong recipient id", "invalidSignature",
                keys.token(now: now) { $0.recipientId = "merchant:someone-else" }
            ),
            (
                "duplicate member in signedMessage", "malformedToken",
                keys.token(now: now) { $0.duplicateMemberInSignedMessage = true }
            ),
            (
                "duplicate member in signedKey", "malformedToken",
                keys.token(now: now) { $0.duplicateMemberInSignedKey = true }
            ),
            ("bad tag", "decryptionFailed", keys.token(now: now) { $0.corruptTag = true }),
        ]
        try await withService(keys.options(now: now) + ["--insecure-testing-fixed-now", Bundled.now]) { client in
            for (name, code, token) in cases {
                let answer = try await client.post("/v1/decrypt", token)
                XCTAssertEqual(answer.status, 422, "\(name): \(answer.text)")
                XCTAssertEqual(answer.code, code, "\(name): \(answer.text)")
            }
            // The same factory's good token decrypts under the same service (the cases fail for their rule alone).
            let good = try await client.post("/v1/decrypt", keys.token(now: now))
            XCTAssertEqual(good.status, 200, good.text)
        }
    }

    /// The Google Pay options are checked as the CLI checks them.
    func testGooglePayOptionsAreChecked() throws {
        XCTAssertThrowsError(try ServiceOptions.parse(["--listen", "127.0.0.1:0"]))
        XCTAssertThrowsError(
            try ServiceOptions.parse(["--listen", "127.0.0.1:0", "--google-root-keys", "keys.json"]),
            "no recipient id")
        XCTAssertThrowsError(
            try ServiceOptions.parse([
                "--listen", "127.0.0.1:0", "--google-recipient-id", "merchant:1", "--google-merchant-key", "k.pem",
            ]), "no root keys")
        XCTAssertNoThrow(
            try ServiceOptions.parse([
                "--listen", "127.0.0.1:0", "--google-root-keys", "keys.json", "--google-recipient-id", "merchant:1",
            ]))
        let http = ["--listen", "127.0.0.1:0", "--google-recipient-id", "merchant:1", "--google-root-keys"]
        XCTAssertThrowsError(try ServiceOptions.parse(http + ["http://127.0.0.1:9/keys.json"]), "plain http unasked")
        XCTAssertThrowsError(
            try ServiceOptions.parse(
                http + ["http://example.com/keys.json", "--insecure-testing-allow-http-root-keys"]),
            "plain http off loopback")
        XCTAssertNoThrow(
            try ServiceOptions.parse(
                http + ["http://127.0.0.1:9/keys.json", "--insecure-testing-allow-http-root-keys"]))
        XCTAssertNoThrow(
            try ServiceOptions.parse(http + ["https://payments.developers.google.com/paymentmethodtoken/keys.json"]))
    }
}
