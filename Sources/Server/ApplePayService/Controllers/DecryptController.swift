// POST /v1/decrypt (one token) and POST /v1/decrypt/batch (a JSONL stream): verification, decryption
// and the replay claim of each token (any wallet, through the engine's front door), answered in the
// contract's shapes (openapi.yaml).
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
    /// The replay store's clock and --clock-skew: a Google Pay claim lasts until its message expires.
    let clock: ReplayClock
    let clockSkew: Int64
    let bodyLimit: Int
    /// How long a /v1/decrypt body may take to arrive.
    let requestTimeout: Duration
    let lineLimit: Int
    let batchWindow: Int
    /// How long a whole /v1/decrypt/batch may last (--batch-timeout).
    let batchTimeout: Duration

    func addRoutes(to group: RouterGroup<ServiceRequestContext>) {
        group.post("decrypt") { request, context in try await decrypt(request, context: context) }
        group.post("decrypt/batch") { request, context in try await batch(request, context: context) }
    }

    // MARK: one token

    /// One body through the engine's front door: a token of either wallet (told apart by shape), or
    /// `{paymentToken, paymentRequest}`, read once, in place. With a payment request, a token that
    /// contradicts it is `paymentRequestMismatch` and, being a failure, claims nothing in the replay store.
    /// Without --merchant an Apple Pay token is still verified, then finds no key; junk stays malformedToken.
    static func decryptOnLane(_ body: [UInt8], keys: KeySet, reference: ReferenceTime) -> WalletOutcome {
        requiringExpiration(keys.wallets.decrypt(body, at: reference))
    }

    func decryptOnLanes(_ body: [UInt8]) async -> WalletOutcome {
        let keys = keys.keys
        let reference = reference
        do {
            return try await lanes.runIfActive { Self.decryptOnLane(body, keys: keys, reference: reference) }
        } catch {
            // The pool stops only at exit; a token arriving then is simply not processed.
            return WalletOutcome(refusing: ApplePayError(.malformedToken, "the service is shutting down"))
        }
    }

    /// Claims a verified token's identity (Apple Pay: transactionId and signed contents; Google Pay:
    /// messageId and signed message); a replay becomes `replayedTransaction`.
    func claim(_ outcome: inout WalletOutcome) async throws(ReplayStoreUnavailable) {
        guard let identity = outcome.replayIdentity else { return }
        let start = ContinuousClock.now
        defer { metrics.storeLatency.record(ContinuousClock.now - start) }
        if try await !store.claim(identity, retention: retention(for: outcome)) {
            outcome.refuseAsReplay(claimedBy: nil)
        }
    }

    /// How long a verified token's claim is kept: the store's retention (2 × window + skew: an Apple Pay
    /// token stays fresh for 2 × window), or, for a Google Pay message that expires later, until its
    /// `messageExpiration` plus the clock skew, so that it cannot be replayed while it is still valid.
    func retention(for outcome: WalletOutcome) -> Int64 {
        guard let expiration = outcome.payment?.googlePay?.messageExpiration else {
            return store.retention
        }
        let remaining = expiration / 1000 + 1 - clock.seconds + clockSkew
        // No cap: the expiry is Google's, signed, and a claim dropped before it would let the message
        // be replayed while it is still valid (a full memory store refuses new claims: 503, fail closed).
        return max(store.retention, remaining)
    }

    /// Real tokens are a few KiB (the PKPaymentToken form with its certificates is under 10 KiB), a
    /// payment request beside one less than that again.
    static let inlineBodyLimit = 32 * 1024

    func decrypt(_ request: Request, context: ServiceRequestContext) async throws -> Response {
        let body: [UInt8]
        switch try await RequestBodyCollector.collect(
            request, limit: bodyLimit, deadline: requestTimeout, on: context.channel)
        {
        case let .complete(bytes): body = bytes
        case .tooLarge:
            context.facts.values.withLock { $0.outcome = "payloadTooLarge" }
            var response = JSONResponse.make(
                .contentTooLarge,
                JSONResponse.errorBody(
                    code: "payloadTooLarge", message: "the body is over the limit of \(bodyLimit) bytes", field: nil))
            response.headers[.connection] = "close"
            return response
        case .timedOut:
            context.facts.values.withLock { $0.outcome = "requestTimeout" }
            var response = JSONResponse.make(
                .requestTimeout,
                JSONResponse.errorBody(
                    code: "requestTimeout",
                    message: "the body did not arrive within \(requestTimeout.components.seconds) s", field: nil))
            response.headers[.connection] = "close"
            return response
        }
        // A token-sized body is decrypted on the request's own thread (its connection's event loop, see
        // EventLoopBound): a hop to a lane and back cost two thread wake-ups per token, and there is
        // already one loop per core. A larger one (up to --max-body-bytes, linear work to validate and
        // decode) goes to the lanes, so that it cannot hold a loop, and the health checks and TLS
        // handshakes queued behind it, for long.
        var outcome =
            body.count <= Self.inlineBodyLimit
            ? Self.decryptOnLane(body, keys: keys.keys, reference: reference) : await decryptOnLanes(body)
        do {
            try await claim(&outcome)
        } catch {
            metrics.token(outcome: "replayStoreUnavailable")
            context.facts.values.withLock {
                $0.outcome = "replayStoreUnavailable"; $0.merchant = outcome.merchantLabel
            }
            return JSONResponse.storeUnavailable(error)
        }
        let code = outcome.code
        metrics.token(outcome: code)
        context.facts.values.withLock {
            $0.outcome = code; $0.merchant = outcome.merchantLabel; $0.tokens = 1
        }
        return JSONResponse.make(outcome)
    }

    // MARK: batch

    func batch(_ request: Request, context: ServiceRequestContext) async throws -> Response {
        if Self.hasNoBody(request) { return Self.missingBody(context) }
        let api = self
        let facts = context.facts
        let channel = context.channel
        let deadline = ContinuousClock.now + batchTimeout
        let body = ResponseBody { writer in
            // A client that stalls its body (or stops reading the answer) must not hold the request past
            // the deadline: at the deadline the connection's input closes, so the body ends; if the
            // answer still cannot be written a few seconds later, the connection closes.
            let watchdog = Task {
                try await Task.sleep(until: deadline, clock: .continuous)
                if let channel { Self.stopReading(channel) }
                try await Task.sleep(for: .seconds(5))
                channel?.close(promise: nil)
            }
            defer { watchdog.cancel() }
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
            do {
                for try await buffer in request.body {
                    lines.feed(buffer)
                    while let item = lines.next(), ContinuousClock.now < deadline {
                        window.append(item)
                        if window.count == api.batchWindow { try await flush(&writer) }
                    }
                    if ContinuousClock.now >= deadline { break }
                }
            } catch  where ContinuousClock.now >= deadline {
                // The body ended because its input was closed at the deadline.
            }
            guard ContinuousClock.now < deadline else {
                // Lines not yet decrypted are not: the last line says where the stream stopped.
                if !stopped {
                    facts.values.withLock { $0.outcome = "batchTimeout" }
                    let line =
                        "{\"index\":\(index),\"source\":null,\"transactionId\":null,\"error\":\"batchTimeout\",\"message\":"
                        + "\(JSONValue.string("the batch passed its deadline of \(api.batchTimeout.components.seconds) s (--batch-timeout); lines from this index on were not decrypted"))}\n"
                    try await writer.write(ByteBuffer(string: line))
                }
                try await writer.finish(nil)
                return
            }
            if let last = lines.finish() { window.append(last) }
            try await flush(&writer)
            try await writer.finish(nil)
        }
        return Response(status: .ok, headers: JSONResponse.jsonl, body: body)
    }

    /// Closes the connection's input: the request body ends, so the batch can say why and the server
    /// closes the connection after the answer. Where a half-close is not supported, the connection closes.
    static func stopReading(_ channel: any Channel) {
        let closed = channel.eventLoop.makePromise(of: Void.self)
        closed.futureResult.whenFailure { _ in channel.close(promise: nil) }
        channel.close(mode: .input, promise: closed)
    }

    /// Decrypts one window of lines on the lanes, then claims and writes them in input order.
    /// Returns true when the replay store failed: that item gets a `replayStoreUnavailable` line and
    /// the stream ends there, since nothing more may be decrypted without the check.
    func process(
        _ window: [LineSplitter.Item], from base: Int, into writer: inout any ResponseBodyWriter, facts: RequestFacts
    ) async throws -> Bool {
        let results = await withTaskGroup(of: (Int, WalletOutcome).self) { group in
            for (i, item) in window.enumerated() {
                group.addTask {
                    switch item {
                    case let .line(bytes, _):
                        return (i, await decryptOnLanes(bytes))
                    case let .tooLong(_, length):
                        return (
                            i,
                            WalletOutcome(
                                refusing: ApplePayError(
                                    .malformedToken, "the line is \(length) bytes, over the limit of \(lineLimit)",
                                    field: "$"))
                        )
                    }
                }
            }
            var results = [WalletOutcome?](repeating: nil, count: window.count)
            for await (i, decryption) in group { results[i] = decryption }
            return results.map { $0! }
        }
        let out = SensitiveBuffer(capacity: 16 << 10)
        var stopped = false
        for (i, var outcome) in results.enumerated() {
            let line = ResultProjection.line(index: base + i, source: "request:\(window[i].lineNumber)")
            do {
                try await claim(&outcome)
            } catch {
                // The service's own code, in the engine's line shape: the stream ends here.
                metrics.token(outcome: "replayStoreUnavailable")
                ResultWriter.writeError(
                    code: "replayStoreUnavailable", message: error.description + "; the stream ends here", field: nil,
                    transactionId: outcome.transactionId, as: line, into: out)
                facts.values.withLock { $0.outcome = "replayStoreUnavailable" }
                stopped = true
                break
            }
            outcome.write(line, into: out)
            metrics.token(outcome: outcome.code)
            facts.values.withLock { $0.tokens += 1 }
        }
        let buffer = out.withUnsafeBytes { ByteBuffer(bytes: $0) }
        out.removeAll()
        try await writer.write(buffer)
        return stopped
    }
}
