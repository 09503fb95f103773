// Google's signed strings: "Google", the recipient id and the protocolVersion, each length-prefixed,
// then the signed document; the parts before the document framed once per engine, not per token.
internal import ApplePayCrypto

/// The length-prefixed (4-byte little-endian) concatenations Google signs.
enum SignedString {
    static let google: [UInt8] = Array("Google".utf8)
    /// HKDF's salt: empty in Google's specification, which HMAC pads to 32 zero bytes anyway.
    static let zeroSalt = [UInt8](repeating: 0, count: 32)

    /// `parts`, each after its length.
    static func framed(_ parts: [[UInt8]]) -> [UInt8] {
        var out: [UInt8] = []
        for part in parts {
            withUnsafeBytes(of: UInt32(part.count).littleEndian) { out.append(contentsOf: $0) }
            out.append(contentsOf: part)
        }
        return out
    }

    /// SHA-256 of `prefix` (parts already framed) then `document`, framed, into `out` (32 bytes).
    static func digest(
        prefix: [UInt8], document: [UInt8], digest: DigestContext, into out: UnsafeMutablePointer<UInt8>
    ) {
        digest.start()
        digest.update(prefix)
        withUnsafeBytes(of: UInt32(document.count).littleEndian) { digest.update($0) }
        digest.update(document)
        digest.finish(into: out)
    }

    /// The framed parts before each signed document, for an engine's recipient ids: a token's
    /// signatures are checked without building them (they were three or four arrays a token).
    struct Prefixes: Sendable {
        /// Per protocol version (``GooglePayToken/ProtocolVersion/index``): "Google" ‖ version, before
        /// `signedKey`.
        let key: [[UInt8]]
        /// Per protocol version, per recipient id in the engine's order: "Google" ‖ recipient id ‖
        /// version, before `signedMessage`.
        let message: [[[UInt8]]]

        init(recipientIds: [String]) {
            let versions = GooglePayToken.ProtocolVersion.allCases.sorted { $0.index < $1.index }
            key = versions.map { framed([SignedString.google, Array($0.rawValue.utf8)]) }
            message = versions.map { version in
                recipientIds.map { framed([SignedString.google, Array($0.utf8), Array(version.rawValue.utf8)]) }
            }
        }
    }
}

extension GooglePayToken.ProtocolVersion {
    /// A dense index (0, 1, 2) for per-version tables.
    var index: Int {
        switch self {
        case .ecV1: return 0
        case .ecV2: return 1
        case .ecV2SigningOnly: return 2
        }
    }
}
