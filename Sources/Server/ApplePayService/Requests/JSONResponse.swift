// The JSON answers every route shares: a body with its content type, and the one error object shape.
import ApplePayDecryption
import Hummingbird
import NIOCore

enum JSONResponse {
    static let json: HTTPFields = [.contentType: "application/json"]
    static let jsonl: HTTPFields = [.contentType: "application/jsonl"]

    static func make(_ status: HTTPResponse.Status, _ text: String) -> Response {
        Response(status: status, headers: json, body: .init(byteBuffer: ByteBuffer(string: text)))
    }

    /// The engine's one error object (``ResultWriter``), for the service's own codes too.
    static func errorBody(code: String, message: String, field: String?) -> String {
        ResultWriter.errorObject(code: code, message: message, field: field)
    }

    /// A decryption's answer in the engine's response shape: 200 with the transactionId and the payment
    /// (card data from the wiped plaintext into a wiped buffer, then into the response bytes), or 422
    /// with the error object.
    static func make(_ outcome: WalletOutcome) -> Response {
        let out = SensitiveBuffer(capacity: 2048)
        outcome.write(.response, into: out)
        let buffer = out.withUnsafeBytes { ByteBuffer(bytes: $0) }
        out.removeAll()
        if outcome.error == nil {
            return Response(status: .ok, headers: json, body: .init(byteBuffer: buffer))
        }
        return Response(status: .unprocessableContent, headers: json, body: .init(byteBuffer: buffer))
    }

    static func storeUnavailable(_ error: ReplayStoreUnavailable) -> Response {
        make(
            .serviceUnavailable,
            errorBody(
                code: "replayStoreUnavailable",
                message: "\(error.description); no token is decrypted without the replay check", field: nil))
    }
}
