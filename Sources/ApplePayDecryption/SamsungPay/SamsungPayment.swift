// A decrypted Samsung Pay payment: the plaintext in a wiped buffer, checked once to be a payment (every
// member typed, none repeated), with accessors that read from it on demand; printing it masks the PAN.
internal import ApplePayCrypto

/// A decrypted Samsung Pay payment.
///
/// What opening it proves: the token was sealed to the merchant key named by its `kid` and was not
/// altered since (the GCM tag), and its `utc` was within the window of the reference time. It does
/// **not** prove that Samsung made it: nothing in a Samsung Pay token is signed, and anyone holding the
/// merchant's public key can seal one. The issuer's check of the ``cryptogram`` is what authenticates
/// the card; results therefore say which wallet format and version they were read from, never where
/// the token came from.
///
/// Safe to log by accident: `print(payment)`, `"\(payment)"`, `String(reflecting:)` and `dump` show
/// the token PAN masked by ``PANMask`` and never the expiry or the cryptogram. The full values are
/// read on purpose, by name; each accessor decodes a fresh `String` from the plaintext.
public struct SamsungPayment: Sendable {
    /// The decrypted JWE plaintext, as sealed; wiped when the last copy of this value goes away.
    public let plaintext: SensitiveBytes
    /// How the token came (the envelope around the JWE).
    public let envelope: SamsungPayToken.Envelope
    /// The envelope's `3DS.version` (`100`); nil for a bare JWE.
    public let version: String?
    /// The `kid` of the merchant key that opened it.
    public let kid: String
    /// `utc`: when the payment was made, milliseconds since the epoch.
    public let utc: Int64
    /// What this payment claims against replays (the cryptogram, and tokenPAN with utc and amount).
    public let replayIdentity: ReplayIdentity
    /// Where each member's value (a JSON string, quotes included) sits in the plaintext.
    let fields: Fields

    struct Fields: Sendable {
        var amount = 0..<0
        var currencyCode = 0..<0
        var utc = 0..<0
        var eciIndicator = 0..<0
        var tokenPAN = 0..<0
        var tokenPanExpiration = 0..<0
        var cryptogram = 0..<0
        var cardholderName: Range<Int>? = nil
    }

    /// The wallet name results carry.
    public static let wallet = "samsungPay"

    /// The members every payment carries, in the order results write them (immutable: key paths and
    /// static strings only).
    nonisolated(unsafe) static let required: [(name: StaticString, path: WritableKeyPath<Fields, Range<Int>>)] = [
        ("amount", \.amount), ("currency_code", \.currencyCode), ("utc", \.utc), ("eci_indicator", \.eciIndicator),
        ("tokenPAN", \.tokenPAN), ("tokenPanExpiration", \.tokenPanExpiration), ("cryptogram", \.cryptogram),
    ]

    // MARK: reading

    /// Reads the plaintext in place: a strict JSON object (no member twice) whose members are all
    /// JSON strings of their form; members Samsung may add are let through and not read. No `String`
    /// of card data is made.
    ///
    /// - Throws: ``ApplePayError/Code/invalidPayload`` naming the member.
    static func read(
        _ plaintext: SensitiveBytes, token: SamsungPayToken, hasher: DigestContext
    ) throws(ApplePayError) -> SamsungPayment {
        let (fields, utc) = try plaintext.withUnsafeBytes { (raw) throws(ApplePayError) in try locate(raw) }
        let identity = plaintext.withUnsafeBytes { raw in
            replayIdentity(
                cryptogram: content(raw, fields.cryptogram), tokenPAN: content(raw, fields.tokenPAN), utc: utc,
                amount: content(raw, fields.amount), hasher: hasher)
        }
        return SamsungPayment(
            plaintext: plaintext, envelope: token.envelope, version: token.version, kid: token.kid, utc: utc,
            replayIdentity: identity, fields: fields)
    }

    private static func invalid(_ field: String, _ message: String) -> ApplePayError {
        ApplePayError(.invalidPayload, message, field: field)
    }

    /// The members' ranges and `utc`, every rule checked.
    private static func locate(_ raw: UnsafeRawBufferPointer) throws(ApplePayError) -> (Fields, Int64) {
        let scan = JSONScan(raw)
        let start = scan.skipWhitespace(0)
        guard start < raw.count, raw[start] == UInt8(ascii: "{") else {
            throw invalid("$", "the decrypted payment is not a JSON object")
        }
        var found = Fields()
        var seen = Set<String>()
        do throws(JSONScanError) {
            let end = try scan.object(at: start, depth: 0, checkingDuplicates: true) { m in
                for (name, path) in required where scan.content(m.name, escaped: m.nameEscaped, equals: name) {
                    found[keyPath: path] = m.value..<m.valueEnd
                    seen.insert(name.description)
                }
                if scan.content(m.name, escaped: m.nameEscaped, equals: "cardholder_name") {
                    found.cardholderName = m.value..<m.valueEnd
                }
            }
            guard scan.skipWhitespace(end) == raw.count else {
                throw JSONScanError(offset: end, message: "trailing characters")
            }
        } catch {
            if let name = error.duplicate {
                throw invalid(error.pathText, "the decrypted payment has member \"\(name.prefix(64))\" more than once")
            }
            throw ApplePayError(
                .invalidPayload, "the decrypted payment is not JSON", field: error.pathText, reason: error.description)
        }
        for (name, path) in required {
            let field = name.description
            guard seen.contains(field) else { throw invalid(field, "the decrypted payment has no \(field)") }
            guard raw[found[keyPath: path].lowerBound] == 0x22 else { throw invalid(field, "\(field) is not a string") }
        }
        if let name = found.cardholderName, raw[name.lowerBound] != 0x22 {
            throw invalid("cardholder_name", "cardholder_name is not a string")
        }
        func digits(_ range: Range<Int>, _ field: String, _ counts: ClosedRange<Int>, _ what: String)
            throws(ApplePayError)
        {
            let content = Self.content(raw, range)
            guard counts.contains(content.count), content.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else {
                throw invalid(field, "\(field) is not \(what)")
            }
        }
        try digits(found.amount, "amount", 1...18, "a decimal string of minor units")
        try digits(found.utc, "utc", 1...18, "a decimal string of milliseconds")
        try digits(found.eciIndicator, "eci_indicator", 0...2, "an ECI of at most two digits")
        try digits(found.tokenPAN, "tokenPAN", 12...19, "12 to 19 digits")
        try digits(found.tokenPanExpiration, "tokenPanExpiration", 4...4, "four digits (MMYY)")
        let expiry = content(raw, found.tokenPanExpiration)
        let month = Int(expiry[0] - 0x30) * 10 + Int(expiry[1] - 0x30)
        guard (1...12).contains(month) else {
            throw invalid("tokenPanExpiration", "tokenPanExpiration's month is not 01 to 12 (MMYY)")
        }
        let currency = content(raw, found.currencyCode)
        guard currency.count == 3, currency.allSatisfy({ $0 >= 0x41 && $0 <= 0x5A }) else {
            throw invalid("currency_code", "currency_code is not three upper-case letters (ISO 4217)")
        }
        guard !content(raw, found.cryptogram).isEmpty else {
            throw invalid("cryptogram", "cryptogram is empty")
        }
        let utc = content(raw, found.utc).reduce(Int64(0)) { $0 * 10 + Int64($1 - 0x30) }
        return (found, utc)
    }

    /// A string value's content, between its quotes, as written.
    static func content(_ raw: UnsafeRawBufferPointer, _ range: Range<Int>) -> UnsafeRawBufferPointer {
        guard range.count >= 2 else { return UnsafeRawBufferPointer(rebasing: raw[0..<0]) }
        return UnsafeRawBufferPointer(rebasing: raw[range.lowerBound + 1..<range.upperBound - 1])
    }

    // MARK: replays

    /// The claim: the cryptogram (a one-time value: a re-sent or re-wrapped copy carries the same one,
    /// whatever its envelope, IV or content key) and the payment itself, `tokenPAN`, `utc` and
    /// `amount` (a copy whose cryptogram was altered is still this payment made again). Each key is
    /// SHA-256 under a label of its own, so no Apple Pay or Google Pay claim can collide with it.
    /// The cryptogram is hashed decoded (base64, or as written when it is not base64; JSON escapes
    /// decoded), `utc` as a number and `amount` without leading zeros, so respellings claim the same.
    static func replayIdentity(
        cryptogram: UnsafeRawBufferPointer, tokenPAN: UnsafeRawBufferPointer, utc: Int64,
        amount: UnsafeRawBufferPointer, hasher: DigestContext
    ) -> ReplayIdentity {
        let scan = JSONScan(cryptogram)
        // One spelling per cryptogram: white space dropped, base64url's alphabet read as base64's, so a
        // copy re-sealed with the cryptogram respelt still claims the same key.
        var text = scan.decoded(0..<cryptogram.count, escaped: scan.hasEscape(0..<cryptogram.count)).compactMap {
            c -> UInt8? in
            switch c {
            case 0x09, 0x0A, 0x0D, 0x20: nil
            case UInt8(ascii: "-"): UInt8(ascii: "+")
            case UInt8(ascii: "_"): UInt8(ascii: "/")
            default: c
            }
        }
        var bytes = Base64.decode(text) ?? []
        defer {
            SecureMemory.wipe(&text)
            SecureMemory.wipe(&bytes)
        }
        var transaction = [UInt8](repeating: 0, count: 32)
        hasher.start()
        hasher.update(Array("samsungpay-cryptogram\u{0}".utf8))
        // No copy of either array is made, so the deferred wipes clear them in place.
        if bytes.isEmpty { hasher.update(text) } else { hasher.update(bytes) }
        transaction.withUnsafeMutableBufferPointer { hasher.finish(into: $0.baseAddress!) }
        var content = [UInt8](repeating: 0, count: 32)
        hasher.start()
        hasher.update(Array("samsungpay-payment\u{0}".utf8))
        hasher.update(tokenPAN)
        hasher.update(Array("\u{0}\(utc)\u{0}".utf8))
        let significant = amount.drop { $0 == 0x30 }
        hasher.update(significant.isEmpty ? [0x30] : Array(significant))
        content.withUnsafeMutableBufferPointer { hasher.finish(into: $0.baseAddress!) }
        return ReplayIdentity(
            transactionKey: ReplayKey(transaction.prefix(16))!, contentKey: ReplayKey(content.prefix(16))!)
    }

    /// The transactionId results show for a Samsung Pay payment: the hex of its cryptogram key (a
    /// Samsung Pay token carries no transaction id of its own).
    public var transactionId: String { replayIdentity.transactionKey.description }

    /// The transaction key a result line's transactionId stands for (what a merge checks a shard's
    /// journal record of a Samsung Pay line against); nil when it is not 32 hex digits.
    package static func transactionKey(ofTransactionId transactionId: String) -> ReplayKey? {
        Hex.decode(transactionId).flatMap { ReplayKey($0) }
    }

    // MARK: typed accessors

    private func text(_ range: Range<Int>) -> String {
        plaintext.withUnsafeBytes { raw in
            let scan = JSONScan(raw)
            let content = range.lowerBound + 1..<range.upperBound - 1
            return String(decoding: scan.decoded(content, escaped: scan.hasEscape(content)), as: UTF8.self)
        }
    }

    /// `amount`, in minor units of ``currencyCode``, as written.
    public var amount: String { text(fields.amount) }
    /// `currency_code`, ISO 4217 alphabetic.
    public var currencyCode: String { text(fields.currencyCode) }
    /// `eci_indicator`, as written (may be empty).
    public var eciIndicator: String { text(fields.eciIndicator) }
    /// `tokenPAN`, the network token (device PAN), in full. For logs use ``maskedTokenPAN``.
    public var tokenPAN: String { text(fields.tokenPAN) }
    /// `tokenPanExpiration`, MMYY.
    public var tokenPanExpiration: String { text(fields.tokenPanExpiration) }
    /// `cryptogram`, the network token's cryptogram (base64), in full.
    public var cryptogram: String { text(fields.cryptogram) }
    /// `cardholder_name`, when given.
    public var cardholderName: String? { fields.cardholderName.map(text) }

    /// The token PAN masked by ``PANMask``, without a `String` of the full PAN.
    public var maskedTokenPAN: String {
        plaintext.withUnsafeBytes { raw in
            let out = SensitiveBuffer(capacity: 64)
            PANMask.appendMasked(Self.content(raw, fields.tokenPAN), to: out)
            return out.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
        }
    }

    // MARK: the result

    /// Appends the payment as one JSON object: `wallet` (`samsungPay`), `version` (`3DS.version`, or
    /// null for a bare JWE), `kid`, then the payment's members as Samsung wrote them (escapes
    /// included): `amount`, `currency_code`, `utc`, `eci_indicator`, `tokenPAN` (masked by ``PANMask``
    /// when `maskingPAN` is set), `tokenPanExpiration`, `cryptogram` and, when given,
    /// `cardholder_name`. Other members of the plaintext are not written. Nothing says the token came
    /// from Samsung: nothing in it proves that.
    public func writeJSON(into out: SensitiveBuffer, maskingPAN: Bool = false) {
        var head = "{\"wallet\":\"\(Self.wallet)\",\"version\":"
        if let version { JSONValue.writeString(version, to: &head) } else { head += "null" }
        head += ",\"kid\":"
        JSONValue.writeString(kid, to: &head)
        out.append(head)
        plaintext.withUnsafeBytes { raw in
            for (name, path) in Self.required {
                out.append(",\"")
                out.append(UnsafeRawBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount))
                out.append("\":")
                let range = fields[keyPath: path]
                if maskingPAN, path == \Fields.tokenPAN {
                    out.append(byte: 0x22)
                    PANMask.appendMasked(Self.content(raw, range), to: out)
                    out.append(byte: 0x22)
                } else {
                    out.append(UnsafeRawBufferPointer(rebasing: raw[range]))
                }
            }
            if let name = fields.cardholderName {
                out.append(",\"cardholder_name\":")
                out.append(UnsafeRawBufferPointer(rebasing: raw[name]))
            }
        }
        out.append("}")
    }
}

extension SamsungPayment: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// A one-line summary that is safe to log: version, kid, masked token PAN, amount and currency, utc.
    public var description: String {
        "SamsungPayment(version: \(version ?? "none"), kid: \(kid), tokenPAN: \(maskedTokenPAN), amount: \(amount) \(currencyCode), utc: \(utc))"
    }

    /// The same as ``description``.
    public var debugDescription: String { description }

    /// The fields of ``description`` only, so that `dump` shows no card data.
    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                ("version", version ?? "none"), ("kid", kid), ("tokenPAN", maskedTokenPAN), ("amount", amount),
                ("currencyCode", currencyCode), ("utc", String(utc)),
            ], displayStyle: .struct)
    }
}
