// The replay store loses its expired claims once a minute (the first prune runs before the server
// starts, with the PostgreSQL table's creation).
import ServiceLifecycle

/// Drops expired claims once a minute.
struct PruneService: Service {
    let store: any ReplayStore

    func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(60))
                guard !Task.isCancelled else { return }
                await store.prune()
            }
        }
    }
}
