// The service's options, as the executable parses them (`applepay-service --help`) and as the in-process
// tests build them (`ServiceOptions.parse([...])`): one parser, so both see the same defaults and checks.
import ApplePayDecryption
import ArgumentParser
import Foundation
import Logging

public struct ServiceOptions: ParsableArguments {
    public init() {}

    @Option(
        help: ArgumentHelp(
            "Address to listen on, HOST:PORT (port 0 picks a free port, printed on start).", valueName: "host:port"))
    public var listen: String

    @Option(
        name: .customLong("merchant"),
        help: ArgumentHelp(
            "An Apple Pay merchant key (repeatable), as in the CLI: \(MerchantSpec.syntax). SIGHUP reloads them. Required unless the Google Pay options are given.",
            valueName: "spec"))
    public var merchants: [String] = []

    @Option(
        name: .customLong("trust-root"),
        help: ArgumentHelp(
            "TESTING ONLY: trust this root certificate (PEM) instead of the pinned Apple Root CA - G3.",
            valueName: "path"))
    public var trustRoot: String?

    @Option(help: ArgumentHelp("Allowed distance in seconds between the signing time and now.", valueName: "seconds"))
    public var window: Int64 = PaymentTokenDecryptor.defaultSigningTimeWindow

    @Option(
        name: .customLong("replay-store"),
        help: ArgumentHelp(
            "memory, or postgres://USER[:PASSWORD]@HOST:PORT/DB[?sslmode=require] shared by every instance.",
            valueName: "store"))
    public var replayStore = "memory"

    @Option(
        name: .customLong("api-key-env"),
        help: ArgumentHelp(
            "Require Authorization: Bearer KEY on /v1, KEY read from this environment variable.", valueName: "var"))
    public var apiKeyEnv: String?

    @Option(
        name: .customLong("tls-cert"),
        help: ArgumentHelp("Serve HTTPS with this certificate chain (PEM).", valueName: "path"))
    public var tlsCert: String?

    @Option(name: .customLong("tls-key"), help: ArgumentHelp("The TLS private key (PEM).", valueName: "path"))
    public var tlsKey: String?

    @Option(
        name: .customLong("client-ca"),
        help: ArgumentHelp(
            "Require a client certificate issued by this CA (PEM) on every connection.", valueName: "path"))
    public var clientCA: String?

    @Option(
        help: ArgumentHelp(
            "Threads that decrypt /v1/decrypt/batch lines (default: the number of cores). A single /v1/decrypt is decrypted on its connection's event loop (one per core).",
            valueName: "n"))
    public var lanes: Int = ProcessInfo.processInfo.activeProcessorCount

    @Option(
        name: .customLong("max-body-bytes"),
        help: ArgumentHelp("Largest /v1/decrypt body, and largest batch line.", valueName: "bytes"))
    public var maxBodyBytes: Int = 64 << 10

    @Option(
        name: .customLong("clock-skew"),
        help: ArgumentHelp(
            "Seconds of clock skew between instances, at least 1; replay claims are kept 2 × window + skew (a token stays fresh for 2 × window), a Google Pay message's until it expires + skew if later.",
            valueName: "seconds"))
    public var clockSkew: Int64 = 60

    @Option(
        name: .customLong("memory-store-capacity"),
        help: ArgumentHelp(
            "Most claims the memory store holds (two per token); when full of unexpired claims it answers 503.",
            valueName: "n"))
    public var memoryStoreCapacity: Int = 2_000_000

    @Option(
        name: .customLong("store-timeout-ms"),
        help: ArgumentHelp("Longest wait for the replay store before 503.", valueName: "ms"))
    public var storeTimeoutMs: Int = 2000

    @Option(
        name: .customLong("request-timeout"),
        help: ArgumentHelp(
            "Seconds a /v1/decrypt body may take to arrive before 408 and the connection is closed.",
            valueName: "seconds"))
    public var requestTimeout: Int64 = 30

    @Option(
        name: .customLong("idle-timeout"),
        help: ArgumentHelp("Seconds before an idle or stalled connection is closed.", valueName: "seconds"))
    public var idleTimeout: Int64 = 30

    @Option(
        name: .customLong("header-timeout"),
        help: ArgumentHelp(
            "Seconds a request's head (request line and headers; a TLS handshake before the first) may take from its first byte, or from the connection's start, before the connection is closed.",
            valueName: "seconds"))
    public var headerTimeout: Int64 = 10

    @Option(
        name: .customLong("batch-timeout"),
        help: ArgumentHelp(
            "Seconds a /v1/decrypt/batch request may last, body and answer; then its stream ends with a batchTimeout line and the connection closes.",
            valueName: "seconds"))
    public var batchTimeout: Int64 = 300

    @Option(
        name: .customLong("max-connections"),
        help: ArgumentHelp(
            "Connections open at once on --listen; one more is answered 503 tooManyConnections and closed (default: the descriptor limit less 128, at most 4096; 896 under ulimit -n 1024).",
            valueName: "n"))
    public var maxConnections: Int?

    @Option(
        name: .customLong("operations-listen"),
        help: ArgumentHelp(
            "Serve /healthz, /readyz and /metrics on this HOST:PORT instead of --listen (plain HTTP, a thread of its own, answered under any load). Default: on --listen, to anyone who reaches it.",
            valueName: "host:port"))
    public var operationsListen: String?

    @Option(
        name: .customLong("insecure-testing-fixed-now"),
        help: ArgumentHelp(
            "TESTING ONLY: judge freshness (Apple Pay signing times; Google Pay key and message expirations, to the millisecond), and replay claims, against this fixed ISO 8601 time instead of the clock (bundled vectors): claims never expire while it runs.",
            valueName: "time"))
    public var fixedNow: String?

    @OptionGroup(title: "Google Pay (tokens told apart from Apple Pay ones by shape, on the same endpoints)")
    public var googlePay: GooglePayServiceOptions

    @Option(
        name: .customLong("samsung-key"),
        help: ArgumentHelp(
            "A Samsung Pay merchant private key (repeatable: keys rotate; a token's kid picks one), as in the CLI: \(SamsungPayMerchantKey.syntax). SIGHUP reloads them.",
            valueName: "spec"))
    public var samsungKeys: [String] = []

    @OptionGroup(
        title:
            "POST /v1/merchant-session (--merchant-identity, --merchant-id, --merchant-domain and --merchant-display-name: all or none)"
    )
    public var session: MerchantSessionOptions

    @Option(name: .customLong("log-level"), help: "trace, debug, info, notice, warning, error or critical.")
    public var logLevel: String = "info"

    public func validate() throws {
        guard !merchants.isEmpty || googlePay.isConfigured || !samsungKeys.isEmpty else {
            throw ValidationError("at least one --merchant (or the --google-* options, or --samsung-key) is required")
        }
        guard requestTimeout >= 1, idleTimeout >= 1 else {
            throw ValidationError("--request-timeout and --idle-timeout must be at least 1")
        }
        // Timers count nanoseconds in 64 bits: a day is far beyond any body, and far inside the range.
        for (name, seconds) in [
            ("--request-timeout", requestTimeout), ("--idle-timeout", idleTimeout), ("--header-timeout", headerTimeout),
            ("--batch-timeout", batchTimeout),
        ] where seconds > 86_400 {
            throw ValidationError("\(name) must be at most 86400 seconds (a day)")
        }
        guard window >= 0, clockSkew >= 0 else {
            throw ValidationError("--window and --clock-skew must not be negative")
        }
        // A token is fresh from `window` seconds before its signing time to `window` after: 2 × window
        // seconds, judged at one-second resolution. A claim kept no longer than that can expire while
        // its token is still fresh, and the replay is then accepted.
        guard clockSkew >= 1 else {
            throw ValidationError(
                "--clock-skew \(clockSkew) keeps replay claims \(2 * window + clockSkew) s (2 × window + skew), no longer than a token stays fresh (2 × window = \(2 * window) s): a replay could arrive after its claim expired and be accepted. --clock-skew must be at least 1"
            )
        }
        guard headerTimeout >= 1, batchTimeout >= 1 else {
            throw ValidationError("--header-timeout and --batch-timeout must be at least 1")
        }
        if let maxConnections {
            guard (1...1_000_000).contains(maxConnections) else {
                throw ValidationError("--max-connections must be between 1 and 1000000")
            }
        }
        if let operationsListen, Self.parseListen(operationsListen) == nil {
            throw ValidationError("--operations-listen '\(operationsListen)' is not HOST:PORT")
        }
        guard lanes >= 1, lanes <= 256 else { throw ValidationError("--lanes must be between 1 and 256") }
        guard maxBodyBytes >= 1, maxBodyBytes <= 64 << 20 else {
            throw ValidationError("--max-body-bytes must be between 1 and 67108864")
        }
        guard memoryStoreCapacity >= 2 else { throw ValidationError("--memory-store-capacity must be at least 2") }
        guard (tlsCert == nil) == (tlsKey == nil) else { throw ValidationError("--tls-cert and --tls-key go together") }
        if clientCA != nil, tlsCert == nil { throw ValidationError("--client-ca needs --tls-cert and --tls-key") }
        if let fixedNow, Self.parseTime(fixedNow) == nil {
            throw ValidationError("--insecure-testing-fixed-now '\(fixedNow)' is not ISO 8601")
        }
        guard Logger.Level(rawValue: logLevel) != nil else { throw ValidationError("unknown --log-level \(logLevel)") }
        guard Self.parseListen(listen) != nil else { throw ValidationError("--listen '\(listen)' is not HOST:PORT") }
        try session.validateAllOrNothing()
    }

    static func parseListen(_ text: String) -> (String, Int)? {
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]),
            (0...65535).contains(port)
        else { return nil }
        var host = String(text[..<colon])
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        return host.isEmpty ? nil : (host, port)
    }

    static func parseTime(_ text: String) -> Date? {
        if let date = try? Date(text, strategy: .iso8601) { return date }
        return try? Date(text, strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: true))
    }
}
