// The Prometheus metrics an orchestrator scrapes at /metrics: tokens by outcome, latency, requests in
// flight, replay-store latency and claims held, key reloads and the seconds left on each merchant
// certificate.
import ApplePayDecryption
import Foundation
import Prometheus
import Synchronization

final class ServiceMetrics: Sendable {
    let registry = PrometheusCollectorRegistry()
    static let latencyBuckets: [Duration] = [
        .microseconds(500), .milliseconds(1), .milliseconds(2), .milliseconds(5), .milliseconds(10), .milliseconds(25),
        .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500), .seconds(1), .seconds(5),
    ]
    /// Routes that get their own latency series; anything else is "other", so random paths cannot
    /// grow the label set.
    static let routes = [
        "/v1/decrypt", "/v1/decrypt/batch", "/v1/merchant-session", "/healthz", "/readyz", "/metrics", "/openapi.yaml",
    ]

    private let outcomes: [String: Counter]
    private let sessionOutcomes: [String: Counter]
    private let latency: [String: DurationHistogram]
    let inFlight: Gauge
    let storeLatency: DurationHistogram
    let reloadsSucceeded: Counter
    let reloadsFailed: Counter
    let rootKeysFetchesSucceeded: Counter
    let rootKeysFetchesFailed: Counter
    let claimsHeld: Gauge
    let connectionsOpen: Gauge
    let connectionsRefused: Counter
    private let expiryGauges = Mutex<[String: Gauge]>([:])

    init() {
        var outcomes: [String: Counter] = [:]
        for code in ["ok", "replayStoreUnavailable"] + ApplePayError.Code.allCases.map(\.rawValue) {
            outcomes[code] = registry.makeCounter(
                name: "applepay_tokens_total", labels: [("outcome", code)],
                help: "Tokens handled, by outcome: ok or the stable error code.")
        }
        self.outcomes = outcomes
        var sessionOutcomes: [String: Counter] = [:]
        for outcome in MerchantSessionProxy.outcomes {
            sessionOutcomes[outcome] = registry.makeCounter(
                name: "applepay_merchant_sessions_total", labels: [("outcome", outcome)],
                help: "POST /v1/merchant-session answers, by outcome: ok or the error code.")
        }
        self.sessionOutcomes = sessionOutcomes
        var latency: [String: DurationHistogram] = [:]
        for route in Self.routes + ["other"] {
            latency[route] = registry.makeDurationHistogram(
                name: "applepay_request_duration_seconds", labels: [("route", route)],
                buckets: Self.latencyBuckets, help: "Request latency, by route.")
        }
        self.latency = latency
        inFlight = registry.makeGauge(name: "applepay_requests_in_flight", help: "Requests being handled now.")
        storeLatency = registry.makeDurationHistogram(
            name: "applepay_replay_store_duration_seconds", buckets: Self.latencyBuckets,
            help: "Latency of one replay-store claim.")
        reloadsSucceeded = registry.makeCounter(
            name: "applepay_key_reloads_total", labels: [("result", "ok")], help: "SIGHUP key reloads.")
        reloadsFailed = registry.makeCounter(
            name: "applepay_key_reloads_total", labels: [("result", "failed")], help: "SIGHUP key reloads.")
        rootKeysFetchesSucceeded = registry.makeCounter(
            name: "applepay_google_root_keys_refreshes_total", labels: [("result", "ok")],
            help:
                "Refetches (in the background and on SIGHUP) of the Google root keys document from --google-root-keys URL."
        )
        rootKeysFetchesFailed = registry.makeCounter(
            name: "applepay_google_root_keys_refreshes_total", labels: [("result", "failed")],
            help:
                "Refetches (in the background and on SIGHUP) of the Google root keys document from --google-root-keys URL."
        )
        connectionsOpen = registry.makeGauge(name: "applepay_connections_open", help: "Connections open on --listen.")
        connectionsRefused = registry.makeCounter(
            name: "applepay_connections_refused_total",
            help: "Connections answered 503 tooManyConnections at --max-connections.")
        claimsHeld = registry.makeGauge(
            name: "applepay_replay_store_claims",
            help: "Claims the in-memory replay store holds (two per accepted token; 503 at --memory-store-capacity).")
    }

    func token(outcome: String) { outcomes[outcome]?.increment() }

    func merchantSession(outcome: String) { sessionOutcomes[outcome]?.increment() }

    func request(route: String?, duration: Duration) {
        let key = route.flatMap { Self.routes.contains($0) ? $0 : nil } ?? "other"
        latency[key]?.record(duration)
    }

    /// Sets the seconds left on each merchant certificate of `keys` (called at every scrape, so the
    /// figure is current) and drops the series of merchants a reload removed.
    func updateExpiry(_ keys: KeySet) {
        let now = Date()
        expiryGauges.withLock { gauges in
            var seen = Set<String>()
            for (label, notAfter) in keys.certificateExpiry {
                seen.insert(label)
                let gauge =
                    gauges[label]
                    ?? registry.makeGauge(
                        name: "applepay_merchant_certificate_expiry_seconds", labels: [("merchant", label)],
                        help: "Seconds until the merchant certificate expires (negative: expired).")
                gauges[label] = gauge
                gauge.set(notAfter.timeIntervalSince(now))
            }
            for (label, gauge) in gauges where !seen.contains(label) {
                registry.unregisterGauge(gauge)
                gauges[label] = nil
            }
        }
    }

    func emit() -> [UInt8] { registry.emitToBuffer() }
}
