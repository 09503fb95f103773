// The replay store loses its expired claims at start (once a PostgreSQL store has made its table) and
// then once a minute, beside the server: a backlog to prune never delays the first request.
import ServiceLifecycle

/// Drops expired claims at start and once a minute.
struct PruneService: Service {
    let store: any ReplayStore

    func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled, !store.isPrepared {
                try? await Task.sleep(for: .milliseconds(100))
            }
            while !Task.isCancelled {
                await store.prune()
                try? await Task.sleep(for: .seconds(60))
            }
        }
    }
}
