// SIGHUP reloads the merchant keys (both wallets') and the Google root keys (the file reread, or the URL
// refetched at once, after the merchant keys: a slow keys server must not hold their reload up).
import Logging
import ServiceLifecycle
import UnixSignals

/// Reloads the keys on SIGHUP; a failed reload keeps the old set and says why.
struct KeyReloadService: Service {
    let keys: KeyRing
    let metrics: ServiceMetrics
    let logger: Logger
    /// With `--google-root-keys URL`: refetched on SIGHUP too, besides its max-age schedule.
    let rootKeysFetcher: GoogleRootKeysFetcher?

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
            if let rootKeysFetcher {
                do {
                    // Bounded by the fetcher's deadline; cancelled by a graceful shutdown.
                    let fetched = try await cancelWhenGracefulShutdown { try await rootKeysFetcher.fetch() }
                    try keys.replaceFetchedRootKeys(fetched.rootKeys)
                    metrics.rootKeysFetchesSucceeded.increment()
                    logger.notice(
                        "Google root keys refetched on SIGHUP",
                        metadata: ["url": "\(rootKeysFetcher.url)", "sha256": "\(fetched.rootKeys.fingerprint)"])
                } catch {
                    metrics.rootKeysFetchesFailed.increment()
                    loudError(
                        logger,
                        "Google root keys refetch on SIGHUP failed; the last good document stays in use: \(error)")
                }
            }
        }
    }
}
