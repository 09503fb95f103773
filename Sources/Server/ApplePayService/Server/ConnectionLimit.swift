// A cap on the connections open at once (--max-connections), under the process's descriptor limit: a
// connection over it is answered 503 tooManyConnections and closed at once, instead of being held until
// accept4 fails for want of descriptors (where the accept loop spun and /healthz went unanswered).
import Foundation
import Logging
import NIOCore
import Synchronization

final class ConnectionLimit: Sendable {
    let maximum: Int
    private let open = Atomic<Int>(0)
    private let lastWarning = Mutex<ContinuousClock.Instant?>(nil)
    let metrics: ServiceMetrics?

    init(maximum: Int, metrics: ServiceMetrics?) {
        self.maximum = maximum
        self.metrics = metrics
    }

    /// The default: the descriptor limit less 128 (for the PostgreSQL pool, the log, the event loops and
    /// a refusal's own descriptor), at least 16 and at most 4,096: 896 under `ulimit -n 1024`.
    static var defaultMaximum: Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 4096 }
        return min(4096, max(16, Int(clamping: min(limit.rlim_cur, 1 << 20)) - 128))
    }

    /// Counts `channel` as open until it closes; false (and not counted) when the cap is reached.
    func admit(_ channel: any Channel) -> Bool {
        guard open.wrappingAdd(1, ordering: .relaxed).newValue <= maximum else {
            open.wrappingSubtract(1, ordering: .relaxed)
            metrics?.connectionsRefused.increment()
            return false
        }
        metrics?.connectionsOpen.increment()
        channel.closeFuture.whenComplete { [self] _ in
            open.wrappingSubtract(1, ordering: .relaxed)
            metrics?.connectionsOpen.decrement()
        }
        return true
    }

    /// At most one warning a second, however many connections a flood brings.
    func warn(_ logger: Logger) {
        let now = ContinuousClock.now
        let due = lastWarning.withLock { last in
            guard last.map({ now - $0 >= .seconds(1) }) ?? true else { return false }
            last = now
            return true
        }
        if due {
            logger.warning("connection refused: --max-connections reached", metadata: ["max_connections": "\(maximum)"])
        }
    }
}

/// Answers a connection over the cap and closes it; nothing it sends is read. On a TLS listener the
/// connection is closed without an answer (a plain-text answer would be unreadable there).
final class ConnectionRefusalHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    static let body =
        #"{"error":"tooManyConnections","message":"the service has reached --max-connections; retry shortly","field":null}"#
    static let answer =
        "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n"
        + "Retry-After: 1\r\nConnection: close\r\n\r\n" + body
    let answers: Bool

    init(answers: Bool) { self.answers = answers }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { refuse(context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        refuse(context)
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {}

    private func refuse(_ context: ChannelHandlerContext) {
        guard answers else {
            context.close(promise: nil)
            return
        }
        let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
        context.writeAndFlush(wrapOutboundOut(ByteBuffer(string: Self.answer))).whenComplete { _ in
            loopBound.value.close(promise: nil)
        }
    }
}
