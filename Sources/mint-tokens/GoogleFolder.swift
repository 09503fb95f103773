// `mint-tokens google DIRECTORY COUNT`: a Google Pay test root, one merchant key, COUNT tokens and one token per refusal.
import ApplePayDecryption
import ApplePayTestSupport
import ArgumentParser
import Foundation

/// Writes DIRECTORY/root_keys.json (the test root's keys document), merchant_key.pem (PKCS#8),
/// tokens.jsonl (COUNT distinct ECv2 card payments, one token per line, PAN 4111 0000 0000 NNNN) and
/// one token per refusal the bindings' tests check: expired-intermediate.json, expired-message.json,
/// bad-tag.json. Every token is sent at 2026-03-01T12:00:00Z for recipient
/// merchant:12345678901234567890; messages expire an hour later, intermediate keys a day later.
///
/// And every rule of the format once, for each front end's tests: cases.jsonl (one token per line) with
/// cases.json (`[{"name", "code"}]`, line by line: the code when merchant_key.pem and then
/// merchant_key_2.pem are configured), and two root keys documents under which cases.jsonl's first token
/// (a good ECv2 one) is invalidSignature: root_keys_ecv1_only.json (the root listed for ECv1 only) and
/// root_keys_expired.json (its ECv2 entry expired).
struct GoogleFolder: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "google",
        abstract: "A Google Pay test root, one merchant key, COUNT ECv2 tokens (tokens.jsonl) and refused ones."
    )
    /// The sender's clock, the same instant as the Apple Pay folder's signing time.
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
        let factory = GooglePayTestFactory(merchantKeyCount: 2)
        func write(_ bytes: [UInt8], _ name: String) throws {
            try bytes.withUnsafeBytes { try WholeWrite.file(atPath: directory.appendingPathComponent(name).path, $0) }
        }
        try write(factory.rootKeysDocument(now: Self.now), "root_keys.json")
        try write(Array(factory.merchantKeyPEM().utf8), "merchant_key.pem")
        let expiration = Int64(Self.now.timeIntervalSince1970 * 1000) + 3_600_000
        var lines = [UInt8]()
        for i in 0..<count {
            var options = GooglePayTestFactory.Options(now: Self.now)
            let messageId = "google-cabi-\(i)"
            options.payload = GooglePayTestFactory.payload(
                messageId: messageId, messageExpiration: expiration, pan: "41110000" + String(format: "%08d", i))
            lines += factory.mint(options).token
            lines.append(0x0A)
        }
        try write(lines, "tokens.jsonl")
        for (name, breakIt) in [
            ("expired-intermediate.json", { (o: inout GooglePayTestFactory.Options) in o.intermediateLifetime = -1 }),
            ("expired-message.json", { (o: inout GooglePayTestFactory.Options) in o.messageLifetime = -1 }),
            ("bad-tag.json", { (o: inout GooglePayTestFactory.Options) in o.corruptTag = true }),
        ] {
            var options = GooglePayTestFactory.Options(now: Self.now)
            breakIt(&options)
            try write(factory.mint(options).token, name)
        }
        try writeCases(factory, write)
    }

    /// cases.jsonl, cases.json and the two root keys documents (see the type's comment).
    private func writeCases(_ factory: GooglePayTestFactory, _ write: ([UInt8], String) throws -> Void) throws {
        typealias Change = (inout GooglePayTestFactory.Options) -> Void
        let cases: [(String, String, Change)] = [
            ("ecv2", "ok", { _ in }),
            ("ecv1", "ok", { $0.protocolVersion = .ecV1 }),
            ("ecv2-signing-only", "unsupportedVersion", { $0.protocolVersion = .ecV2SigningOnly }),
            ("one-of-three-intermediate-signatures-verifies", "ok", { $0.extraIntermediateSignaturesBefore = 2 }),
            ("shared-secret-with-a-leading-zero-byte", "ok", { $0.requireLeadingZeroSharedSecret = true }),
            ("sealed-to-the-second-merchant-key", "ok", { $0.merchantKeyIndex = 1 }),
            ("message-signature-broken", "invalidSignature", { $0.breakMessageSignature = true }),
            ("intermediate-signature-broken", "invalidSignature", { $0.breakIntermediateSignature = true }),
            (
                "ecv1-message-signature-broken", "invalidSignature",
                {
                    $0.protocolVersion = .ecV1
                    $0.breakMessageSignature = true
                }
            ),
            ("signed-for-another-recipient-id", "invalidSignature", { $0.recipientId = "merchant:99999" }),
            ("intermediate-key-expired", "intermediateKeyExpired", { $0.intermediateLifetime = -1 }),
            ("message-expired", "messageExpired", { $0.messageLifetime = -1 }),
            ("ephemeral-key-off-the-curve", "decryptionFailed", { $0.ephemeralPointOffCurve = true }),
            ("tag-does-not-verify", "decryptionFailed", { $0.corruptTag = true }),
            ("duplicate-member-in-signed-message", "malformedToken", { $0.duplicateMemberInSignedMessage = true }),
            ("duplicate-member-in-signed-key", "malformedToken", { $0.duplicateMemberInSignedKey = true }),
        ]
        var lines = [UInt8]()
        var manifest: [JSONValue] = []
        for (name, code, change) in cases {
            var options = GooglePayTestFactory.Options(now: Self.now)
            change(&options)
            lines += factory.mint(options).token
            lines.append(0x0A)
            manifest.append(.object([("name", .string(name)), ("code", .string(code))]))
        }
        try write(lines, "cases.jsonl")
        try write(Array(JSONValue.array(manifest).description.utf8), "cases.json")
        try write(Array(factory.merchantKeyPEM(1).utf8), "merchant_key_2.pem")
        let milliseconds = Int64(Self.now.timeIntervalSince1970 * 1000)
        try write(
            factory.rootKeysDocument([.init(protocolVersion: "ECv1", keyExpiration: nil)]), "root_keys_ecv1_only.json")
        try write(
            factory.rootKeysDocument([
                .init(protocolVersion: "ECv1", keyExpiration: nil),
                .init(protocolVersion: "ECv2", keyExpiration: milliseconds - 1),
            ]), "root_keys_expired.json")
    }
}
