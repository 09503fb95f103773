// The service's merchant-session options (spelt like the applepay-merchant CLI's) and the one client they build.
import ApplePayMerchantAPI
import ArgumentParser
import Foundation
import Logging

struct MerchantSessionOptions: ParsableArguments {
    @Option(name: .customLong("merchant-identity"), help: ArgumentHelp(
        "The merchant identity certificate for Apple's gateway: cert=PATH,key=PATH[,key-password-env=VAR] | p12=PATH[,password-env=VAR].",
        discussion: "The identity (TLS) certificate, not the payment processing certificate. Passwords only through the named environment variables.",
        valueName: "spec"))
    var identity: String?

    @Option(name: .customLong("merchant-id"), help: ArgumentHelp("The merchant identifier, e.g. merchant.com.example.store.", valueName: "id"))
    var merchantID: String?

    @Option(name: .customLong("merchant-domain"), help: ArgumentHelp(
        "A verified merchant domain a request's initiativeContext may name (repeatable).", valueName: "domain"))
    var domains: [String] = []

    @Option(name: .customLong("merchant-display-name"), help: ArgumentHelp(
        "The store name on the payment sheet when a request sends no displayName (at most 64 characters).", valueName: "name"))
    var displayName: String?

    @Flag(name: .customLong("merchant-sandbox"), help: "Use Apple's sandbox gateway and accept only sandbox validation URLs.")
    var sandbox = false

    @Option(name: .customLong("merchant-timeout"), help: ArgumentHelp(
        "Seconds allowed for one gateway call (connect, TLS, answer) before 504 (default 10).", valueName: "seconds"))
    var timeout: Double?

    @Option(name: .customLong("insecure-testing-merchant-gateway"), help: ArgumentHelp(
        "TESTING ONLY: send merchant-session requests to this https URL instead of Apple's gateway (needs --insecure-testing-merchant-gateway-ca).",
        valueName: "url"))
    var testGateway: String?

    @Option(name: .customLong("insecure-testing-merchant-gateway-ca"), help: ArgumentHelp(
        "TESTING ONLY: trust only this root certificate (PEM) for --insecure-testing-merchant-gateway.", valueName: "path"))
    var testGatewayCA: String?

    static let defaultTimeout = 10.0

    var isConfigured: Bool {
        identity != nil || merchantID != nil || !domains.isEmpty || displayName != nil || sandbox || timeout != nil
            || testGateway != nil || testGatewayCA != nil
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
            throw ValidationError("the merchant-session endpoint needs --merchant-identity, --merchant-id, --merchant-domain and --merchant-display-name together; missing: \(missing.joined(separator: ", "))")
        }
        if let timeout { guard timeout > 0, timeout <= 120 else { throw ValidationError("--merchant-timeout must be between 0 and 120 seconds") } }
        guard (testGateway == nil) == (testGatewayCA == nil) else {
            throw ValidationError("--insecure-testing-merchant-gateway and --insecure-testing-merchant-gateway-ca go together")
        }
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
                    throw MerchantAPIError(.invalidRequest, "cannot read the --insecure-testing-merchant-gateway-ca file \(testGatewayCA)")
                }
                gateway = try .insecureTestingOnly(baseURL: testGateway, trustRootPEM: [UInt8](pem), environment: environment)
                logger.warning("WARNING: --insecure-testing-merchant-gateway sends merchant-session requests, with the merchant identity certificate, to \(testGateway) trusting \(testGatewayCA) instead of Apple's \(environment.rawValue) gateway. For testing only.")
            }
            let loaded = try MerchantTLSIdentity.load(spec: identity)
            let seconds = timeout ?? Self.defaultTimeout
            return try MerchantAPIClient(merchantIdentifier: merchantID, identity: loaded, domains: domains, gateway: gateway,
                                         timeout: .milliseconds(Int64(seconds * 1000)))
        } catch {
            throw ServiceConfigurationError("merchant session: \(error.message)")
        }
    }
}
