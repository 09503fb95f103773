// Canonical JSON sealed with its own SHA-256: the checkpoint and a shard's manifest.
import ApplePayDecryption
import Foundation

/// Canonical JSON (sorted keys) carrying a SHA-256 over its own encoding with `checksum` empty:
/// the checkpoint, and a shard's manifest.
protocol SealedJSON: Codable {
    var checksum: String { get set }
}

enum SealInvalid: Error { case unreadable, checksum }

extension SealedJSON {
    private static func canonical(_ value: Self) -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return try! encoder.encode(value)  // only strings, integers, booleans and arrays of them
    }

    private static func digest(_ data: Data) -> String {
        var digest = InputDigest()
        digest.update([UInt8](data))
        return digest.hex
    }

    func sealed() -> Data {
        var copy = self
        copy.checksum = ""
        copy.checksum = Self.digest(Self.canonical(copy))
        return Self.canonical(copy) + Data("\n".utf8)
    }

    static func unseal(_ data: Data) throws(SealInvalid) -> Self {
        guard var value = try? JSONDecoder().decode(Self.self, from: data) else { throw .unreadable }
        let claimed = value.checksum
        value.checksum = ""
        guard claimed == digest(canonical(value)) else { throw .checksum }
        value.checksum = claimed
        return value
    }
}
