// The one writer of results: a payment (copied from the wiped plaintext into a wiped buffer, never
// through a String) or an error, in the shapes the front ends show. An error has one shape everywhere:
// {"error": CODE, "message": …, "field": PATH or null[, "reason": …]}.

/// Which shape a result is written in. Every front end's output is one of these.
public struct ResultProjection: Sendable {
    enum Shape: Sendable {
        case payment
        case response
        case line(index: Int, source: String, sourceLine: Int?, verifiedAtSigningTime: Bool)
    }

    let shape: Shape
    /// Whether the card number (`applicationPrimaryAccountNumber`) is written masked.
    public var maskingPAN = false

    /// The CLI's `decrypt`: the payment object alone, or the error object.
    public static let payment = ResultProjection(shape: .payment)
    /// The service's bodies: `{"transactionId": …, "payment": {…}}` (200), or the error object (422).
    public static let response = ResultProjection(shape: .response)

    /// One JSON line of a batch (with its newline): `{"index", "source", "transactionId",
    /// ["verifiedAt": "signingTime",] "payment"}`, or the same head with the error object's members.
    /// A line carries no `reason`: OpenSSL's wording differs between its versions and between the
    /// P-256 backends, and a line must be the same byte for byte wherever and however it was made.
    ///
    /// `source` is written as it is, or as `source:sourceLine` when a line number is given (written
    /// straight into the output: no String per item).
    public static func line(
        index: Int, source: String, sourceLine: Int? = nil, verifiedAtSigningTime: Bool = false,
        maskingPAN: Bool = false
    ) -> ResultProjection {
        ResultProjection(
            shape: .line(
                index: index, source: source, sourceLine: sourceLine, verifiedAtSigningTime: verifiedAtSigningTime),
            maskingPAN: maskingPAN)
    }
}

/// The one writer of results (see ``ResultProjection``) and of error objects.
public enum ResultWriter {
    /// Appends `result` (and its transactionId, where the shape has one) to `out` in `projection`'s shape.
    public static func write(
        transactionId: String?, result: Result<DecryptedPayment, ApplePayError>, as projection: ResultProjection,
        into out: SensitiveBuffer
    ) {
        write(transactionId: transactionId, payment: result, as: projection, into: out)
    }

    /// Appends either wallet's result in `projection`'s shape, exactly as an Apple Pay one: the payment
    /// object alone, `{"transactionId", "payment"}`, or a batch line; a Google Pay payment's
    /// `transactionId` is its `messageId`, and its payment object is the message's members after
    /// `protocolVersion` and the verifying `recipientId` (``GooglePayment/writeResultJSON(into:maskingPAN:)``).
    public static func write(
        transactionId: String?, result: Result<WalletPayment, ApplePayError>, as projection: ResultProjection,
        into out: SensitiveBuffer
    ) {
        write(transactionId: transactionId, payment: result, as: projection, into: out)
    }

    /// Appends a Samsung Pay result in `projection`'s shape, exactly as the other wallets': the payment
    /// object alone (``SamsungPayment/writeJSON(into:maskingPAN:)``), `{"transactionId", "payment"}`, or
    /// a batch line; `transactionId` is the payment's own, the hex of its cryptogram key.
    public static func write(
        transactionId: String?, samsungPay result: Result<SamsungPayment, ApplePayError>,
        as projection: ResultProjection, into out: SensitiveBuffer
    ) {
        write(transactionId: transactionId, payment: result, as: projection, into: out)
    }

    /// Either wallet's result in one shape: the payment writes its own JSON; the transactionId is the
    /// front end's, else the payment's own (an Apple Pay header's, a Google Pay messageId).
    private static func write<Payment: WrittenPayment>(
        transactionId: String?, payment result: Result<Payment, ApplePayError>, as projection: ResultProjection,
        into out: SensitiveBuffer
    ) {
        switch result {
        case let .success(payment):
            switch projection.shape {
            case .payment:
                payment.writeResultJSON(into: out, maskingPAN: projection.maskingPAN)
            case .response:
                var head = "{\"transactionId\":"
                writeNullable(transactionId ?? payment.ownTransactionId, to: &head)
                head += ",\"payment\":"
                out.append(head)
                payment.writeResultJSON(into: out, maskingPAN: projection.maskingPAN)
                out.append("}")
            case .line:
                appendLineHead(projection, transactionId: transactionId ?? payment.ownTransactionId, to: out)
                out.append(",\"payment\":")
                payment.writeResultJSON(into: out, maskingPAN: projection.maskingPAN)
                out.append("}\n")
            }
        case let .failure(error):
            writeError(
                code: error.code.rawValue, message: error.message, field: error.field, reason: error.reason,
                transactionId: transactionId, as: projection, into: out)
        }
    }

    /// Appends a refusal in `projection`'s shape: the error object, or a line whose head is followed
    /// by the error object's members (no `reason` in a line). Front ends write their own codes (the
    /// service's `replayStoreUnavailable`, say) with it, in the engine's shape.
    public static func writeError(
        code: String, message: String, field: String?, reason: String? = nil, transactionId: String? = nil,
        as projection: ResultProjection, into out: SensitiveBuffer
    ) {
        switch projection.shape {
        case .payment, .response:
            out.append(errorObject(code: code, message: message, field: field, reason: reason))
        case .line:
            appendLineHead(projection, transactionId: transactionId, to: out)
            var text = ","
            appendMembers(code: code, message: message, field: field, reason: nil, to: &text)
            text += "}\n"
            out.append(text)
        }
    }

    /// `{"index":…,"source":…,"transactionId":…[,"verifiedAt":"signingTime"]`, unclosed, appended
    /// piece by piece (a line per token must not build a String per token).
    static func appendLineHead(_ projection: ResultProjection, transactionId: String?, to out: SensitiveBuffer) {
        guard case let .line(index, source, sourceLine, verifiedAtSigningTime) = projection.shape else { return }
        out.append("{\"index\":")
        appendInteger(index, to: out)
        out.append(",\"source\":")
        if let sourceLine {
            appendJSONString(source, closing: false, to: out)
            out.append(byte: UInt8(ascii: ":"))
            appendInteger(sourceLine, to: out)
            out.append(byte: 0x22)
        } else {
            appendJSONString(source, closing: true, to: out)
        }
        out.append(",\"transactionId\":")
        if let transactionId { appendJSONString(transactionId, closing: true, to: out) } else { out.append("null") }
        if verifiedAtSigningTime { out.append(",\"verifiedAt\":\"signingTime\"") }
    }

    private static func appendInteger(_ value: Int, to out: SensitiveBuffer) {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { digits in
            var v = value.magnitude, n = 0
            repeat {
                digits[19 - n] = UInt8(ascii: "0") + UInt8(v % 10)
                v /= 10
                n += 1
            } while v > 0
            if value < 0 { out.append(byte: UInt8(ascii: "-")) }
            out.append(UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: digits[(20 - n)...])))
        }
    }

    /// A JSON string straight into `out`; text with nothing to escape (file names, hex) is copied
    /// as it is, anything else goes through the one escaper.
    private static func appendJSONString(_ text: String, closing: Bool, to out: SensitiveBuffer) {
        var text = text
        let plain = text.withUTF8 { bytes -> Bool in
            guard !bytes.contains(where: { $0 < 0x20 || $0 == 0x22 || $0 == 0x5C }) else { return false }
            out.append(byte: 0x22)
            out.append(UnsafeRawBufferPointer(bytes))
            if closing { out.append(byte: 0x22) }
            return true
        }
        guard !plain else { return }
        var escaped = ""
        JSONValue.writeString(text, to: &escaped)
        out.append(closing ? escaped : String(escaped.dropLast()))
    }

    /// The error object: `{"error":CODE,"message":…,"field":…|null[,"reason":…]}`.
    public static func errorObject(_ error: ApplePayError) -> String {
        errorObject(code: error.code.rawValue, message: error.message, field: error.field, reason: error.reason)
    }

    /// The error object for a front end's own codes (the service's `payloadTooLarge`, say), in the
    /// same shape as the engine's.
    public static func errorObject(code: String, message: String, field: String?, reason: String? = nil) -> String {
        var text = "{"
        appendMembers(code: code, message: message, field: field, reason: reason, to: &text)
        text += "}"
        return text
    }

    /// Appends the end of a line after its head (index, source, transactionId, verifiedAt): the error
    /// object's members without `reason`, the closing brace and the newline. The merge of shards
    /// rewrites verdicts with it, so that its lines are the batch engine's to the byte.
    public static func appendErrorMembers(_ error: ApplePayError, to head: inout String) {
        head += ","
        appendMembers(code: error.code.rawValue, message: error.message, field: error.field, reason: nil, to: &head)
        head += "}\n"
    }

    private static func appendMembers(
        code: String, message: String, field: String?, reason: String?, to text: inout String
    ) {
        text += "\"error\":"
        JSONValue.writeString(code, to: &text)
        text += ",\"message\":"
        JSONValue.writeString(message, to: &text)
        text += ",\"field\":"
        writeNullable(field, to: &text)
        if let reason {
            text += ",\"reason\":"
            JSONValue.writeString(reason, to: &text)
        }
    }

    private static func writeNullable(_ text: String?, to out: inout String) {
        if let text { JSONValue.writeString(text, to: &out) } else { out += "null" }
    }
}

extension DecryptionOutcome {
    /// Appends this outcome to `out` in `projection`'s shape.
    public func write(_ projection: ResultProjection, into out: SensitiveBuffer) {
        ResultWriter.write(transactionId: transactionId, result: result, as: projection, into: out)
    }
}

/// A decrypted payment of either wallet, as the one writer needs it.
protocol WrittenPayment {
    /// The payment object a result carries (a Google Pay one with its protocolVersion and recipientId).
    func writeResultJSON(into out: SensitiveBuffer, maskingPAN: Bool)
    /// The transactionId a result shows when its front end gives none.
    var ownTransactionId: String { get }
}

extension DecryptedPayment: WrittenPayment {
    var ownTransactionId: String { transactionId }
    func writeResultJSON(into out: SensitiveBuffer, maskingPAN: Bool) { writeJSON(into: out, maskingPAN: maskingPAN) }
}

extension WalletPayment: WrittenPayment {
    var ownTransactionId: String { transactionId }
}

extension SamsungPayment: WrittenPayment {
    var ownTransactionId: String { transactionId }
    func writeResultJSON(into out: SensitiveBuffer, maskingPAN: Bool) { writeJSON(into: out, maskingPAN: maskingPAN) }
}
