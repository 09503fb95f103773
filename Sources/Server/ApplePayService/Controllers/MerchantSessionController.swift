// POST /v1/merchant-session, behind the same API key as the other /v1 routes: the proxy's work when the
// service has a merchant configuration, and a 404 that says why when it has none.
import Hummingbird
import NIOCore

struct MerchantSessionController: Sendable {
    /// nil: the service runs without --merchant-identity and the rest.
    let proxy: MerchantSessionProxy?
    let metrics: ServiceMetrics
    let requestTimeout: Duration

    func addRoutes(to group: RouterGroup<ServiceRequestContext>) {
        group.post("merchant-session") { request, context in
            if let proxy { return try await proxy.handle(request, context: context) }
            // Read (a bounded amount of) the body so that the connection can carry the next request.
            let read = try await RequestBodyCollector.collect(
                request, limit: MerchantSessionProxy.bodyLimit, deadline: requestTimeout, on: context.channel)
            var response = Self.notConfigured(context: context, metrics: metrics)
            if case .complete = read {} else { response.headers[.connection] = "close" }
            response.headers[.cacheControl] = "no-store"
            return response
        }
    }

    /// The answer when the service runs without a merchant configuration: the route exists in the
    /// contract, so it says why it is off instead of a bare 404.
    static func notConfigured(context: ServiceRequestContext, metrics: ServiceMetrics) -> Response {
        metrics.merchantSession(outcome: "merchantSessionNotConfigured")
        context.facts.values.withLock { $0.outcome = "merchantSessionNotConfigured" }
        return JSONResponse.make(
            .notFound,
            JSONResponse.errorBody(
                code: "merchantSessionNotConfigured",
                message:
                    "this service runs without --merchant-identity, --merchant-id, --merchant-domain and --merchant-display-name",
                field: nil))
    }
}
