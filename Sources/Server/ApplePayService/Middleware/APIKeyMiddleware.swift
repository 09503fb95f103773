// The API key check on /v1 (--api-key-env).
import Hummingbird

/// 401 unless `Authorization: Bearer <key>` matches the configured key (compared in constant time).
struct APIKeyMiddleware: RouterMiddleware {
    typealias Context = ServiceRequestContext
    let key: [UInt8]?

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        guard let key else { return try await next(request, context) }
        let presented = request.headers[.authorization].map { Array($0.utf8) } ?? []
        let prefix = Array("Bearer ".utf8)
        let given = presented.starts(with: prefix) ? Array(presented.dropFirst(prefix.count)) : []
        guard Self.constantTimeEquals(given, key) else {
            context.facts.values.withLock { $0.outcome = "unauthorized" }
            var response = JSONResponse.make(
                .unauthorized,
                JSONResponse.errorBody(
                    code: "unauthorized", message: "a valid Authorization: Bearer API key is required", field: nil))
            response.headers[.wwwAuthenticate] = "Bearer"
            // Its body is never read: the connection ends after the answer (ClosingResponseHandler).
            if request.headers[.contentLength].map({ $0 != "0" }) ?? (request.headers[.transferEncoding] != nil) {
                response.headers[.connection] = "close"
            }
            return response
        }
        return try await next(request, context)
    }

    /// Time depends only on the configured key's length, never on where the bytes differ.
    static func constantTimeEquals(_ given: [UInt8], _ key: [UInt8]) -> Bool {
        var difference = UInt8(truncatingIfNeeded: given.count ^ key.count) | (given.count == key.count ? 0 : 1)
        for i in 0..<key.count {
            difference |= key[i] ^ (i < given.count ? given[i] : 0)
        }
        return difference == 0
    }
}
