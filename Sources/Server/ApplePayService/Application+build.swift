// The service as a Hummingbird application: its keys, replay store, routes, middleware, HTTP server and the
// services that must outlive the server's drain, built from the options. The executable runs it; the
// in-process tests drive its router directly (HummingbirdTesting).
import ApplePayDecryption
import ApplePayMerchantAPI
import Foundation
import Hummingbird
import HummingbirdCore
import HummingbirdTLS
import Logging
import NIOCore
import NIOPosix
import NIOSSL
import ServiceLifecycle

/// Builds the service from `options`, or throws `ServiceConfigurationError` naming what is wrong.
///
/// The application's services run in a `ServiceGroup` with the server last, and a group shuts its services
/// down in reverse order: everything listed here (the PostgreSQL client, the decryption lanes, the
/// merchant-session client) stops only after the server has drained its requests in flight.
public func buildApplication(_ options: ServiceOptions, logger: Logger) async throws -> some ApplicationProtocol {
    let specs: [MerchantSpec]
    do { specs = try options.merchants.map { spec throws(ConfigurationError) in try MerchantSpec(spec) } } catch {
        throw ServiceConfigurationError("--merchant: \(error.message)")
    }
    var anchor = TrustAnchor.appleRootCAG3
    if let trustRoot = options.trustRoot {
        guard let pem = FileManager.default.contents(atPath: trustRoot) else {
            throw ServiceConfigurationError("cannot read the trust root file \(trustRoot)")
        }
        do { anchor = try TrustAnchor.insecureTestingOnlyRoot(pem: Array(pem)) } catch {
            throw ServiceConfigurationError("--trust-root \(trustRoot): \(error.message)")
        }
        if !anchor.isAppleRootCAG3 {
            logger.warning(
                "WARNING: --trust-root replaces Apple Root CA - G3 with \(trustRoot) (SHA-256 \(anchor.fingerprint)). Tokens accepted now are NOT proven to come from Apple. For testing only."
            )
        }
    }
    var reference = ReferenceTime.now
    var clock = ReplayClock.wall
    if let fixedNow = options.fixedNow, let date = ServiceOptions.parseTime(fixedNow) {
        reference = .at(date)
        clock = .fixed(date)
        logger.warning(
            "WARNING: --insecure-testing-fixed-now: freshness and replay claims are judged against \(fixedNow), not the clock; claims never expire while the service runs. For testing only."
        )
    }
    let google = options.googlePay
    var googleConfiguration: GooglePayKeyConfiguration?
    var rootKeysFetcher: GoogleRootKeysFetcher?
    var firstFetch: GoogleRootKeysFetcher.Fetched?
    switch google.rootKeysSource {
    case nil:
        break
    case let .file(path):
        googleConfiguration = GooglePayKeyConfiguration(
            recipientIds: google.recipientIds, merchantKeySpecs: google.merchantKeys, rootKeysFile: path)
    case let .url(url):
        if url.scheme?.lowercased() == "http" {
            loudWarning(
                logger,
                "WARNING: --insecure-testing-allow-http-root-keys: the Google root keys come over plain http from \(url); whoever can answer on that address decides which Google Pay tokens count as genuine. For testing only."
            )
        }
        // Start fails when the first fetch does: the service never runs without root keys.
        let fetcher = GoogleRootKeysFetcher(url: url)
        do { firstFetch = try await fetcher.fetch() } catch {
            await fetcher.shutdown()
            throw ServiceConfigurationError("--google-root-keys: the first fetch failed: \(error)")
        }
        rootKeysFetcher = fetcher
        googleConfiguration = GooglePayKeyConfiguration(
            recipientIds: google.recipientIds, merchantKeySpecs: google.merchantKeys, rootKeysFile: nil)
        logger.info(
            "Google root keys fetched",
            metadata: [
                "url": "\(url)", "keys": "\(firstFetch!.rootKeys.keys.count)",
                "sha256": "\(firstFetch!.rootKeys.fingerprint)",
                "max_age_s": "\(firstFetch!.maxAge.map(String.init) ?? "none")",
            ])
    }
    googleConfiguration?.protocolVersions = try google.acceptedVersions()
    let keys = try KeyRing(
        specs: specs, anchor: anchor, window: options.window, google: googleConfiguration,
        samsungKeySpecs: options.samsungKeys, fetchedRootKeys: firstFetch?.rootKeys)
    var apiKey: [UInt8]?
    if let apiKeyEnv = options.apiKeyEnv {
        guard let value = ProcessInfo.processInfo.environment[apiKeyEnv], !value.isEmpty else {
            throw ServiceConfigurationError("--api-key-env: the environment variable \(apiKeyEnv) is not set or empty")
        }
        apiKey = Array(value.utf8)
    }

    let retention = 2 * options.window + options.clockSkew
    var services: [any Service] = []
    let store: any ReplayStore
    var postgres: PostgresReplayStore?
    if options.replayStore == "memory" {
        store = MemoryReplayStore(capacity: options.memoryStoreCapacity, retention: retention, clock: clock)
    } else {
        let client = try PostgresReplayStore(
            url: options.replayStore, retention: retention, clock: clock,
            timeout: .milliseconds(options.storeTimeoutMs), logger: logger)
        services.append(PostgresClientService(store: client))
        store = client
        postgres = client
    }

    // Said at start, so that an operator sees how long a replay is refused.
    logger.info(
        "replay store",
        metadata: [
            "replay_store": "\(store.kind)", "replay_retention_s": "\(retention)",
            "clock": "\(options.fixedNow.map { "fixed at \($0)" } ?? "wall")",
        ])

    let metrics = ServiceMetrics()
    let lanes = NIOThreadPool(numberOfThreads: options.lanes)
    lanes.start()
    services.append(ThreadPoolService(pool: lanes))
    let requestTimeout = Duration.seconds(options.requestTimeout)

    let (host, port) = ServiceOptions.parseListen(options.listen)!
    // Built before the merchant-session client: a TLS mistake must not leave that client unshut.
    let limit = ConnectionLimit(maximum: options.maxConnections ?? ConnectionLimit.defaultMaximum, metrics: metrics)
    let server = try serverBuilder(options, limit: limit, logger: logger)
    try options.session.checkExposure(listenHost: host, hasAPIKey: apiKey != nil, logger: logger)
    let sessionClient = try options.session.makeClient(logger: logger)
    if let sessionClient { services.append(MerchantSessionClientService(client: sessionClient)) }
    let proxy = sessionClient.map {
        MerchantSessionProxy(
            client: $0, displayName: options.session.displayName!, metrics: metrics, requestTimeout: requestTimeout,
            allowDisplayName: options.session.allowDisplayName,
            inFlight: InFlightLimit(options.session.maxInFlight ?? MerchantSessionOptions.defaultMaxInFlight))
    }

    let router = Router(context: ServiceRequestContext.self)
    router.add(middleware: RequestLogMiddleware(metrics: metrics, logger: logger))
    router.add(middleware: MethodNotAllowedMiddleware(probes: options.operationsListen == nil))
    let operations = OperationsController(keys: keys, store: store, metrics: metrics)
    operations.addContractRoute(to: router)
    if let operationsListen = options.operationsListen {
        // Listed before the server: the probes stay answered while it drains.
        services.append(
            operationsApplication(
                operations, listen: operationsListen, options: options, metrics: metrics, logger: logger))
    } else {
        operations.addProbeRoutes(to: router)
    }
    let v1 = router.group("v1").add(middleware: APIKeyMiddleware(key: apiKey))
    DecryptController(
        keys: keys, store: store, metrics: metrics, lanes: lanes, reference: reference, clock: clock,
        clockSkew: options.clockSkew, bodyLimit: options.maxBodyBytes,
        requestTimeout: requestTimeout, lineLimit: options.maxBodyBytes, batchWindow: max(8, options.lanes * 8),
        batchTimeout: .seconds(options.batchTimeout)
    )
    .addRoutes(to: v1)
    MerchantSessionController(proxy: proxy, metrics: metrics, requestTimeout: requestTimeout).addRoutes(to: v1)

    services.append(KeyReloadService(keys: keys, metrics: metrics, logger: logger, rootKeysFetcher: rootKeysFetcher))
    if let rootKeysFetcher {
        services.append(
            GoogleRootKeysRefreshService(
                fetcher: rootKeysFetcher, keys: keys, metrics: metrics, logger: logger, firstMaxAge: firstFetch?.maxAge)
        )
    }
    services.append(PruneService(store: store))
    let storeName = store.kind
    let googlePayState = googleConfiguration == nil ? "off" : "on"
    var app = Application(
        router: router, server: server,
        configuration: .init(address: .hostname(host, port: port), serverName: nil),
        services: services,
        onServerRunning: { channel in
            let bound = channel.localAddress?.port ?? port
            // One plain line on stdout that scripts and tests wait for.
            FileHandle.standardOutput.write(Data("applepay-service listening on \(host):\(bound)\n".utf8))
            logger.info(
                "listening",
                metadata: [
                    "address": "\(host):\(bound)", "replay_store": "\(storeName)", "merchants": "\(specs.count)",
                    "google_pay": "\(googlePayState)",
                    "max_connections": "\(limit.maximum)",
                ])
        },
        logger: logger)
    // Start-up fails if the table cannot be created (the client's service is already running).
    if let postgres { app.beforeServerStarts { try await postgres.prepare() } }
    return app
}

/// HTTP/1.1, or HTTPS with `--tls-cert`/`--tls-key` (and a required client certificate with
/// `--client-ca`), each connection behind the cap and the header deadline (`GuardedConnection`) and its
/// task on its own event loop (`EventLoopBound`).
func serverBuilder(_ options: ServiceOptions, limit: ConnectionLimit, logger: Logger) throws -> HTTPServerBuilder {
    let http1Configuration = HTTP1Channel.Configuration(
        additionalChannelHandlers: [HeaderDeadlinePartWatcher(), ClosingResponseHandler()],
        idleTimeout: .seconds(options.idleTimeout))
    let headerTimeout = TimeAmount.seconds(options.headerTimeout)
    guard let tlsCert = options.tlsCert, let tlsKey = options.tlsKey else {
        return HTTPServerBuilder { responder in
            EventLoopBound(
                GuardedConnection(
                    base: HTTP1Channel(responder: responder, configuration: http1Configuration), limit: limit,
                    headerTimeout: headerTimeout, answersRefusals: true, logger: logger))
        }
    }
    do {
        let chain = try NIOSSLCertificate.fromPEMFile(tlsCert).map { NIOSSLCertificateSource.certificate($0) }
        var tls = TLSConfiguration.makeServerConfiguration(
            certificateChain: chain, privateKey: .privateKey(try NIOSSLPrivateKey(file: tlsKey, format: .pem)))
        tls.minimumTLSVersion = .tlsv12
        if let clientCA = options.clientCA {
            tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMFile(clientCA))
            tls.certificateVerification = .noHostnameVerification
        }
        let configured = tls
        return HTTPServerBuilder { responder in
            EventLoopBound(
                GuardedConnection(
                    base: try TLSChannel(
                        HTTP1Channel(responder: responder, configuration: http1Configuration),
                        tlsConfiguration: configured),
                    limit: limit, headerTimeout: headerTimeout, answersRefusals: false, logger: logger))
        }
    } catch {
        throw ServiceConfigurationError("TLS: \(error)")
    }
}
