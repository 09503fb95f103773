// The decrypted payment: the plaintext in a wiped buffer, validated once, with typed accessors that
// read from it on demand and a writer that copies it (PAN masked if asked) into another wiped buffer.

/// How the card was authenticated: a 3-D Secure cryptogram or EMV data.
///
/// Printing a credential shows the case only (see ``description``); match the case for the values.
public enum PaymentCredential: Sendable, Equatable {
    /// `paymentDataType` `3DSecure`: the online payment cryptogram and, when present, the ECI indicator.
    case threeDSecure(onlinePaymentCryptogram: String, eciIndicator: String?)
    /// `paymentDataType` `EMV`: the EMV data and, when present, the encrypted PIN data.
    case emv(emvData: String, encryptedPINData: String?)
    /// A `paymentDataType` this library does not model; the raw `paymentData` object.
    case other(type: String?, paymentData: JSONValue?)
}

/// A verified, decrypted token.
///
/// Safe to log by accident: `print(payment)`, `"\(payment)"`, `String(reflecting:)` and `dump(payment)`
/// show the PAN masked by ``PANMask`` (a 16-digit PAN as its first 4 and last 4 digits) and never the
/// expiration date, cardholder name, cryptogram or EMV data (see ``description``). The full values are
/// read on purpose, by name: ``applicationPrimaryAccountNumber``, ``credential``, ``json``,
/// ``writeJSON(into:maskingPAN:)`` or `Encodable`, which encodes the decrypted JSON object (every member, values unchanged).
///
/// The plaintext lives only in ``plaintext`` (a ``SensitiveBytes`` buffer, wiped when the last copy of
/// this value goes away). Building a payment creates no `String` of card data. Each typed accessor
/// (``applicationPrimaryAccountNumber``, ``credential``, ``json``…) decodes a fresh `String`/``JSONValue``
/// from the plaintext on every call: those copies belong to the caller and cannot be wiped, so code
/// that must not leave card data in ordinary memory uses ``writeJSON(into:maskingPAN:)`` instead.
public struct DecryptedPayment: Sendable {
    /// The token's version.
    public let version: PaymentToken.Version
    /// The token's `header.transactionId`, lower-case hex.
    public var transactionId: String {
        switch transactionIdStorage {
        case let .decoded(bytes): return bytes.hex
        case let .text(text): return text
        }
    }
    /// The signing time from the CMS signature (Unix seconds).
    public let signingTime: Int64
    /// What this token claims against replays (see ``ReplayIdentity``).
    public let replayIdentity: ReplayIdentity
    /// The decrypted bytes exactly as Apple sealed them; wiped when the last reference goes away.
    public let plaintext: SensitiveBytes
    let layout: PayloadLayout
    /// The pipeline keeps the decoded bytes inline and makes the text when asked: building a payment
    /// allocates nothing beyond its plaintext (a 64-character `String` is a heap allocation).
    let transactionIdStorage: TransactionIdStorage

    enum TransactionIdStorage: Sendable {
        case decoded(InlineTransactionId)
        case text(String)
    }

    /// Where the members this model reads sit in the plaintext (value start, value end).
    struct PayloadLayout {
        var pan = 0..<0
        var expiration: Range<Int>?
        var currencyCode: Range<Int>?
        var amount: Range<Int>?
        var cardholderName: Range<Int>?
        var deviceManufacturer: Range<Int>?
        var paymentDataType: Range<Int>?
        var paymentData: Range<Int>?
        var merchantTokenIdentifier: Range<Int>?
        var merchantTokenMetadata: Range<Int>?
        var authenticationResponses: Range<Int>?
    }

    package static func build(
        plaintext: SensitiveBytes, version: PaymentToken.Version, transactionId: String, signingTime: Int64,
        replayIdentity: ReplayIdentity
    ) throws(ApplePayError) -> DecryptedPayment {
        try build(
            plaintext: plaintext, version: version, transactionIdStorage: .text(transactionId),
            signingTime: signingTime,
            replayIdentity: replayIdentity)
    }

    /// The pipeline's form: the decoded transactionId (1–32 bytes, checked by the token reader).
    package static func build(
        plaintext: SensitiveBytes, version: PaymentToken.Version, decodedTransactionId: UnsafeRawBufferPointer,
        signingTime: Int64, replayIdentity: ReplayIdentity
    ) throws(ApplePayError) -> DecryptedPayment {
        let storage: TransactionIdStorage =
            InlineTransactionId(decodedTransactionId).map { .decoded($0) } ?? .text(Hex.encode(decodedTransactionId))
        return try build(
            plaintext: plaintext, version: version, transactionIdStorage: storage, signingTime: signingTime,
            replayIdentity: replayIdentity)
    }

    private static func build(
        plaintext: SensitiveBytes, version: PaymentToken.Version, transactionIdStorage: TransactionIdStorage,
        signingTime: Int64,
        replayIdentity: ReplayIdentity
    ) throws(ApplePayError) -> DecryptedPayment {
        let layout = try plaintext.withUnsafeBytes { (raw) throws(ApplePayError) -> PayloadLayout in try layOut(raw) }
        return DecryptedPayment(
            version: version, signingTime: signingTime, replayIdentity: replayIdentity,
            plaintext: plaintext, layout: layout, transactionIdStorage: transactionIdStorage)
    }

    /// Validates the plaintext (strict JSON, an object, no duplicate members, a non-empty PAN string)
    /// and records where the modelled members are.
    static func layOut(_ raw: UnsafeRawBufferPointer) throws(ApplePayError) -> PayloadLayout {
        let scan = JSONScan(raw)
        func notJSON(_ error: JSONScanError) -> ApplePayError {
            if let name = error.duplicate {
                return ApplePayError(
                    .invalidPayload, "the decrypted payment data has member \"\(name.prefix(64))\" more than once",
                    field: error.pathText)
            }
            return ApplePayError(.invalidPayload, "the decrypted payment data is not JSON", reason: error.description)
        }
        let start = scan.skipWhitespace(0)
        guard start < raw.count, raw[start] == UInt8(ascii: "{") else {
            // Not an object: which of the two errors, exactly as a whole-document check says it.
            do throws(JSONScanError) { _ = try scan.document(0..<raw.count) } catch { throw notJSON(error) }
            throw ApplePayError(.invalidPayload, "the decrypted payment data is not a JSON object")
        }
        var layout = PayloadLayout()
        var pan: Range<Int>? = nil
        // One pass: the object is validated (duplicates refused) while its members are recorded,
        // then only whitespace may follow (what `document` checks), about 5 K instructions less
        // than validating first and walking again.
        do throws(JSONScanError) {
            let end = try scan.object(at: start, depth: 0, checkingDuplicates: true) { m in
                let range = m.value..<m.valueEnd
                func named(_ name: StaticString) -> Bool { scan.content(m.name, escaped: m.nameEscaped, equals: name) }
                if named("applicationPrimaryAccountNumber") {
                    pan = range
                } else if named("applicationExpirationDate") {
                    layout.expiration = range
                } else if named("currencyCode") {
                    layout.currencyCode = range
                } else if named("transactionAmount") {
                    layout.amount = range
                } else if named("cardholderName") {
                    layout.cardholderName = range
                } else if named("deviceManufacturerIdentifier") {
                    layout.deviceManufacturer = range
                } else if named("paymentDataType") {
                    layout.paymentDataType = range
                } else if named("paymentData") {
                    layout.paymentData = range
                } else if named("merchantTokenIdentifier") {
                    layout.merchantTokenIdentifier = range
                } else if named("merchantTokenMetadata") {
                    layout.merchantTokenMetadata = range
                } else if named("authenticationResponses") {
                    layout.authenticationResponses = range
                }
            }
            let rest = scan.skipWhitespace(end)
            guard rest == raw.count else { throw JSONScanError(offset: rest, message: "trailing characters") }
        } catch {
            throw notJSON(error)
        }
        guard let pan, raw[pan.lowerBound] == 0x22, pan.count > 2 else {
            throw ApplePayError(
                .invalidPayload, "the decrypted payment data has no applicationPrimaryAccountNumber",
                field: "applicationPrimaryAccountNumber")
        }
        layout.pan = pan
        return layout
    }

    // MARK: typed accessors (each call makes the caller a new copy)

    private func string(_ range: Range<Int>?) -> String? {
        guard let range else { return nil }
        return plaintext.withUnsafeBytes { raw in
            let scan = JSONScan(raw)
            guard raw[range.lowerBound] == 0x22, let text = try? scan.string(at: range.lowerBound) else { return nil }
            return String(decoding: scan.decoded(text.content, escaped: text.escaped), as: UTF8.self)
        }
    }

    private func value(_ range: Range<Int>?) -> JSONValue? {
        guard let range else { return nil }
        return plaintext.withUnsafeBytes { raw in try? JSONValue.parse(UnsafeRawBufferPointer(rebasing: raw[range])) }
    }

    /// Device PAN (DPAN) or merchant token PAN, in full. For logs use ``maskedPrimaryAccountNumber``.
    public var applicationPrimaryAccountNumber: String { string(layout.pan) ?? "" }
    /// YYMMDD.
    public var applicationExpirationDate: String? { string(layout.expiration) }
    /// ISO 4217 numeric code, as a string.
    public var currencyCode: String? { string(layout.currencyCode) }
    /// Amount in minor units, exactly as written (a JSON number's text or a string).
    public var transactionAmount: String? {
        guard let range = layout.amount else { return nil }
        switch value(range) {
        case let .number(n)?: return n
        case let .string(s)?: return s
        default: return nil
        }
    }
    /// The cardholder's name, when Apple included it.
    public var cardholderName: String? { string(layout.cardholderName) }
    /// Hex identifier of the device's manufacturer.
    public var deviceManufacturerIdentifier: String? { string(layout.deviceManufacturer) }
    /// `3DSecure` or `EMV`.
    public var paymentDataType: String? { string(layout.paymentDataType) }
    /// The merchant token's identifier (merchant tokens only).
    public var merchantTokenIdentifier: String? { string(layout.merchantTokenIdentifier) }
    /// The merchant token's metadata (merchant tokens only), as written.
    public var merchantTokenMetadata: JSONValue? { value(layout.merchantTokenMetadata) }
    /// Authentication responses (newer tokens), as written.
    public var authenticationResponses: JSONValue? { value(layout.authenticationResponses) }

    /// The cryptogram (3-D Secure) or EMV data, in full, from `paymentData`.
    public var credential: PaymentCredential {
        let type = paymentDataType
        let details = value(layout.paymentData)
        if type == "3DSecure", let cryptogram = details?["onlinePaymentCryptogram"]?.stringValue {
            return .threeDSecure(
                onlinePaymentCryptogram: cryptogram, eciIndicator: details?["eciIndicator"]?.stringValue)
        }
        if type == "EMV", let emv = details?["emvData"]?.stringValue {
            return .emv(emvData: emv, encryptedPINData: details?["encryptedPINData"]?.stringValue)
        }
        return .other(type: type, paymentData: details)
    }

    /// The whole decrypted object, unknown fields included, keys in their original order.
    public var json: JSONValue { plaintext.withUnsafeBytes { raw in (try? JSONValue.parse(raw)) ?? .null } }

    // MARK: output without intermediate copies

    /// Appends the decrypted payment data as compact JSON (insignificant whitespace dropped, every
    /// member, value and escape as Apple wrote it) straight from the plaintext, with the PAN masked
    /// by ``PANMask`` when `maskingPAN` is set.
    public func writeJSON(into out: SensitiveBuffer, maskingPAN: Bool = false) {
        plaintext.withUnsafeBytes { raw in
            Self.writeCompactJSON(raw, pan: layout.pan, maskingPAN: maskingPAN, into: out)
        }
    }

    /// Appends validated JSON `raw` compact (insignificant whitespace dropped, every member, value and
    /// escape as written), the string value at `pan` (quotes included) masked by ``PANMask`` when
    /// `maskingPAN` is set. Shared by both wallets' payments.
    static func writeCompactJSON(
        _ raw: UnsafeRawBufferPointer, pan: Range<Int>, maskingPAN: Bool, into out: SensitiveBuffer
    ) {
        // CollectionOfOne, not [pan]: an array literal here is a heap allocation for every payment written
        // (the allocation guard's EC_v1 count went from 15.1 to 16.2 a token).
        writeCompactJSON(raw, masking: CollectionOfOne(pan), maskingPAN: maskingPAN, into: out)
    }

    /// The same with several string values masked (`masking`: their ranges, quotes included, in order).
    static func writeCompactJSON<Masks: RandomAccessCollection<Range<Int>>>(
        _ raw: UnsafeRawBufferPointer, masking: Masks, maskingPAN: Bool, into out: SensitiveBuffer
    ) {
        var next = masking.startIndex
        var i = 0
        var runStart = 0
        var inString = false
        func flush(_ end: Int) {
            if end > runStart { out.append(UnsafeRawBufferPointer(rebasing: raw[runStart..<end])) }
        }
        while i < raw.count {
            let c = raw[i]
            if inString {
                if c == 0x5C { i += 2; continue }
                if c == 0x22 { inString = false }
                i += 1
                continue
            }
            while next < masking.endIndex, masking[next].lowerBound < i { masking.formIndex(after: &next) }
            if maskingPAN, next < masking.endIndex, i == masking[next].lowerBound, masking[next].count >= 2 {
                let pan = masking[next]
                masking.formIndex(after: &next)
                flush(i)
                out.append(byte: 0x22)
                PANMask.appendMasked(
                    UnsafeRawBufferPointer(rebasing: raw[pan.lowerBound + 1..<pan.upperBound - 1]), to: out)
                out.append(byte: 0x22)
                i = pan.upperBound
                runStart = i
                continue
            }
            if c == 0x22 {
                inString = true
            } else if c == 0x20 || c == 0x0A || c == 0x0D || c == 0x09 {
                flush(i)
                runStart = i + 1
            }
            i += 1
        }
        flush(raw.count)
    }
}
