// The replay store shared by every instance: claims in one PostgreSQL table, judged by its unique key.
import ApplePayDecryption
import Foundation
import Logging
import NIOCore
import NIOPosix
import PostgresNIO
import Synchronization

/// Claims in one PostgreSQL table shared by every instance. A claim is one `INSERT … ON CONFLICT`
/// of both keys inside a transaction that commits only when both rows are new: the unique key
/// decides, so two instances racing on the same token cannot both win, and a refused claim leaves
/// nothing behind. Expiry uses the database's clock, so instances agree.
final class PostgresReplayStore: ReplayStore {
    static let table = "applepay_replay_claims"

    let client: PostgresClient
    let retention: Int64
    /// With a fixed time (--insecure-testing-fixed-now) claims are judged by it instead of the database's `now()`.
    let clock: ReplayClock
    let timeout: Duration
    let logger: Logger
    var kind: String { "postgres" }
    private let prepared = Atomic<Bool>(false)
    var isPrepared: Bool { prepared.load(ordering: .acquiring) }

    // The URL is checked in a convenience initializer so that the designated one cannot throw:
    // a throwing designated initializer of a class with `Atomic`/`Mutex` members crashes Swift 6.3's
    // release optimizer (CopyPropagation, on the partial-initialisation cleanup).
    convenience init(url: String, retention: Int64, clock: ReplayClock = .wall, timeout: Duration, logger: Logger)
        throws
    {
        let configuration = try Self.configuration(url: url, timeout: timeout)
        self.init(configuration: configuration, retention: retention, clock: clock, timeout: timeout, logger: logger)
    }

    init(
        configuration: PostgresClient.Configuration, retention: Int64, clock: ReplayClock = .wall, timeout: Duration,
        logger: Logger
    ) {
        // Its own event loop: a single /v1/decrypt is decrypted on the HTTP event loops, and a backlog of
        // tokens there must not delay the replies of the claims already sent (they would pass the
        // store timeout and answer 503 for tokens that are fine).
        self.client = PostgresClient(
            configuration: configuration, eventLoopGroup: Self.eventLoops, backgroundLogger: logger)
        self.retention = retention
        self.clock = clock
        self.timeout = timeout
        self.logger = logger
    }

    /// One thread for every PostgreSQL connection, apart from the HTTP event loops; it lives as long as
    /// the process.
    static let eventLoops = MultiThreadedEventLoopGroup(numberOfThreads: 1)

    static func configuration(url: String, timeout: Duration) throws -> PostgresClient.Configuration {
        guard let parts = URLComponents(string: url), parts.scheme == "postgres" || parts.scheme == "postgresql",
            let host = parts.host, let user = parts.user, !parts.path.isEmpty
        else {
            throw ServiceConfigurationError(
                "--replay-store '\(Self.redacted(url))' is not postgres://USER[:PASSWORD]@HOST:PORT/DB")
        }
        let database = String(parts.path.dropFirst())
        let requireTLS = parts.queryItems?.contains { $0.name == "sslmode" && $0.value == "require" } ?? false
        var configuration = PostgresClient.Configuration(
            host: host, port: parts.port ?? 5432, username: user, password: parts.password, database: database,
            tls: requireTLS ? .require(.makeClientConfiguration()) : .disable)
        configuration.options.connectTimeout = timeout
        configuration.options.maximumConnections = 16
        // A claim statement still running at the store timeout has been answered 503: the server then
        // aborts it (a lock wait, say) instead of holding the connection and its locks. Set per
        // connection, so no extra round trip per claim. It does not cover COMMIT (PostgreSQL runs the
        // commit itself after a statement's timeout is disarmed); `CommitGate` does.
        configuration.options.additionalStartupParameters = [("statement_timeout", String(milliseconds(timeout)))]
        return configuration
    }

    static func milliseconds(_ timeout: Duration) -> Int64 {
        max(1, timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000)
    }

    /// The URL as it may be logged: without its password.
    static func redacted(_ url: String) -> String {
        guard var parts = URLComponents(string: url), parts.password != nil else { return url }
        parts.password = "***"
        return parts.string ?? "postgres://…"
    }

    /// Creates the table if it is missing. Two instances starting together may race on CREATE, so a
    /// failure is retried once the other has finished.
    func prepare() async throws {
        var lastError: (any Error)?
        for attempt in 0..<5 {
            do {
                try await withDeadline(.seconds(10)) { [self] in
                    try await runLong(
                        [
                            "CREATE TABLE IF NOT EXISTS applepay_replay_claims (claim_key bytea PRIMARY KEY, expires_at timestamptz NOT NULL)",
                            "CREATE INDEX IF NOT EXISTS applepay_replay_claims_expires_at ON applepay_replay_claims (expires_at)",
                        ], seconds: 10)
                }
                prepared.store(true, ordering: .releasing)
                return
            } catch {
                lastError = error
                try await Task.sleep(for: .milliseconds(200 * (attempt + 1)))
            }
        }
        throw ServiceConfigurationError(
            "the replay store's table could not be created: \(String(reflecting: lastError!))")
    }

    func claim(_ identity: ReplayIdentity, retention: Int64) async throws(ReplayStoreUnavailable) -> Bool {
        // Sorted, so that two claims sharing a key always lock their rows in the same order.
        let keys = [identity.transactionKey.bytesArray, identity.contentKey.bytesArray].sorted {
            $0.lexicographicallyPrecedes($1)
        }
        let first = ByteBuffer(bytes: keys[0])
        let second = ByteBuffer(bytes: keys[1])
        let seconds = Double(retention)
        let fixed = clock.fixedDate
        // Until COMMIT is sent the store timeout stands. Once it is sent the claim may become durable
        // whatever we answer, so its outcome is awaited for up to another store timeout; if the answer
        // still has to be 503, a COMMIT that succeeds later is undone (our two rows deleted), so that
        // the 503 becomes true. A retry arriving before that undo is refused as a replay (Service.md, PostgreSQL).
        let gate = CommitGate()
        do {
            return try await withDeadline(timeout, gate: gate, grace: timeout) { [self] in
                // Counted until it ends, undo included: shutdown waits for these before the client stops.
                outstanding.wrappingAdd(1, ordering: .sequentiallyConsistent)
                defer { outstanding.wrappingSubtract(1, ordering: .sequentiallyConsistent) }
                let outcome: ClaimOutcome = try await client.withConnection { [logger] connection in
                    // One transaction: a key already held (say the transactionId of an accepted token,
                    // arriving again with other contents) must not leave the other key claimed, or a
                    // rejected replay would consume a claim. A row whose retention has passed but that
                    // prune has not yet dropped is taken over.
                    try await connection.query("BEGIN", logger: logger)
                    let expiry: Int64
                    do {
                        let rows = try await connection.query(
                            """
                            INSERT INTO applepay_replay_claims AS claims (claim_key, expires_at)
                            VALUES (\(first), COALESCE(\(fixed), now()) + make_interval(secs => \(seconds))),
                                   (\(second), COALESCE(\(fixed), now()) + make_interval(secs => \(seconds)))
                            ON CONFLICT (claim_key) DO UPDATE SET expires_at = EXCLUDED.expires_at
                                WHERE claims.expires_at <= COALESCE(\(fixed), now())
                            RETURNING (extract(epoch from expires_at) * 1000000)::int8
                            """, logger: logger)
                        var inserted = 0
                        // The expiry as the server wrote it, in whole microseconds (timestamptz's own
                        // resolution, compared as an integer: no text form, no DateStyle), so an undo
                        // deletes exactly these rows and no later claim's.
                        var written: Int64 = 0
                        for try await micros in rows.decode(Int64.self) { inserted += 1; written = micros }
                        // Both rows new: a first claim. One or none: either key was claimed before.
                        guard inserted == 2 else {
                            try await connection.query("ROLLBACK", logger: logger)
                            return .refused
                        }
                        // Past the deadline the caller has been answered 503: roll back, claim nothing.
                        guard gate.beginCommit() else { throw DeadlineExceeded() }
                        expiry = written
                    } catch {
                        // A connection left inside a transaction must not go back to the pool.
                        do { try await connection.query("ROLLBACK", logger: logger) } catch {
                            try? await connection.close()
                        }
                        throw error
                    }
                    do {
                        try await connection.query("COMMIT", logger: logger)
                    } catch {
                        // Lost on the way (the connection broke mid-COMMIT) or refused: the claim may
                        // or may not stand, and the answer is 503 either way.
                        _ = gate.endCommit()
                        try? await connection.close()
                        return .commitFailed(expiry: expiry, error: error)
                    }
                    // Answered 503 while this COMMIT was pending: what it claimed must be released.
                    return gate.endCommit() ? .claimed : .abandoned(expiry: expiry)
                }
                switch outcome {
                case .refused: return false
                case .claimed: return true
                case let .abandoned(expiry):
                    await release(keys, expiry: expiry, why: "its COMMIT finished after the request was answered 503")
                    return true  // nobody waits for it any more
                case let .commitFailed(expiry, error):
                    await release(keys, expiry: expiry, why: "its COMMIT failed and may have been applied")
                    throw error
                }
            }
        } catch {
            throw ReplayStoreUnavailable(
                description: "the PostgreSQL replay store did not answer: \(Self.summary(error))")
        }
    }

    private enum ClaimOutcome {
        case refused, claimed
        case abandoned(expiry: Int64)
        case commitFailed(expiry: Int64, error: any Error)
    }

    /// Claim bodies still running, among them undos whose request has long been answered.
    private let outstanding = Atomic<Int>(0)
    static let releaseAttempts = 5

    /// Deletes the two rows a claim wrote (its keys and the exact expiry it wrote), for a claim whose
    /// request was answered 503: retried with a short backoff (0.1, 0.2, 0.4, 0.8 s), each attempt
    /// under the store timeout. When every attempt fails the token stays claimed until it expires, and
    /// that is logged at error level (with a hash of the claim's key: `encode(sha256(claim_key), 'hex')`
    /// in SQL finds the row).
    func release(_ keys: [[UInt8]], expiry: Int64, why: String) async {
        let first = ByteBuffer(bytes: keys[0])
        let second = ByteBuffer(bytes: keys[1])
        var digest = InputDigest()
        digest.update(keys[0])
        let claim = String(digest.hex.prefix(16))
        var delay = Duration.milliseconds(100)
        var lastError: (any Error)?
        for attempt in 1...Self.releaseAttempts {
            do {
                let deleted = try await withDeadline(timeout) { [client, logger] in
                    var count = 0
                    let rows = try await client.query(
                        """
                        DELETE FROM applepay_replay_claims
                        WHERE claim_key IN (\(first), \(second)) AND (extract(epoch from expires_at) * 1000000)::int8 = \(expiry)
                        RETURNING 1
                        """, logger: logger)
                    for try await _ in rows { count += 1 }
                    return count
                }
                logger.warning(
                    "a replay-store claim answered 503 was released: \(why)",
                    metadata: ["claim_sha256": "\(claim)", "rows": "\(deleted)", "attempts": "\(attempt)"])
                return
            } catch {
                lastError = error
                if attempt < Self.releaseAttempts {
                    try? await Task.sleep(for: delay)
                    delay *= 2
                }
            }
        }
        logger.error(
            "a replay-store claim answered 503 could NOT be released: a retry of its token is refused as a replay until the claim expires",
            metadata: [
                "claim_sha256": "\(claim)", "why": "\(why)", "attempts": "\(Self.releaseAttempts)",
                "error": "\(lastError.map(Self.summary) ?? "?")",
            ])
    }

    /// Waits, at most `limit`, for claims still running (undos of claims answered 503 above all), so
    /// that shutdown does not stop the client under them. Says so when some are left.
    func settle(limit: Duration) async {
        let deadline = ContinuousClock.now + limit
        while outstanding.load(ordering: .sequentiallyConsistent) > 0, ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(50))
        }
        let left = outstanding.load(ordering: .sequentiallyConsistent)
        if left > 0 {
            logger.error(
                "stopping with replay-store claims still running; a claim answered 503 may stay until it expires",
                metadata: ["running": "\(left)"])
        }
    }

    /// How long a readiness answer is reused: an orchestrator (or anyone who can reach /readyz) polling
    /// fast must not turn into a query per call.
    static let pingLifetime = Duration.seconds(1)
    private let lastPing = Mutex<(at: ContinuousClock.Instant, reachable: Bool)?>(nil)
    private let pingInFlight = Mutex<Task<Bool, Never>?>(nil)

    /// The last probe's answer if it is under `pingLifetime` old; otherwise one probe, shared by every
    /// caller that arrives while it runs.
    func ping() async -> Bool {
        if let last = lastPing.withLock({ $0 }), ContinuousClock.now - last.at < Self.pingLifetime {
            return last.reachable
        }
        let probe = pingInFlight.withLock { current in
            if let current { return current }
            let task = Task { [self] in
                let reachable = await probeOnce()
                lastPing.withLock { $0 = (ContinuousClock.now, reachable) }
                pingInFlight.withLock { $0 = nil }
                return reachable
            }
            current = task
            return task
        }
        return await probe.value
    }

    private func probeOnce() async -> Bool {
        do {
            try await withDeadline(timeout) { [client] in
                let rows = try await client.query("SELECT 1")
                for try await _ in rows {}
            }
            return true
        } catch {
            return false
        }
    }

    /// The time claims expire against, as SQL: `now()`, or the fixed time as a literal (formatted here
    /// from a Date, so nothing from outside reaches the statement).
    var pruneHorizon: String {
        guard let fixed = clock.fixedDate else { return "now()" }
        return "to_timestamp(\(Int64(fixed.timeIntervalSince1970)))"
    }

    func prune() async {
        do {
            try await withDeadline(.seconds(30)) { [self] in
                try await runLong(
                    ["DELETE FROM applepay_replay_claims WHERE expires_at < \(pruneHorizon)"], seconds: 30)
            }
        } catch {
            logger.warning("replay store prune failed", metadata: ["error": "\(Self.summary(error))"])
        }
    }

    /// Statements that may take longer than a claim (creating the table or its index, pruning a backlog),
    /// in one transaction with their own statement_timeout.
    private func runLong(_ statements: [String], seconds: Int) async throws {
        try await client.withConnection { [logger] connection in
            try await connection.query("BEGIN", logger: logger)
            do {
                try await connection.query(
                    PostgresQuery(unsafeSQL: "SET LOCAL statement_timeout = '\(seconds)s'"), logger: logger)
                for statement in statements {
                    try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
                }
                try await connection.query("COMMIT", logger: logger)
            } catch {
                do { try await connection.query("ROLLBACK", logger: logger) } catch { try? await connection.close() }
                throw error
            }
        }
    }

    static func summary(_ error: any Error) -> String {
        if let error = error as? PSQLError {
            return "\(error.code)" + (error.serverInfo?[.message].map { ": \($0)" } ?? "")
        }
        return "\(error)"
    }
}
