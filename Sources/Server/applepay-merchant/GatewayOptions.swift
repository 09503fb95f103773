// Options every subcommand shares: the merchant, its identity certificate, the environment and test overrides.
import ApplePayMerchantAPI
import ArgumentParser
import Foundation

struct GatewayOptions: ParsableArguments {
    @Option(
        name: .customLong("identity"),
        help: ArgumentHelp(
            "The merchant identity certificate: cert=PATH,key=PATH[,key-password-env=VAR] | p12=PATH[,password-env=VAR].",
            discussion: """
                cert= is the merchant identity certificate (PEM, followed by any intermediates), key= its private key \
                (PEM). p12= reads a PKCS#12 file; its password is read from the environment variable named by \
                password-env= (default: the empty password), never from the command line. key-password-env= names the \
                variable holding an encrypted PEM key's password. This is the identity (TLS) certificate, not the \
                payment processing certificate.
                """,
            valueName: "spec"))
    var identity: String

    @Option(
        name: .customLong("merchant-id"),
        help: ArgumentHelp("The merchant identifier, e.g. merchant.com.example.store.", valueName: "id"))
    var merchantID: String

    @Flag(
        name: .customLong("sandbox"),
        help: "Use Apple's sandbox gateway (apple-pay-gateway-cert.apple.com) and accept only sandbox validation URLs.")
    var sandbox = false

    @Option(
        name: .customLong("timeout"),
        help: ArgumentHelp("Seconds allowed for the whole call (connect, TLS, answer).", valueName: "seconds"))
    var timeout: Double = 30

    @Option(
        name: .customLong("insecure-test-gateway"),
        help: ArgumentHelp(
            "TESTING ONLY: send every request to this https URL instead of Apple's gateway (needs --insecure-test-gateway-ca).",
            valueName: "url"))
    var testGateway: String?

    @Option(
        name: .customLong("insecure-test-gateway-ca"),
        help: ArgumentHelp(
            "TESTING ONLY: trust only this root certificate (PEM) for the --insecure-test-gateway.", valueName: "path"))
    var testGatewayCA: String?

    func validate() throws {
        guard timeout > 0, timeout <= 600 else { throw ValidationError("--timeout must be between 0 and 600 seconds") }
        guard (testGateway == nil) == (testGatewayCA == nil) else {
            throw ValidationError("--insecure-test-gateway and --insecure-test-gateway-ca go together")
        }
    }

    /// The client, or a usage error (exit 2) before anything is sent.
    func makeClient(domains: [String] = []) throws -> MerchantAPIClient {
        let environment: GatewayEnvironment = sandbox ? .sandbox : .production
        var gateway: Gateway = sandbox ? .sandbox : .production
        if let testGateway, let testGatewayCA {
            guard let pem = FileManager.default.contents(atPath: testGatewayCA) else {
                throw UsageError("cannot read the --insecure-test-gateway-ca file \(testGatewayCA)")
            }
            do throws(MerchantAPIError) {
                gateway = try .insecureTestingOnly(
                    baseURL: testGateway, trustRootPEM: [UInt8](pem), environment: environment)
            } catch {
                throw UsageError("--insecure-test-gateway: \(error.message)")
            }
            Output.stderr(
                "applepay-merchant: WARNING: --insecure-test-gateway sends the merchant identity's requests to \(testGateway), trusting \(testGatewayCA), instead of Apple's \(environment.rawValue) gateway. For testing only."
            )
        }
        let loaded = try MerchantTLSIdentity.load(spec: identity)
        do throws(MerchantAPIError) {
            return try MerchantAPIClient(
                merchantIdentifier: merchantID, identity: loaded, domains: domains, gateway: gateway,
                timeout: .milliseconds(Int64(timeout * 1000)))
        } catch {
            throw UsageError(error.message)
        }
    }
}

/// Runs one call with a client that is shut down afterwards, whatever happens.
func withClient<T>(_ client: MerchantAPIClient, _ body: (MerchantAPIClient) async throws -> T) async throws -> T {
    do {
        let result = try await body(client)
        try? await client.shutdown()
        return result
    } catch {
        try? await client.shutdown()
        throw error
    }
}
