// Runs each HTTP connection's task on the event loop that owns its socket, so that a request is read,
// decrypted and answered on one thread instead of hopping to the concurrency pool and back.
import HummingbirdCore
import Logging
import NIOCore

/// `Base` with its connection handler (and every task that handler starts) preferring the
/// connection's event loop. Measured on the load run (Benchmarks/Service/cpu-per-token.sh): the hops between
/// the event loop and the concurrency pool cost more CPU per token than routing and writing the
/// response. A token's verification then holds its loop for its duration, as a lane would.
struct EventLoopBound<Base: ServerChildChannel>: ServerChildChannel {
    typealias Value = Base.Value
    let base: Base

    init(_ base: Base) { self.base = base }

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        base.setup(channel: channel, logger: logger)
    }

    func handle(value: Value, logger: Logger) async {
        await withTaskExecutorPreference(EventLoopTaskExecutor(value.channel.eventLoop)) {
            await base.handle(value: value, logger: logger)
        }
    }
}
