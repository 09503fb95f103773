// `mint-tokens samsung DIRECTORY COUNT`: two Samsung Pay merchant keys, COUNT tokens and one token per rule.
import ApplePayDecryption
import ApplePayTestSupport
import ArgumentParser
import Foundation

/// Writes DIRECTORY/merchant_key.pem and merchant_key_2.pem (RSA-2048, PKCS#8; tokens name them by
/// kid, listed in kids.json), tokens.jsonl (COUNT distinct payments in the app's paymentCredential
/// envelope, one per line, USD 10.00, token PAN 4111 0000 NNNN NNNN, each with its own cryptogram),
/// token-app.json, token-web.json and token.jwe (one payment in each envelope: a replay of one another),
/// and every rule once, for each front end's tests: cases.jsonl (one token per line; bare JWEs as JSON
/// strings) with cases.json (`[{"name", "code", "field"}]`, line by line: the outcome when both keys are
/// configured). Every token is made at 2026-03-01T12:00:00Z (`--now 2026-03-01T12:00:00.000Z`).
struct SamsungFolder: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "samsung",
        abstract: "Two Samsung Pay merchant keys, COUNT tokens (tokens.jsonl) and one token per rule (cases.jsonl)."
    )
    /// The wallet's clock, the same instant as the other folders'.
    static let now = Date(timeIntervalSince1970: 1_772_366_400)

    @Argument(help: "The folder to write (created if missing).")
    var directory: String
    @Argument(help: "How many tokens.")
    var count: Int

    func validate() throws {
        guard count > 0 else { throw ValidationError("COUNT must be at least 1") }
    }

    func run() throws {
        let directory = URL(fileURLWithPath: self.directory)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let factory = SamsungPayTestFactory(merchantKeyCount: 3)
        func write(_ bytes: [UInt8], _ name: String) throws {
            try bytes.withUnsafeBytes { try WholeWrite.file(atPath: directory.appendingPathComponent(name).path, $0) }
        }
        try write(Array(factory.merchantKeyPEM(0).utf8), "merchant_key.pem")
        try write(Array(factory.merchantKeyPEM(1).utf8), "merchant_key_2.pem")
        try write(
            Array(JSONValue.array([.string(factory.kid(0)), .string(factory.kid(1))]).description.utf8), "kids.json")
        var lines = [UInt8]()
        for i in 0..<count {
            var options = SamsungPayTestFactory.Options(now: Self.now)
            options.tokenPAN = "41110000" + String(format: "%08d", i)
            lines += factory.mint(options).token
            lines.append(0x0A)
        }
        try write(lines, "tokens.jsonl")
        let options = SamsungPayTestFactory.Options(now: Self.now)
        let first = factory.mint(options)
        try write(first.token, "token-app.json")
        try write(factory.rewrap(first, options: options, wrapper: .webCheckout).token, "token-web.json")
        try write(factory.rewrap(first, options: options, wrapper: .compactJWE).token, "token.jwe")
        try writeCases(factory, write)
    }

    /// cases.jsonl and cases.json (see the type's comment).
    private func writeCases(_ factory: SamsungPayTestFactory, _ write: ([UInt8], String) throws -> Void) throws {
        typealias Change = (inout SamsungPayTestFactory.Options) -> Void
        let window = SamsungPayTokenDecryptor.defaultFreshnessWindow * 1000
        let cases: [(String, String, String?, Change)] = [
            ("app-envelope", "ok", nil, { _ in }),
            ("web-checkout-envelope", "ok", nil, { $0.wrapper = .webCheckout }),
            ("bare-jwe", "ok", nil, { $0.wrapper = .jsonString }),
            ("second-key", "ok", nil, { $0.merchantKeyIndex = 1 }),
            ("unknown-kid", "unknownMerchantKey", "kid", { $0.merchantKeyIndex = 2 }),
            ("alg-not-rsa1-5", "unsupportedVersion", "alg", { $0.alg = "RSA-OAEP" }),
            ("enc-not-a128gcm", "unsupportedVersion", "enc", { $0.enc = "A256GCM" }),
            ("typ-not-jose", "unsupportedVersion", "typ", { $0.typ = "JWT" }),
            ("crit-present", "unsupportedVersion", "crit", { $0.extraHeaderMembers = [("crit", #"["b64"]"#)] }),
            ("zip-present", "unsupportedVersion", "zip", { $0.extraHeaderMembers = [("zip", #""DEF""#)] }),
            ("3ds-version-not-100", "unsupportedVersion", "3DS.version", { $0.threeDSVersion = "200" }),
            ("four-parts", "malformedToken", "$", { $0.partCount = 4 }),
            ("header-not-base64url", "malformedToken", "protected", { $0.nonBase64URLPart = .protectedHeader }),
            ("encrypted-key-not-base64url", "malformedToken", "encryptedKey", { $0.nonBase64URLPart = .encryptedKey }),
            ("iv-not-base64url", "malformedToken", "iv", { $0.nonBase64URLPart = .iv }),
            ("ciphertext-not-base64url", "malformedToken", "ciphertext", { $0.nonBase64URLPart = .ciphertext }),
            ("tag-not-base64url", "malformedToken", "tag", { $0.nonBase64URLPart = .tag }),
            ("encrypted-key-one-byte-short", "malformedToken", "encryptedKey", { $0.truncateEncryptedKey = true }),
            ("iv-16-bytes", "malformedToken", "iv", { $0.ivLength = 16 }),
            ("tag-12-bytes", "malformedToken", "tag", { $0.tagLength = 12 }),
            ("duplicate-header-member", "malformedToken", "alg", { $0.duplicateHeaderMember = true }),
            ("duplicate-envelope-member", "malformedToken", "method", { $0.duplicateEnvelopeMember = true }),
            ("duplicate-3ds-member", "malformedToken", "3DS.type", { $0.duplicateThreeDSMember = true }),
            (
                "duplicate-web-member", "malformedToken", "paymentMethod",
                {
                    $0.wrapper = .webCheckout
                    $0.duplicateWebMember = true
                }
            ),
            ("duplicate-payment-member", "invalidPayload", "amount", { $0.duplicatePayloadMember = true }),
            ("padding-failure", "decryptionFailed", "tag", { $0.breakPadding = .blockType }),
            ("padding-zero-inside", "decryptionFailed", "tag", { $0.breakPadding = .zeroInPadding }),
            ("padding-17-byte-key", "decryptionFailed", "tag", { $0.breakPadding = .seventeenByteKey }),
            ("padding-15-byte-key", "decryptionFailed", "tag", { $0.breakPadding = .fifteenByteKey }),
            ("tag-failure", "decryptionFailed", "tag", { $0.corruptTag = true }),
            ("rfc-7516-aad", "decryptionFailed", "tag", { $0.rfcAAD = true }),
            (
                "wrong-key-for-kid", "decryptionFailed", "tag",
                {
                    $0.merchantKeyIndex = 1
                    $0.kid = factory.kid(0)
                }
            ),
            ("utc-stale", "messageExpired", "utc", { $0.utcOffset = -window - 1 }),
            ("utc-future", "messageExpired", "utc", { $0.utcOffset = window + 1 }),
        ]
        var lines = [UInt8]()
        var manifest: [JSONValue] = []
        for (index, (name, code, field, change)) in cases.enumerated() {
            // Each case its own payment (a card of its own): in one batch none is a replay of another.
            var options = SamsungPayTestFactory.Options(now: Self.now)
            options.tokenPAN = "41112222" + String(format: "%08d", index)
            change(&options)
            lines += factory.mint(options).token
            lines.append(0x0A)
            manifest.append(
                .object([
                    ("name", .string(name)), ("code", .string(code)), ("field", field.map(JSONValue.string) ?? .null),
                ])
            )
        }
        try write(lines, "cases.jsonl")
        try write(Array(JSONValue.array(manifest).description.utf8), "cases.json")
    }
}
