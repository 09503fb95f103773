// The `applepay-service` executable: options, start-up checks, and the service group (HTTP server,
// replay store, SIGHUP key reload, pruning) that SIGTERM drains.
import ApplePayDecryption
import ApplePayMerchantAPI
import ArgumentParser
import Foundation
import Hummingbird
import HummingbirdCore
import HummingbirdTLS
import Logging
import NIOPosix
import NIOSSL
import ServiceLifecycle
import UnixSignals

@main
struct ServiceCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "applepay-service",
        abstract: "Verify and decrypt Apple Pay payment tokens over HTTP (see openapi.yaml).")

    @Option(help: ArgumentHelp("Address to listen on, HOST:PORT (port 0 picks a free port, printed on start).", valueName: "host:port"))
    var listen: String

    @Option(name: .customLong("merchant"), help: ArgumentHelp(
        "A merchant key (repeatable), as in the CLI: \(MerchantSpec.syntax). SIGHUP reloads them.", valueName: "spec"))
    var merchants: [String] = []

    @Option(name: .customLong("trust-root"), help: ArgumentHelp(
        "TESTING ONLY: trust this root certificate (PEM) instead of the pinned Apple Root CA - G3.", valueName: "path"))
    var trustRoot: String?

    @Option(help: ArgumentHelp("Allowed distance in seconds between the signing time and now.", valueName: "seconds"))
    var window: Int64 = PaymentTokenDecryptor.defaultSigningTimeWindow

    @Option(name: .customLong("replay-store"), help: ArgumentHelp(
        "memory, or postgres://USER[:PASSWORD]@HOST:PORT/DB[?sslmode=require] shared by every instance.", valueName: "store"))
    var replayStore = "memory"

    @Option(name: .customLong("api-key-env"), help: ArgumentHelp(
        "Require Authorization: Bearer KEY on /v1, KEY read from this environment variable.", valueName: "var"))
    var apiKeyEnv: String?

    @Option(name: .customLong("tls-cert"), help: ArgumentHelp("Serve HTTPS with this certificate chain (PEM).", valueName: "path"))
    var tlsCert: String?

    @Option(name: .customLong("tls-key"), help: ArgumentHelp("The TLS private key (PEM).", valueName: "path"))
    var tlsKey: String?

    @Option(name: .customLong("client-ca"), help: ArgumentHelp(
        "Require a client certificate issued by this CA (PEM) on every connection.", valueName: "path"))
    var clientCA: String?

    @Option(help: ArgumentHelp("Threads that decrypt /v1/decrypt/batch lines (default: the number of cores). A single /v1/decrypt is decrypted on its connection's event loop (one per core).", valueName: "n"))
    var lanes: Int = ProcessInfo.processInfo.activeProcessorCount

    @Option(name: .customLong("max-body-bytes"), help: ArgumentHelp("Largest /v1/decrypt body, and largest batch line.", valueName: "bytes"))
    var maxBodyBytes: Int = 64 << 10

    @Option(name: .customLong("clock-skew"), help: ArgumentHelp(
        "Seconds of clock skew between instances; claims are kept 2 × window + skew.", valueName: "seconds"))
    var clockSkew: Int64 = 60

    @Option(name: .customLong("memory-store-capacity"), help: ArgumentHelp(
        "Most claims the memory store holds (two per token); when full of unexpired claims it answers 503.", valueName: "n"))
    var memoryStoreCapacity: Int = 2_000_000

    @Option(name: .customLong("store-timeout-ms"), help: ArgumentHelp("Longest wait for the replay store before 503.", valueName: "ms"))
    var storeTimeoutMs: Int = 2000

    @Option(name: .customLong("request-timeout"), help: ArgumentHelp(
        "Seconds a /v1/decrypt body may take to arrive before 408 and the connection is closed.", valueName: "seconds"))
    var requestTimeout: Int64 = 30

    @Option(name: .customLong("idle-timeout"), help: ArgumentHelp("Seconds before an idle or stalled connection is closed.", valueName: "seconds"))
    var idleTimeout: Int64 = 30

    @Option(name: .customLong("insecure-testing-fixed-now"), help: ArgumentHelp(
        "TESTING ONLY: judge freshness against this fixed ISO 8601 time instead of the clock (bundled vectors).", valueName: "time"))
    var fixedNow: String?

    @OptionGroup(title: "POST /v1/merchant-session (--merchant-identity, --merchant-id, --merchant-domain and --merchant-display-name: all or none)")
    var session: MerchantSessionOptions

    @Option(name: .customLong("log-level"), help: "trace, debug, info, notice, warning, error or critical.")
    var logLevel: String = "info"

    func validate() throws {
        guard !merchants.isEmpty else { throw ValidationError("at least one --merchant is required") }
        guard requestTimeout >= 1, idleTimeout >= 1 else { throw ValidationError("--request-timeout and --idle-timeout must be at least 1") }
        guard window >= 0, clockSkew >= 0 else { throw ValidationError("--window and --clock-skew must not be negative") }
        guard lanes >= 1, lanes <= 256 else { throw ValidationError("--lanes must be between 1 and 256") }
        guard maxBodyBytes >= 1, maxBodyBytes <= 64 << 20 else { throw ValidationError("--max-body-bytes must be between 1 and 67108864") }
        guard memoryStoreCapacity >= 2 else { throw ValidationError("--memory-store-capacity must be at least 2") }
        guard (tlsCert == nil) == (tlsKey == nil) else { throw ValidationError("--tls-cert and --tls-key go together") }
        if clientCA != nil, tlsCert == nil { throw ValidationError("--client-ca needs --tls-cert and --tls-key") }
        if let fixedNow, Self.parseTime(fixedNow) == nil { throw ValidationError("--insecure-testing-fixed-now '\(fixedNow)' is not ISO 8601") }
        guard Logger.Level(rawValue: logLevel) != nil else { throw ValidationError("unknown --log-level \(logLevel)") }
        guard Self.parseListen(listen) != nil else { throw ValidationError("--listen '\(listen)' is not HOST:PORT") }
        try session.validateAllOrNothing()
    }

    static func parseListen(_ text: String) -> (String, Int)? {
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]), (0...65535).contains(port) else { return nil }
        var host = String(text[..<colon])
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        return host.isEmpty ? nil : (host, port)
    }

    static func parseTime(_ text: String) -> Date? {
        if let date = try? Date(text, strategy: .iso8601) { return date }
        return try? Date(text, strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: true))
    }

    func run() async throws {
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = Logger.Level(rawValue: logLevel) ?? .info
            return handler
        }
        var logger = Logger(label: "applepay-service")
        logger.logLevel = Logger.Level(rawValue: logLevel) ?? .info
        do {
            try await serve(logger: logger)
        } catch let error as ServiceConfigurationError {
            logger.critical("configuration error", metadata: ["error": "\(error.description)"])
            throw ExitCode(2)
        }
    }

    func serve(logger: Logger) async throws {
        let specs: [MerchantSpec]
        do { specs = try merchants.map { spec throws(ConfigurationError) in try MerchantSpec(spec) } } catch {
            throw ServiceConfigurationError("--merchant: \(error.message)")
        }
        var anchor = TrustAnchor.appleRootCAG3
        if let trustRoot {
            guard let pem = FileManager.default.contents(atPath: trustRoot) else { throw ServiceConfigurationError("cannot read the trust root file \(trustRoot)") }
            do { anchor = try TrustAnchor.insecureTestingOnlyRoot(pem: Array(pem)) } catch {
                throw ServiceConfigurationError("--trust-root \(trustRoot): \(error.message)")
            }
            if !anchor.isAppleRootCAG3 {
                logger.warning("WARNING: --trust-root replaces Apple Root CA - G3 with \(trustRoot) (SHA-256 \(anchor.fingerprint)). Tokens accepted now are NOT proven to come from Apple. For testing only.")
            }
        }
        var reference = ReferenceTime.now
        if let fixedNow, let date = Self.parseTime(fixedNow) {
            reference = .at(date)
            logger.warning("WARNING: --insecure-testing-fixed-now: freshness is judged against \(fixedNow), not the clock. For testing only.")
        }
        let keys = try KeyRing(specs: specs, anchor: anchor, window: window)
        var apiKey: [UInt8]?
        if let apiKeyEnv {
            guard let value = ProcessInfo.processInfo.environment[apiKeyEnv], !value.isEmpty else {
                throw ServiceConfigurationError("--api-key-env: the environment variable \(apiKeyEnv) is not set or empty")
            }
            apiKey = Array(value.utf8)
        }

        let retention = 2 * window + clockSkew
        let timeout = Duration.milliseconds(storeTimeoutMs)
        var services: [any Service] = []
        let store: any ReplayStore
        if replayStore == "memory" {
            store = MemoryReplayStore(capacity: memoryStoreCapacity, retention: retention)
        } else {
            let postgres = try PostgresReplayStore(url: replayStore, retention: retention, timeout: timeout, logger: logger)
            store = postgres
        }

        let metrics = ServiceMetrics()
        let pool = NIOThreadPool(numberOfThreads: lanes)
        pool.start()
        let api = DecryptionAPI(keys: keys, store: store, metrics: metrics, lanes: pool, reference: reference, bodyLimit: maxBodyBytes,
                                requestTimeout: .seconds(requestTimeout), lineLimit: maxBodyBytes, batchWindow: max(8, lanes * 8), apiKey: apiKey, logger: logger)
        let router = Router(context: ServiceRequestContext.self)
        api.register(on: router)

        let http1Configuration = HTTP1Channel.Configuration(idleTimeout: .seconds(idleTimeout))
        let server: HTTPServerBuilder
        if let tlsCert, let tlsKey {
            do {
                let chain = try NIOSSLCertificate.fromPEMFile(tlsCert).map { NIOSSLCertificateSource.certificate($0) }
                var tls = TLSConfiguration.makeServerConfiguration(certificateChain: chain, privateKey: .privateKey(try NIOSSLPrivateKey(file: tlsKey, format: .pem)))
                tls.minimumTLSVersion = .tlsv12
                if let clientCA {
                    tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMFile(clientCA))
                    tls.certificateVerification = .noHostnameVerification
                }
                let configured = tls
                server = HTTPServerBuilder { responder in
                    EventLoopBound(try TLSChannel(HTTP1Channel(responder: responder, configuration: http1Configuration), tlsConfiguration: configured))
                }
            } catch {
                throw ServiceConfigurationError("TLS: \(error)")
            }
        } else {
            server = HTTPServerBuilder { responder in EventLoopBound(HTTP1Channel(responder: responder, configuration: http1Configuration)) }
        }

        // Built last, and shut down on every way out: its connection pool must be closed before exit.
        try session.checkExposure(listenHost: Self.parseListen(listen)!.0, hasAPIKey: apiKey != nil, logger: logger)
        let sessionClient = try session.makeClient(logger: logger)
        let sessions = sessionClient.map {
            MerchantSessionAPI(client: $0, displayName: session.displayName!, metrics: metrics, requestTimeout: .seconds(requestTimeout),
                               allowDisplayName: session.allowDisplayName,
                               inFlight: InFlightLimit(session.maxInFlight ?? MerchantSessionOptions.defaultMaxInFlight))
        }
        MerchantSessionAPI.register(sessions, on: router, apiKey: apiKey, metrics: metrics, requestTimeout: .seconds(requestTimeout))

        services.append(KeyReloadService(keys: keys, metrics: metrics, logger: logger))
        services.append(PruneService(store: store))
        let (host, port) = Self.parseListen(listen)!
        let storeName = store.kind
        let app = Application(
            router: router, server: server,
            configuration: .init(address: .hostname(host, port: port), serverName: nil),
            services: services,
            onServerRunning: { channel in
                let bound = channel.localAddress?.port ?? port
                // One plain line on stdout that scripts and tests wait for.
                FileHandle.standardOutput.write(Data("applepay-service listening on \(host):\(bound)\n".utf8))
                logger.info("listening", metadata: ["address": "\(host):\(bound)", "replay_store": "\(storeName)", "merchants": "\(specs.count)"])
            },
            logger: logger)

        do {
            if let postgres = store as? PostgresReplayStore {
                // The client runs outside the application's service group so that it outlives the
                // server's drain: requests finishing after SIGTERM still claim. Start-up fails if the
                // table cannot be created.
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask { await postgres.client.run() }
                    try await postgres.prepare()
                    try await app.runService(gracefulShutdownSignals: [.sigterm, .sigint])
                    // Undos of claims answered 503 finish before the client stops: up to one more
                    // timeout for their COMMIT, then every release attempt with its backoff.
                    await postgres.settle(limit: postgres.timeout * (PostgresReplayStore.releaseAttempts + 2) + .seconds(2))
                    group.cancelAll()
                }
            } else {
                try await app.runService(gracefulShutdownSignals: [.sigterm, .sigint])
            }
        } catch {
            try? await sessionClient?.shutdown()
            throw error
        }
        try? await sessionClient?.shutdown()
        try? await pool.shutdownGracefully()
        logger.info("stopped")
    }
}
