// The PostgreSQL replay store's client as a service: listed before the HTTP server, so it keeps running
// while the server drains, then lets the claims still running (undos above all) finish before it stops.
import PostgresNIO
import ServiceLifecycle

struct PostgresClientService: Service {
    let store: PostgresReplayStore

    func run() async throws {
        // Detached: `PostgresClient.run()` shuts its pool down on graceful shutdown as well as on
        // cancellation, and a child task would inherit this service's graceful shutdown, stopping the
        // client under a COMMIT still pending (and its undo). Here it stops only when cancelled below.
        let client = Task.detached { [store] in await store.client.run() }
        do {
            try await gracefulShutdown()
            // Undos of claims answered 503 finish before the client stops: up to one more timeout
            // for their COMMIT, then every release attempt with its backoff.
            await store.settle(limit: store.timeout * (PostgresReplayStore.releaseAttempts + 2) + .seconds(2))
        } catch {
            // Cancelled (start-up failed, or the group is being torn down): nothing is left to wait for.
        }
        client.cancel()
        await client.value
    }
}
