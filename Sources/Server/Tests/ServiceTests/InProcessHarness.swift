// The service in this process: `buildApplication` from the same options the executable parses, driven
// through its router by HummingbirdTesting (no socket, no process), with its log captured.
import ApplePayService
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import Synchronization

/// The log lines of one in-process service, as a test reads them.
final class CapturedLog: Sendable {
    private let lines = Mutex<[String]>([])

    func append(_ line: String) { lines.withLock { $0.append(line) } }
    var text: String { lines.withLock { $0.joined(separator: "\n") } }
}

/// Writes each record as `LEVEL message key=value ...` (keys sorted) into a `CapturedLog`.
struct CapturingLogHandler: LogHandler {
    let log: CapturedLog
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .info

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(
        level: Logger.Level, message: Logger.Message, metadata: Logger.Metadata?, source: String, file: String,
        function: String, line: UInt
    ) {
        let all = self.metadata.merging(metadata ?? [:]) { $1 }
        log.append(
            "\(level) \(message) "
                + all.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " "))
    }
}

/// An HTTP client for the in-process service, answering in the same `HTTPResult` as the socket client.
struct ServiceClient: Sendable {
    let client: any TestClientProtocol
    let log: CapturedLog

    func request(_ method: HTTPRequest.Method, _ path: String, body: Data? = nil, headers: [String: String] = [:])
        async throws -> HTTPResult
    {
        var fields = HTTPFields()
        if body != nil, headers["Content-Type"] == nil { fields[.contentType] = "application/json" }
        for (name, value) in headers { fields[HTTPField.Name(name)!] = value }
        let response = try await client.executeRequest(
            uri: path, method: method, headers: fields, body: body.map { ByteBuffer(bytes: $0) })
        var headers: [String: String] = [:]
        for field in response.headers { headers[field.name.canonicalName] = field.value }
        return HTTPResult(
            status: Int(response.status.code), body: Data(response.body.readableBytesView), headers: headers)
    }

    func post(_ path: String, _ body: Data, headers: [String: String] = [:]) async throws -> HTTPResult {
        try await request(.post, path, body: body, headers: headers)
    }

    func get(_ path: String, headers: [String: String] = [:]) async throws -> HTTPResult {
        try await request(.get, path, headers: headers)
    }
}

/// Builds the service from command-line `arguments` (as `applepay-service` would parse them, with
/// `--listen` supplied) and runs `body` against it; its services (lanes, key reload, pruning, the
/// PostgreSQL client) run for the duration and are shut down after.
func withService<T: Sendable>(_ arguments: [String], _ body: @Sendable (ServiceClient) async throws -> T) async throws
    -> T
{
    let options = try ServiceOptions.parse(["--listen", "127.0.0.1:0"] + arguments)
    let log = CapturedLog()
    var logger = Logger(label: "applepay-service") { _ in CapturingLogHandler(log: log) }
    logger.logLevel = .info
    let app = try await buildApplication(options, logger: logger)
    return try await app.test(.router) { client in try await body(ServiceClient(client: client, log: log)) }
}
