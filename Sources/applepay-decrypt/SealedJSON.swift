// Canonical JSON sealed with an HMAC-SHA-256 under the run's key (`RunKey`): the checkpoint and a
// shard's manifest.
import ApplePayDecryption
import Foundation

/// Canonical JSON (sorted keys) carrying an HMAC-SHA-256, under the run's key, of its own encoding with
/// `checksum` empty: the checkpoint, and a shard's manifest. A plain digest would let anyone who can
/// write the file re-seal an edit; the key is readable by the run's user only.
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

    func sealed(with key: RunKey) -> Data {
        var copy = self
        copy.checksum = ""
        copy.checksum = key.mac([UInt8](Self.canonical(copy)))
        return Self.canonical(copy) + Data("\n".utf8)
    }

    static func unseal(_ data: Data, key: RunKey) throws(SealInvalid) -> Self {
        guard var value = try? JSONDecoder().decode(Self.self, from: data) else { throw .unreadable }
        let claimed = value.checksum
        value.checksum = ""
        let expected = key.mac([UInt8](canonical(value)))
        // Constant time: the seal is a MAC.
        guard claimed.utf8.count == expected.utf8.count,
            zip(claimed.utf8, expected.utf8).reduce(0, { $0 | ($1.0 ^ $1.1) }) == 0
        else { throw .checksum }
        value.checksum = claimed
        return value
    }
}
