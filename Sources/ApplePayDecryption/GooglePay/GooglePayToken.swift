// A Google Pay token (PaymentMethodToken) read strictly: the one JSON reader at every level
// (duplicate members refused in the token, in `intermediateSigningKey`, and inside the `signedKey`
// and `signedMessage` documents), no member Google does not write at any of those levels (as Tink),
// base64 fields decoded from padded base64 only, nothing verified yet.
#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// The fields of a Google Pay `PaymentMethodToken`, parsed but not yet verified.
///
/// `signedKey` and `signedMessage` are JSON texts carried as JSON strings; they are signed as the
/// exact bytes of those strings once decoded from the outer JSON, and are kept as those bytes (never
/// re-serialised).
public struct GooglePayToken: Sendable {
    /// The token's `protocolVersion`.
    public enum ProtocolVersion: String, Sendable, CaseIterable {
        /// Signed by a root key directly; AES-128-CTR and HMAC-SHA256.
        case ecV1 = "ECv1"
        /// Signed by an intermediate key the root key signs; AES-256-CTR and HMAC-SHA256.
        case ecV2 = "ECv2"
        /// As ECv2, but `signedMessage` is the message itself, in clear (no encryption).
        case ecV2SigningOnly = "ECv2SigningOnly"

        /// Whether an intermediate signing key stands between the root key and the message.
        var hasIntermediateKey: Bool { self != .ecV1 }
    }

    /// The intermediate signing key of ECv2 and ECv2SigningOnly.
    struct IntermediateSigningKey: Sendable {
        /// `signedKey`, the exact bytes signed.
        let signedKey: [UInt8]
        /// `signatures`, DER, at least one.
        let signatures: [[UInt8]]
        /// `keyValue` (DER SubjectPublicKeyInfo) from inside `signedKey`.
        let keyValue: [UInt8]
        /// `keyExpiration` from inside `signedKey`, milliseconds since the epoch.
        let keyExpiration: Int64
    }

    /// At most this many `intermediateSigningKey.signatures` (Google signs with one or two roots at a
    /// time, during a rotation).
    public static let maximumIntermediateSignatures = 8

    /// The token's `protocolVersion`.
    public let protocolVersion: ProtocolVersion
    /// `signature`, DER.
    let signature: [UInt8]
    /// `signedMessage`, the exact bytes signed.
    let signedMessage: [UInt8]
    let intermediate: IntermediateSigningKey?
    /// ECv1 and ECv2: the sealed message's parts, from inside `signedMessage`.
    let sealed: SealedMessage?

    /// `encryptedMessage`, `ephemeralPublicKey` and `tag` of `signedMessage`, decoded.
    struct SealedMessage: Sendable {
        let encryptedMessage: [UInt8]
        let ephemeralPublicKey: [UInt8]
        let tag: [UInt8]
    }

    /// True when `bytes` look like a Google Pay token rather than an Apple Pay one: how front ends tell
    /// the two wallets apart. The rule: the top-level object has a `signedMessage` or a
    /// `protocolVersion` member and neither `data` nor `header` (Apple's). The top-level member names
    /// are read leniently (a byte order mark, escaped names, duplicate members and trailing bytes are
    /// let through, values are skipped unchecked), so that a damaged Google Pay token still goes to the
    /// Google Pay reader and gets its precise error (``parse(_:)-(UnsafeRawBufferPointer)`` is strict).
    public static func hasShape(_ bytes: UnsafeRawBufferPointer) -> Bool {
        let scan = JSONScan(bytes)
        let n = bytes.count
        var i = n >= 3 && bytes[0] == 0xEF && bytes[1] == 0xBB && bytes[2] == 0xBF ? 3 : 0
        i = scan.skipWhitespace(i)
        guard i < n, bytes[i] == UInt8(ascii: "{") else { return false }
        i = scan.skipWhitespace(i + 1)
        var google = false
        var apple = false
        while i < n, bytes[i] == 0x22 {
            // A name must still be a JSON string (its escapes are decoded to compare it).
            guard let name = try? scan.string(at: i) else { break }
            func named(_ text: StaticString) -> Bool { scan.content(name.content, escaped: name.escaped, equals: text) }
            if named("signedMessage") || named("protocolVersion") {
                google = true
            } else if named("data") || named("header") {
                apple = true
            }
            let colon = scan.skipWhitespace(name.end)
            guard colon < n, bytes[colon] == UInt8(ascii: ":") else { break }
            let value = scan.skipWhitespace(colon + 1)
            guard value < n else { break }
            i = scan.skipWhitespace(scan.skipValidated(value))
            guard i < n, bytes[i] == UInt8(ascii: ",") else { break }
            i = scan.skipWhitespace(i + 1)
        }
        return google && !apple
    }

    /// The same over any bytes.
    public static func hasShape(_ bytes: some DataProtocol) -> Bool {
        Array(bytes).withUnsafeBytes { hasShape($0) }
    }

    /// Parses a token: the string a client receives in `paymentMethodData.tokenizationData.token`.
    ///
    /// - Throws: ``ApplePayError`` with ``ApplePayError/Code/malformedToken`` (not strict JSON, a
    ///   duplicate member at any level, a member Google does not write in the token,
    ///   `intermediateSigningKey`, `signedKey` or the sealed `signedMessage`, a missing or ill-typed field,
    ///   base64 that is not padded standard base64) naming the field, or
    ///   ``ApplePayError/Code/unsupportedVersion``.
    public static func parse(_ bytes: some DataProtocol) throws(ApplePayError) -> GooglePayToken {
        let contiguous = Array(bytes)
        return try contiguous.withBytes { (raw) throws(ApplePayError) in try parse(raw) }
    }

    /// The same over bytes read in place.
    public static func parse(_ raw: UnsafeRawBufferPointer) throws(ApplePayError) -> GooglePayToken {
        let root = try document(raw, field: nil)
        guard case .object = root else {
            throw ApplePayError.malformed("$", "the Google Pay token is not a JSON object")
        }
        try onlyMembers(root, ["protocolVersion", "signature", "signedMessage", "intermediateSigningKey"], at: nil)
        let versionText = try string(root, "protocolVersion", at: nil)
        guard let version = ProtocolVersion(rawValue: versionText) else {
            throw ApplePayError(
                .unsupportedVersion,
                "protocolVersion \"\(versionText.prefix(32))\" is none of ECv1, ECv2, ECv2SigningOnly",
                field: "protocolVersion")
        }
        let signature = try base64(root, "signature", at: nil)
        let signedMessage = Array(try string(root, "signedMessage", at: nil).utf8)
        var intermediate: IntermediateSigningKey? = nil
        if version.hasIntermediateKey {
            intermediate = try readIntermediate(root)
        } else if root["intermediateSigningKey"] != nil {
            throw ApplePayError.malformed(
                "intermediateSigningKey", "an ECv1 token has no intermediateSigningKey (ECv1 is signed by a root key)")
        }
        let sealed: SealedMessage? = version == .ecV2SigningOnly ? nil : try readSealed(signedMessage)
        if version == .ecV2SigningOnly {
            // The message is the payload itself; it must still be one strict JSON document.
            _ = try signedMessage.withBytes { (raw) throws(ApplePayError) in
                try document(raw, field: "signedMessage")
            }
        }
        return GooglePayToken(
            protocolVersion: version, signature: signature, signedMessage: signedMessage, intermediate: intermediate,
            sealed: sealed)
    }

    private static func readIntermediate(_ root: JSONValue) throws(ApplePayError) -> IntermediateSigningKey {
        guard let key = root["intermediateSigningKey"] else {
            throw ApplePayError.malformed("intermediateSigningKey", "intermediateSigningKey is missing")
        }
        guard case .object = key else {
            throw ApplePayError.malformed("intermediateSigningKey", "intermediateSigningKey is not an object")
        }
        try onlyMembers(key, ["signedKey", "signatures"], at: "intermediateSigningKey")
        let signedKey = Array(try string(key, "signedKey", at: "intermediateSigningKey").utf8)
        guard case let .array(items)? = key["signatures"], !items.isEmpty else {
            throw ApplePayError.malformed(
                "intermediateSigningKey.signatures", "intermediateSigningKey.signatures is not a non-empty array")
        }
        // Each signature may be verified with each root key: the count is bounded before any is decoded.
        guard items.count <= maximumIntermediateSignatures else {
            throw ApplePayError.malformed(
                "intermediateSigningKey.signatures",
                "intermediateSigningKey.signatures has \(items.count) signatures, more than \(maximumIntermediateSignatures)"
            )
        }
        var signatures: [[UInt8]] = []
        for (index, item) in items.enumerated() {
            guard let text = item.stringValue, let der = paddedBase64(text) else {
                throw ApplePayError.malformed(
                    "intermediateSigningKey.signatures[\(index)]", "the signature is not a base64 string")
            }
            signatures.append(der)
        }
        let inner = try signedKey.withBytes { (raw) throws(ApplePayError) in
            try document(raw, field: "intermediateSigningKey.signedKey")
        }
        guard case .object = inner else {
            throw ApplePayError.malformed(
                "intermediateSigningKey.signedKey", "signedKey is not a JSON object")
        }
        let path = "intermediateSigningKey.signedKey"
        try onlyMembers(inner, ["keyValue", "keyExpiration"], at: path)
        let keyValue = try base64(inner, "keyValue", at: path)
        let expirationText = try string(inner, "keyExpiration", at: path)
        guard let expiration = milliseconds(expirationText) else {
            throw ApplePayError.malformed(
                "\(path).keyExpiration", "keyExpiration is not a decimal count of milliseconds")
        }
        return IntermediateSigningKey(
            signedKey: signedKey, signatures: signatures, keyValue: keyValue, keyExpiration: expiration)
    }

    private static func readSealed(_ signedMessage: [UInt8]) throws(ApplePayError) -> SealedMessage {
        let message = try signedMessage.withBytes { (raw) throws(ApplePayError) in
            try document(raw, field: "signedMessage")
        }
        guard case .object = message else {
            throw ApplePayError.malformed("signedMessage", "signedMessage is not a JSON object")
        }
        try onlyMembers(message, ["encryptedMessage", "ephemeralPublicKey", "tag"], at: "signedMessage")
        let point = try base64(message, "ephemeralPublicKey", at: "signedMessage")
        let tag = try base64(message, "tag", at: "signedMessage")
        guard tag.count == HMACSHA256Size.bytes else {
            throw ApplePayError.malformed("signedMessage.tag", "the tag is \(tag.count) bytes, not 32")
        }
        return SealedMessage(
            encryptedMessage: try base64(message, "encryptedMessage", at: "signedMessage"), ephemeralPublicKey: point,
            tag: tag)
    }

    /// A decimal string of milliseconds (digits only, at most 18 of them).
    static func milliseconds(_ text: String) -> Int64? {
        guard !text.isEmpty, text.utf8.count <= 18, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else {
            return nil
        }
        return Int64(text)
    }

    /// One strict JSON document; a syntax error or a duplicate member is malformedToken at `field`.
    /// A member repeated in the token itself is named by its path (`signedMessage`); inside a signed
    /// string (`field` given) the error names that string, as the signed bytes are what is refused.
    static func document(_ raw: UnsafeRawBufferPointer, field: String?) throws(ApplePayError) -> JSONValue {
        let scan = JSONScan(raw)
        do throws(JSONScanError) {
            return scan.tree(at: try scan.document(0..<raw.count))
        } catch {
            let syntax = JSONSyntaxError(error)
            let place = field.map { "\($0) is" } ?? "the token is"
            throw ApplePayError(
                .malformedToken, "\(place) not strict JSON: \(syntax.message)",
                field: field ?? (error.duplicate != nil ? error.pathText : "$"), reason: syntax.description)
        }
    }

    private static func path(_ parent: String?, _ name: String) -> String {
        parent.map { "\($0).\(name)" } ?? name
    }

    private static func string(_ object: JSONValue, _ name: String, at parent: String?) throws(ApplePayError)
        -> String
    {
        guard let value = object[name] else {
            throw ApplePayError.malformed(path(parent, name), "\(path(parent, name)) is missing")
        }
        guard let text = value.stringValue else {
            throw ApplePayError.malformed(path(parent, name), "\(path(parent, name)) is not a string")
        }
        return text
    }

    private static func base64(_ object: JSONValue, _ name: String, at parent: String?) throws(ApplePayError)
        -> [UInt8]
    {
        let text = try string(object, name, at: parent)
        guard let bytes = paddedBase64(text) else {
            throw ApplePayError.malformed(path(parent, name), "\(path(parent, name)) is not padded base64")
        }
        return bytes
    }

    /// Standard base64 with its `=` padding, as Google writes it (and Tink requires): a length that is
    /// not a multiple of 4 is refused.
    private static func paddedBase64(_ text: String) -> [UInt8]? {
        text.utf8.count % 4 == 0 ? Base64.decode(text.utf8) : nil
    }

    /// Refuses a member Google does not write (Tink refuses a token, key or message with another
    /// member): what is not signed or read could otherwise ride along unnoticed.
    private static func onlyMembers(_ object: JSONValue, _ names: Set<String>, at parent: String?)
        throws(ApplePayError)
    {
        guard case let .object(members) = object else { return }
        for (name, _) in members where !names.contains(name) {
            let field = path(parent, String(name.prefix(64)))
            throw ApplePayError.malformed(field, "\(field) is not a member of a Google Pay token")
        }
    }
}

/// The length of Google Pay's tag: a whole HMAC-SHA256.
enum HMACSHA256Size {
    static let bytes = 32
}
