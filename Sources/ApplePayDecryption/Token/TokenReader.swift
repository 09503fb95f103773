// The one reader of the token format: finds paymentData in any accepted wrapping, validates the
// whole input as strict JSON (duplicate members refused), and decodes the fields in place into a
// reusable buffer. Every failure is precise: the code, and the JSON path of the field.

internal import ApplePayCrypto
struct TokenReader {
    /// Wrappings inside wrappings (base64 in a string in an object…) end here.
    static let maxWrapping = 4

    /// The token's fields decoded into `storage` (cleared first, capacity kept).
    static func read(_ input: UnsafeRawBufferPointer, into storage: inout [UInt8]) throws(ApplePayError) -> TokenFields
    {
        storage.removeAll(keepingCapacity: true)
        return try locate(input, depth: 0, into: &storage)
    }

    private static func trimmed(_ bytes: UnsafeRawBufferPointer) -> Range<Int> {
        var start = 0, end = bytes.count
        if bytes.count >= 3, bytes[0] == 0xEF, bytes[1] == 0xBB, bytes[2] == 0xBF { start = 3 }  // UTF-8 BOM
        let scan = JSONScan(bytes)
        start = scan.skipWhitespace(start)
        while end > start, scan.isSpace(bytes[end - 1]) { end -= 1 }
        return start..<end
    }

    private static func locate(_ bytes: UnsafeRawBufferPointer, depth: Int, into storage: inout [UInt8])
        throws(ApplePayError) -> TokenFields
    {
        let range = trimmed(bytes)
        guard !range.isEmpty else { throw .malformed("$", "the token is empty") }
        if bytes[range.lowerBound] != UInt8(ascii: "{"), bytes[range.lowerBound] != UInt8(ascii: "\""), depth == 0 {
            // The whole input may be the base64 of the paymentData JSON.
            var decoded: [UInt8] = []
            guard Base64.decode(UnsafeRawBufferPointer(rebasing: bytes[range]), appendingTo: &decoded) else {
                throw .malformed("$", "the token is neither JSON nor base64-encoded JSON")
            }
            return try decoded.withBytes { (inner) throws(ApplePayError) in
                try locate(inner, depth: depth + 1, into: &storage)
            }
        }
        let scan = JSONScan(bytes)
        let start: Int
        do throws(JSONScanError) { start = try scan.document(range) } catch {
            throw malformed(error, "the token is not valid JSON")
        }
        var method = PaymentMethodText()
        var fields = try unwrap(scan, at: start, depth: depth, method: &method, into: &storage)
        fields.paymentMethod = method
        return fields
    }

    /// A syntax error, or a duplicate member named by its path.
    private static func malformed(_ error: JSONScanError, _ message: String, inside: String? = nil) -> ApplePayError {
        let path = ([inside].compactMap { $0 } + error.path).joined(separator: ".")
        if let name = error.duplicate {
            return ApplePayError(.malformedToken, "member \"\(name.prefix(64))\" appears more than once", field: path)
        }
        return ApplePayError(.malformedToken, message, field: inside ?? "$", reason: error.description)
    }

    /// The members of a wrapper or paymentData object that the reader looks at.
    private struct Members {
        var version: JSONMember?
        var data: JSONMember?
        var signature: JSONMember?
        var header: JSONMember?
        var paymentData: JSONMember?
        var token: JSONMember?
        /// The wrapper's `paymentMethod` (PKPaymentToken, Apple Pay JS), beside `paymentData`.
        var paymentMethod: JSONMember?
        /// `paymentRequest` or `paymentToken`: envelope members, which only the envelope readers take.
        var envelopeMember: (member: JSONMember, name: String)?
        var isPaymentData: Bool { version != nil || data != nil || header != nil }
    }

    private struct HeaderMembers {
        var ephemeralPublicKey: JSONMember?
        var wrappedKey: JSONMember?
        var publicKeyHash: JSONMember?
        var transactionId: JSONMember?
        var applicationData: JSONMember?
    }

    private static func members(_ scan: JSONScan, _ start: Int) -> Members {
        var m = Members()
        // Already validated (duplicates refused): the walk checks nothing again.
        scan.forEachValidatedMember(ofObjectAt: start) { member in
            let name = member.name, escaped = member.nameEscaped
            if scan.content(name, escaped: escaped, equals: "version") {
                m.version = member
            } else if scan.content(name, escaped: escaped, equals: "data") {
                m.data = member
            } else if scan.content(name, escaped: escaped, equals: "signature") {
                m.signature = member
            } else if scan.content(name, escaped: escaped, equals: "header") {
                m.header = member
            } else if scan.content(name, escaped: escaped, equals: "paymentData") {
                m.paymentData = member
            } else if scan.content(name, escaped: escaped, equals: "token") {
                m.token = member
            } else if scan.content(name, escaped: escaped, equals: "paymentMethod") {
                m.paymentMethod = member
            } else if scan.content(name, escaped: escaped, equals: "paymentRequest") {
                m.envelopeMember = (member, "paymentRequest")
            } else if scan.content(name, escaped: escaped, equals: "paymentToken") {
                m.envelopeMember = (member, "paymentToken")
            }
        }
        return m
    }

    private static func headerMembers(_ scan: JSONScan, _ start: Int) -> HeaderMembers {
        var h = HeaderMembers()
        scan.forEachValidatedMember(ofObjectAt: start) { member in
            let name = member.name, escaped = member.nameEscaped
            if scan.content(name, escaped: escaped, equals: "ephemeralPublicKey") {
                h.ephemeralPublicKey = member
            } else if scan.content(name, escaped: escaped, equals: "wrappedKey") {
                h.wrappedKey = member
            } else if scan.content(name, escaped: escaped, equals: "publicKeyHash") {
                h.publicKeyHash = member
            } else if scan.content(name, escaped: escaped, equals: "transactionId") {
                h.transactionId = member
            } else if scan.content(name, escaped: escaped, equals: "applicationData") {
                h.applicationData = member
            }
        }
        return h
    }

    private static func unwrap(
        _ scan: JSONScan, at start: Int, depth: Int, method: inout PaymentMethodText,
        into storage: inout [UInt8]
    ) throws(ApplePayError) -> TokenFields {
        guard depth < maxWrapping else { throw .malformed("$", "the token is wrapped too deeply") }
        let s = scan.s
        switch s[start] {
        case UInt8(ascii: "\""):
            // paymentData as a string: base64 of its JSON.
            guard let text = try? scan.string(at: start) else {
                throw .malformed("paymentData", "paymentData is not a valid string")
            }
            var decoded: [UInt8] = []
            let ok =
                text.escaped
                ? Base64.decode(scan.decoded(text.content, escaped: true), appendingTo: &decoded)
                : Base64.decode(UnsafeRawBufferPointer(rebasing: s[text.content]), appendingTo: &decoded)
            guard ok else { throw .malformed("paymentData", "a string paymentData must be base64-encoded JSON") }
            return try decoded.withBytes { (inner) throws(ApplePayError) in
                let innerScan = JSONScan(inner)
                let innerStart: Int
                do throws(JSONScanError) { innerStart = try innerScan.document(trimmed(inner)) } catch {
                    throw malformed(error, "base64-decoded paymentData is not JSON", inside: "paymentData")
                }
                return try unwrap(innerScan, at: innerStart, depth: depth + 1, method: &method, into: &storage)
            }
        case UInt8(ascii: "{"):
            let m = members(scan, start)
            // A payment request beside a token (or an envelope the batch and service readers did not
            // take as one, e.g. with an escaped member name) would otherwise be dropped, and the token
            // decrypted unbound while its sender believes the order was checked.
            if let (_, name) = m.envelopeMember {
                throw .malformed(
                    name,
                    "\(name) is only read in the envelope {\"paymentToken\": …, \"paymentRequest\": …} with no other member; refused rather than decrypted without its payment request"
                )
            }
            if m.isPaymentData { return try decode(scan, m, into: &storage) }
            if let inner = m.paymentData {
                // paymentMethod is read where paymentData is, in the same walk (the binding check reads it).
                if let member = m.paymentMethod { method = paymentMethod(scan, member, into: &storage) }
                return try unwrap(scan, at: inner.value, depth: depth + 1, method: &method, into: &storage)
            }
            if let inner = m.token {
                return try unwrap(scan, at: inner.value, depth: depth + 1, method: &method, into: &storage)
            }
            throw .malformed("paymentData", "no paymentData found (expected version, data, signature and header)")
        default:
            throw .malformed("$", depth == 0 ? "the token must be a JSON object" : "paymentData must be a JSON object")
        }
    }

    // MARK: fields

    /// `paymentMethod.network` and `.type`, copied onto the end of `storage` (a few bytes, and only for
    /// the wrapped forms that carry them). A paymentMethod that is not an object, or a member that is
    /// not a string, is `invalid`: it never matches a payment request.
    private static func paymentMethod(_ scan: JSONScan, _ member: JSONMember, into storage: inout [UInt8])
        -> PaymentMethodText
    {
        guard scan.s[member.value] == UInt8(ascii: "{") else {
            return PaymentMethodText(network: .invalid, type: .invalid)
        }
        var found = PaymentMethodText()
        scan.forEachValidatedMember(ofObjectAt: member.value) { m in
            let name = m.name, escaped = m.nameEscaped
            if scan.content(name, escaped: escaped, equals: "network") {
                found.network = text(scan, m, into: &storage)
            } else if scan.content(name, escaped: escaped, equals: "type") {
                found.type = text(scan, m, into: &storage)
            }
        }
        return found
    }

    private static func text(_ scan: JSONScan, _ m: JSONMember, into storage: inout [UInt8]) -> PaymentMethodText.Text {
        switch scan.s[m.value] {
        case UInt8(ascii: "n"): return .absent  // null
        case 0x22:
            let content = m.value + 1..<m.valueEnd - 1
            let start = storage.count
            if scan.hasEscape(content) {
                storage.append(contentsOf: scan.decoded(content, escaped: true))
            } else {
                storage.append(contentsOf: UnsafeRawBufferPointer(rebasing: scan.s[content]))
            }
            return .text(start..<storage.count)
        default: return .invalid
        }
    }

    /// The content of a member that must be a string.
    private static func string(_ scan: JSONScan, _ member: JSONMember?, path: String) throws(ApplePayError) -> (
        content: Range<Int>, escaped: Bool
    ) {
        guard let member else { throw .malformed(path, "\(path) is missing") }
        // A member of a validated document: a string value is its quotes and the content between.
        guard scan.s[member.value] == 0x22 else { throw .malformed(path, "\(path) must be a string") }
        let content = member.value + 1..<member.valueEnd - 1
        return (content, scan.hasEscape(content))
    }

    /// Decodes a base64 member onto the end of `storage`, returning where it landed.
    private static func base64(_ scan: JSONScan, _ member: JSONMember?, path: String, into storage: inout [UInt8])
        throws(ApplePayError) -> Range<Int>
    {
        let text = try string(scan, member, path: path)
        let start = storage.count
        // `\/` (as PHP writes base64) decodes in place; any other escape goes through a decoded copy.
        var ok = Base64.decode(
            UnsafeRawBufferPointer(rebasing: scan.s[text.content]), appendingTo: &storage,
            jsonEscapedSlashes: text.escaped)
        if !ok, text.escaped {
            storage.removeSubrange(start...)
            ok = Base64.decode(scan.decoded(text.content, escaped: true), appendingTo: &storage)
        }
        guard ok else { throw .malformed(path, "\(path) is not valid base64") }
        return start..<storage.count
    }

    /// Decodes a hex member onto the end of `storage`.
    private static func hex(_ scan: JSONScan, _ member: JSONMember?, path: String, into storage: inout [UInt8])
        throws(ApplePayError) -> Range<Int>
    {
        let text = try string(scan, member, path: path)
        let start = storage.count
        let ok =
            text.escaped
            ? Hex.decode(scan.decoded(text.content, escaped: true), appendingTo: &storage)
            : Hex.decode(UnsafeRawBufferPointer(rebasing: scan.s[text.content]), appendingTo: &storage)
        guard ok else { throw .malformed(path, "\(path) is not valid hex") }
        return start..<storage.count
    }

    private static func decode(_ scan: JSONScan, _ m: Members, into storage: inout [UInt8]) throws(ApplePayError)
        -> TokenFields
    {
        let versionText = try string(scan, m.version, path: "version")
        let version: PaymentToken.Version
        if scan.content(versionText.content, escaped: versionText.escaped, equals: "EC_v1") {
            version = .ecV1
        } else if scan.content(versionText.content, escaped: versionText.escaped, equals: "RSA_v1") {
            version = .rsaV1
        } else {
            let shown = String(
                decoding: scan.decoded(versionText.content, escaped: versionText.escaped).prefix(32), as: UTF8.self)
            throw ApplePayError(
                .unsupportedVersion, "version \"\(shown)\" is not supported (EC_v1, RSA_v1)", field: "version")
        }
        let data = try base64(scan, m.data, path: "data", into: &storage)
        guard data.count > CipherContext.tagLength else { throw .malformed("data", "data is shorter than a GCM tag") }
        let signature = try base64(scan, m.signature, path: "signature", into: &storage)
        guard !signature.isEmpty else { throw .malformed("signature", "signature is empty") }
        guard let headerMember = m.header, scan.s[headerMember.value] == UInt8(ascii: "{") else {
            throw .malformed("header", m.header == nil ? "header is missing" : "header must be an object")
        }
        let h = headerMembers(scan, headerMember.value)

        let keyMaterial: Range<Int>
        switch version {
        case .ecV1:
            keyMaterial = try base64(scan, h.ephemeralPublicKey, path: "header.ephemeralPublicKey", into: &storage)
            guard TokenFieldRules.isP256SPKI(storage[keyMaterial]) else {
                throw .malformed(
                    "header.ephemeralPublicKey",
                    "header.ephemeralPublicKey is not an uncompressed P-256 public key (91-byte SPKI)")
            }
        case .rsaV1:
            keyMaterial = try base64(scan, h.wrappedKey, path: "header.wrappedKey", into: &storage)
            guard TokenFieldRules.wrappedKeyLengths.contains(keyMaterial.count) else {
                throw .malformed(
                    "header.wrappedKey", "header.wrappedKey has an implausible length (\(keyMaterial.count) bytes)")
            }
        }
        let publicKeyHash = try base64(scan, h.publicKeyHash, path: "header.publicKeyHash", into: &storage)
        guard publicKeyHash.count == 32 else {
            throw .malformed("header.publicKeyHash", "header.publicKeyHash must be 32 bytes (SHA-256)")
        }
        let transactionId = try hex(scan, h.transactionId, path: "header.transactionId", into: &storage)
        guard TokenFieldRules.transactionIdLengths.contains(transactionId.count) else {
            throw .malformed(
                "header.transactionId",
                transactionId.isEmpty
                    ? "header.transactionId is empty"
                    : "header.transactionId must be \(TokenFieldRules.transactionIdLengths.lowerBound)–\(TokenFieldRules.transactionIdLengths.upperBound) bytes of hex (got \(transactionId.count))"
            )
        }
        // Reported in one canonical form (lower-case hex), whatever case the token used.
        let textStart = storage.count
        Hex.encode(appending: transactionId, of: &storage)
        let transactionIdText = textStart..<storage.count
        var applicationData: Range<Int>? = nil
        if let member = h.applicationData, scan.s[member.value] != UInt8(ascii: "n") {  // null: absent
            let decoded = try hex(scan, member, path: "header.applicationData", into: &storage)
            guard decoded.count == TokenFieldRules.applicationDataLength else {
                throw .malformed(
                    "header.applicationData",
                    "header.applicationData must be \(TokenFieldRules.applicationDataLength) bytes of hex (a SHA-256 hash), got \(decoded.count)"
                )
            }
            applicationData = decoded
        }
        return TokenFields(
            version: version, data: data, signature: signature, keyMaterial: keyMaterial, publicKeyHash: publicKeyHash,
            transactionIdText: transactionIdText, transactionId: transactionId, applicationData: applicationData)
    }
}
