// Parses a token in any of the wrappings seen in the wild into its decoded, size-checked fields.
// This is the general (reference) parser; `TokenScanner` is the in-place fast path for batches.

/// The decoded `paymentData` of an Apple Pay token.
public struct PaymentToken: Sendable {
    public enum Version: String, Sendable {
        case ecV1 = "EC_v1"
        case rsaV1 = "RSA_v1"
    }

    /// Every decoded field, back to back; `fields` says where each one is.
    let storage: [UInt8]
    let fields: TokenFields

    public var version: Version { fields.version }
    /// The transaction identifier as the token writes it (hex).
    public var transactionId: String { String(decoding: storage[fields.transactionIdText], as: UTF8.self) }
    public var publicKeyHash: [UInt8] { Array(storage[fields.publicKeyHash]) }

    func withView<R, E: Error>(_ body: (TokenView) throws(E) -> R) throws(E) -> R {
        let result = storage.withUnsafeBytes { bytes in
            Result { () throws(E) -> R in try body(TokenView(bytes: bytes, fields: fields)) }
        }
        return try result.get()
    }

    /// Parses raw token bytes in any accepted form: bare `paymentData`; a whole `PKPaymentToken`;
    /// `{"paymentData": …}`; Apple Pay JS `{"token": {…}}`; or the `paymentData` JSON base64-encoded
    /// (as the whole input, as a JSON string, or as the value of `paymentData`).
    public static func parse(_ bytes: [UInt8]) throws(ApplePayError) -> PaymentToken {
        var storage: [UInt8] = []
        let result = bytes.withUnsafeBytes { raw in
            Result { () throws(ApplePayError) -> TokenFields in try parse(raw, into: &storage) }
        }
        return PaymentToken(storage: storage, fields: try result.get())
    }

    /// Parses into `storage` (cleared first, capacity kept): the general path, every error precise.
    static func parse(_ bytes: UnsafeRawBufferPointer, into storage: inout [UInt8]) throws(ApplePayError) -> TokenFields {
        storage.removeAll(keepingCapacity: true)
        let paymentData = try locatePaymentData(Array(bytes), depth: 0)
        return try decode(paymentData, into: &storage)
    }

    private static func locatePaymentData(_ bytes: [UInt8], depth: Int) throws(ApplePayError) -> JSONValue {
        let trimmed = trim(bytes)
        guard !trimmed.isEmpty else { throw .malformed("$", "the token is empty") }
        if trimmed.first != UInt8(ascii: "{"), trimmed.first != UInt8(ascii: "\""), depth == 0 {
            // The whole input may be the base64 of the paymentData JSON.
            guard let decoded = Base64.decode(trimmed) else { throw .malformed("$", "the token is neither JSON nor base64-encoded JSON") }
            return try locatePaymentData(decoded, depth: depth + 1)
        }
        let root: JSONValue
        do { root = try JSONValue.parse(trimmed) } catch {
            throw ApplePayError(.malformedToken, "the token is not valid JSON", field: "$", reason: error.description)
        }
        return try unwrap(root, depth: depth)
    }

    private static func unwrap(_ value: JSONValue, depth: Int) throws(ApplePayError) -> JSONValue {
        guard depth < 4 else { throw .malformed("$", "the token is wrapped too deeply") }
        switch value {
        case let .string(text):
            guard let decoded = Base64.decode(Array(text.utf8)) else { throw .malformed("paymentData", "a string paymentData must be base64-encoded JSON") }
            let inner: JSONValue
            do { inner = try JSONValue.parse(trim(decoded)) } catch {
                throw ApplePayError(.malformedToken, "base64-decoded paymentData is not JSON", field: "paymentData", reason: error.description)
            }
            return try unwrap(inner, depth: depth + 1)
        case .object:
            if value["version"] != nil || value["data"] != nil || value["header"] != nil { return value }
            if let inner = value["paymentData"] { return try unwrap(inner, depth: depth + 1) }
            if let inner = value["token"] { return try unwrap(inner, depth: depth + 1) }
            throw .malformed("paymentData", "no paymentData found (expected version, data, signature and header)")
        default:
            throw .malformed("$", "the token must be a JSON object")
        }
    }

    private static func trim(_ bytes: [UInt8]) -> [UInt8] {
        var start = 0, end = bytes.count
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { start = 3 }  // UTF-8 BOM
        while start < end, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[start]) { start += 1 }
        while end > start, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[end - 1]) { end -= 1 }
        return Array(bytes[start..<end])
    }

    private static func string(_ object: JSONValue, _ key: String, path: String) throws(ApplePayError) -> String {
        guard let value = object[key] else { throw .malformed(path, "\(path) is missing") }
        guard let text = value.stringValue else { throw .malformed(path, "\(path) must be a string") }
        return text
    }

    /// Decodes base64 field `key` onto the end of `storage`, returning where it landed.
    private static func base64(_ object: JSONValue, _ key: String, path: String, into storage: inout [UInt8]) throws(ApplePayError) -> Range<Int> {
        let start = storage.count
        guard Base64.decode(Array(try string(object, key, path: path).utf8), appendingTo: &storage) else {
            throw .malformed(path, "\(path) is not valid base64")
        }
        return start..<storage.count
    }

    private static func hex(_ text: String, path: String, into storage: inout [UInt8]) throws(ApplePayError) -> Range<Int> {
        let start = storage.count
        guard Hex.decode(Array(text.utf8), appendingTo: &storage) else { throw .malformed(path, "\(path) is not valid hex") }
        return start..<storage.count
    }

    static func decode(_ paymentData: JSONValue, into storage: inout [UInt8]) throws(ApplePayError) -> TokenFields {
        guard paymentData.objectMembers != nil else { throw .malformed("$", "paymentData must be a JSON object") }
        let versionText = try string(paymentData, "version", path: "version")
        guard let version = Version(rawValue: versionText) else {
            throw ApplePayError(.unsupportedVersion, "version \"\(versionText.prefix(32))\" is not supported (EC_v1, RSA_v1)", field: "version")
        }
        let data = try base64(paymentData, "data", path: "data", into: &storage)
        guard data.count > Primitives.gcmTagLength else { throw .malformed("data", "data is shorter than a GCM tag") }
        let signature = try base64(paymentData, "signature", path: "signature", into: &storage)
        guard !signature.isEmpty else { throw .malformed("signature", "signature is empty") }
        guard let header = paymentData["header"], header.objectMembers != nil else {
            throw .malformed("header", paymentData["header"] == nil ? "header is missing" : "header must be an object")
        }

        let keyMaterial: Range<Int>
        switch version {
        case .ecV1:
            keyMaterial = try base64(header, "ephemeralPublicKey", path: "header.ephemeralPublicKey", into: &storage)
            guard TokenFieldRules.isP256SPKI(storage[keyMaterial]) else {
                throw .malformed("header.ephemeralPublicKey", "header.ephemeralPublicKey is not an uncompressed P-256 public key (91-byte SPKI)")
            }
        case .rsaV1:
            keyMaterial = try base64(header, "wrappedKey", path: "header.wrappedKey", into: &storage)
            guard TokenFieldRules.wrappedKeyLengths.contains(keyMaterial.count) else {
                throw .malformed("header.wrappedKey", "header.wrappedKey has an implausible length (\(keyMaterial.count) bytes)")
            }
        }
        let publicKeyHash = try base64(header, "publicKeyHash", path: "header.publicKeyHash", into: &storage)
        guard publicKeyHash.count == 32 else { throw .malformed("header.publicKeyHash", "header.publicKeyHash must be 32 bytes (SHA-256)") }
        let transactionIdText = try string(header, "transactionId", path: "header.transactionId")
        let transactionId = try hex(transactionIdText, path: "header.transactionId", into: &storage)
        guard !transactionId.isEmpty else { throw .malformed("header.transactionId", "header.transactionId is empty") }
        let textStart = storage.count
        storage.append(contentsOf: transactionIdText.utf8)
        let transactionIdTextRange = textStart..<storage.count
        var applicationData: Range<Int>? = nil
        if let value = header["applicationData"], value != .null {
            applicationData = try hex(try string(header, "applicationData", path: "header.applicationData"),
                                      path: "header.applicationData", into: &storage)
        }
        return TokenFields(version: version, data: data, signature: signature, keyMaterial: keyMaterial, publicKeyHash: publicKeyHash,
                           transactionIdText: transactionIdTextRange, transactionId: transactionId, applicationData: applicationData)
    }
}
