// The one error type of the merchant API client: a stable code, a message for people, the gateway's own words.

/// A failed merchant API call. `code` is the stable identity (callers map it to what they show); the other
/// members are context. No member ever holds key material or a password.
public struct MerchantAPIError: Error, Sendable, CustomStringConvertible {
    public enum Code: String, Sendable, CaseIterable {
        /// The validation URL is not an Apple merchant-validation URL; nothing was sent anywhere.
        case invalidValidationURL
        /// A request member breaks a rule (display name, initiative context, domain, merchant identifier);
        /// nothing was sent.
        case invalidRequest
        /// The merchant identity certificate or key could not be loaded, or they do not belong together.
        case invalidIdentity
        /// The TCP connection could not be made or was dropped.
        case connectionFailed
        /// The TLS handshake failed: the gateway refused the client certificate, or its own was not trusted.
        case tlsFailure
        /// No complete answer within the time limit.
        case timeout
        /// The gateway answered with a redirect, which is never followed.
        case redirectRefused
        /// The gateway answered with an error status (`httpStatus`, and its `statusCode`/`statusMessage`).
        case gatewayError
        /// The gateway's 2xx answer is not what the operation returns (not JSON, too large).
        case invalidResponse
    }

    public let code: Code
    public let message: String
    /// The HTTP status of the gateway's answer, when there was one.
    public let httpStatus: Int?
    /// `statusCode` and `statusMessage` from the gateway's error body, as it sent them (control
    /// characters removed, length bounded).
    public let statusCode: String?
    public let statusMessage: String?

    public init(
        _ code: Code, _ message: String, httpStatus: Int? = nil, statusCode: String? = nil, statusMessage: String? = nil
    ) {
        self.code = code
        self.message = message
        self.httpStatus = httpStatus
        self.statusCode = statusCode
        self.statusMessage = statusMessage
    }

    public var description: String { "\(code.rawValue): \(message)" }
}

enum Printable {
    /// Text from the network or from a rejected input, made safe to put in a message or a terminal:
    /// control characters (C0, DEL, C1), format characters (bidi overrides, zero-width) and line or
    /// paragraph separators become U+FFFD, and at most `limit` characters are kept.
    static func bounded(_ text: some StringProtocol, limit: Int = 200) -> String {
        var out = String.UnicodeScalarView()
        var count = 0
        for scalar in text.unicodeScalars {
            if count == limit {
                return String(out) + "…"
            }
            out.append(isControl(scalar) ? "\u{FFFD}" : scalar)
            count += 1
        }
        return String(out)
    }

    /// Anything that is not a visible character or a space: C0, DEL, C1 (Cc), format characters such as
    /// U+202E or U+200B (Cf, which reorder or hide text), U+2028 and U+2029 (Zl, Zp). The zero-width
    /// non-joiner and joiner (U+200C, U+200D) are the exception: Persian, Devanagari and Malayalam names
    /// and emoji sequences need them, and they neither reorder nor hide text.
    static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        if scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value) { return true }
        if scalar.value == 0x200C || scalar.value == 0x200D { return false }
        switch scalar.properties.generalCategory {
        case .control, .format, .lineSeparator, .paragraphSeparator: return true
        default: return false
        }
    }
}
