// The decryption lanes (a NIOThreadPool) as a service, stopped only after the server has drained, so
// that a batch in flight at SIGTERM still has its lanes.
import NIOPosix
import ServiceLifecycle

struct ThreadPoolService: Service {
    let pool: NIOThreadPool

    func run() async throws {
        try? await gracefulShutdown()
        try? await pool.shutdownGracefully()
    }
}
