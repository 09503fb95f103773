// A verified Google Pay payment: the message's plaintext in a wiped buffer, checked once to be a
// payment, with typed accessors that read from it on demand; printing it masks the PAN.

/// How the card was authenticated (`paymentMethodDetails.authMethod`).
public enum GooglePayAuthMethod: Sendable, Equatable {
    /// `PAN_ONLY`: a card on file; no cryptogram.
    case panOnly
    /// `CRYPTOGRAM_3DS`: a network token (device token) with its cryptogram.
    case cryptogram3DS
    /// Another value, as written.
    case other(String)

    init(_ text: String) {
        switch text {
        case "PAN_ONLY": self = .panOnly
        case "CRYPTOGRAM_3DS": self = .cryptogram3DS
        default: self = .other(text)
        }
    }
}

/// A verified, decrypted Google Pay payment.
///
/// Safe to log by accident: `print(payment)`, `"\(payment)"`, `String(reflecting:)` and `dump` show
/// the PAN masked by ``PANMask`` and never the expiry, cryptogram or ECI. The full values are read
/// on purpose, by name (``pan``, ``cryptogram``…); each accessor decodes a fresh `String` from the
/// plaintext (a copy that belongs to the caller); ``message``'s plaintext is the one wiped original.
public struct GooglePayment: Sendable {
    /// The verified message this payment was read from.
    public let message: GooglePayMessage

    /// The token's protocolVersion.
    public var protocolVersion: GooglePayToken.ProtocolVersion { message.protocolVersion }
    /// The recipient id the message was signed for (`merchant:…` or `gateway:…`).
    public var recipientId: String { message.recipientId }
    /// `messageId`.
    public var messageId: String { message.messageId ?? "" }
    /// `messageExpiration`, milliseconds since the epoch (ECv2; nil for ECv1 messages without one).
    public var messageExpiration: Int64? { message.messageExpiration }
    /// What this token claims against replays.
    public var replayIdentity: ReplayIdentity { message.replayIdentity }

    /// Checks that the message is a payment, reading the plaintext in place: no `String` or
    /// ``JSONValue`` of card data is made (the plaintext's duplicates were refused by
    /// `GooglePayMessage.readFields`).
    static func build(_ message: GooglePayMessage) throws(ApplePayError) -> GooglePayment {
        typealias Found = (
            object: Bool, method: Bool, details: Bool, pan: Bool, notString: String?, reserved: String?
        )
        let found = message.plaintext.withUnsafeBytes { raw -> Found in
            let scan = JSONScan(raw)
            let start = scan.skipWhitespace(0)
            guard start < raw.count, raw[start] == UInt8(ascii: "{") else {
                return (false, false, false, false, nil, nil)
            }
            var method = false, details = false, reserved: String? = nil
            scan.forEachValidatedMember(ofObjectAt: start) { m in
                // Matched as case-insensitive readers match keys: "RecipientId" would stand beside the engine's
                // recipientId, and Go's encoding/json keeps the last of the two.
                let readsAs = { (name: StaticString) in scan.content(m.name, escaped: m.nameEscaped, foldsTo: name) }
                if let name = resultMembers.first(where: readsAs) {
                    reserved = "\(name)"
                } else if scan.content(m.name, escaped: m.nameEscaped, equals: "paymentMethod") {
                    method = raw[m.value] == 0x22
                } else if scan.content(m.name, escaped: m.nameEscaped, equals: "paymentMethodDetails") {
                    details = raw[m.value] == UInt8(ascii: "{")
                }
            }
            // A card number written as a JSON number would escape the mask: pan and dpan are strings.
            let ranges = panRanges(raw)
            if let bad = ranges.first(where: { raw[$0.range.lowerBound] != 0x22 }) {
                return (true, method, details, false, "paymentMethodDetails.\(bad.name)", reserved)
            }
            // `panRange` finds pan (or dpan) as a string with its quotes: more than 2 bytes is non-empty.
            return (true, method, details, panRange(raw).count > 2, nil, reserved)
        }
        guard found.object else {
            throw ApplePayError(.invalidPayload, "the decrypted message is not a JSON object", field: "$")
        }
        if let field = found.notString {
            throw ApplePayError(.invalidPayload, "\(field) is not a string", field: field)
        }
        if let name = found.reserved {
            throw ApplePayError(
                .invalidPayload,
                "the decrypted message has a member that reads as \(name), which a result writes itself",
                field: name
            )
        }
        guard message.messageId != nil else {
            throw ApplePayError(.invalidPayload, "the decrypted message has no messageId", field: "messageId")
        }
        if message.protocolVersion != .ecV1, message.messageExpiration == nil {
            throw ApplePayError(
                .invalidPayload, "the decrypted message has no messageExpiration", field: "messageExpiration")
        }
        guard found.method else {
            throw ApplePayError(.invalidPayload, "the decrypted message has no paymentMethod", field: "paymentMethod")
        }
        guard found.details else {
            throw ApplePayError(
                .invalidPayload, "the decrypted message has no paymentMethodDetails object",
                field: "paymentMethodDetails")
        }
        guard found.pan else {
            throw ApplePayError(.invalidPayload, "paymentMethodDetails has no pan", field: "paymentMethodDetails.pan")
        }
        return GooglePayment(message: message)
    }

    /// The whole message, unknown fields included (a fresh copy on each call).
    public var json: JSONValue? { message.plaintext.withUnsafeBytes { try? JSONValue.parse($0) } }

    private var details: JSONValue? { json?["paymentMethodDetails"] }

    private func detail(_ names: String...) -> String? {
        guard let details else { return nil }
        for name in names {
            switch details[name] {
            case let .string(text)?: return text
            // Expiry month and year may be numbers; pan and dpan never are (refused by `build`).
            case let .number(text)?: return text
            default: continue
            }
        }
        return nil
    }

    /// `paymentMethod` (`CARD`).
    public var paymentMethod: String { json?["paymentMethod"]?.stringValue ?? "" }
    /// `gatewayMerchantId`, when the merchant's gateway set one.
    public var gatewayMerchantId: String? { json?["gatewayMerchantId"]?.stringValue }
    /// The card number or the network token (device PAN), in full. For logs use ``maskedPAN``.
    public var pan: String { detail("pan", "dpan") ?? "" }
    /// `expirationMonth` (1–12), as written.
    public var expirationMonth: String? { detail("expirationMonth") }
    /// `expirationYear` (four digits), as written.
    public var expirationYear: String? { detail("expirationYear") }
    /// `authMethod`.
    public var authMethod: GooglePayAuthMethod? { detail("authMethod").map(GooglePayAuthMethod.init) }
    /// The network token's cryptogram (`cryptogram`, ECv1: `3dsCryptogram`), CRYPTOGRAM_3DS only.
    public var cryptogram: String? { detail("cryptogram", "3dsCryptogram") }
    /// The ECI indicator (`eciIndicator`, ECv1: `3dsEciIndicator`), when given.
    public var eciIndicator: String? { detail("eciIndicator", "3dsEciIndicator") }
    /// True for a network token (authMethod CRYPTOGRAM_3DS), false for a card (PAN_ONLY).
    public var isNetworkToken: Bool { authMethod == .cryptogram3DS }

    /// The PAN masked by ``PANMask``, decoded from the plaintext without a `String` of the full PAN.
    public var maskedPAN: String {
        message.plaintext.withUnsafeBytes { raw in
            let range = Self.panRange(raw)
            guard range.count > 2 else { return "" }
            let out = SensitiveBuffer(capacity: 64)
            PANMask.appendMasked(
                UnsafeRawBufferPointer(rebasing: raw[range.lowerBound + 1..<range.upperBound - 1]), to: out)
            return out.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
        }
    }
}

extension GooglePayment: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// A one-line summary that is safe to log: version, messageId, masked PAN, authMethod, recipient.
    public var description: String {
        var text = "GooglePayment(\(protocolVersion.rawValue), messageId: \(messageId), pan: \(maskedPAN)"
        switch authMethod {
        case .panOnly?: text += ", authMethod: PAN_ONLY"
        case .cryptogram3DS?: text += ", authMethod: CRYPTOGRAM_3DS"
        case .other(let value)?: text += ", authMethod: \(value)"
        case nil: break
        }
        text += ", recipientId: \(recipientId))"
        return text
    }

    /// The same as ``description``.
    public var debugDescription: String { description }

    /// The fields of ``description`` only, so that `dump` shows no card data.
    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                ("protocolVersion", protocolVersion.rawValue), ("messageId", messageId), ("pan", maskedPAN),
                ("recipientId", recipientId),
            ], displayStyle: .struct)
    }
}

extension GooglePayment {
    /// Appends the decrypted message as compact JSON (insignificant whitespace dropped, every member,
    /// value and escape as Google wrote it) straight from the plaintext, with
    /// every `paymentMethodDetails.pan` and `dpan` masked by ``PANMask`` when `maskingPAN` is set.
    public func writeJSON(into out: SensitiveBuffer, maskingPAN: Bool = false) {
        message.plaintext.withUnsafeBytes { raw in
            DecryptedPayment.writeCompactJSON(
                raw, masking: Self.panRanges(raw).map(\.range), maskingPAN: maskingPAN, into: out)
        }
    }

    /// Where `paymentMethodDetails.pan` (or `dpan`) sits in the validated plaintext, quotes included.
    static func panRange(_ raw: UnsafeRawBufferPointer) -> Range<Int> {
        let ranges = panRanges(raw).filter { raw[$0.range.lowerBound] == 0x22 }
        return (ranges.first { $0.name == "pan" } ?? ranges.first { $0.name == "dpan" })?.range ?? 0..<0
    }

    /// Every `pan` and `dpan` member of `paymentMethodDetails` (values of any type), in order: all of
    /// them are masked, whichever one ``pan`` reads.
    static func panRanges(_ raw: UnsafeRawBufferPointer) -> [(name: String, range: Range<Int>)] {
        let scan = JSONScan(raw)
        let start = scan.skipWhitespace(0)
        guard start < raw.count, raw[start] == UInt8(ascii: "{") else { return [] }
        var found: [(name: String, range: Range<Int>)] = []
        scan.forEachValidatedMember(ofObjectAt: start) { m in
            guard scan.content(m.name, escaped: m.nameEscaped, equals: "paymentMethodDetails"),
                raw[m.value] == UInt8(ascii: "{")
            else { return }
            scan.forEachValidatedMember(ofObjectAt: m.value) { d in
                if scan.content(d.name, escaped: d.nameEscaped, equals: "pan") {
                    found.append(("pan", d.value..<d.valueEnd))
                } else if scan.content(d.name, escaped: d.nameEscaped, equals: "dpan") {
                    found.append(("dpan", d.value..<d.valueEnd))
                }
            }
        }
        return found
    }
}
