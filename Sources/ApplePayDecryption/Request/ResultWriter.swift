// The one writer of results: a payment (copied from the wiped plaintext into a wiped buffer, never
// through a String) or an error, in the shapes the front ends show. An error has one shape everywhere:
// {"error": CODE, "message": …, "field": PATH or null[, "reason": …]}.

/// Which shape a result is written in. Every front end's output is one of these.
public struct ResultProjection: Sendable {
    enum Shape: Sendable {
        case payment
        case response
        case line(index: Int, source: String, verifiedAtSigningTime: Bool)
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
    public static func line(index: Int, source: String, verifiedAtSigningTime: Bool = false, maskingPAN: Bool = false) -> ResultProjection {
        ResultProjection(shape: .line(index: index, source: source, verifiedAtSigningTime: verifiedAtSigningTime), maskingPAN: maskingPAN)
    }
}

/// The one writer of results (see ``ResultProjection``) and of error objects.
public enum ResultWriter {
    /// Appends `result` (and its transactionId, where the shape has one) to `out` in `projection`'s shape.
    public static func write(transactionId: String?, result: Result<DecryptedPayment, ApplePayError>, as projection: ResultProjection,
                             into out: SensitiveBuffer) {
        switch result {
        case let .success(payment):
            switch projection.shape {
            case .payment:
                payment.writeJSON(into: out, maskingPAN: projection.maskingPAN)
            case .response:
                var head = "{\"transactionId\":"
                writeNullable(transactionId ?? payment.transactionId, to: &head)
                head += ",\"payment\":"
                out.append(head)
                payment.writeJSON(into: out, maskingPAN: projection.maskingPAN)
                out.append("}")
            case .line:
                var head = lineHead(projection, transactionId: transactionId)
                head += ",\"payment\":"
                out.append(head)
                payment.writeJSON(into: out, maskingPAN: projection.maskingPAN)
                out.append("}\n")
            }
        case let .failure(error):
            writeError(code: error.code.rawValue, message: error.message, field: error.field, reason: error.reason, transactionId: transactionId,
                       as: projection, into: out)
        }
    }

    /// Appends a refusal in `projection`'s shape: the error object, or a line whose head is followed
    /// by the error object's members (no `reason` in a line). Front ends write their own codes (the
    /// service's `replayStoreUnavailable`, say) with it, in the engine's shape.
    public static func writeError(code: String, message: String, field: String?, reason: String? = nil, transactionId: String? = nil,
                                  as projection: ResultProjection, into out: SensitiveBuffer) {
        switch projection.shape {
        case .payment, .response:
            out.append(errorObject(code: code, message: message, field: field, reason: reason))
        case .line:
            var text = lineHead(projection, transactionId: transactionId)
            text += ","
            appendMembers(code: code, message: message, field: field, reason: nil, to: &text)
            text += "}\n"
            out.append(text)
        }
    }

    /// `{"index":…,"source":…,"transactionId":…[,"verifiedAt":"signingTime"]`, unclosed.
    private static func lineHead(_ projection: ResultProjection, transactionId: String?) -> String {
        guard case let .line(index, source, verifiedAtSigningTime) = projection.shape else { return "" }
        var head = "{\"index\":\(index),\"source\":"
        JSONValue.writeString(source, to: &head)
        head += ",\"transactionId\":"
        writeNullable(transactionId, to: &head)
        if verifiedAtSigningTime { head += ",\"verifiedAt\":\"signingTime\"" }
        return head
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

    private static func appendMembers(code: String, message: String, field: String?, reason: String?, to text: inout String) {
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
