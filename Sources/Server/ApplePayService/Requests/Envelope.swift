// The body of /v1/decrypt and of each batch line: a bare token, or a token with the payment request it pays.
import ApplePayDecryption
import Foundation

/// The body of /v1/decrypt (and each batch line): a token in any form the engine reads, or the
/// envelope `{"paymentToken": <token>, "paymentRequest": {…}}` whose optional payment request binds the
/// token to the order it pays (the engine's `decrypt(_:at:expecting:)`).
struct Envelope {
    /// The token bytes as the engine reads them.
    var token: [UInt8]
    /// The merchant's payment request, when the envelope carries one.
    var request: PaymentRequest? = nil

    static func parse(_ body: [UInt8]) -> Result<Envelope, ApplePayError> {
        // Only a JSON object can be the envelope; a cheap look for the member name spares parsing
        // every bare token twice.
        guard body.first(where: { $0 != 0x20 && $0 != 0x0A && $0 != 0x0D && $0 != 0x09 }) == UInt8(ascii: "{"),
              contains(body, "\"paymentToken\""),
              case let .object(members)? = try? JSONValue.parse(body) else { return .success(Envelope(token: body)) }
        let tokens = members.filter { $0.0 == "paymentToken" }
        guard !tokens.isEmpty else { return .success(Envelope(token: body)) }
        guard tokens.count == 1 else {
            return .failure(ApplePayError(.malformedToken, "the envelope has member \"paymentToken\" more than once", field: "paymentToken"))
        }
        // Any other member is refused: a misspelt "paymentrequest" must not leave the token unbound
        // while its sender believes the order was checked.
        if let other = members.first(where: { $0.0 != "paymentToken" && $0.0 != "paymentRequest" }) {
            return .failure(ApplePayError(.malformedToken, "the envelope has only paymentToken and paymentRequest; \(JSONValue.string(other.0)) is not one of them",
                                          field: other.0))
        }
        var envelope: Envelope
        switch tokens[0].1 {
        case let .string(text): envelope = Envelope(token: Array(text.utf8))
        case let .object(inner): envelope = Envelope(token: Array(JSONValue.object(inner).description.utf8))
        default: return .failure(ApplePayError(.malformedToken, "paymentToken must be a token object or a base64 string", field: "paymentToken"))
        }
        // As in the engine's batch envelopes: a request that breaks the schema fails the item as
        // malformedToken naming `paymentRequest.<member>`, before anything is decrypted.
        let requests = members.filter { $0.0 == "paymentRequest" }
        switch requests.count {
        case 0: break
        case 1:
            guard case .object = requests[0].1 else {
                return .failure(ApplePayError(.malformedToken, "paymentRequest must be a payment request object", field: "paymentRequest"))
            }
            do {
                envelope.request = try PaymentRequest(json: Array(requests[0].1.description.utf8))
            } catch {
                let field = error.member == "$" ? "paymentRequest" : "paymentRequest.\(error.member)"
                return .failure(ApplePayError(.malformedToken, "the payment request is invalid: \(error.message)", field: field))
            }
        default:
            return .failure(ApplePayError(.malformedToken, "the envelope has member \"paymentRequest\" more than once", field: "paymentRequest"))
        }
        return .success(envelope)
    }

    static func contains(_ haystack: [UInt8], _ needle: StaticString) -> Bool {
        haystack.withUnsafeBytes { hay in
            needle.withUTF8Buffer { n in
                guard let first = n.first, hay.count >= n.count else { return false }
                var start = 0
                let last = hay.count - n.count
                while start <= last {
                    guard let found = memchr(hay.baseAddress! + start, Int32(first), last - start + 1) else { return false }
                    start = hay.baseAddress!.distance(to: UnsafeRawPointer(found))
                    if memcmp(hay.baseAddress! + start, n.baseAddress!, n.count) == 0 { return true }
                    start += 1
                }
                return false
            }
        }
    }
}
