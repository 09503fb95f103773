// The SSRF guard: a validation URL from a browser is accepted only if it names one of Apple's gateways.

/// A validation URL (from the browser's `onvalidatemerchant` event) that passed every rule below. The
/// request is sent to a URL rebuilt from these checked parts, never to the caller's string, so no other
/// URL parser (Foundation's, AsyncHTTPClient's, the resolver's) gets a chance to read it differently.
///
/// Rules, each failing closed with `invalidValidationURL` before any connection is made:
/// - printable ASCII only (0x21–0x7E), at most 2048 bytes: no Unicode hosts (IDNA mapping, fullwidth dots),
///   no spaces, tabs or newlines that WHATWG parsers silently strip;
/// - no `%` anywhere (percent-encoded hosts or paths), no `\` (WHATWG reads it as `/`), no `?` query,
///   no `#` fragment;
/// - scheme `https` (case-insensitive), then `//` and an authority up to the first `/`;
/// - no `@` (userinfo, as in `https://apple-pay-gateway.apple.com@evil.example/`), no `[`/`]` (IPv6);
/// - port absent or exactly `443` (`:0443`, `:443 `, `:` and every other port are refused);
/// - the host, lowercased and without one trailing dot, exactly one of Apple's validation hosts for the
///   client's environment (`GatewayEnvironment.validationHosts`): IP literals in any notation (dotted,
///   decimal, octal, hex), `localhost` and lookalikes such as `apple-pay-gateway.apple.com.example.net` do
///   not match;
/// - the path exactly `/paymentservices/paymentSession` or `/paymentservices/startSession`, the two
///   merchant-validation paths Apple's browsers hand out.
public struct MerchantValidationURL: Sendable, Equatable {
    public let environment: GatewayEnvironment
    /// An entry of `environment.validationHosts`.
    public let host: String
    public let path: String

    public static let sessionPaths: Set<String> = ["/paymentservices/paymentSession", "/paymentservices/startSession"]
    static let maximumLength = 2048

    public var absoluteString: String { "https://" + host + path }

    public init(_ text: String, environment: GatewayEnvironment) throws(MerchantAPIError) {
        func reject(_ why: String) -> MerchantAPIError {
            MerchantAPIError(
                .invalidValidationURL, "validation URL \(Printable.bounded(text, limit: 120)) refused: \(why)")
        }
        let bytes = Array(text.utf8)
        guard !bytes.isEmpty else { throw reject("it is empty") }
        guard bytes.count <= Self.maximumLength else { throw reject("longer than \(Self.maximumLength) bytes") }
        guard bytes.allSatisfy({ $0 >= 0x21 && $0 <= 0x7E }) else {
            throw reject("it holds a space, a control character or a non-ASCII character")
        }
        for (byte, what) in [
            (UInt8(ascii: "%"), "percent-encoding"), (UInt8(ascii: "\\"), "a backslash"),
            (UInt8(ascii: "?"), "a query"), (UInt8(ascii: "#"), "a fragment"),
        ] where bytes.contains(byte) {
            throw reject("it holds \(what)")
        }
        let scheme = "https://"
        guard bytes.count > scheme.utf8.count,
            String(decoding: bytes.prefix(scheme.utf8.count), as: UTF8.self).lowercased() == scheme
        else {
            throw reject("the scheme is not https")
        }
        let afterScheme = bytes.dropFirst(scheme.utf8.count)
        let authority = afterScheme.prefix { $0 != UInt8(ascii: "/") }
        let path = String(decoding: afterScheme.dropFirst(authority.count), as: UTF8.self)
        guard !authority.contains(UInt8(ascii: "@")) else { throw reject("it carries userinfo (@)") }
        guard !authority.contains(UInt8(ascii: "[")), !authority.contains(UInt8(ascii: "]")) else {
            throw reject("the host is an IP literal")
        }
        var hostBytes = authority[...]
        if let colon = authority.firstIndex(of: UInt8(ascii: ":")) {
            let port = String(decoding: authority[(colon + 1)...], as: UTF8.self)
            guard port == "443" else { throw reject("the port is not 443") }
            hostBytes = authority[..<colon]
        }
        var host = String(decoding: hostBytes, as: UTF8.self).lowercased()
        if host.hasSuffix(".") { host.removeLast() }
        guard !host.isEmpty else { throw reject("it has no host") }
        guard environment.validationHosts.contains(host) else {
            let other: GatewayEnvironment = environment == .production ? .sandbox : .production
            if other.validationHosts.contains(host) {
                throw reject(
                    "\(host) is an Apple \(other.rawValue) host, and this client is set up for \(environment.rawValue)")
            }
            throw reject("the host is not one of Apple's merchant-validation hosts for \(environment.rawValue)")
        }
        guard Self.sessionPaths.contains(path) else {
            throw reject("the path is not one of \(Self.sessionPaths.sorted().joined(separator: ", "))")
        }
        self.environment = environment
        self.host = host
        self.path = path
    }
}
