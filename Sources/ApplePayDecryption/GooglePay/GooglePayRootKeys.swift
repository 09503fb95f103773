// Google's root signing keys document (`{"keys": [{"keyValue", "protocolVersion", "keyExpiration"}]}`),
// read strictly once at configuration; each key decoded and checked to be P-256.
internal import ApplePayCrypto
import Synchronization

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// Google's root signing keys, in the shape of its published keys document (one for the test
/// environment, one for production; Google rotates them).
///
/// A token counts only the keys of its own `protocolVersion` that are not expired at the reference
/// time. ECv1 keys carry no `keyExpiration`; ECv2 and ECv2SigningOnly keys do.
public struct GooglePayRootKeys: Sendable {
    /// One root key.
    public struct Key: Sendable {
        /// `protocolVersion` the key signs for (kept as written: unknown versions are never used).
        public let protocolVersion: String
        /// `keyExpiration`, milliseconds since the epoch, when given.
        public let keyExpiration: Int64?
        /// `keyValue`: DER SubjectPublicKeyInfo.
        public let keyValue: [UInt8]
        let key: EVPKey
        /// ECv1 keys sign messages: their table is built on first use by the batch lanes'
        /// multi-buffer stage (tens of milliseconds and 150 KB each, so not for every key of a
        /// document at load).
        let messageTable: MessageTable
    }

    /// A root key's precomputed P-256 table, built once on first request.
    final class MessageTable: Sendable {
        private let key: EVPKey
        private let built = Mutex<P256SignerTable??>(nil)

        init(_ key: EVPKey) { self.key = key }

        /// The table, or nil when OpenSSL could not build it.
        var table: P256SignerTable? {
            built.withLock { built in
                if let table = built { return table }
                let table = P256SignerTable.build(for: key)
                built = .some(table)
                return table
            }
        }
    }

    /// Every key of the document, in its order.
    public let keys: [Key]
    /// SHA-256 of the document's bytes, hex: what a run's facts record, so that runs under another
    /// document are told apart.
    public let fingerprint: String

    /// At most this many keys in a document: Google publishes a handful, and each token may be checked
    /// against every key of its version.
    public static let maximumKeyCount = 64

    /// Reads a keys document.
    ///
    /// - Throws: ``ConfigurationError`` with ``ConfigurationError/Code/invalidOption`` when the text
    ///   is not strict JSON of that shape, a `keyValue` is not a base64 P-256 public key, or a
    ///   `keyExpiration` is not a decimal count of milliseconds; when it has more than
    ///   ``maximumKeyCount`` keys, the same (protocolVersion, keyValue) twice, or no key a token could
    ///   use (ECv1, or ECv2 / ECv2SigningOnly with a `keyExpiration`).
    public init(json bytes: some DataProtocol) throws(ConfigurationError) {
        let contiguous = Array(bytes)
        let document: JSONValue
        do throws(JSONSyntaxError) {
            document = try JSONValue.parse(contiguous)
        } catch {
            throw ConfigurationError(.invalidOption, "the Google root keys document is not strict JSON: \(error)")
        }
        guard case let .array(items)? = document["keys"] else {
            throw ConfigurationError(.invalidOption, "the Google root keys document has no \"keys\" array")
        }
        guard items.count <= Self.maximumKeyCount else {
            throw ConfigurationError(
                .invalidOption,
                "the Google root keys document has \(items.count) keys, more than \(Self.maximumKeyCount)")
        }
        var keys: [Key] = []
        for (index, item) in items.enumerated() {
            func bad(_ why: String) -> ConfigurationError {
                ConfigurationError(.invalidOption, "Google root key \(index): \(why)")
            }
            guard case .object = item else { throw bad("not an object") }
            guard let version = item["protocolVersion"]?.stringValue else { throw bad("no protocolVersion string") }
            guard let text = item["keyValue"]?.stringValue, let spki = Base64.decode(text) else {
                throw bad("keyValue is not a base64 string")
            }
            guard let key = EVPKey.publicKey(fromDER: spki), key.p256PublicPoint() != nil else {
                throw bad("keyValue is not a P-256 public key")
            }
            var expiration: Int64? = nil
            if let value = item["keyExpiration"] {
                guard let text = value.stringValue, let ms = GooglePayToken.milliseconds(text) else {
                    throw bad("keyExpiration is not a decimal string of milliseconds")
                }
                expiration = ms
            }
            // A repeated key would be tried twice per token for nothing (and hides an edited document).
            guard !keys.contains(where: { $0.protocolVersion == version && $0.keyValue == spki }) else {
                throw bad("the same protocolVersion and keyValue as an earlier key")
            }
            keys.append(
                Key(
                    protocolVersion: version, keyExpiration: expiration, keyValue: spki, key: key,
                    messageTable: MessageTable(key)))
        }
        guard
            keys.contains(where: { key in
                guard let version = GooglePayToken.ProtocolVersion(rawValue: key.protocolVersion) else { return false }
                return !version.hasIntermediateKey || key.keyExpiration != nil
            })
        else {
            throw ConfigurationError(
                .invalidOption,
                "the Google root keys document has no usable key (ECv1, or ECv2 / ECv2SigningOnly with keyExpiration)")
        }
        self.keys = keys
        self.fingerprint = Hex.encode(SHA256.hash(contiguous))
    }

    /// Reads a keys document from a file.
    public init(contentsOfFile path: String) throws(ConfigurationError) {
        self = try SecretFile.withContents(atPath: path, what: "Google root keys") {
            (bytes) throws(ConfigurationError) in
            do throws(ConfigurationError) {
                return try GooglePayRootKeys(json: bytes)
            } catch {
                throw ConfigurationError(error.code, "\(path): \(error.message)")
            }
        }
    }

    /// The keys that count for a token of `version` at `referenceMilliseconds` (nil: no expiry check).
    /// ECv2 and ECv2SigningOnly keys without `keyExpiration` do not count (Google's always carry one);
    /// an ECv1 key that has one counts until then.
    func usable(for version: GooglePayToken.ProtocolVersion, at referenceMilliseconds: Int64?) -> [Key] {
        keys.filter { key in
            guard key.protocolVersion == version.rawValue else { return false }
            guard let expiration = key.keyExpiration else { return !version.hasIntermediateKey }
            return referenceMilliseconds.map { expiration > $0 } ?? true
        }
    }
}
