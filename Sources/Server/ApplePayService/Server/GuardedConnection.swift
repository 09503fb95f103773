// Every connection of a listener passes its guards before HTTP sees it: the cap on open connections
// and the header deadline.
import HummingbirdCore
import Logging
import NIOCore

/// `Base` (the HTTP or HTTPS channel) behind the listener's connection cap and header deadline.
struct GuardedConnection<Base: ServerChildChannel>: ServerChildChannel {
    typealias Value = Base.Value
    let base: Base
    let limit: ConnectionLimit
    let headerTimeout: TimeAmount
    /// Whether a refused connection gets a plain-text 503 (false on a TLS listener).
    let answersRefusals: Bool
    let logger: Logger

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        let admitted = limit.admit(channel)
        if !admitted { limit.warn(self.logger) }
        return channel.eventLoop.makeCompletedFuture {
            // First in the pipeline, so that they see the connection's bytes before TLS and HTTP do.
            if admitted {
                try channel.pipeline.syncOperations.addHandler(HeaderDeadlineByteWatcher(limit: headerTimeout))
            } else {
                try channel.pipeline.syncOperations.addHandler(ConnectionRefusalHandler(answers: answersRefusals))
            }
        }.flatMap {
            base.setup(channel: channel, logger: logger)
        }
    }

    func handle(value: Value, logger: Logger) async {
        await base.handle(value: value, logger: logger)
    }
}
