// Apple's merchant-validation hosts for production and sandbox, and the gateway each operation is sent to.

/// Which of Apple's two gateways a client talks to; it also decides which validation hosts are accepted.
public enum GatewayEnvironment: String, Sendable, CaseIterable {
    case production
    case sandbox

    /// The host the four operations go to when no validation URL says otherwise.
    ///
    /// The sandbox host is `apple-pay-gateway-cert.apple.com`, as Apple's "Setting Up Your Server" page lists
    /// it (Listing 2, "for testing (development sandbox)"). The OpenAPI document in `shared/seeds` names
    /// `apple-pay-gateway-nc-pod5.apple.com` as its sandbox server, but Apple lists that pod among the
    /// production hosts, so sending sandbox traffic there would be sending it to production.
    public var defaultHost: String {
        switch self {
        case .production: "apple-pay-gateway.apple.com"
        case .sandbox: "apple-pay-gateway-cert.apple.com"
        }
    }

    /// The path prefix of every operation on Apple's gateways (`servers` in the OpenAPI document).
    static let basePath = "/paymentservices"

    /// The hosts a validation URL may name in this environment, lowercase, without a trailing dot.
    ///
    /// Source: Apple, "Setting Up Your Server" (Apple Pay on the Web), developer.apple.com/documentation/
    /// applepayontheweb/setting-up-your-server (read through the search tool's `pages` corpus, from a mirror
    /// of that page). Its current version lists, for production, apple-pay-gateway.apple.com (global) and
    /// cn-apple-pay-gateway.apple.com (China), and for the sandbox apple-pay-gateway-cert.apple.com. Its
    /// earlier version listed, for merchant validation, the regional pods apple-pay-gateway-{nc,pr}-pod1…5
    /// and cn-apple-pay-gateway-{sh,tj}-pod1…3, and cn-apple-pay-gateway-cert.apple.com for the China
    /// sandbox; browsers still hand out pod URLs in `onvalidatemerchant`, so they stay in the list (the same
    /// set appears in many public merchant integrations' SSRF allow lists). Every name is under apple.com;
    /// a name not listed here is refused, whatever it resolves to.
    public var validationHosts: Set<String> {
        switch self {
        case .production:
            var hosts: Set<String> = ["apple-pay-gateway.apple.com", "cn-apple-pay-gateway.apple.com"]
            for pod in 1...5 {
                hosts.insert("apple-pay-gateway-nc-pod\(pod).apple.com")
                hosts.insert("apple-pay-gateway-pr-pod\(pod).apple.com")
            }
            for pod in 1...3 {
                hosts.insert("cn-apple-pay-gateway-sh-pod\(pod).apple.com")
                hosts.insert("cn-apple-pay-gateway-tj-pod\(pod).apple.com")
            }
            return hosts
        case .sandbox:
            return ["apple-pay-gateway-cert.apple.com", "cn-apple-pay-gateway-cert.apple.com"]
        }
    }
}

/// Where requests actually go: one of Apple's gateways, or (tests only) a stand-in with its own trust root.
public struct Gateway: Sendable {
    public let environment: GatewayEnvironment
    /// Set only by `insecureTestingOnly`: the origin that replaces every Apple host, its path prefix, and
    /// the PEM root its certificate must chain to.
    let replacement: Replacement?

    struct Replacement: Sendable {
        let origin: String  // "https://host[:port]"
        let basePath: String  // "" or "/prefix"
        let trustRootPEM: [UInt8]
    }

    public static let production = Gateway(environment: .production, replacement: nil)
    public static let sandbox = Gateway(environment: .sandbox, replacement: nil)

    /// TESTING ONLY: sends every request to `baseURL` (an https URL such as https://127.0.0.1:8443 or
    /// https://127.0.0.1:8443/paymentservices) instead of Apple, trusting only the root in `trustRootPEM`.
    /// Validation URLs are still checked against `environment`'s Apple hosts; an accepted one keeps its
    /// path and has its origin replaced by this one. Nothing proves the gateway is Apple's.
    public static func insecureTestingOnly(
        baseURL: String, trustRootPEM: [UInt8], environment: GatewayEnvironment = .production
    ) throws(MerchantAPIError) -> Gateway {
        guard let parsed = TestGatewayURL(baseURL) else {
            throw MerchantAPIError(
                .invalidRequest,
                "the test gateway URL \(Printable.bounded(baseURL)) is not https://HOST[:PORT][/PATH] without userinfo, query or fragment"
            )
        }
        return Gateway(
            environment: environment,
            replacement: Replacement(origin: parsed.origin, basePath: parsed.path, trustRootPEM: trustRootPEM))
    }

    public var isReplacedForTesting: Bool { replacement != nil }

    /// The URL of an operation (`/paymentSession`, `/registerMerchant`, `/domains`).
    func url(operation: String) -> String {
        if let replacement { return replacement.origin + replacement.basePath + operation }
        return "https://" + environment.defaultHost + GatewayEnvironment.basePath + operation
    }

    /// The URL a validated validation URL is sent to: itself, or its path on the test stand-in.
    func url(for validation: MerchantValidationURL) -> String {
        if let replacement { return replacement.origin + validation.path }
        return validation.absoluteString
    }
}

/// The test gateway's URL: an operator's option, checked only for shape (it is not attacker input).
private struct TestGatewayURL {
    let origin: String
    let path: String

    init?(_ text: String) {
        guard text.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }), text.lowercased().hasPrefix("https://") else {
            return nil
        }
        let rest = text.dropFirst("https://".count)
        guard !rest.contains(where: { "@?#\\%".contains($0) }) else { return nil }
        let authority = rest.prefix { $0 != "/" }
        guard !authority.isEmpty else { return nil }
        var path = String(rest.dropFirst(authority.count))
        while path.hasSuffix("/") { path.removeLast() }
        origin = "https://" + authority
        self.path = path
    }
}
