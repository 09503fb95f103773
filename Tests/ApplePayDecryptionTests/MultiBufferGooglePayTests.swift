// Google Pay tokens in the multi-buffer stage: a mixed archive of both wallets, every Google Pay
// negative case of the factory among Apple's hostile items, gives the same JSON lines with crypto_mb
// on and off; Google Pay items really take the group's calls; where crypto_mb cannot run, auto is off.
@testable import ApplePayDecryption
import ApplePayCrypto
import ApplePayTestSupport
import Foundation
import Testing

/// A Google Pay sender for these tests: three merchant keys, of which the engine holds the first two.
final class MultiBufferGooglePayBench: Sendable {
    static let shared = MultiBufferGooglePayBench()
    let factory = GooglePayTestFactory(merchantKeyCount: 3)
    let recipient = "merchant:12345678901234567890"
    let gateway = "gateway:examplegateway"

    func mint(_ change: (inout GooglePayTestFactory.Options) -> Void = { _ in }) -> [UInt8] {
        var options = GooglePayTestFactory.Options(now: signingInstant)
        options.recipientId = recipient
        change(&options)
        return factory.mint(options).token
    }

    /// The engine: merchant keys 0 and 1 (rotation), both recipient ids; `strangerECv1RootFirst` lists
    /// a root that verifies nothing before the real ECv1 root (the group's lane then refuses every
    /// ECv1 message signature and the engine's own check decides).
    func engine(strangerECv1RootFirst: Bool = false) throws -> GooglePayTokenDecryptor {
        let end = GooglePayTestFactory.milliseconds(signingInstant) + 365 * 86_400_000
        var entries: [GooglePayTestFactory.RootKeyEntry] = [
            .init(protocolVersion: "ECv1", keyExpiration: nil),
            .init(protocolVersion: "ECv2", keyExpiration: end),
            .init(protocolVersion: "ECv2SigningOnly", keyExpiration: end),
        ]
        if strangerECv1RootFirst {
            entries.insert(.init(protocolVersion: "ECv1", keyExpiration: nil, stranger: true), at: 0)
        }
        return try GooglePayTokenDecryptor(
            merchantKeys: [factory.merchantKey(0), factory.merchantKey(1)], recipientIds: [recipient, gateway],
            rootKeys: GooglePayRootKeys(json: factory.rootKeysDocument(entries)),
            protocolVersions: Set(GooglePayToken.ProtocolVersion.allCases))
    }

    /// The token with its `signature` replaced: bytes that are no DER ECDSA signature, which the
    /// group's lane does not take (the engine checks it at once).
    func withSignature(_ token: [UInt8], _ signature: [UInt8]) throws -> [UInt8] {
        guard case let .object(members) = try JSONValue.parse(token) else { return token }
        let changed = members.map { $0.0 == "signature" ? ($0.0, JSONValue.string(Base64.encode(signature))) : $0 }
        return Array(JSONValue.object(changed).description.utf8)
    }

    /// Every Google Pay case of the factory, each with the code the engine gives it (the factory breaks
    /// a message signature by signing with its stranger key: a root keys document that lists it as an
    /// ECv1 root makes that ECv1 token good).
    func cases(strangerECv1RootFirst: Bool = false) throws -> [(name: String, token: [UInt8], code: String)] {
        let replayed = mint()
        var cases: [(String, [UInt8], String)] = [
            ("ECv2", mint(), "ok"),
            ("ECv1", mint { $0.protocolVersion = .ecV1 }, "ok"),
            ("ECv2SigningOnly", mint { $0.protocolVersion = .ecV2SigningOnly }, "ok"),
            ("second recipient id", mint { $0.recipientId = gateway }, "ok"),
            (
                "ECv1 for the second recipient id",
                mint {
                    $0.protocolVersion = .ecV1; $0.recipientId = gateway
                }, "ok"
            ),
            ("key rotation: the second merchant key", mint { $0.merchantKeyIndex = 1 }, "ok"),
            (
                "ECv1, the second merchant key",
                mint {
                    $0.protocolVersion = .ecV1; $0.merchantKeyIndex = 1
                }, "ok"
            ),
            ("a merchant key the engine does not hold", mint { $0.merchantKeyIndex = 2 }, "decryptionFailed"),
            ("leading zero byte in Z", mint { $0.requireLeadingZeroSharedSecret = true }, "ok"),
            (
                "ECv1, leading zero byte in Z",
                mint {
                    $0.protocolVersion = .ecV1; $0.requireLeadingZeroSharedSecret = true
                }, "ok"
            ),
            ("two stranger intermediate signatures first", mint { $0.extraIntermediateSignaturesBefore = 2 }, "ok"),
            ("intermediate signature broken", mint { $0.breakIntermediateSignature = true }, "invalidSignature"),
            ("message signature broken", mint { $0.breakMessageSignature = true }, "invalidSignature"),
            (
                "ECv1 message signature broken",
                mint {
                    $0.protocolVersion = .ecV1; $0.breakMessageSignature = true
                },
                strangerECv1RootFirst ? "ok" : "invalidSignature"
            ),
            (
                "ECv2SigningOnly message signature broken",
                mint {
                    $0.protocolVersion = .ecV2SigningOnly; $0.breakMessageSignature = true
                }, "invalidSignature"
            ),
            (
                "message signature not DER", try withSignature(mint(), [0x30, 0x03, 0x02, 0x01, 0x01]),
                "invalidSignature"
            ),
            ("wrong recipient id", mint { $0.recipientId = "merchant:someone-else" }, "invalidSignature"),
            ("intermediate key expired", mint { $0.intermediateLifetime = -1 }, "intermediateKeyExpired"),
            ("message expired", mint { $0.messageLifetime = -1 }, "messageExpired"),
            (
                "ECv1 message expired",
                mint {
                    $0.protocolVersion = .ecV1; $0.messageLifetime = -1
                }, "messageExpired"
            ),
            ("bad tag", mint { $0.corruptTag = true }, "decryptionFailed"),
            (
                "ECv1 bad tag",
                mint {
                    $0.protocolVersion = .ecV1; $0.corruptTag = true
                }, "decryptionFailed"
            ),
            ("ephemeral key off the curve", mint { $0.ephemeralPointOffCurve = true }, "decryptionFailed"),
            (
                "off the curve, message signature broken",
                mint {
                    $0.ephemeralPointOffCurve = true; $0.breakMessageSignature = true
                }, "invalidSignature"
            ),
            (
                "bad tag, message signature broken",
                mint {
                    $0.corruptTag = true; $0.breakMessageSignature = true
                }, "invalidSignature"
            ),
            ("duplicate member in signedMessage", mint { $0.duplicateMemberInSignedMessage = true }, "malformedToken"),
            ("duplicate member in signedKey", mint { $0.duplicateMemberInSignedKey = true }, "malformedToken"),
            ("replayed token, first", replayed, "ok"),
            ("replayed token, again", replayed, "replayedTransaction"),
            (
                "not ECv1/ECv2", Array(#"{"protocolVersion":"ECv3","signature":"","signedMessage":""}"#.utf8),
                "unsupportedVersion"
            ),
            ("no signature", Array(#"{"protocolVersion":"ECv2","signedMessage":"{}"}"#.utf8), "malformedToken"),
        ]
        // The message is not a payment: verified and decrypted, then refused.
        cases.append(
            (
                "not a payment",
                mint { $0.payload = Array(#"{"messageId":"x","messageExpiration":"9999999999999"}"#.utf8) },
                "invalidPayload"
            ))
        return cases.map { (name: $0.0, token: $0.1, code: $0.2) }
    }
}

@Suite("Multi-buffer P-256 with Google Pay tokens")
struct MultiBufferGooglePayTests {
    let bench = MultiBufferGooglePayBench.shared

    /// Apple's hostile archive with the Google Pay cases spread through it (two to five per group of
    /// eight), and runs of good Google Pay tokens that fill whole groups.
    func mixedArchive(strangerECv1RootFirst: Bool) throws -> (
        tokens: [[UInt8]], google: [Int: (name: String, code: String)]
    ) {
        let apple = MultiBufferTests.hostileArchive(count: 120)
        let google = try bench.cases(strangerECv1RootFirst: strangerECv1RootFirst)
        var tokens: [[UInt8]] = []
        var expected: [Int: (name: String, code: String)] = [:]
        var a = 0, g = 0
        while a < apple.count || g < google.count {
            let takeGoogle = g < google.count && (a >= apple.count || tokens.count % 3 != 1)
            if takeGoogle {
                expected[tokens.count] = (google[g].name, google[g].code)
                tokens.append(google[g].token)
                g += 1
            } else {
                tokens.append(apple[a])
                a += 1
            }
        }
        for _ in 0..<16 {
            expected[tokens.count] = ("ECv2 in a run of good tokens", "ok")
            tokens.append(bench.mint())
        }
        return (tokens, expected)
    }

    /// A result as the CLI writes it (its JSON line, PAN in clear), and its error's OpenSSL reason.
    static func line(_ result: BatchResult) -> String {
        let out = SensitiveBuffer()
        result.writeLine(into: out, source: "archive", maskingPAN: false, verifiedAtSigningTime: false)
        let line = out.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
        return line + "reason: \(verdict(result)?.reason ?? "-")"
    }

    /// The item's error whichever the wallet (a Google Pay item's is in `googlePay`).
    static func verdict(_ result: BatchResult) -> ApplePayError? {
        switch result.googlePay {
        case .failure(let error)?: return error
        case .success?: return nil
        case nil: if case let .failure(error) = result.outcome.result { return error } else { return nil }
        }
    }

    func run(
        _ tokens: [[UInt8]], _ mode: MultiBufferMode, lanes: Int, window: Int, google: GooglePayTokenDecryptor
    ) throws -> [BatchResult] {
        var source = ArrayTokenSource(tokens)
        var results: [BatchResult] = []
        let batch = BatchDecryptor(
            decryptor: Fixtures.shared.decryptor(), lanes: lanes, reference: .at(signingInstant), windowSize: window,
            backend: try .resolve(mode), googlePay: google)
        try batch.run(&source, deliver: { results.append($0) })
        return results
    }

    @Test(
        "a mixed archive (Apple's hostile items and every Google Pay case) gives the same JSON lines with the multi-buffer backend as without, and each Google Pay case its code",
        arguments: [(1, 512, false), (2, 13, false), (1, 8, true), (2, 5, true)])
    func mixedArchiveOnEqualsOff(lanes: Int, window: Int, strangerECv1RootFirst: Bool) throws {
        let (tokens, expected) = try mixedArchive(strangerECv1RootFirst: strangerECv1RootFirst)
        let google = try bench.engine(strangerECv1RootFirst: strangerECv1RootFirst)
        let off = try run(tokens, .off, lanes: lanes, window: window, google: google)
        // Where crypto_mb runs, auto is on (readyWhereExpected makes sure it does on an IFMA machine
        // with APPLEPAY_CRYPTO_MB); elsewhere auto falls back and the archive is still held to the codes.
        let auto = try run(tokens, .auto, lanes: lanes, window: window, google: google)
        #expect(try MultiBufferBackend.resolve(.auto).isActive == MultiBufferEnvironment.ready)
        #expect(off.count == tokens.count && auto.count == tokens.count)
        let offLines = off.map(Self.line), autoLines = auto.map(Self.line)
        for (i, (a, b)) in zip(autoLines, offLines).enumerated() where a != b {
            Issue.record("item \(i): multi-buffer \(a) / per token \(b)")
        }
        for (i, (name, code)) in expected.sorted(by: { $0.key < $1.key }) {
            let got = Self.verdict(off[i])?.code.rawValue ?? "ok"
            #expect(off[i].googlePay != nil, "item \(i) did not go the Google Pay way")
            #expect(got == code, "item \(i), \(name): \(offLines[i])")
        }
    }

    @Test(
        "Google Pay items take the group's calls: eight good tokens of the three versions, each message signature verified and each sealed message opened by the group",
        .enabled(if: MultiBufferEnvironment.ready))
    func googlePayItemsJoinTheGroup() throws {
        let library = try #require(CryptoMB.shared.library)
        let tokens =
            (0..<4).map { _ in bench.mint() } + (0..<2).map { _ in bench.mint { $0.protocolVersion = .ecV1 } }
            + (0..<2).map { _ in bench.mint { $0.protocolVersion = .ecV2SigningOnly } }
        var window = BatchWindow()
        for (n, token) in tokens.enumerated() {
            window.append(owning: token, at: BatchLocation(origin: 0, line: n + 1))
        }
        let engine = BatchDecryptor(
            decryptor: Fixtures.shared.decryptor(), lanes: 1, reference: .at(signingInstant), windowSize: 8,
            backend: try .resolve(.on), googlePay: try bench.engine())
        let stage = MultiBufferStage(library: library)
        var slots: [Slot?] = Array(repeating: nil, count: 8)
        let instant = ReferenceTime.at(signingInstant).unixSecondsAndMilliseconds
        stage.process(
            0..<8, of: window, engine: engine, referenceSeconds: instant.seconds,
            referenceMilliseconds: instant.milliseconds
        ) { slots[$0] = $1 }
        for (k, slot) in slots.enumerated() {
            guard case .success? = slot?.outcome?.googlePayResult else {
                Issue.record("item \(k): \(String(describing: slot?.outcome?.googlePayResult))")
                continue
            }
        }
        #expect(stage.googlePayLanes.verified == 8)
        #expect(stage.googlePayLanes.agreed == 6)
        // With a stranger ECv1 root listed first, the ECv1 signatures fall to the engine, which accepts them.
        let stranger = BatchDecryptor(
            decryptor: Fixtures.shared.decryptor(), lanes: 1, reference: .at(signingInstant), windowSize: 8,
            backend: try .resolve(.on), googlePay: try bench.engine(strangerECv1RootFirst: true))
        stage.googlePayLanes = (0, 0)
        stage.process(
            0..<8, of: window, engine: stranger, referenceSeconds: instant.seconds,
            referenceMilliseconds: instant.milliseconds
        ) { slots[$0] = $1 }
        #expect(slots.allSatisfy { if case .success? = $0?.outcome?.googlePayResult { true } else { false } })
        #expect(stage.googlePayLanes.verified == 6)
        #expect(stage.googlePayLanes.agreed == 6)
    }

    @Test(
        "through the CLI: batch --multibuffer on writes off's output byte for byte for the mixed archive, Apple and Google keys together",
        .enabled(if: MultiBufferEnvironment.ready))
    func cliOnEqualsOffBytes() throws {
        let dir = ScratchDirectory()
        let (tokens, _) = try mixedArchive(strangerECv1RootFirst: false)
        let archive = dir.write("mixed.jsonl", tokens.flatMap { $0 + [0x0A] })
        let f = Fixtures.shared, g = bench.factory
        let end = GooglePayTestFactory.milliseconds(signingInstant) + 365 * 86_400_000
        let roots = g.rootKeysDocument([
            .init(protocolVersion: "ECv1", keyExpiration: nil), .init(protocolVersion: "ECv2", keyExpiration: end),
            .init(protocolVersion: "ECv2SigningOnly", keyExpiration: end),
        ])
        let ec = f.ecMerchant, rsa = f.rsaMerchant
        let options = [
            "--merchant",
            "cert=\(dir.write("ec.cert.pem", ec.certificatePEM)),key=\(dir.write("ec.key.pem", ec.privateKeyPEM))",
            "--merchant",
            "cert=\(dir.write("rsa.cert.pem", rsa.certificatePEM)),key=\(dir.write("rsa.key.pem", rsa.privateKeyPEM))",
            "--trust-root", dir.write("root.pem", f.pki.rootPEM), "--now", "2026-03-01T12:00:00Z", "--quiet",
            "--google-root-keys", dir.write("google-roots.json", roots),
            "--google-recipient-id", bench.recipient, "--google-recipient-id", bench.gateway,
            "--google-merchant-key", dir.write("google0.pem", g.merchantKeyPEM(0)),
            "--google-merchant-key", dir.write("google1.pem", g.merchantKeyPEM(1)),
        ]
        var outputs: [Data] = []
        for mode in ["on", "off"] {
            let out = dir.url.appendingPathComponent("\(mode).jsonl").path
            let result = try runCLI(["batch", archive, "--out", out, "--multibuffer", mode, "--lanes", "2"] + options)
            #expect(result.status == 0, "\(result.stderr)")
            if mode == "on" { #expect(result.stderr.contains("P-256 on crypto_mb ("), "\(result.stderr)") }
            outputs.append(try Data(contentsOf: URL(fileURLWithPath: out)))
        }
        #expect(outputs[0] == outputs[1])
        #expect(outputs[0].count > 0)
    }
}

extension WalletOutcome {
    /// A Google Pay item's verdict, nil for another wallet's item.
    var googlePayResult: Result<GooglePayment, ApplePayError>? {
        guard wallet == .googlePay else { return nil }
        return result.map { $0.googlePay! }
    }
}
