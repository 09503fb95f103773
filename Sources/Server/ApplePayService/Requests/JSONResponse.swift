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

    static func errorBody(code: String, message: String, field: String?) -> String {
        "{\"error\":\(JSONValue.string(code)),\"message\":\(JSONValue.string(message)),\"field\":\(field.map { JSONValue.string($0).description } ?? "null")}"
    }

    static func storeUnavailable(_ error: ReplayStoreUnavailable) -> Response {
        make(.serviceUnavailable, errorBody(code: "replayStoreUnavailable", message: "\(error.description); no token is decrypted without the replay check", field: nil))
    }
}
