// The HTTP API (see openapi.yaml): decrypt one token, decrypt a JSONL stream, health, readiness,
// metrics, the contract itself; plus the API-key check and the one log line per request.
import ApplePayDecryption
import Foundation
import Hummingbird
import Logging
import NIOCore
import NIOPosix
import Synchronization

/// What a handler learned about its request, read by the logging middleware after the response.
final class RequestFacts: Sendable {
    struct Values {
        var outcome: String?
        var merchant: String?
        var tokens = 0
    }
    let values = Mutex(Values())
}

struct ServiceRequestContext: RequestContext {
    var coreContext: CoreRequestContextStorage
    let facts = RequestFacts()
    init(source: ApplicationRequestContextSource) { coreContext = .init(source: source) }
}

/// Everything the handlers share.
struct DecryptionAPI: Sendable {
    let keys: KeyRing
    let store: any ReplayStore
    let metrics: ServiceMetrics
    let lanes: NIOThreadPool
    let reference: ReferenceTime
    let bodyLimit: Int
    /// How long a /v1/decrypt body may take to arrive.
    let requestTimeout: Duration
    let lineLimit: Int
    let batchWindow: Int
    let apiKey: [UInt8]?
    let logger: Logger

    static let json: HTTPFields = [.contentType: "application/json"]
    static let jsonl: HTTPFields = [.contentType: "application/jsonl"]

    func register(on router: Router<ServiceRequestContext>) {
        router.add(middleware: RequestLogMiddleware(metrics: metrics, logger: logger))
        router.get("/healthz") { _, _ in Self.respond(.ok, #"{"status":"alive"}"#) }
        router.get("/readyz") { _, _ in await ready() }
        router.get("/metrics") { _, _ in
            metrics.updateExpiry(keys.keys)
            if let memory = store as? MemoryReplayStore { metrics.claimsHeld.set(Double(memory.count)) }
            return Response(status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                            body: .init(byteBuffer: ByteBuffer(bytes: metrics.emit())))
        }
        router.get("/openapi.yaml") { _, _ in
            Response(status: .ok, headers: [.contentType: "application/yaml"], body: .init(byteBuffer: ByteBuffer(bytes: PackageResources.openapi_yaml)))
        }
        let v1 = router.group("v1").add(middleware: APIKeyMiddleware(key: apiKey))
        v1.post("decrypt") { request, context in try await decrypt(request, context: context) }
        v1.post("decrypt/batch") { request, context in try await batch(request, context: context) }
    }

    // MARK: responses

    static func respond(_ status: HTTPResponse.Status, _ text: String) -> Response {
        Response(status: status, headers: json, body: .init(byteBuffer: ByteBuffer(string: text)))
    }

    static func errorBody(code: String, message: String, field: String?) -> String {
        "{\"error\":\(JSONValue.string(code)),\"message\":\(JSONValue.string(message)),\"field\":\(field.map { JSONValue.string($0).description } ?? "null")}"
    }

    static func storeUnavailable(_ error: ReplayStoreUnavailable) -> Response {
        respond(.serviceUnavailable, errorBody(code: "replayStoreUnavailable", message: "\(error.description); no token is decrypted without the replay check", field: nil))
    }

    func ready() async -> Response {
        let reachable = await store.ping()
        let merchants = keys.keys.decryptor.merchants
        // Keys in a PKCS#11 token: one session opened and closed per key, off the event loop (a
        // module call blocks). Software keys have no problem to report.
        let tokenProblems = merchants.contains(where: \.keyIsInToken)
            ? await Task.detached { merchants.compactMap { m in m.keyProblem().map { "\(m.label): \($0)" } } }.value : []
        let ready = reachable && tokenProblems.isEmpty
        let problems = tokenProblems.map { JSONValue.string($0).description }.joined(separator: ",")
        let body = "{\"ready\":\(ready),\"merchantKeys\":\(merchants.count),\"replayStore\":\(JSONValue.string(store.kind)),\"replayStoreReachable\":\(reachable),\"tokenKeyProblems\":[\(problems)]}"
        return Self.respond(ready ? .ok : .serviceUnavailable, body)
    }

    // MARK: one token

    /// Verification and decryption of one token on a lane, with the merchant it names.
    struct Decryption: Sendable {
        var outcome: Result<DecryptedPayment, ApplePayError>
        var transactionId: String?
        var merchant: String?
    }

    /// With a payment request, a token that contradicts it is `paymentRequestMismatch` and, being a
    /// failure, claims nothing in the replay store.
    static func decryptOnLane(_ envelope: Envelope, keys: KeySet, reference: ReferenceTime) -> Decryption {
        let token: PaymentToken
        do { token = try PaymentToken.parse(envelope.token) } catch { return Decryption(outcome: .failure(error)) }
        let outcome = Result { () throws(ApplePayError) in
            if let request = envelope.request {
                // The bound form reads the wrapper's paymentMethod too, so it takes the bytes.
                return try keys.decryptor.decrypt(envelope.token, at: reference, expecting: request)
            }
            return try keys.decryptor.decrypt(token, at: reference)
        }
        return Decryption(outcome: outcome, transactionId: token.transactionId, merchant: keys.labels[token.publicKeyHash])
    }

    func decryptOnLanes(_ envelope: Envelope) async -> Decryption {
        let keys = keys.keys
        let reference = reference
        do {
            return try await lanes.runIfActive { Self.decryptOnLane(envelope, keys: keys, reference: reference) }
        } catch {
            // The pool stops only at exit; a token arriving then is simply not processed.
            return Decryption(outcome: .failure(ApplePayError(.malformedToken, "the service is shutting down")))
        }
    }

    /// Claims a verified token's identity; a replay becomes `replayedTransaction`.
    func claim(_ decryption: inout Decryption) async throws(ReplayStoreUnavailable) {
        guard case let .success(payment) = decryption.outcome else { return }
        let start = ContinuousClock.now
        defer { metrics.storeLatency.record(ContinuousClock.now - start) }
        if try await !store.claim(payment.replayIdentity) {
            decryption.outcome = .failure(ApplePayError(.replayedTransaction, "this token's transactionId or signed contents were already claimed",
                                                        field: "header.transactionId"))
        }
    }

    /// Real tokens are a few KiB (the PKPaymentToken form with its certificates is under 10 KiB), a
    /// payment request beside one less than that again.
    static let inlineBodyLimit = 32 * 1024

    func decrypt(_ request: Request, context: ServiceRequestContext) async throws -> Response {
        let body: [UInt8]
        switch try await Self.collect(request, limit: bodyLimit, deadline: requestTimeout) {
        case let .complete(bytes): body = bytes
        case .tooLarge:
            context.facts.values.withLock { $0.outcome = "payloadTooLarge" }
            var response = Self.respond(.contentTooLarge, Self.errorBody(code: "payloadTooLarge", message: "the body is over the limit of \(bodyLimit) bytes", field: nil))
            response.headers[.connection] = "close"
            return response
        case .timedOut:
            context.facts.values.withLock { $0.outcome = "requestTimeout" }
            var response = Self.respond(.requestTimeout, Self.errorBody(
                code: "requestTimeout", message: "the body did not arrive within \(requestTimeout.components.seconds) s", field: nil))
            response.headers[.connection] = "close"
            return response
        }
        var decryption: Decryption
        switch Envelope.parse(body) {
        // A token-sized body is decrypted on the request's own thread (its connection's event loop, see
        // EventLoopBound): a hop to a lane and back cost two thread wake-ups per token, and there is
        // already one loop per core. A larger one (up to --max-body-bytes, linear work to validate and
        // decode) goes to the lanes, so that it cannot hold a loop, and the health checks and TLS
        // handshakes queued behind it, for long.
        case let .success(envelope) where body.count <= Self.inlineBodyLimit:
            decryption = Self.decryptOnLane(envelope, keys: keys.keys, reference: reference)
        case let .success(envelope): decryption = await decryptOnLanes(envelope)
        case let .failure(error): decryption = Decryption(outcome: .failure(error))
        }
        do {
            try await claim(&decryption)
        } catch {
            metrics.token(outcome: "replayStoreUnavailable")
            context.facts.values.withLock { $0.outcome = "replayStoreUnavailable"; $0.merchant = decryption.merchant }
            return Self.storeUnavailable(error)
        }
        let outcome: String
        switch decryption.outcome {
        case .success: outcome = "ok"
        case let .failure(error): outcome = error.code.rawValue
        }
        metrics.token(outcome: outcome)
        context.facts.values.withLock { $0.outcome = outcome; $0.merchant = decryption.merchant; $0.tokens = 1 }
        switch decryption.outcome {
        case let .success(payment):
            // Card data goes from the wiped plaintext into a wiped buffer, then into the response bytes.
            let out = SensitiveBuffer(capacity: payment.plaintext.count + 128)
            out.append("{\"transactionId\":\(JSONValue.string(payment.transactionId)),\"payment\":")
            payment.writeJSON(into: out)
            out.append("}")
            let buffer = out.withUnsafeBytes { ByteBuffer(bytes: $0) }
            return Response(status: .ok, headers: Self.json, body: .init(byteBuffer: buffer))
        case let .failure(error):
            return Self.respond(.unprocessableContent, Self.errorBody(code: error.code.rawValue, message: error.message, field: error.field))
        }
    }

    enum BodyRead: Sendable {
        case complete([UInt8])
        case tooLarge
        case timedOut
    }

    /// The whole body, unless it is over `limit` (checked against Content-Length first, then while
    /// reading, so an oversized body is never held) or has not fully arrived within `deadline` (a slow
    /// client trickling bytes would otherwise hold the request for as long as it likes). A body left
    /// unread is abandoned: its stream ends, and so does the connection, instead of being drained.
    static func collect(_ request: Request, limit: Int, deadline: Duration) async throws -> BodyRead {
        let body = request.body
        let declared = request.headers[.contentLength].flatMap { Int($0) }
        return try await withThrowingTaskGroup(of: BodyRead.self) { group in
            group.addTask {
                if let declared, declared > limit { return .tooLarge }
                var bytes: [UInt8] = []
                bytes.reserveCapacity(min(declared ?? 4096, limit))
                for try await buffer in body {
                    guard bytes.count + buffer.readableBytes <= limit else { return .tooLarge }
                    bytes.append(contentsOf: buffer.readableBytesView)
                }
                return .complete(bytes)
            }
            group.addTask {
                try await Task.sleep(for: deadline)
                return .timedOut
            }
            let first = try await group.next()!
            group.cancelAll()
            return first
        }
    }

    // MARK: batch

    func batch(_ request: Request, context: ServiceRequestContext) async throws -> Response {
        let api = self
        let facts = context.facts
        let body = ResponseBody { writer in
            var lines = LineSplitter(limit: api.lineLimit)
            var window: [LineSplitter.Item] = []
            var index = 0
            var stopped = false
            func flush(_ writer: inout any ResponseBodyWriter) async throws {
                guard !window.isEmpty, !stopped else { window.removeAll(); return }
                stopped = try await api.process(window, from: index, into: &writer, facts: facts)
                index += window.count
                window.removeAll(keepingCapacity: true)
            }
            for try await buffer in request.body {
                lines.feed(buffer)
                while let item = lines.next() {
                    window.append(item)
                    if window.count == api.batchWindow { try await flush(&writer) }
                }
            }
            if let last = lines.finish() { window.append(last) }
            try await flush(&writer)
            try await writer.finish(nil)
        }
        return Response(status: .ok, headers: Self.jsonl, body: body)
    }

    /// Decrypts one window of lines on the lanes, then claims and writes them in input order.
    /// Returns true when the replay store failed: that item gets a `replayStoreUnavailable` line and
    /// the stream ends there, since nothing more may be decrypted without the check.
    func process(_ window: [LineSplitter.Item], from base: Int, into writer: inout any ResponseBodyWriter, facts: RequestFacts) async throws -> Bool {
        let results = await withTaskGroup(of: (Int, Decryption).self) { group in
            for (i, item) in window.enumerated() {
                group.addTask {
                    switch item {
                    case let .line(bytes, _):
                        switch Envelope.parse(bytes) {
                        case let .success(envelope): return (i, await decryptOnLanes(envelope))
                        case let .failure(error): return (i, Decryption(outcome: .failure(error)))
                        }
                    case let .tooLong(_, length):
                        return (i, Decryption(outcome: .failure(ApplePayError(.malformedToken, "the line is \(length) bytes, over the limit of \(lineLimit)", field: "$"))))
                    }
                }
            }
            var results = [Decryption?](repeating: nil, count: window.count)
            for await (i, decryption) in group { results[i] = decryption }
            return results.map { $0! }
        }
        let out = SensitiveBuffer(capacity: 16 << 10)
        var stopped = false
        for (i, var decryption) in results.enumerated() {
            let source = "request:\(window[i].lineNumber)"
            do {
                try await claim(&decryption)
            } catch {
                metrics.token(outcome: "replayStoreUnavailable")
                out.append("{\"index\":\(base + i),\"source\":\(JSONValue.string(source)),\"transactionId\":\(decryption.transactionId.map { JSONValue.string($0).description } ?? "null"),")
                out.append("\"error\":\"replayStoreUnavailable\",\"message\":\(JSONValue.string(error.description + "; the stream ends here"))}\n")
                facts.values.withLock { $0.outcome = "replayStoreUnavailable" }
                stopped = true
                break
            }
            Self.writeLine(decryption, index: base + i, source: source, into: out)
            let outcome: String
            if case let .failure(error) = decryption.outcome { outcome = error.code.rawValue } else { outcome = "ok" }
            metrics.token(outcome: outcome)
            facts.values.withLock { $0.tokens += 1 }
        }
        let buffer = out.withUnsafeBytes { ByteBuffer(bytes: $0) }
        out.removeAll()
        try await writer.write(buffer)
        return stopped
    }

    /// The CLI's batch line shape: index, source, transactionId, then the payment or the error.
    static func writeLine(_ decryption: Decryption, index: Int, source: String, into out: SensitiveBuffer) {
        out.append("{\"index\":\(index),\"source\":\(JSONValue.string(source)),\"transactionId\":\(decryption.transactionId.map { JSONValue.string($0).description } ?? "null")")
        switch decryption.outcome {
        case let .success(payment):
            out.append(",\"payment\":")
            payment.writeJSON(into: out)
            out.append("}\n")
        case let .failure(error):
            var tail = ",\"error\":\"\(error.code.rawValue)\",\"message\":\(JSONValue.string(error.message))"
            if let field = error.field { tail += ",\"field\":\(JSONValue.string(field))" }
            out.append(tail + "}\n")
        }
    }
}

/// The body of /v1/decrypt (and each batch line): a token in any form the engine reads, or the
/// envelope `{"paymentToken": <token>, "paymentRequest": {…}}` whose optional payment request binds the
/// token to the order it pays (the engine's `decrypt(_:at:expecting:)`).
struct Envelope {
    /// The token bytes as the engine reads them.
    var token: [UInt8]
    /// The merchant's payment request, when the envelope carries one.
    var request: PaymentRequest? = nil

    static func parse(_ body: [UInt8]) -> Result<Envelope, ApplePayError> {
        // Only a JSON object can be the envelope; a cheap look for the member name spares parsing
        // every bare token twice.
        guard body.first(where: { $0 != 0x20 && $0 != 0x0A && $0 != 0x0D && $0 != 0x09 }) == UInt8(ascii: "{"),
              contains(body, "\"paymentToken\""),
              case let .object(members)? = try? JSONValue.parse(body) else { return .success(Envelope(token: body)) }
        let tokens = members.filter { $0.0 == "paymentToken" }
        guard !tokens.isEmpty else { return .success(Envelope(token: body)) }
        guard tokens.count == 1 else {
            return .failure(ApplePayError(.malformedToken, "the envelope has member \"paymentToken\" more than once", field: "paymentToken"))
        }
        // Any other member is refused: a misspelt "paymentrequest" must not leave the token unbound
        // while its sender believes the order was checked.
        if let other = members.first(where: { $0.0 != "paymentToken" && $0.0 != "paymentRequest" }) {
            return .failure(ApplePayError(.malformedToken, "the envelope has only paymentToken and paymentRequest; \(JSONValue.string(other.0)) is not one of them",
                                          field: other.0))
        }
        var envelope: Envelope
        switch tokens[0].1 {
        case let .string(text): envelope = Envelope(token: Array(text.utf8))
        case let .object(inner): envelope = Envelope(token: Array(JSONValue.object(inner).description.utf8))
        default: return .failure(ApplePayError(.malformedToken, "paymentToken must be a token object or a base64 string", field: "paymentToken"))
        }
        // As in the engine's batch envelopes: a request that breaks the schema fails the item as
        // malformedToken naming `paymentRequest.<member>`, before anything is decrypted.
        let requests = members.filter { $0.0 == "paymentRequest" }
        switch requests.count {
        case 0: break
        case 1:
            guard case .object = requests[0].1 else {
                return .failure(ApplePayError(.malformedToken, "paymentRequest must be a payment request object", field: "paymentRequest"))
            }
            do {
                envelope.request = try PaymentRequest(json: Array(requests[0].1.description.utf8))
            } catch {
                let field = error.member == "$" ? "paymentRequest" : "paymentRequest.\(error.member)"
                return .failure(ApplePayError(.malformedToken, "the payment request is invalid: \(error.message)", field: field))
            }
        default:
            return .failure(ApplePayError(.malformedToken, "the envelope has member \"paymentRequest\" more than once", field: "paymentRequest"))
        }
        return .success(envelope)
    }

    static func contains(_ haystack: [UInt8], _ needle: StaticString) -> Bool {
        haystack.withUnsafeBytes { hay in
            needle.withUTF8Buffer { n in
                guard let first = n.first, hay.count >= n.count else { return false }
                var start = 0
                let last = hay.count - n.count
                while start <= last {
                    guard let found = memchr(hay.baseAddress! + start, Int32(first), last - start + 1) else { return false }
                    start = hay.baseAddress!.distance(to: UnsafeRawPointer(found))
                    if memcmp(hay.baseAddress! + start, n.baseAddress!, n.count) == 0 { return true }
                    start += 1
                }
                return false
            }
        }
    }
}

/// Splits a streamed body into lines without holding more than one line (up to the limit): a longer
/// line is skipped to its end and reported as too long. Blank lines are skipped but counted.
struct LineSplitter {
    enum Item: Sendable {
        case line([UInt8], lineNumber: Int)
        case tooLong(lineNumber: Int, length: Int)

        var lineNumber: Int {
            switch self {
            case let .line(_, n), let .tooLong(n, _): return n
            }
        }
    }

    let limit: Int
    private var current: [UInt8] = []
    private var currentLength = 0
    private var lineNumber = 1
    private var ready: [Item] = []
    private var readyHead = 0

    init(limit: Int) { self.limit = limit }

    mutating func feed(_ buffer: ByteBuffer) {
        buffer.withUnsafeReadableBytes { raw in
            var start = 0
            while start < raw.count {
                if let newline = raw[start...].firstIndex(of: 0x0A) {
                    take(UnsafeRawBufferPointer(rebasing: raw[start..<newline]))
                    endLine()
                    start = newline + 1
                } else {
                    take(UnsafeRawBufferPointer(rebasing: raw[start...]))
                    start = raw.count
                }
            }
        }
    }

    private mutating func take(_ bytes: UnsafeRawBufferPointer) {
        currentLength += bytes.count
        if currentLength <= limit { current.append(contentsOf: bytes) } else { current.removeAll() }
    }

    private mutating func endLine() {
        defer {
            current.removeAll(keepingCapacity: true)
            currentLength = 0
            lineNumber += 1
        }
        if currentLength > limit {
            ready.append(.tooLong(lineNumber: lineNumber, length: currentLength))
        } else if current.contains(where: { $0 != 0x20 && $0 != 0x09 && $0 != 0x0D }) {
            ready.append(.line(current, lineNumber: lineNumber))
        }
    }

    mutating func next() -> Item? {
        guard readyHead < ready.count else {
            ready.removeAll(keepingCapacity: true)
            readyHead = 0
            return nil
        }
        defer { readyHead += 1 }
        return ready[readyHead]
    }

    /// The last line when the body did not end with a newline.
    mutating func finish() -> Item? {
        if currentLength > 0 { endLine() }
        return next()
    }
}

/// 401 unless `Authorization: Bearer <key>` matches the configured key (compared in constant time).
struct APIKeyMiddleware: RouterMiddleware {
    typealias Context = ServiceRequestContext
    let key: [UInt8]?

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard let key else { return try await next(request, context) }
        let presented = request.headers[.authorization].map { Array($0.utf8) } ?? []
        let prefix = Array("Bearer ".utf8)
        let given = presented.starts(with: prefix) ? Array(presented.dropFirst(prefix.count)) : []
        guard Self.constantTimeEquals(given, key) else {
            context.facts.values.withLock { $0.outcome = "unauthorized" }
            var response = DecryptionAPI.respond(.unauthorized, DecryptionAPI.errorBody(
                code: "unauthorized", message: "a valid Authorization: Bearer API key is required", field: nil))
            response.headers[.wwwAuthenticate] = "Bearer"
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

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
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
                "method": "\(method)", "route": "\(ServiceMetrics.routes.contains(route) ? route : "other")", "status": "\(status)",
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
