// 405 for a method the contract does not declare on one of its paths (openapi.yaml), with `Allow`.
import Hummingbird

/// Answers 405 `methodNotAllowed` (with `Allow`) to a request on a declared path with another method
/// than its operation's; every other request goes on (an unknown path stays 404).
struct MethodNotAllowedMiddleware: RouterMiddleware {
    typealias Context = ServiceRequestContext
    /// Each declared path's one method.
    let methods: [String: HTTPRequest.Method]

    /// The contract's paths; the probes only where this router serves them (not with --operations-listen).
    init(probes: Bool) {
        var methods: [String: HTTPRequest.Method] = [
            "/v1/decrypt": .post, "/v1/decrypt/batch": .post, "/v1/merchant-session": .post, "/openapi.yaml": .get,
        ]
        if probes {
            for path in ["/healthz", "/readyz", "/metrics"] { methods[path] = .get }
        }
        self.methods = methods
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        guard let method = methods[request.uri.path], request.method != method else {
            return try await next(request, context)
        }
        context.facts.values.withLock { $0.outcome = "methodNotAllowed" }
        var response = JSONResponse.make(
            .methodNotAllowed,
            JSONResponse.errorBody(
                code: "methodNotAllowed", message: "\(request.uri.path) takes \(method.rawValue) only", field: nil))
        response.headers[.allow] = method.rawValue
        // Its body is never read: the connection ends after the answer (ClosingResponseHandler).
        if request.headers[.contentLength].map({ $0 != "0" }) ?? (request.headers[.transferEncoding] != nil) {
            response.headers[.connection] = "close"
        }
        return response
    }
}
