// Keeps the root keys fetched from --google-root-keys URL fresh: refetched halfway through the max-age
// the last answer gave; a failed refetch keeps the last good document (its keys expire on their own
// keyExpiration) and says so loudly.
import ApplePayDecryption
import Foundation
import Logging
import ServiceLifecycle

/// Refetches the root keys document in the background and swaps it into the key ring.
struct GoogleRootKeysRefreshService: Service {
    let fetcher: GoogleRootKeysFetcher
    let keys: KeyRing
    let metrics: ServiceMetrics
    let logger: Logger
    /// The first fetch's max-age (made at start, before this service runs).
    let firstMaxAge: Int64?

    /// Without a max-age the document is refetched every minute: often enough to follow a rotation, and
    /// not per token as a cache of no lifetime would be.
    static let defaultMaxAge: Int64 = 120

    /// Halfway through the max-age (Tink refreshes in the background from then on), at least 1 s,
    /// at most 12 h. The age is bounded first, so no max-age overflows the arithmetic.
    static func refreshDelay(maxAge: Int64?) -> Duration {
        let age = min(maxAge.flatMap { $0 > 0 ? $0 : nil } ?? defaultMaxAge, GoogleRootKeysFetcher.maximumMaxAge)
        return .milliseconds(min(max(age * 500, 1000), 12 * 3_600_000))
    }

    func run() async throws {
        await refreshUntilShutdown()
        // The fetcher's client closes with this service, which runs as long as the service does.
        await fetcher.shutdown()
    }

    private func refreshUntilShutdown() async {
        var delay = Self.refreshDelay(maxAge: firstMaxAge)
        var lastGood = Date()
        while !Task.isShuttingDownGracefully {
            do {
                let wait = delay
                try await cancelWhenGracefulShutdown { try await Task.sleep(for: wait) }
            } catch {
                return
            }
            do {
                // Cancelled by a graceful shutdown: a slow fetch must not hold the drain up.
                let fetched = try await cancelWhenGracefulShutdown { try await fetcher.fetch() }
                try keys.replaceFetchedRootKeys(fetched.rootKeys)
                lastGood = Date()
                metrics.rootKeysFetchesSucceeded.increment()
                delay = Self.refreshDelay(maxAge: fetched.maxAge)
                logger.info(
                    "Google root keys refreshed",
                    metadata: [
                        "url": "\(fetcher.url)", "keys": "\(fetched.rootKeys.keys.count)",
                        "sha256": "\(fetched.rootKeys.fingerprint)",
                        "max_age_s": "\(fetched.maxAge.map(String.init) ?? "none")",
                    ])
            } catch {
                if Task.isShuttingDownGracefully { return }
                metrics.rootKeysFetchesFailed.increment()
                // Retry no later than the normal refresh would come, and at least every minute.
                delay = min(delay, .seconds(60))
                let kept = keys.keys.googlePay?.rootKeys
                let until = kept?.keys.compactMap(\.keyExpiration).max().map { "\($0) ms" } ?? "never (ECv1 keys only)"
                loudError(
                    logger,
                    "Google root keys refresh from \(fetcher.url) failed: \(error). The last good document (SHA-256 \(kept?.fingerprint ?? "?"), fetched \(lastGood)) stays in use; its last key expires \(until). Retrying in \(delay)."
                )
            }
        }
    }
}
