// --operations-listen: the probes and the metrics on a listener of their own, as a service of the
// application (listed before its server, so they stay answered while it drains).
import Foundation
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import NIOPosix
import ServiceLifecycle

/// --operations-listen: /healthz, /readyz and /metrics on a listener of their own, plain HTTP on an event
/// loop of its own, so that the probes answer while decryption holds every other loop, and so that the
/// port the clients reach need not show merchant subjects and token counts.
func operationsApplication(
    _ operations: OperationsController, listen: String, options: ServiceOptions, metrics: ServiceMetrics,
    logger: Logger
) -> some Service {
    let (host, port) = ServiceOptions.parseListen(listen)!
    let router = Router(context: ServiceRequestContext.self)
    router.add(middleware: RequestLogMiddleware(metrics: metrics, logger: logger))
    operations.addProbeRoutes(to: router)
    // A small cap of its own: probes and scrapers need few connections.
    let limit = ConnectionLimit(maximum: 64, metrics: nil)
    let configuration = HTTP1Channel.Configuration(
        additionalChannelHandlers: [HeaderDeadlinePartWatcher(), ClosingResponseHandler()],
        idleTimeout: .seconds(options.idleTimeout))
    let headerTimeout = TimeAmount.seconds(options.headerTimeout)
    let server = HTTPServerBuilder { responder in
        GuardedConnection(
            base: HTTP1Channel(responder: responder, configuration: configuration), limit: limit,
            headerTimeout: headerTimeout,
            answersRefusals: true, logger: logger)
    }
    return Application(
        router: router, server: server,
        configuration: .init(address: .hostname(host, port: port), serverName: nil),
        onServerRunning: { channel in
            let bound = channel.localAddress?.port ?? port
            FileHandle.standardOutput.write(Data("applepay-service operations endpoints on \(host):\(bound)\n".utf8))
            logger.info("operations endpoints listening", metadata: ["address": "\(host):\(bound)"])
        },
        eventLoopGroupProvider: .shared(operationsEventLoop),
        logger: logger)
}

/// The operations listener's one thread, apart from the HTTP event loops; it lives as long as the process.
let operationsEventLoop = MultiThreadedEventLoopGroup(numberOfThreads: 1)
