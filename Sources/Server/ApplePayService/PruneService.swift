// The replay store loses its expired claims once a minute.
import ServiceLifecycle

/// Drops expired claims once a minute.
struct PruneService: Service {
    let store: any ReplayStore

    func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                await store.prune()
                try? await Task.sleep(for: .seconds(60))
            }
        }
    }
}
