// The merchant-session gateway client as a service: its connection pool is closed after the server has
// drained (AsyncHTTPClient requires a shutdown before the client goes away), and also when start-up fails.
import ApplePayMerchantAPI
import ServiceLifecycle

struct MerchantSessionClientService: Service {
    let client: MerchantAPIClient

    func run() async throws {
        try? await gracefulShutdown()
        try? await client.shutdown()
    }
}
