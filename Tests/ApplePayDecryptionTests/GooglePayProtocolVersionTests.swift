// Issue 44, item 3: the Google Pay protocol versions an engine accepts (ECv1 and ECv2 unless told, ECv2SigningOnly
// only when named; in decrypt and in the batch lanes), the version and the verifying recipient id in every
// result, the CLI's --google-protocol-version.
import ApplePayDecryption
import ApplePayTestSupport
import Foundation
import Testing

@Suite("Google Pay: the protocol versions accepted, and results that say how a token was protected")
struct GooglePayProtocolVersionTests {
    let bench = GooglePayBench.shared

    func engine(_ versions: Set<GooglePayToken.ProtocolVersion>? = nil) throws -> GooglePayTokenDecryptor {
        let f = bench.factory
        let roots = try GooglePayRootKeys(json: f.rootKeysDocument(now: bench.now))
        guard let versions else {
            return try GooglePayTokenDecryptor(
                merchantKeys: [f.merchantKey(0)], recipientIds: [bench.recipient], rootKeys: roots)
        }
        return try GooglePayTokenDecryptor(
            merchantKeys: [f.merchantKey(0)], recipientIds: [bench.recipient], rootKeys: roots,
            protocolVersions: versions)
    }

    @Test("by default ECv1 and ECv2 are accepted, and ECv2SigningOnly is unsupportedVersion on protocolVersion")
    func defaultIsECv1AndECv2() throws {
        #expect(GooglePayTokenDecryptor.defaultProtocolVersions == [.ecV1, .ecV2])
        let engine = try engine()
        for version in [GooglePayToken.ProtocolVersion.ecV1, .ecV2] {
            _ = try engine.decrypt(bench.factory.mint(bench.options(version)).token, at: .at(bench.now))
        }
        let error = try bench.code(bench.factory.mint(bench.options(.ecV2SigningOnly)).token, decryptor: engine)
        #expect(error?.code == .unsupportedVersion)
        #expect(error?.field == "protocolVersion")
    }

    /// The codes a batch of `versions`' tokens gets from `engine`, multi-buffer off and (where it runs) on.
    func batchCodes(_ versions: [GooglePayToken.ProtocolVersion], _ engine: GooglePayTokenDecryptor) throws
        -> [MultiBufferMode: [String]]
    {
        let tokens = versions.map { bench.factory.mint(bench.options($0)).token }
        var byMode: [MultiBufferMode: [String]] = [:]
        for mode in [MultiBufferMode.off] + (MultiBufferEnvironment.ready ? [.on] : []) {
            var source = ArrayTokenSource(tokens)
            var codes: [String] = []
            // A window of eight, so that the multi-buffer stage takes the group when it can run.
            try BatchDecryptor(
                decryptor: Fixtures.shared.decryptor(), lanes: 1, reference: .at(bench.now), windowSize: 8,
                backend: .resolve(mode), googlePay: engine
            ).run(
                &source,
                deliver: { result in
                    #expect(result.outcome.wallet == .googlePay)
                    switch result.outcome.result {
                    case .success: codes.append("ok")
                    case .failure(let error): codes.append("\(error.code.rawValue) \(error.field ?? "-")")
                    }
                })
            byMode[mode] = codes
        }
        return byMode
    }

    @Test("the batch lanes (multi-buffer off and on) refuse by the default as decrypt does")
    func batchDefault() throws {
        let versions: [GooglePayToken.ProtocolVersion] = [
            .ecV1, .ecV2, .ecV2SigningOnly, .ecV2, .ecV2, .ecV1, .ecV2, .ecV2,
        ]
        let expected = versions.map { $0 == .ecV2SigningOnly ? "unsupportedVersion protocolVersion" : "ok" }
        for (mode, codes) in try batchCodes(versions, engine()) {
            #expect(codes == expected, "\(mode)")
        }
    }

    @Test("naming versions replaces the default, in decrypt and in the batch lanes (multi-buffer off and on)")
    func namedVersions() throws {
        let signingOnly = try engine([.ecV2SigningOnly])
        _ = try signingOnly.decrypt(bench.factory.mint(bench.options(.ecV2SigningOnly)).token, at: .at(bench.now))
        #expect(
            try bench.code(bench.factory.mint(bench.options()).token, decryptor: signingOnly)?.code
                == .unsupportedVersion)
        #expect(throws: ConfigurationError.self) { try engine([]) }
        let versions: [GooglePayToken.ProtocolVersion] = [
            .ecV1, .ecV2, .ecV2SigningOnly, .ecV2, .ecV2, .ecV1, .ecV2, .ecV2,
        ]
        let expected = versions.map { $0 == .ecV2 ? "ok" : "unsupportedVersion protocolVersion" }
        for (mode, codes) in try batchCodes(versions, engine([.ecV2])) {
            #expect(codes == expected, "\(mode)")
        }
    }

    @Test("every result shape carries the token's protocolVersion and the recipient id that verified")
    func resultsSayHowTheTokenWasProtected() throws {
        let engine = try GooglePayTokenDecryptor(
            merchantKeys: [bench.factory.merchantKey(0)], recipientIds: [bench.gateway, bench.recipient],
            rootKeys: GooglePayRootKeys(json: bench.factory.rootKeysDocument(now: bench.now)),
            protocolVersions: Set(GooglePayToken.ProtocolVersion.allCases))
        for version in GooglePayToken.ProtocolVersion.allCases {
            let minted = bench.factory.mint(bench.options(version))
            let payment = try engine.decrypt(minted.token, at: .at(bench.now))
            for projection in [ResultProjection.payment, .response, .line(index: 0, source: "x", maskingPAN: true)] {
                let out = SensitiveBuffer()
                ResultWriter.write(
                    transactionId: nil, result: .success(WalletPayment.googlePay(payment)), as: projection, into: out)
                let value = try out.withUnsafeBytes { try JSONValue.parse(Array($0)) }
                let object = value["payment"] ?? value
                #expect(object["protocolVersion"]?.stringValue == version.rawValue)
                #expect(object["recipientId"]?.stringValue == bench.recipient)
                #expect(object["messageId"]?.stringValue == minted.messageId)
                #expect(object["paymentMethodDetails"]?["pan"] != nil)
            }
        }
    }

    @Test(
        "a message with its own protocolVersion or recipientId member is invalidPayload (a result must not repeat one)")
    func reservedMembers() throws {
        // As written in the message's JSON, and the member each reads as to a reader that matches keys without
        // regard to case (Go's encoding/json keeps the last of "recipientId" and "RecipientId"): the attack
        // review found the folded spellings passing; nil: not reserved, decrypted.
        let cases: [(written: String, reserved: String?)] = [
            ("protocolVersion", "protocolVersion"), ("recipientId", "recipientId"),
            ("RecipientId", "recipientId"), ("PROTOCOLVERSION", "protocolVersion"),
            ("protocolVer\u{017F}ion", "protocolVersion"), ("protocolVer\\u017fion", "protocolVersion"),
            ("recipientI\\u0044", "recipientId"), ("recipientIds", nil), ("protocolVersio", nil),
        ]
        for (written, reserved) in cases {
            var options = bench.options()
            var payload = GooglePayTestFactory.payload(
                messageId: "reserved", messageExpiration: GooglePayTestFactory.milliseconds(bench.now) + 60_000)
            payload.removeLast()
            payload += Array(",\"\(written)\":\"x\"}".utf8)
            options.payload = payload
            let error = try bench.code(bench.factory.mint(options).token)
            #expect(error?.code == (reserved == nil ? nil : .invalidPayload), "\(written)")
            #expect(error?.field == reserved, "\(written)")
        }
    }

    @Test("the CLI: --google-protocol-version names the versions accepted, replacing the default (ECv1 and ECv2)")
    func cliProtocolVersion() throws {
        let dir = ScratchDirectory()
        let keys = GooglePayCLIKeys(dir)
        let ecv1 = dir.write("ecv1.json", GooglePayCLIKeys.mint { $0.protocolVersion = .ecV1 }.token)
        let signingOnly = dir.write(
            "signing-only.json", GooglePayCLIKeys.mint { $0.protocolVersion = .ecV2SigningOnly }.token)
        let now = ["--now", "2026-03-01T12:00:30Z"]
        let byDefault = try runCLI(["decrypt", ecv1] + now + keys.options)
        #expect(byDefault.status == 0, "\(byDefault.stdout)\(byDefault.stderr)")
        #expect(try JSONValue.parse(byDefault.stdout)["protocolVersion"]?.stringValue == "ECv1")
        #expect(try JSONValue.parse(byDefault.stdout)["recipientId"]?.stringValue == GooglePayCLIKeys.recipient)
        let refused = try runCLI(["decrypt", signingOnly] + now + keys.options)
        #expect(refused.status == 1)
        #expect(try JSONValue.parse(refused.stdout)["error"]?.stringValue == "unsupportedVersion")
        #expect(try JSONValue.parse(refused.stdout)["field"]?.stringValue == "protocolVersion")
        let named = ["--google-protocol-version", "ECv2", "--google-protocol-version", "ECv2SigningOnly"]
        let accepted = try runCLI(["decrypt", signingOnly] + named + now + keys.options)
        #expect(accepted.status == 0, "\(accepted.stdout)\(accepted.stderr)")
        #expect(try JSONValue.parse(accepted.stdout)["protocolVersion"]?.stringValue == "ECv2SigningOnly")
        let ecv1Refused = try runCLI(["decrypt", ecv1] + named + now + keys.options)
        #expect(try JSONValue.parse(ecv1Refused.stdout)["error"]?.stringValue == "unsupportedVersion")
        let unknown = try runCLI(["decrypt", ecv1, "--google-protocol-version", "ECv3"] + now + keys.options)
        #expect(unknown.status == 2)
        #expect(unknown.stderr.contains("--google-protocol-version: Google Pay protocol version \"ECv3\""))
    }

    @Test("a list of names: none is the default, each name one version, a name that is no version invalidOption")
    func protocolVersionsNamed() throws {
        typealias Decryptor = GooglePayTokenDecryptor
        #expect(try Decryptor.protocolVersions(named: []) == Decryptor.defaultProtocolVersions)
        #expect(try Decryptor.protocolVersions(named: ["ECv2", "ECv2"]) == [.ecV2])
        #expect(try Decryptor.protocolVersions(named: ["ECv2SigningOnly", "ECv1"]) == [.ecV2SigningOnly, .ecV1])
        for name in ["ECV2", "ecv2", " ECv2", "ECv2 ", "", "ECv3"] {
            let refusal = ConfigurationError(.invalidOption, "")
            #expect(throws: refusal) { try Decryptor.protocolVersions(named: ["ECv2", name]) }
        }
    }
}
