// A request body read whole, within a size limit and a deadline.
import Hummingbird
import NIOCore

enum RequestBodyCollector {
    enum BodyRead: Sendable {
        case complete([UInt8])
        case tooLarge
        case timedOut
    }

    /// The whole body, unless it is over `limit` (checked against Content-Length first, then while
    /// reading, so an oversized body is never held) or has not fully arrived within `deadline` (a slow
    /// client trickling bytes would otherwise hold the request for as long as it likes). A body left
    /// unread is abandoned: its stream ends, and so does the connection, instead of being drained.
    static func collect(_ request: Request, limit: Int, deadline: Duration, on channel: (any Channel)? = nil)
        async throws -> BodyRead
    {
        let declared = request.headers[.contentLength].flatMap { Int($0) }
        if let declared, declared > limit { return .tooLarge }
        guard let channel, channel.eventLoop.inEventLoop else {
            return try await racing(request, limit: limit, declared: declared, deadline: deadline)
        }
        // On the connection's own event loop (EventLoopBound runs each connection's task there): the
        // deadline is a timer on that loop that shuts the connection's input, which ends the body's
        // stream; the 408 still goes out, then the connection closes. TLS cannot shut its input alone
        // (NIOSSL refuses the half-close): there the whole connection closes, without the 408. Both run on the loop's one
        // thread, so the timer cannot fire once the read is over. This replaced a task group of two
        // child tasks and a dispatch timer per request, which cost thread wake-ups and about a tenth of
        // the service's CPU per token (perf, Benchmarks/Service/load.sh).
        let timer = DeadlineTimer()
        timer.arm(after: deadline, closingInputOf: channel)
        defer { timer.disarm() }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(min(declared ?? 4096, limit))
        do {
            for try await buffer in request.body {
                guard bytes.count + buffer.readableBytes <= limit else { return .tooLarge }
                bytes.append(contentsOf: buffer.readableBytesView)
            }
        } catch  where timer.fired {
            return .timedOut
        }
        return timer.fired ? .timedOut : .complete(bytes)
    }

    /// Off the event loop (in-process tests, a handler that hopped): the read raced against a sleep.
    private static func racing(_ request: Request, limit: Int, declared: Int?, deadline: Duration) async throws
        -> BodyRead
    {
        let body = request.body
        return try await withThrowingTaskGroup(of: BodyRead.self) { group in
            group.addTask {
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
}

/// A deadline on a connection's event loop. Used on that loop's thread only (the reading task runs
/// there and so does the timer), so a disarmed timer never fires.
private final class DeadlineTimer: @unchecked Sendable {
    private(set) var fired = false
    private var scheduled: Scheduled<Void>?
    private var armed = false

    func arm(after deadline: Duration, closingInputOf channel: any Channel) {
        let (seconds, attoseconds) = deadline.components
        armed = true
        // Clamped: options allow a day at most, but a timer must never overflow whatever it is given.
        let nanoseconds =
            seconds >= Int64.max / 1_000_000_000 ? Int64.max : seconds * 1_000_000_000 + attoseconds / 1_000_000_000
        scheduled = channel.eventLoop.scheduleTask(in: .nanoseconds(nanoseconds)) { [self] in
            guard armed else { return }
            fired = true
            let inputClosed = channel.eventLoop.makePromise(of: Void.self)
            inputClosed.futureResult.whenFailure { _ in channel.close(promise: nil) }
            channel.close(mode: .input, promise: inputClosed)
        }
    }

    func disarm() {
        armed = false
        scheduled?.cancel()
        scheduled = nil
    }
}
