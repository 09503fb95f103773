// A batch result as its JSON line: a projection of the one result writer (Request/ResultWriter.swift).

extension BatchResult {
    /// Appends this result as one JSON line (with its newline) to `out`:
    /// `{"index":…,"source":…,"transactionId":…,["verifiedAt":"signingTime",]"payment":{…}}` or
    /// `{…,"error":CODE,"message":…,"field":…|null}`.
    /// `source` is written as `source:sourceLine` when a line number is given.
    public func writeLine(
        into out: SensitiveBuffer, source: String, sourceLine: Int? = nil, maskingPAN: Bool, verifiedAtSigningTime: Bool
    ) {
        let projection = ResultProjection.line(
            index: index, source: source, sourceLine: sourceLine, verifiedAtSigningTime: verifiedAtSigningTime,
            maskingPAN: maskingPAN)
        outcome.write(projection, into: out)
    }
}
