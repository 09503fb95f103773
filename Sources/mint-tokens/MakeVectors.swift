// `mint-tokens vectors [DIRECTORY]`: regenerates Vectors/ (a test PKI, merchant keys, single tokens and a
// mixed archive, all minted by the library's token factory). Usage: swift run mint-tokens vectors Vectors
import ApplePayDecryption
import ApplePayTestSupport
import ArgumentParser
import Foundation

struct MakeVectors: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "vectors",
        abstract:
            "Regenerate the bundled vectors: trust root, merchants, single tokens, a mixed archive and manifest.json."
    )
    /// 2026-03-01T12:00:00Z: every token is signed then, except the deliberately stale one.
    static let signingTime = Date(timeIntervalSince1970: 1_772_366_400)
    static let now = "2026-03-01T12:01:00Z"

    @Argument(help: "The folder to write.")
    var directory = "Vectors"

    func run() throws {
        let (signingTime, now) = (Self.signingTime, Self.now)
        let directory = URL(fileURLWithPath: self.directory)
        let fm = FileManager.default
        for sub in ["trust", "merchants", "tokens"] {
            try fm.createDirectory(at: directory.appendingPathComponent(sub), withIntermediateDirectories: true)
        }
        func write(_ path: String, _ bytes: [UInt8]) throws {
            try bytes.withUnsafeBytes { try WholeWrite.file(atPath: directory.appendingPathComponent(path).path, $0) }
        }
        func write(_ path: String, _ text: String) throws { try write(path, Array(text.utf8)) }

        let pki = TestPKI()
        let ec = pki.makeMerchant(identifier: "merchant.com.example.vectors")
        let rsa = pki.makeMerchant(identifier: "merchant.com.example.vectors.rsa", kind: .rsa)
        let stranger = pki.makeMerchant(identifier: "merchant.com.example.not-loaded")
        let forger = TestPKI()  // Apple's names, a different root: must be untrusted
        let forgedMerchantKey = forger.makeMerchant(identifier: "merchant.com.example.vectors")
        try write("trust/test-root.pem", pki.rootPEM)
        try write("merchants/ec.cert.pem", ec.certificatePEM)
        try write("merchants/ec.key.pem", ec.privateKeyPEM)
        try write("merchants/rsa.cert.pem", rsa.certificatePEM)
        try write("merchants/rsa.key.pem", rsa.privateKeyPEM)

        let factory = TestTokenFactory(pki: pki)
        func mint(
            _ payload: [UInt8] = TestPayload.threeDSecure(), for merchant: TestMerchant? = nil,
            using other: TestTokenFactory? = nil,
            _ configure: (inout TestTokenFactory.Options) -> Void = { _ in }
        ) -> TestTokenFactory.Minted {
            var options = TestTokenFactory.Options(signingTime: signingTime)
            configure(&options)
            return (other ?? factory).mint(payload: payload, for: merchant ?? ec, options: options)
        }

        // Single tokens, one per input form and payload kind.
        var manifestTokens: [(String, JSONValue)] = []
        let singles: [(String, [UInt8], String)] = [
            ("tokens/ec-3dsecure.json", mint().paymentData.description.utf8.map { $0 }, "ok"),
            (
                "tokens/ec-emv-pkpaymenttoken.json",
                {
                    let m = mint(TestPayload.emv())
                    return TokenWrapping.pkPaymentToken.wrap(m.paymentData, transactionId: m.transactionId)
                }(), "ok"
            ),
            (
                "tokens/ec-merchant-token-applepayjs.json",
                {
                    let m = mint(
                        TestPayload.threeDSecure(
                            cardholderName: "Jane Appleseed", extra: TestPayload.merchantTokenFields))
                    return TokenWrapping.applePayJS.wrap(m.paymentData, transactionId: m.transactionId)
                }(), "ok"
            ),
            (
                "tokens/ec-application-data.json",
                mint { $0.applicationData = String(repeating: "5e", count: 32) }.bytes, "ok"
            ),
            ("tokens/rsa-3dsecure.json", mint(for: rsa).bytes, "ok"),
            (
                "tokens/ec-base64.txt",
                {
                    let m = mint()
                    return TokenWrapping.base64String.wrap(m.paymentData, transactionId: m.transactionId)
                }(), "ok"
            ),
        ]
        for (path, bytes, expect) in singles {
            try write(path, bytes + [0x0A])
            manifestTokens.append((path, .string(expect)))
        }

        // A mixed archive: one token per line, every outcome present.
        var lines: [(String, [UInt8])] = []
        for i in 0..<6 { lines.append(("ok", mint(TestPayload.threeDSecure(pan: "476112001000\(1000 + i)")).bytes)) }
        lines.append(("ok", mint(for: rsa).bytes))
        lines.append(
            (
                "ok",
                {
                    let m = mint(TestPayload.emv())
                    return TokenWrapping.pkPaymentToken.wrap(m.paymentData, transactionId: m.transactionId)
                }()
            ))
        lines.append(("malformedToken", Array(#"{"version":"EC_v1","data":"AAAA"}"#.utf8)))
        lines.append(("malformedToken", Array("this line is not a token".utf8)))
        lines.append(
            (
                "unsupportedVersion",
                {
                    let text = mint().paymentData.description.replacingOccurrences(of: "\"EC_v1\"", with: "\"EC_v2\"")
                    return Array(text.utf8)
                }()
            ))
        lines.append(
            (
                "invalidSignature",
                {
                    // Flip one base64 character of the ciphertext: the message digest no longer matches.
                    var text = mint().paymentData.description
                    let range = text.range(of: "\"data\":\"")!
                    let index = text.index(range.upperBound, offsetBy: 4)
                    text.replaceSubrange(index...index, with: text[index] == "A" ? "B" : "A")
                    return Array(text.utf8)
                }()
            ))
        lines.append(
            ("untrustedCertificateChain", mint(for: forgedMerchantKey, using: TestTokenFactory(pki: forger)).bytes))
        lines.append(("signingTimeOutOfRange", mint { $0.signingTime = signingTime.addingTimeInterval(-3600) }.bytes))
        lines.append(("unknownMerchantKey", mint(for: stranger).bytes))
        lines.append(("decryptionFailed", mint { $0.corruptTagBeforeSigning = true }.bytes))
        lines.append(("invalidPayload", mint(Array(#"{"note":"no card here"}"#.utf8)).bytes))
        lines.append(("replayedTransaction", lines[0].1))
        for i in 0..<4 { lines.append(("ok", mint(TestPayload.threeDSecure(pan: "520424025019\(7000 + i)")).bytes)) }
        try write("archive.jsonl", lines.flatMap { $0.1 + [0x0A] })

        let manifest = JSONValue.object([
            ("signingTime", .string("2026-03-01T12:00:00Z")),
            ("now", .string(now)),
            ("trustRoot", .string("trust/test-root.pem")),
            (
                "merchants",
                .array([
                    .string("cert=merchants/ec.cert.pem,key=merchants/ec.key.pem"),
                    .string("cert=merchants/rsa.cert.pem,key=merchants/rsa.key.pem"),
                ])
            ),
            ("tokens", .object(manifestTokens)),
            (
                "archive",
                .object([("file", .string("archive.jsonl")), ("expect", .array(lines.map { .string($0.0) }))])
            ),
        ])
        try write("manifest.json", manifest.description + "\n")
        print("wrote \(singles.count) tokens and an archive of \(lines.count) lines to \(directory.path)")
    }
}
