// The one result-line encoder (JSONL): index, source, transactionId, then the payment (copied from
// the wiped plaintext into a wiped buffer, never through a String) or the error.

extension BatchResult {
    /// Appends this result as one JSON line (with its newline) to `out`:
    /// `{"index":…,"source":…,"transactionId":…,["verifiedAt":"signingTime",]"payment":{…}}` or
    /// `{…,"error":CODE,"message":…[,"field":…]}`.
    public func writeLine(into out: SensitiveBuffer, source: String, maskingPAN: Bool, verifiedAtSigningTime: Bool) {
        var head = "{\"index\":\(index),\"source\":"
        JSONValue.writeString(source, to: &head)
        head += ",\"transactionId\":"
        if let transactionId { JSONValue.writeString(transactionId, to: &head) } else { head += "null" }
        if verifiedAtSigningTime { head += ",\"verifiedAt\":\"signingTime\"" }
        switch outcome {
        case let .success(payment):
            head += ",\"payment\":"
            out.append(head)
            payment.writeJSON(into: out, maskingPAN: maskingPAN)
            out.append("}\n")
        case let .failure(error):
            Self.appendErrorMembers(error, to: &head)
            out.append(head)
        }
    }

    /// Appends the end of an error line after its head (index, source, transactionId, verifiedAt):
    /// `,"error":CODE,"message":…[,"field":…]}` and the newline. The merge of shards rewrites
    /// verdicts with it, so that its lines are the batch engine's to the byte.
    public static func appendErrorMembers(_ error: ApplePayError, to head: inout String) {
        head += ",\"error\":\"\(error.code.rawValue)\",\"message\":"
        JSONValue.writeString(error.message, to: &head)
        if let field = error.field {
            head += ",\"field\":"
            JSONValue.writeString(field, to: &head)
        }
        head += "}\n"
    }
}
