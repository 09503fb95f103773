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
        let factory = GooglePayTestFactory(merchantKeyCount: 1)
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
    }
}
