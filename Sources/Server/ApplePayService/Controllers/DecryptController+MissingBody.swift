// POST /v1/decrypt/batch without a body: 400, as the contract requires one (an empty 200 said nothing).
import Foundation
import Hummingbird

extension DecryptController {
    /// True when the request says it has no body: `Content-Length: 0`, or neither a length nor a
    /// transfer encoding (HTTP/1.1: no body).
    static func hasNoBody(_ request: Request) -> Bool {
        if let length = request.headers[.contentLength] { return length.trimmingCharacters(in: .whitespaces) == "0" }
        return request.headers[.transferEncoding] == nil
    }

    /// The 400 `missingBody` answer.
    static func missingBody(_ context: ServiceRequestContext) -> Response {
        context.facts.values.withLock { $0.outcome = "missingBody" }
        return JSONResponse.make(
            .badRequest,
            JSONResponse.errorBody(
                code: "missingBody", message: "the batch has no body: send one token per line (JSONL)", field: nil))
    }
}
