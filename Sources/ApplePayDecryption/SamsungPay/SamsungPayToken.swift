// A Samsung Pay token read strictly: the envelope (the app's or web checkout's paymentCredential, or
// a bare compact JWE), the JWE's five parts and its protected header; nothing decrypted yet.
#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// The parts of a Samsung Pay token, parsed but not yet decrypted.
///
/// Accepted forms: the app's `paymentCredential` (`{"3DS": {"type": "S", "version": "100", "data":
/// JWE}, "card_brand", …}`, which Samsung's web checkout gives too), the same inside
/// `{"paymentCredential": {…}}` (how web front ends post it), and the bare compact JWE (as text, or
/// as a JSON string). Duplicate members are refused at every level, the envelope's and the protected
/// header's. The protected header must be exactly `alg` `RSA1_5`, `enc` `A128GCM`, `typ` `JOSE`,
/// `channelSecurityContext` `RSA_PKI` and a `kid`: anything else (another algorithm, `crit`, `zip`, a
/// member JOSE would let through) is refused before any RSA work.
///
/// Nothing in the token is signed: members beside `3DS` (`card_brand`, `card_last4digits`, …) are
/// whatever the sender wrote, and are not read.
public struct SamsungPayToken: Sendable {
    /// How the JWE came.
    public enum Envelope: String, Sendable, CaseIterable {
        /// `{"3DS": {…}, …}`: the app's (and web checkout's) paymentCredential.
        case paymentCredential
        /// `{"paymentCredential": {"3DS": {…}, …}, …}`: the credential as web front ends post it.
        case webCheckout
        /// The compact JWE alone (as text or a JSON string).
        case compactJWE
    }

    /// `3DS.version`, the one value Samsung documents.
    public static let envelopeVersion = "100"
    /// The protected header's only accepted values, in the order they are checked.
    static let headerValues: [(name: String, value: String)] = [
        ("alg", "RSA1_5"), ("enc", "A128GCM"), ("typ", "JOSE"), ("channelSecurityContext", "RSA_PKI"),
    ]
    /// The largest ciphertext accepted: a payment is a few hundred bytes.
    public static let maximumCiphertextBytes = 1 << 16
    /// The largest encrypted key accepted (RSA-16384), before the key's own size is known.
    static let maximumEncryptedKeyBytes = 2048
    /// The largest protected header accepted.
    static let maximumHeaderBytes = 4096

    /// How the JWE came.
    public let envelope: Envelope
    /// `3DS.version` when an envelope carried the JWE; nil for a bare JWE.
    public let version: String?
    /// The protected header's `kid`: names the merchant key (base64 SHA-256 of its public key).
    public let kid: String
    /// The JWE Encrypted Key (the content key under RSAES-PKCS1-v1_5).
    let encryptedKey: [UInt8]
    /// The 12-byte IV.
    let iv: [UInt8]
    let ciphertext: [UInt8]
    /// The 16-byte GCM tag.
    let tag: [UInt8]

    /// Parses a token in any accepted form.
    ///
    /// - Throws: ``ApplePayError`` with ``ApplePayError/Code/malformedToken`` (not strict JSON, a
    ///   duplicate member, a missing or ill-typed field, not five parts, bad base64url, a part of the
    ///   wrong size) or ``ApplePayError/Code/unsupportedVersion`` (`3DS.type`, `3DS.version`, or a
    ///   protected header member or value other than Samsung's), naming the field.
    public static func parse(_ bytes: some DataProtocol) throws(ApplePayError) -> SamsungPayToken {
        let contiguous = Array(bytes)
        return try contiguous.withBytes { (raw) throws(ApplePayError) in try parse(raw) }
    }

    /// The same over bytes read in place.
    public static func parse(_ raw: UnsafeRawBufferPointer) throws(ApplePayError) -> SamsungPayToken {
        let scan = JSONScan(raw)
        let start = scan.skipWhitespace(0)
        guard start < raw.count else { throw ApplePayError.malformed("$", "the Samsung Pay token is empty") }
        switch raw[start] {
        case UInt8(ascii: "{"):
            return try parseCredential(raw)
        case 0x22:
            let root = try document(raw, field: "$")
            guard let text = root.stringValue else {
                throw ApplePayError.malformed("$", "the Samsung Pay token is not a JSON object or a compact JWE")
            }
            // A compact JWE is base64url and dots: no character of it needs an escape, and the front door
            // (Wallet.of) tells a JSON-string JWE by its literal characters, so an escaped one is refused
            // here rather than read as a payment the front door would send elsewhere.
            guard !raw[start...].contains(UInt8(ascii: "\\")) else {
                throw ApplePayError.malformed(
                    "$", "the Samsung Pay JWE string holds an escape; a compact JWE needs none")
            }
            return try Array(text.utf8).withBytes { (jwe) throws(ApplePayError) in
                try compact(jwe, envelope: .compactJWE, version: nil)
            }
        default:
            var end = raw.count
            while end > start, scan.isSpace(raw[end - 1]) { end -= 1 }
            return try compact(
                UnsafeRawBufferPointer(rebasing: raw[start..<end]), envelope: .compactJWE, version: nil)
        }
    }

    /// True when `bytes` look like a Samsung Pay token rather than an Apple Pay or Google Pay one: a
    /// JSON object with a `3DS` or a `paymentCredential` member and none of the names that make a body
    /// Apple Pay's (`data`, `header`) or Google Pay's (`signedMessage`, `protocolVersion`) (names read
    /// leniently, values skipped unchecked, so that a damaged token still reaches this reader and gets its
    /// precise error), or a compact JWE (text, or a JSON string, starting with a protected header `eyJ`
    /// and made of base64url symbols and four dots). The front door's answer, ``Wallet/of(_:)``, so the
    /// two can never disagree.
    public static func hasShape(_ bytes: UnsafeRawBufferPointer) -> Bool {
        Wallet.of(bytes) == .samsungPay
    }

    /// The same over any bytes.
    public static func hasShape(_ bytes: some DataProtocol) -> Bool {
        Array(bytes).withUnsafeBytes { hasShape($0) }
    }

    /// `eyJ`, then base64url symbols with exactly four dots, up to the end (or the closing quote and
    /// trailing whitespace).
    static func isCompactJWE(_ bytes: UnsafeRawBufferPointer, from start: Int, quoted: Bool) -> Bool {
        let n = bytes.count
        guard start + 3 <= n, bytes[start] == UInt8(ascii: "e"), bytes[start + 1] == UInt8(ascii: "y"),
            bytes[start + 2] == UInt8(ascii: "J")
        else { return false }
        var dots = 0
        var i = start
        while i < n, bytes[i] == UInt8(ascii: ".") || Base64URL.isAlphabet(bytes[i]) {
            if bytes[i] == UInt8(ascii: ".") { dots += 1 }
            i += 1
        }
        if quoted {
            guard i < n, bytes[i] == 0x22 else { return false }
            i += 1
        }
        let scan = JSONScan(bytes)
        return dots == 4 && scan.skipWhitespace(i) == n
    }

    /// The top-level names by which the front door sends a body to Apple Pay or Google Pay.
    private static let otherWalletsNames: [(StaticString, String)] = [
        ("data", "Apple Pay"), ("header", "Apple Pay"), ("signedMessage", "Google Pay"),
        ("protocolVersion", "Google Pay"),
    ]

    // MARK: the envelope

    /// The envelope walked in place once validated (no tree, no `String` but for messages): the JWE
    /// is read where it lies unless its JSON string holds an escape.
    private static func parseCredential(_ raw: UnsafeRawBufferPointer) throws(ApplePayError) -> SamsungPayToken {
        let scan = JSONScan(raw)
        let root = try validate(raw, field: nil)
        /// Where the value of member `name` of the object at `object` starts.
        func member(_ object: Int, _ name: StaticString) -> Int? {
            var found: Int? = nil
            scan.forEachValidatedMember(ofObjectAt: object) { m in
                if found == nil, scan.content(m.name, escaped: m.nameEscaped, equals: name) { found = m.value }
            }
            return found
        }
        // A name that sends a body to another wallet (Wallet.of) is never a Samsung Pay envelope's: read
        // directly, such a body would be a payment here and a refusal at the front door.
        for (name, wallet) in otherWalletsNames where member(root, name) != nil {
            throw ApplePayError.malformed(
                "\(name)", "\(name) is \(wallet)'s member, not a Samsung Pay credential's")
        }
        var credential = root
        var envelope = Envelope.paymentCredential
        var prefix = ""
        if member(root, "3DS") == nil, let wrapped = member(root, "paymentCredential") {
            guard raw[wrapped] == UInt8(ascii: "{") else {
                throw ApplePayError.malformed("paymentCredential", "paymentCredential is not an object")
            }
            credential = wrapped
            envelope = .webCheckout
            prefix = "paymentCredential."
        }
        guard let threeDS = member(credential, "3DS") else {
            throw ApplePayError.malformed("\(prefix)3DS", "the Samsung Pay credential has no 3DS member")
        }
        guard raw[threeDS] == UInt8(ascii: "{") else {
            throw ApplePayError.malformed("\(prefix)3DS", "3DS is not an object")
        }
        typealias Text = (content: Range<Int>, escaped: Bool)
        func text(_ name: StaticString) throws(ApplePayError) -> Text {
            let path = "\(prefix)3DS.\(name)"
            guard let value = member(threeDS, name) else { throw ApplePayError.malformed(path, "\(path) is missing") }
            guard raw[value] == 0x22 else { throw ApplePayError.malformed(path, "\(path) is not a string") }
            let content = value + 1..<scan.skipValidatedString(value) - 1
            return (content, scan.hasEscape(content))
        }
        func shown(_ text: Text) -> String {
            PaymentRequest.shown(String(decoding: scan.decoded(text.content, escaped: text.escaped), as: UTF8.self))
        }
        let type = try text("type")
        guard scan.content(type.content, escaped: type.escaped, equals: "S") else {
            throw ApplePayError(
                .unsupportedVersion, "3DS.type \"\(shown(type))\" is not S (a JWE for the merchant)",
                field: "\(prefix)3DS.type")
        }
        let version = try text("version")
        guard scan.content(version.content, escaped: version.escaped, equals: "100") else {
            throw ApplePayError(
                .unsupportedVersion, "3DS.version \"\(shown(version))\" is not \(envelopeVersion)",
                field: "\(prefix)3DS.version")
        }
        let data = try text("data")
        guard data.escaped else {
            return try compact(
                UnsafeRawBufferPointer(rebasing: raw[data.content]), envelope: envelope, version: envelopeVersion)
        }
        return try scan.decoded(data.content, escaped: true).withBytes { (jwe) throws(ApplePayError) in
            try compact(jwe, envelope: envelope, version: envelopeVersion)
        }
    }

    // MARK: the compact JWE

    /// `protected.encryptedKey.iv.ciphertext.tag`, each strict base64url; the header read, the sizes checked.
    static func compact(_ raw: UnsafeRawBufferPointer, envelope: Envelope, version: String?) throws(ApplePayError)
        -> SamsungPayToken
    {
        var dots: [Int] = []
        for (i, c) in raw.enumerated() where c == UInt8(ascii: ".") {
            dots.append(i)
            guard dots.count <= 4 else { break }
        }
        guard dots.count == 4 else {
            throw ApplePayError.malformed(
                "$",
                dots.count > 4
                    ? "the compact JWE has more than five parts"
                    : "the compact JWE has \(dots.count + 1) parts, not five (protected.encryptedKey.iv.ciphertext.tag)"
            )
        }
        let names = ["protected", "encryptedKey", "iv", "ciphertext", "tag"]
        let bounds = [0] + dots.map { $0 + 1 }
        let ends = dots + [raw.count]
        var parts: [[UInt8]] = []
        for k in 0..<5 {
            let text = UnsafeRawBufferPointer(rebasing: raw[bounds[k]..<ends[k]])
            guard !text.isEmpty else { throw ApplePayError.malformed(names[k], "the JWE's \(names[k]) is empty") }
            guard let bytes = Base64URL.decode(text) else {
                throw ApplePayError.malformed(names[k], "the JWE's \(names[k]) is not unpadded base64url")
            }
            parts.append(bytes)
        }
        guard parts[0].count <= maximumHeaderBytes else {
            throw ApplePayError.malformed("protected", "the protected header is over \(maximumHeaderBytes) bytes")
        }
        let kid = try readHeader(parts[0])
        guard parts[2].count == 12 else {
            throw ApplePayError.malformed("iv", "the IV is \(parts[2].count) bytes, not 12")
        }
        guard parts[4].count == 16 else {
            throw ApplePayError.malformed("tag", "the tag is \(parts[4].count) bytes, not 16")
        }
        guard parts[3].count <= maximumCiphertextBytes else {
            throw ApplePayError.malformed(
                "ciphertext", "the ciphertext is \(parts[3].count) bytes, more than \(maximumCiphertextBytes)")
        }
        guard parts[1].count <= maximumEncryptedKeyBytes else {
            throw ApplePayError.malformed(
                "encryptedKey", "the encrypted key is \(parts[1].count) bytes, more than any RSA key's")
        }
        return SamsungPayToken(
            envelope: envelope, version: version, kid: kid, encryptedKey: parts[1], iv: parts[2],
            ciphertext: parts[3], tag: parts[4])
    }

    /// The protected header: exactly Samsung's members and values; returns the `kid`.
    private static func readHeader(_ bytes: [UInt8]) throws(ApplePayError) -> String {
        let header = try bytes.withBytes { (raw) throws(ApplePayError) in try document(raw, field: "protected") }
        guard case let .object(members) = header else {
            throw ApplePayError.malformed("protected", "the protected header is not a JSON object")
        }
        let known = Set(headerValues.map(\.name) + ["kid"])
        for (name, _) in members where !known.contains(name) {
            let why =
                switch name {
                case "crit": "the protected header has crit: no extension is understood, so none may be critical"
                case "zip": "the protected header has zip: compressed plaintexts are not accepted"
                default:
                    "the protected header has member \"\(PaymentRequest.shown(name))\", which Samsung Pay tokens do not carry"
                }
            throw ApplePayError(.unsupportedVersion, why, field: name)
        }
        for (name, expected) in headerValues {
            guard let value = header[name] else {
                throw ApplePayError.malformed(name, "the protected header has no \(name)")
            }
            guard let text = value.stringValue else {
                throw ApplePayError.malformed(name, "the protected header's \(name) is not a string")
            }
            guard text == expected else {
                throw ApplePayError(
                    .unsupportedVersion,
                    "the protected header's \(name) is \"\(PaymentRequest.shown(text))\", not \(expected)", field: name)
            }
        }
        guard let kidValue = header["kid"] else {
            throw ApplePayError.malformed("kid", "the protected header has no kid")
        }
        guard let kid = kidValue.stringValue, !kid.isEmpty else {
            throw ApplePayError.malformed("kid", "the protected header's kid is not a non-empty string")
        }
        return kid
    }

    // MARK: reading helpers

    /// One strict JSON document; a syntax error or a duplicate member is malformedToken. Inside a part
    /// (`field` given) a duplicate is named by its member, otherwise by its path.
    static func document(_ raw: UnsafeRawBufferPointer, field: String?) throws(ApplePayError) -> JSONValue {
        JSONScan(raw).tree(at: try validate(raw, field: field))
    }

    /// Validates one strict JSON document (as ``document(_:field:)``); the start of its value.
    static func validate(_ raw: UnsafeRawBufferPointer, field: String?) throws(ApplePayError) -> Int {
        do throws(JSONScanError) {
            return try JSONScan(raw).document(0..<raw.count)
        } catch {
            let syntax = JSONSyntaxError(error)
            let place = field == "protected" ? "the protected header is" : "the Samsung Pay token is"
            throw ApplePayError(
                .malformedToken, "\(place) not strict JSON: \(syntax.message)",
                field: error.duplicate != nil ? error.pathText : field ?? "$", reason: syntax.description)
        }
    }
}
