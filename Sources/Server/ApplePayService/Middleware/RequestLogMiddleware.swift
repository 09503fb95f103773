// One log line per request, and the latency and in-flight metrics.
import Hummingbird
import Logging

/// One structured line per request (route, status, outcome, merchant label, latency; never a token,
/// PAN, key or plaintext), plus the latency and in-flight metrics. Streamed (batch) responses are
/// logged when their body has been written, the others when their response is ready.
struct RequestLogMiddleware: RouterMiddleware {
    typealias Context = ServiceRequestContext
    let metrics: ServiceMetrics
    let logger: Logger

    /// `elapsed` in milliseconds with three decimals, as `String(format: "%.3f")` prints it but
    /// without Foundation's format parser (rounded to the nearest microsecond).
    static func milliseconds(_ elapsed: Duration) -> String {
        let (seconds, attoseconds) = elapsed.components
        let micros = max(0, seconds) * 1_000_000 + (max(0, attoseconds) + 500_000_000_000) / 1_000_000_000_000
        let fraction = String(micros % 1000)
        return "\(micros / 1000)." + String(repeating: "0", count: 3 - fraction.count) + fraction
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        let start = ContinuousClock.now
        metrics.inFlight.increment()
        let path = request.uri.path
        let method = request.method
        let facts = context.facts
        let done: @Sendable (Int, String?) -> Void = { [metrics, logger] status, failure in
            let elapsed = ContinuousClock.now - start
            metrics.inFlight.decrement()
            let route = context.endpointPath ?? path
            metrics.request(route: context.endpointPath, duration: elapsed)
            // The line's metadata costs more than the metrics: build it only when it will be written.
            guard logger.logLevel <= .info else { return }
            let values = facts.values.withLock { $0 }
            var metadata: Logger.Metadata = [
                "method": "\(method)", "route": "\(ServiceMetrics.routes.contains(route) ? route : "other")",
                "status": "\(status)",
                "latency_ms": "\(Self.milliseconds(elapsed))",
            ]
            if let outcome = values.outcome { metadata["outcome"] = "\(outcome)" }
            if let merchant = values.merchant { metadata["merchant"] = "\(merchant)" }
            if values.tokens > 1 || route == "/v1/decrypt/batch" { metadata["tokens"] = "\(values.tokens)" }
            if let failure { metadata["failure"] = "\(failure)" }
            logger.info("request", metadata: metadata)
        }
        let response: Response
        do {
            response = try await next(request, context)
        } catch {
            let status = (error as? any HTTPResponseError)?.status.code ?? 500
            done(status, String(describing: type(of: error)))
            throw error
        }
        let status = response.status.code
        // Only the batch route streams. Every other body is one buffer, which Hummingbird writes with
        // its head and end in one batched write; wrapping it in a closure body would cost a socket
        // write (and a flush) for each of the three parts. Nothing can fail after this point but the
        // socket write itself, so these are logged now.
        guard context.endpointPath == "/v1/decrypt/batch" else {
            done(status, nil)
            return response
        }
        var logged = response
        let original = response.body
        logged.body = ResponseBody(contentLength: original.contentLength) { writer in
            do {
                try await original.write(writer)
                done(status, nil)
            } catch {
                done(status, "response stream ended early")
                throw error
            }
        }
        return logged
    }
}
