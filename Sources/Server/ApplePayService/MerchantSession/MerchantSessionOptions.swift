// The service's merchant-session options (spelt like the applepay-merchant CLI's) and the one client they build.
import ApplePayMerchantAPI
import ArgumentParser
import Foundation
import Logging

public struct MerchantSessionOptions: ParsableArguments {
    public init() {}

    @Option(
        name: .customLong("merchant-identity"),
        help: ArgumentHelp(
            "The merchant identity certificate for Apple's gateway: cert=PATH,key=PATH[,key-password-env=VAR] | p12=PATH[,password-env=VAR].",
            discussion:
                "The identity (TLS) certificate, not the payment processing certificate. Passwords only through the named environment variables.",
            valueName: "spec"))
    var identity: String?

    @Option(
        name: .customLong("merchant-id"),
        help: ArgumentHelp("The merchant identifier, e.g. merchant.com.example.store.", valueName: "id"))
    var merchantID: String?

    @Option(
        name: .customLong("merchant-domain"),
        help: ArgumentHelp(
            "A verified merchant domain a request's initiativeContext may name (repeatable).", valueName: "domain"))
    var domains: [String] = []

    @Option(
        name: .customLong("merchant-display-name"),
        help: ArgumentHelp(
            "The store name on the payment sheet when a request sends no displayName (at most 64 characters).",
            valueName: "name"))
    var displayName: String?

    @Flag(
        name: .customLong("merchant-sandbox"),
        help: "Use Apple's sandbox gateway and accept only sandbox validation URLs.")
    var sandbox = false

    @Option(
        name: .customLong("merchant-timeout"),
        help: ArgumentHelp(
            "Seconds allowed for one gateway call (connect, TLS, answer) before 504 (default 10).", valueName: "seconds"
        ))
    var timeout: Double?

    @Option(
        name: .customLong("insecure-testing-merchant-gateway"),
        help: ArgumentHelp(
            "TESTING ONLY: send merchant-session requests to this https URL instead of Apple's gateway (needs --insecure-testing-merchant-gateway-ca).",
            valueName: "url"))
    var testGateway: String?

    @Option(
        name: .customLong("insecure-testing-merchant-gateway-ca"),
        help: ArgumentHelp(
            "TESTING ONLY: trust only this root certificate (PEM) for --insecure-testing-merchant-gateway.",
            valueName: "path"))
    var testGatewayCA: String?

    @Option(
        name: .customLong("merchant-max-in-flight"),
        help: ArgumentHelp(
            "Gateway calls running at once; a request beyond them is answered 503 merchantSessionBusy at once (default 16).",
            valueName: "n"))
    var maxInFlight: Int?

    @Flag(
        name: .customLong("merchant-allow-display-name"),
        help: ArgumentHelp(
            "Let a request's displayName replace --merchant-display-name on the payment sheet (without it such a request is 422)."
        ))
    var allowDisplayName = false

    static let defaultTimeout = 10.0
    static let defaultMaxInFlight = 16

    var isConfigured: Bool {
        identity != nil || merchantID != nil || !domains.isEmpty || displayName != nil || sandbox || timeout != nil
            || testGateway != nil || testGatewayCA != nil || maxInFlight != nil || allowDisplayName
    }

    /// A partial configuration is a mistake, not a request to run without the endpoint: say what is missing.
    func validateAllOrNothing() throws {
        guard isConfigured else { return }
        var missing: [String] = []
        if identity == nil { missing.append("--merchant-identity") }
        if merchantID == nil { missing.append("--merchant-id") }
        if domains.isEmpty { missing.append("--merchant-domain") }
        if displayName == nil { missing.append("--merchant-display-name") }
        guard missing.isEmpty else {
            throw ValidationError(
                "the merchant-session endpoint needs --merchant-identity, --merchant-id, --merchant-domain and --merchant-display-name together; missing: \(missing.joined(separator: ", "))"
            )
        }
        if let maxInFlight {
            guard (1...1024).contains(maxInFlight) else {
                throw ValidationError("--merchant-max-in-flight must be between 1 and 1024")
            }
        }
        if let timeout {
            guard timeout > 0, timeout <= 120 else {
                throw ValidationError("--merchant-timeout must be between 0 and 120 seconds")
            }
        }
        guard (testGateway == nil) == (testGatewayCA == nil) else {
            throw ValidationError(
                "--insecure-testing-merchant-gateway and --insecure-testing-merchant-gateway-ca go together")
        }
    }

    /// Without an API key anyone who reaches the port may spend the merchant's identity at Apple's
    /// gateway: allowed only when the service listens on loopback alone (a local proxy in front), and
    /// then said loudly.
    func checkExposure(listenHost: String, hasAPIKey: Bool, logger: Logger) throws {
        guard isConfigured, !hasAPIKey else { return }
        guard Self.isLoopback(listenHost) else {
            throw ServiceConfigurationError(
                "merchant session: --merchant-identity needs --api-key-env unless --listen is a loopback address (\(listenHost) is not): anyone who can reach the port would request sessions with the merchant's identity"
            )
        }
        loudWarning(
            logger,
            "WARNING: POST /v1/merchant-session runs without --api-key-env: any local process that can reach \(listenHost) can request sessions with the merchant identity certificate."
        )
    }

    static func isLoopback(_ host: String) -> Bool {
        if host == "localhost" || host == "::1" || host == "0:0:0:0:0:0:0:1" { return true }
        let parts = host.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts[0] == "127" && parts.allSatisfy { UInt8($0) != nil }
    }

    /// The one client of this process, or nil when the endpoint is not configured. Any fault in the
    /// identity, the names or the test gateway refuses start-up.
    func makeClient(logger: Logger) throws -> MerchantAPIClient? {
        guard isConfigured, let identity, let merchantID, let displayName else { return nil }
        let environment: GatewayEnvironment = sandbox ? .sandbox : .production
        do throws(MerchantAPIError) {
            try RequestRules.checkDisplayName(displayName)
            var gateway: Gateway = sandbox ? .sandbox : .production
            if let testGateway, let testGatewayCA {
                guard let pem = FileManager.default.contents(atPath: testGatewayCA) else {
                    throw MerchantAPIError(
                        .invalidRequest, "cannot read the --insecure-testing-merchant-gateway-ca file \(testGatewayCA)")
                }
                gateway = try .insecureTestingOnly(
                    baseURL: testGateway, trustRootPEM: [UInt8](pem), environment: environment)
                loudWarning(
                    logger,
                    "WARNING: --insecure-testing-merchant-gateway sends merchant-session requests, with the merchant identity certificate, to \(testGateway) trusting \(testGatewayCA) instead of Apple's \(environment.rawValue) gateway. For testing only."
                )
            }
            let loaded = try MerchantTLSIdentity.load(spec: identity)
            let seconds = timeout ?? Self.defaultTimeout
            return try MerchantAPIClient(
                merchantIdentifier: merchantID, identity: loaded, domains: domains, gateway: gateway,
                timeout: .milliseconds(Int64(seconds * 1000)))
        } catch {
            throw ServiceConfigurationError("merchant session: \(error.message)")
        }
    }
}
