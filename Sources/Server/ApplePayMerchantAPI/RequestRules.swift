// The rules a request member must pass before anything is sent: display name, domain names, merchant identifier.

/// Checks on what a merchant (or a browser, through a merchant's server) puts in a request.
public enum RequestRules {
    /// Apple: "a string of 64 or fewer UTF-8 characters". Counted here in Unicode scalar values (code
    /// points), not bytes and not grapheme clusters: bytes would refuse a 22-character Japanese name,
    /// and grapheme counting changes with the Unicode version Swift ships. So "é" typed precomposed counts
    /// one, decomposed two. Empty names, control characters (C0, DEL, C1; a newline included), format
    /// characters (bidi overrides, zero-width; category Cf) and line or paragraph separators are refused.
    public static let displayNameMaximum = 64

    public static func checkDisplayName(_ name: String) throws(MerchantAPIError) {
        let count = name.unicodeScalars.count
        guard count > 0 else { throw MerchantAPIError(.invalidRequest, "displayName is empty") }
        guard count <= displayNameMaximum else {
            throw MerchantAPIError(
                .invalidRequest,
                "displayName has \(count) characters (Unicode scalars); at most \(displayNameMaximum) are allowed")
        }
        guard !name.unicodeScalars.contains(where: Printable.isControl) else {
            throw MerchantAPIError(
                .invalidRequest, "displayName holds a control, format (bidi, zero-width) or line-separator character")
        }
    }

    /// A merchant domain as Apple registers it: an ASCII DNS name (IDNs in their `xn--` form) of at least two
    /// labels, each 1–63 of `a-z 0-9 -` not starting or ending with `-`, at most 253 bytes, the last label
    /// not all digits (so no IPv4 literal in any notation). Returns it lowercased without a trailing dot,
    /// the form compared and sent.
    public static func normalisedDomain(_ text: String, member: String) throws(MerchantAPIError) -> String {
        func reject(_ why: String) -> MerchantAPIError {
            MerchantAPIError(
                .invalidRequest, "\(member) \(Printable.bounded(text, limit: 80)) is not a domain name: \(why)")
        }
        guard text.utf8.allSatisfy({ $0 >= 0x21 && $0 <= 0x7E }) else {
            throw reject("only ASCII letters, digits, '-' and '.' (an internationalised name in its xn-- form)")
        }
        var name = text.lowercased()
        if name.hasSuffix(".") { name.removeLast() }
        guard !name.isEmpty, name.utf8.count <= 253 else { throw reject("empty or longer than 253 bytes") }
        let labels = name.split(separator: ".", omittingEmptySubsequences: false)
        guard labels.count >= 2 else { throw reject("a single label") }
        for label in labels {
            guard (1...63).contains(label.utf8.count) else { throw reject("a label is empty or longer than 63 bytes") }
            guard label.utf8.allSatisfy({ ($0 >= 0x61 && $0 <= 0x7A) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2D })
            else {
                throw reject("only ASCII letters, digits, '-' and '.' (an internationalised name in its xn-- form)")
            }
            guard label.first != "-", label.last != "-" else { throw reject("a label starts or ends with '-'") }
        }
        guard !labels.last!.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { throw reject("an IP address") }
        return name
    }

    /// Apple's merchant identifiers look like `merchant.com.example.store`: printable ASCII without spaces,
    /// at most 255 bytes. Anything else would only be refused by the gateway, or smuggle bytes into a query.
    public static func checkMerchantIdentifier(_ id: String) throws(MerchantAPIError) {
        guard !id.isEmpty, id.utf8.count <= 255, id.utf8.allSatisfy({ $0 >= 0x21 && $0 <= 0x7E }) else {
            throw MerchantAPIError(
                .invalidRequest,
                "merchantIdentifier \(Printable.bounded(id, limit: 80)) must be 1-255 printable ASCII characters without spaces"
            )
        }
    }
}
