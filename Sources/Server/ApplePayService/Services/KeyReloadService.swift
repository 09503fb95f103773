// SIGHUP reloads the merchant keys (both wallets') and the Google root keys file.
import Logging
import ServiceLifecycle
import UnixSignals

/// Reloads the keys on SIGHUP; a failed reload keeps the old set and says why.
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
                logger.notice(
                    "merchant keys reloaded",
                    metadata: [
                        "merchants": "\(set.merchants.count)",
                        "google_merchant_keys": "\(set.googlePay.map { String($0.merchantKeys.count) } ?? "none")",
                        "google_root_keys_sha256": "\(set.googlePay?.rootKeys.fingerprint ?? "none")",
                    ])
            case let .failure(error):
                metrics.reloadsFailed.increment()
                loudError(logger, "merchant key reload failed; the previous keys stay in use: \(error)")
            }
        }
    }
}
