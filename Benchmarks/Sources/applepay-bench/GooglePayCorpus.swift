// Google Pay ECv2 tokens from the test factory and the engine that opens them, beside the Apple EC_v1
// corpus: one lane each, measured back to back in every slice (README "Google Pay beside Apple Pay").
import ApplePayDecryption
import ApplePayTestSupport
import Dispatch
import Foundation

/// Factory-made ECv2 tokens: one root, one intermediate key (so the intermediate's verification is
/// cached, as for real traffic), one merchant key, fresh ephemeral keys per token.
struct GooglePayCorpus {
    let decryptor: GooglePayTokenDecryptor
    let tokens: [[UInt8]]
    let reference: ReferenceTime
    let factory: GooglePayTestFactory
    let now: Date

    init(count: Int, now: Date = Date(timeIntervalSince1970: 1_772_366_400), lifetime: Int64 = 3_600_000) {
        let factory = GooglePayTestFactory(merchantKeyCount: 1)
        var options = GooglePayTestFactory.Options(now: now)
        options.messageLifetime = lifetime
        options.intermediateLifetime = 2 * lifetime
        tokens = (0..<count).map { _ in factory.mint(options).token }
        decryptor = try! GooglePayTokenDecryptor(
            merchantKeys: [try! factory.merchantKey(0)], recipientIds: [options.recipientId],
            rootKeys: GooglePayRootKeys(json: factory.rootKeysDocument(now: now)))
        reference = .at(now.addingTimeInterval(30))
        self.factory = factory
        self.now = now
    }

    /// The single-token API in a loop on one thread (as `Throughput.single` for Apple tokens).
    func single(seconds: Double) throws -> Double {
        var done = 0
        let start = DispatchTime.now().uptimeNanoseconds
        var elapsed = 0.0
        var next = 0
        repeat {
            for _ in 0..<256 {
                _ = try decryptor.decrypt(tokens[next], at: reference)
                next = (next + 1) % tokens.count
            }
            done += 256
            elapsed = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        } while elapsed < seconds
        return Double(done) / elapsed
    }

    /// Writes the tokens (one JSON per line), the root keys document, the merchant key (PKCS#8 PEM) and
    /// the recipient id into `directory`, for other implementations to decrypt the same tokens.
    func export(to directory: String) throws {
        let url = URL(fileURLWithPath: directory)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        try Data(tokens.flatMap { $0 + [0x0A] }).write(to: url.appendingPathComponent("tokens.jsonl"))
        try Data(factory.rootKeysDocument(now: now)).write(to: url.appendingPathComponent("root_keys.json"))
        try Data(factory.merchantKeyPEM(0).utf8).write(to: url.appendingPathComponent("merchant_key.pem"))
        try Data(GooglePayTestFactory.Options(now: now).recipientId.utf8).write(
            to: url.appendingPathComponent("recipient_id.txt"))
    }
}

/// The Apple EC_v1 single-token API on one thread, over the factory corpus (the Google row's baseline).
enum AppleSingleLane {
    static func measure(_ corpus: FactoryCorpus, seconds: Double) throws -> Double {
        var done = 0
        let start = DispatchTime.now().uptimeNanoseconds
        var elapsed = 0.0
        var next = 0
        repeat {
            for _ in 0..<256 {
                _ = try corpus.decryptor.decrypt(corpus.ec[next], at: corpus.reference)
                next = (next + 1) % corpus.ec.count
            }
            done += 256
            elapsed = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        } while elapsed < seconds
        return Double(done) / elapsed
    }
}
