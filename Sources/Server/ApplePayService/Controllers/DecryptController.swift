// POST /v1/decrypt (one token) and POST /v1/decrypt/batch (a JSONL stream): verification, decryption
// and the replay claim of each token, answered in the contract's shapes (openapi.yaml).
import ApplePayDecryption
import Foundation
import Hummingbird
import Logging
import NIOCore
import NIOPosix

/// The decryption routes and everything their handlers share.
struct DecryptController: Sendable {
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

    func addRoutes(to group: RouterGroup<ServiceRequestContext>) {
        group.post("decrypt") { request, context in try await decrypt(request, context: context) }
        group.post("decrypt/batch") { request, context in try await batch(request, context: context) }
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
        switch try await RequestBodyCollector.collect(request, limit: bodyLimit, deadline: requestTimeout) {
        case let .complete(bytes): body = bytes
        case .tooLarge:
            context.facts.values.withLock { $0.outcome = "payloadTooLarge" }
            var response = JSONResponse.make(.contentTooLarge, JSONResponse.errorBody(code: "payloadTooLarge", message: "the body is over the limit of \(bodyLimit) bytes", field: nil))
            response.headers[.connection] = "close"
            return response
        case .timedOut:
            context.facts.values.withLock { $0.outcome = "requestTimeout" }
            var response = JSONResponse.make(.requestTimeout, JSONResponse.errorBody(
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
            return JSONResponse.storeUnavailable(error)
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
            return Response(status: .ok, headers: JSONResponse.json, body: .init(byteBuffer: buffer))
        case let .failure(error):
            return JSONResponse.make(.unprocessableContent, JSONResponse.errorBody(code: error.code.rawValue, message: error.message, field: error.field))
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
        return Response(status: .ok, headers: JSONResponse.jsonl, body: body)
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
