// The request edge's reader: a body is a token in any form the token reader accepts, or the envelope
// {"paymentToken": <token>, "paymentRequest": {…}}. Read once, in place, by the one strict JSON scanner.
#if canImport(FoundationEssentials)
    import FoundationEssentials
    import Glibc  // open, read, memchr, errno: Foundation re-exports them, FoundationEssentials does not
#else
    import Foundation
#endif

/// What one request body holds, its token still in the body's bytes.
enum RequestEnvelope {
    /// A token alone (the whole body), or an envelope's token with its payment request, if any.
    case token(UnsafeRawBufferPointer)
    case envelope(token: UnsafeRawBufferPointer, request: PaymentRequest?)

    var token: UnsafeRawBufferPointer {
        switch self {
        case let .token(bytes), let .envelope(bytes, _): return bytes
        }
    }

    var request: PaymentRequest? {
        if case let .envelope(_, request) = self { return request }
        return nil
    }

    /// Reads `body`. Anything that is not an envelope (not JSON, not an object, no `paymentToken`
    /// member) is a token, for the token reader to accept or refuse with its precise error.
    /// - Throws: `malformedToken` for an envelope with a member other than paymentToken and
    ///   paymentRequest (a misspelt "paymentrequest" must not leave the token unbound while its sender
    ///   believes the order was checked), a paymentToken that is neither an object nor a base64 string,
    ///   or a paymentRequest that breaks the schema (field `paymentRequest.<member>`), before anything is
    ///   decrypted.
    static func read(_ body: UnsafeRawBufferPointer) throws(ApplePayError) -> RequestEnvelope {
        // A cheap filter first: a token alone never names this member (memchr to each quote).
        guard mentionsPaymentToken(body) else { return .token(body) }
        var start = 0
        if body.count >= 3, body[0] == 0xEF, body[1] == 0xBB, body[2] == 0xBF { start = 3 }  // UTF-8 BOM
        let scan = JSONScan(body)
        // Not JSON (or with duplicate members): the token reader reports it, naming the path.
        guard let root = try? scan.document(start..<body.count), body[root] == UInt8(ascii: "{") else {
            return .token(body)
        }
        var token: JSONMember?, request: JSONMember?, other: JSONMember?
        scan.forEachValidatedMember(ofObjectAt: root) { m in
            if scan.content(m.name, escaped: m.nameEscaped, equals: "paymentToken") {
                token = m
            } else if scan.content(m.name, escaped: m.nameEscaped, equals: "paymentRequest") {
                request = m
            } else if other == nil {
                other = m
            }
        }
        // No paymentToken: a token; the reader refuses a stray paymentRequest beside it.
        guard let token else { return .token(body) }
        if let other {
            let name = String(decoding: scan.decoded(other.name, escaped: other.nameEscaped).prefix(64), as: UTF8.self)
            throw ApplePayError(
                .malformedToken,
                "the envelope has only paymentToken and paymentRequest; \"\(PaymentRequest.shown(name))\" is not one of them",
                field: name)
        }
        guard body[token.value] == UInt8(ascii: "{") || body[token.value] == 0x22 else {
            throw ApplePayError(
                .malformedToken, "paymentToken must be a token object or a base64 string", field: "paymentToken")
        }
        let tokenBytes = UnsafeRawBufferPointer(rebasing: body[token.value..<token.valueEnd])
        guard let request else { return .envelope(token: tokenBytes, request: nil) }
        guard body[request.value] == UInt8(ascii: "{") else {
            throw ApplePayError(
                .malformedToken, "paymentRequest must be a payment request object", field: "paymentRequest")
        }
        do throws(PaymentRequest.ValidationError) {
            let parsed = try PaymentRequest(
                json: UnsafeRawBufferPointer(rebasing: body[request.value..<request.valueEnd]))
            return .envelope(token: tokenBytes, request: parsed)
        } catch {
            let field = error.member == "$" ? "paymentRequest" : "paymentRequest.\(error.member)"
            throw ApplePayError(
                .malformedToken, "the paymentRequest is not a valid ApplePayPaymentRequest: \(error.message)",
                field: field)
        }
    }

    /// Whether a Samsung Pay token carries a `paymentRequest` member of its own, at
    /// its top level or one object down (a Samsung Pay `paymentCredential`, an envelope's token): names
    /// decoded, so an escaped spelling counts. Apple Pay's reader refuses such a member itself; the other
    /// wallets' readers skip members they do not read, and a request sent there, outside the envelope,
    /// would otherwise go unchecked while its sender believes it was.
    static func carriesPaymentRequest(_ token: UnsafeRawBufferPointer) -> Bool {
        let scan = JSONScan(token)
        var start = 0
        if token.count >= 3, token[0] == 0xEF, token[1] == 0xBB, token[2] == 0xBF { start = 3 }
        guard let root = try? scan.document(start..<token.count), token[root] == UInt8(ascii: "{") else {
            return false
        }
        var found = false
        func look(_ object: Int, depth: Int) {
            scan.forEachValidatedMember(ofObjectAt: object) { m in
                if scan.content(m.name, escaped: m.nameEscaped, equals: "paymentRequest") {
                    found = true
                } else if depth == 0, token[m.value] == UInt8(ascii: "{") {
                    look(m.value, depth: 1)
                }
            }
        }
        look(root, depth: 0)
        return found
    }

    static let strayPaymentRequest = ApplePayError(
        .malformedToken,
        "paymentRequest is only read in the envelope {\"paymentToken\": TOKEN, \"paymentRequest\": {...}}; beside the token it is refused rather than decrypted without its payment request",
        field: "paymentRequest")

    /// Whether `"paymentToken"` (quotes included) occurs in `bytes`: memchr to each quote, then a compare.
    static func mentionsPaymentToken(_ bytes: UnsafeRawBufferPointer) -> Bool {
        let marker: StaticString = "\"paymentToken\""
        let n = marker.utf8CodeUnitCount
        guard let base = bytes.baseAddress, bytes.count >= n else { return false }
        var i = 0
        while i + n <= bytes.count, let hit = memchr(base + i, 0x22, bytes.count - n + 1 - i) {
            let at = UnsafeRawPointer(hit) - base
            // A token's quotes open and close its names and strings, few of them "p…": the byte after
            // the quote rules out most of them without a memcmp call (`at + n <= count`: memchr searched
            // no further).
            if bytes[at + 1] == UInt8(ascii: "p"), memcmp(base + at, marker.utf8Start, n) == 0 { return true }
            i = at + 1
        }
        return false
    }
}
