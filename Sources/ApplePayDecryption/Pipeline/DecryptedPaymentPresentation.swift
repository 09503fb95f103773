// How a payment shows itself when printed, dumped, reflected or encoded: safe to log by accident
// (PAN masked, no cryptogram, EMV data or name), full values only through the named accessors.

extension DecryptedPayment: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The PAN masked by ``PANMask`` (e.g. `4761********0010` for 16 digits), decoded from the plaintext
    /// without a `String` of the full PAN ever being made.
    public var maskedPrimaryAccountNumber: String {
        plaintext.withUnsafeBytes { raw in
            let out = SensitiveBuffer(capacity: 64)
            PANMask.appendMasked(
                UnsafeRawBufferPointer(rebasing: raw[layout.pan.lowerBound + 1..<layout.pan.upperBound - 1]), to: out)
            return out.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
        }
    }

    /// A one-line summary that is safe to log: version, transactionId, masked PAN, payment data type,
    /// amount and currency, signing time. Never the full PAN, the expiration date, the cardholder
    /// name, the cryptogram or the EMV data.
    public var description: String {
        var text =
            "DecryptedPayment(\(version.rawValue), transactionId: \(transactionId), pan: \(maskedPrimaryAccountNumber)"
        if let type = paymentDataType { text += ", paymentDataType: \(type)" }
        if let amount = transactionAmount { text += ", amount: \(amount)" }
        if let currency = currencyCode { text += ", currency: \(currency)" }
        text += ", signingTime: \(signingTime))"
        return text
    }

    /// The same as ``description``: a debugger or `String(reflecting:)` shows no more card data.
    public var debugDescription: String { description }

    /// The fields of ``description`` and nothing else, so that `dump(payment)` and the interpolation of
    /// a value that holds a payment (an array, an optional, a struct of yours) show no card data
    /// either. Without it, `Mirror` would reach the plaintext buffer's stored properties.
    public var customMirror: Mirror {
        var children: [(label: String?, value: Any)] = [
            ("version", version.rawValue),
            ("transactionId", transactionId),
            ("pan", maskedPrimaryAccountNumber),
        ]
        if let type = paymentDataType { children.append(("paymentDataType", type)) }
        if let amount = transactionAmount { children.append(("amount", amount)) }
        if let currency = currencyCode { children.append(("currency", currency)) }
        children.append(("signingTime", signingTime))
        return Mirror(self, children: children, displayStyle: .struct)
    }
}

extension DecryptedPayment: Encodable {
    /// Encodes the decrypted payment data itself, the JSON object the CLI's `decrypt` prints: every
    /// member, unknown ones included, with its value and type unchanged (the amount stays an
    /// integer). Member order is the encoder's: `JSONEncoder`'s keyed containers do not keep
    /// Apple's order (use `.sortedKeys` for a stable one). For the bytes exactly as Apple wrote them,
    /// use ``writeJSON(into:maskingPAN:)``. Full card data: encode only where it is meant to go.
    public func encode(to encoder: any Encoder) throws {
        try json.encode(to: encoder)
    }
}

extension PaymentCredential: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The case and the ECI indicator only; the cryptogram, EMV data and PIN data read `<redacted>`.
    /// Pattern-match the case for the values.
    public var description: String {
        switch self {
        case let .threeDSecure(_, eci):
            return "threeDSecure(onlinePaymentCryptogram: <redacted>, eciIndicator: \(eci ?? "nil"))"
        case let .emv(_, pin): return "emv(emvData: <redacted>, encryptedPINData: \(pin == nil ? "nil" : "<redacted>"))"
        case let .other(type, _): return "other(type: \(type ?? "nil"), paymentData: <redacted>)"
        }
    }

    /// The same as ``description``.
    public var debugDescription: String { description }

    /// Only the case name, so that `dump` shows no credential either.
    public var customMirror: Mirror {
        Mirror(self, children: ["redacted": description], displayStyle: .enum)
    }
}

extension SensitiveBytes: CustomStringConvertible, CustomReflectable {
    /// `SensitiveBytes(N bytes)`: the size, never the contents.
    public var description: String { "SensitiveBytes(\(count) bytes)" }

    /// No children: the contents stay out of `dump`.
    public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .class) }
}

extension SensitiveBuffer: CustomStringConvertible, CustomReflectable {
    /// `SensitiveBuffer(N bytes)`: the size, never the contents.
    public var description: String { "SensitiveBuffer(\(count) bytes)" }

    /// No children: the contents stay out of `dump`.
    public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .class) }
}
