// SIGHUP reloads the merchant keys.
import Logging
import ServiceLifecycle
import UnixSignals

/// Reloads the merchant keys on SIGHUP; a failed reload keeps the old set and says why.
struct KeyReloadService: Service {
    let keys: KeyRing
    let metrics: ServiceMetrics
    let logger: Logger

    func run() async throws {
        for await _ in await UnixSignalsSequence(trapping: .sighup).cancelOnGracefulShutdown() {
            switch keys.reload() {
            case let .success(set):
                metrics.reloadsSucceeded.increment()
                metrics.updateExpiry(set)
                logger.notice("merchant keys reloaded", metadata: ["merchants": "\(set.decryptor.merchants.count)"])
            case let .failure(error):
                metrics.reloadsFailed.increment()
                logger.error(
                    "merchant key reload failed; the previous keys stay in use", metadata: ["error": "\(error)"])
            }
        }
    }
}
