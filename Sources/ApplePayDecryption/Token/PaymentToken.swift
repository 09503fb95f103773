// Parses a token in any of the wrappings seen in the wild into its decoded, size-checked fields.

/// The decoded `paymentData` of an Apple Pay token.
public struct PaymentToken: Sendable {
    public enum Version: String, Sendable {
        case ecV1 = "EC_v1"
        case rsaV1 = "RSA_v1"
    }

    public let version: Version
    /// Ciphertext followed by the 16-byte GCM tag.
    let data: [UInt8]
    /// The detached CMS SignedData (BER).
    let signature: [UInt8]
    /// EC_v1: the 65-byte uncompressed ephemeral point (from the 91-byte SPKI).
    /// RSA_v1: the wrapped key. Either way, what the message digest covers first is `keyMaterialForDigest`.
    let ephemeralPoint: [UInt8]?
    let wrappedKey: [UInt8]?
    let keyMaterialForDigest: [UInt8]
    public let publicKeyHash: [UInt8]
    /// The transaction identifier as the token writes it (hex).
    public let transactionId: String
    let transactionIdBytes: [UInt8]
    let applicationData: [UInt8]?

    /// DER prefix of a P-256 SubjectPublicKeyInfo; the 65-byte uncompressed point follows it.
    static let p256SPKIPrefix: [UInt8] = [
        0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x02, 0x01,
        0x06, 0x08, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00,
    ]

    /// Parses raw token bytes in any accepted form: bare `paymentData`; a whole `PKPaymentToken`;
    /// `{"paymentData": …}`; Apple Pay JS `{"token": {…}}`; or the `paymentData` JSON base64-encoded
    /// (as the whole input, as a JSON string, or as the value of `paymentData`).
    public static func parse(_ bytes: [UInt8]) throws(ApplePayError) -> PaymentToken {
        let paymentData = try locatePaymentData(bytes, depth: 0)
        return try decode(paymentData)
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

    private static func base64(_ object: JSONValue, _ key: String, path: String) throws(ApplePayError) -> [UInt8] {
        guard let bytes = Base64.decode(Array(try string(object, key, path: path).utf8)) else {
            throw .malformed(path, "\(path) is not valid base64")
        }
        return bytes
    }

    private static func hex(_ object: JSONValue, _ key: String, path: String) throws(ApplePayError) -> [UInt8] {
        guard let bytes = Hex.decode(try string(object, key, path: path)) else { throw .malformed(path, "\(path) is not valid hex") }
        return bytes
    }

    static func decode(_ paymentData: JSONValue) throws(ApplePayError) -> PaymentToken {
        guard paymentData.objectMembers != nil else { throw .malformed("$", "paymentData must be a JSON object") }
        let versionText = try string(paymentData, "version", path: "version")
        guard let version = Version(rawValue: versionText) else {
            throw ApplePayError(.unsupportedVersion, "version \"\(versionText.prefix(32))\" is not supported (EC_v1, RSA_v1)", field: "version")
        }
        let data = try base64(paymentData, "data", path: "data")
        guard data.count > Primitives.gcmTagLength else { throw .malformed("data", "data is shorter than a GCM tag") }
        let signature = try base64(paymentData, "signature", path: "signature")
        guard !signature.isEmpty else { throw .malformed("signature", "signature is empty") }
        guard let header = paymentData["header"], header.objectMembers != nil else {
            throw .malformed("header", paymentData["header"] == nil ? "header is missing" : "header must be an object")
        }

        var ephemeralPoint: [UInt8]? = nil
        var wrappedKey: [UInt8]? = nil
        let keyMaterial: [UInt8]
        switch version {
        case .ecV1:
            let spki = try base64(header, "ephemeralPublicKey", path: "header.ephemeralPublicKey")
            guard spki.count == 91, spki.starts(with: p256SPKIPrefix), spki[26] == 0x04 else {
                throw .malformed("header.ephemeralPublicKey", "header.ephemeralPublicKey is not an uncompressed P-256 public key (91-byte SPKI)")
            }
            ephemeralPoint = Array(spki[26...])
            keyMaterial = spki
        case .rsaV1:
            let wrapped = try base64(header, "wrappedKey", path: "header.wrappedKey")
            guard wrapped.count >= 128, wrapped.count <= 1024 else {
                throw .malformed("header.wrappedKey", "header.wrappedKey has an implausible length (\(wrapped.count) bytes)")
            }
            wrappedKey = wrapped
            keyMaterial = wrapped
        }
        let publicKeyHash = try base64(header, "publicKeyHash", path: "header.publicKeyHash")
        guard publicKeyHash.count == 32 else { throw .malformed("header.publicKeyHash", "header.publicKeyHash must be 32 bytes (SHA-256)") }
        let transactionId = try string(header, "transactionId", path: "header.transactionId")
        guard let transactionIdBytes = Hex.decode(transactionId), !transactionIdBytes.isEmpty else {
            throw .malformed("header.transactionId", "header.transactionId is not valid hex")
        }
        var applicationData: [UInt8]? = nil
        if let value = header["applicationData"], value != .null {
            applicationData = try hex(header, "applicationData", path: "header.applicationData")
        }
        return PaymentToken(version: version, data: data, signature: signature, ephemeralPoint: ephemeralPoint,
                            wrappedKey: wrappedKey, keyMaterialForDigest: keyMaterial, publicKeyHash: publicKeyHash,
                            transactionId: transactionId, transactionIdBytes: transactionIdBytes, applicationData: applicationData)
    }

    /// SHA-256 of `ephemeralPublicKey|wrappedKey ‖ data ‖ transactionId ‖ applicationData`: what the
    /// CMS `messageDigest` attribute must equal.
    func signedContentDigest() -> [UInt8] {
        var hasher = SHA256.Hasher()
        hasher.update(keyMaterialForDigest)
        hasher.update(data)
        hasher.update(transactionIdBytes)
        if let applicationData { hasher.update(applicationData) }
        return hasher.finalize()
    }
}
