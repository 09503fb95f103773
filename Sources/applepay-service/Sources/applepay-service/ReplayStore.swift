// Where verified tokens claim their ReplayIdentity: in this process (`memory`) or in PostgreSQL, shared
// by every instance on one database. A store that cannot answer fails the request closed (503).
import ApplePayDecryption
import Foundation
import Logging
import NIOCore
import PostgresNIO
import Synchronization

/// Why a claim could not be judged; the request fails closed with 503.
struct ReplayStoreUnavailable: Error, CustomStringConvertible {
    let description: String
}

protocol ReplayStore: Sendable {
    /// Claims both keys of `identity` for `retention` seconds. False when either key was already
    /// claimed (a replay); throws `ReplayStoreUnavailable` when the store cannot say.
    func claim(_ identity: ReplayIdentity) async throws(ReplayStoreUnavailable) -> Bool
    /// Whether the store answers (for /readyz).
    func ping() async -> Bool
    /// Drops claims whose retention has passed.
    func prune() async
    var kind: String { get }
}

/// Claims held in this process: bounded in count, expiring after the retention. When full of claims
/// that have not expired, it refuses (503) rather than forget one and let a replay through.
final class MemoryReplayStore: ReplayStore {
    private struct State {
        var expiry: [ReplayKey: Int64] = [:]
        /// Claims in the order made; with one retention for all, also in order of expiry.
        var queue: [(key: ReplayKey, expires: Int64)] = []
        var head = 0
    }

    let capacity: Int
    let retention: Int64
    private let state = Mutex(State())
    var kind: String { "memory" }

    init(capacity: Int, retention: Int64) {
        self.capacity = capacity
        self.retention = retention
    }

    func claim(_ identity: ReplayIdentity) async throws(ReplayStoreUnavailable) -> Bool {
        let now = Int64(Date().timeIntervalSince1970)
        let result: Bool? = state.withLock { state in
            Self.dropExpired(&state, now: now)
            for key in [identity.transactionKey, identity.contentKey] {
                if let expires = state.expiry[key], expires > now { return false }
            }
            guard state.expiry.count + 2 <= capacity else { return nil }
            for key in [identity.transactionKey, identity.contentKey] {
                state.expiry[key] = now + retention
                state.queue.append((key, now + retention))
            }
            return true
        }
        guard let result else {
            throw ReplayStoreUnavailable(description: "the in-memory replay store holds \(capacity) unexpired claims (raise --memory-store-capacity)")
        }
        return result
    }

    private static func dropExpired(_ state: inout State, now: Int64) {
        while state.head < state.queue.count, state.queue[state.head].expires <= now {
            let entry = state.queue[state.head]
            if state.expiry[entry.key] == entry.expires { state.expiry[entry.key] = nil }
            state.head += 1
        }
        // Compact once the dead prefix is half the queue, so the queue stays within twice the live claims.
        if state.head > 1024, state.head * 2 > state.queue.count {
            state.queue.removeFirst(state.head)
            state.head = 0
        }
    }

    func ping() async -> Bool { true }

    func prune() async {
        let now = Int64(Date().timeIntervalSince1970)
        state.withLock { Self.dropExpired(&$0, now: now) }
    }

    var count: Int { state.withLock { $0.expiry.count } }
}

/// Claims in one PostgreSQL table shared by every instance. A claim is one `INSERT … ON CONFLICT`
/// of both keys inside a transaction that commits only when both rows are new: the unique key
/// decides, so two instances racing on the same token cannot both win, and a refused claim leaves
/// nothing behind. Expiry uses the database's clock, so instances agree.
final class PostgresReplayStore: ReplayStore {
    static let table = "applepay_replay_claims"

    let client: PostgresClient
    let retention: Int64
    let timeout: Duration
    let logger: Logger
    var kind: String { "postgres" }

    init(url: String, retention: Int64, timeout: Duration, logger: Logger) throws {
        guard let parts = URLComponents(string: url), parts.scheme == "postgres" || parts.scheme == "postgresql",
              let host = parts.host, let user = parts.user, !parts.path.isEmpty else {
            throw ServiceConfigurationError("--replay-store '\(Self.redacted(url))' is not postgres://USER[:PASSWORD]@HOST:PORT/DB")
        }
        let database = String(parts.path.dropFirst())
        let requireTLS = parts.queryItems?.contains { $0.name == "sslmode" && $0.value == "require" } ?? false
        var configuration = PostgresClient.Configuration(
            host: host, port: parts.port ?? 5432, username: user, password: parts.password, database: database,
            tls: requireTLS ? .require(.makeClientConfiguration()) : .disable)
        configuration.options.connectTimeout = timeout
        configuration.options.maximumConnections = 16
        self.client = PostgresClient(configuration: configuration, backgroundLogger: logger)
        self.retention = retention
        self.timeout = timeout
        self.logger = logger
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
                try await withDeadline(.seconds(10)) { [client] in
                    try await client.query("CREATE TABLE IF NOT EXISTS applepay_replay_claims (claim_key bytea PRIMARY KEY, expires_at timestamptz NOT NULL)")
                    try await client.query("CREATE INDEX IF NOT EXISTS applepay_replay_claims_expires_at ON applepay_replay_claims (expires_at)")
                }
                return
            } catch {
                lastError = error
                try await Task.sleep(for: .milliseconds(200 * (attempt + 1)))
            }
        }
        throw ServiceConfigurationError("the replay store's table could not be created: \(String(reflecting: lastError!))")
    }

    func claim(_ identity: ReplayIdentity) async throws(ReplayStoreUnavailable) -> Bool {
        // Sorted, so that two claims sharing a key always lock their rows in the same order.
        let keys = [identity.transactionKey.bytesArray, identity.contentKey.bytesArray].sorted { $0.lexicographicallyPrecedes($1) }
        let first = ByteBuffer(bytes: keys[0])
        let second = ByteBuffer(bytes: keys[1])
        let seconds = Double(retention)
        do {
            return try await withDeadline(timeout) { [client, logger] in
                try await client.withConnection { connection in
                    // One transaction: a key already held (say the transactionId of an accepted token,
                    // arriving again with other contents) must not leave the other key claimed, or a
                    // rejected replay would consume a claim. A row whose retention has passed but that
                    // prune has not yet dropped is taken over.
                    try await connection.query("BEGIN", logger: logger)
                    do {
                        let rows = try await connection.query("""
                            INSERT INTO applepay_replay_claims AS claims (claim_key, expires_at)
                            VALUES (\(first), now() + make_interval(secs => \(seconds))),
                                   (\(second), now() + make_interval(secs => \(seconds)))
                            ON CONFLICT (claim_key) DO UPDATE SET expires_at = EXCLUDED.expires_at
                                WHERE claims.expires_at <= now()
                            RETURNING claim_key
                            """, logger: logger)
                        var inserted = 0
                        for try await _ in rows { inserted += 1 }
                        // Both rows new: a first claim. One or none: either key was claimed before.
                        try await connection.query(inserted == 2 ? "COMMIT" : "ROLLBACK", logger: logger)
                        return inserted == 2
                    } catch {
                        // A connection left inside a transaction must not go back to the pool.
                        do { try await connection.query("ROLLBACK", logger: logger) } catch { try? await connection.close() }
                        throw error
                    }
                }
            }
        } catch {
            throw ReplayStoreUnavailable(description: "the PostgreSQL replay store did not answer: \(Self.summary(error))")
        }
    }

    func ping() async -> Bool {
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

    func prune() async {
        do {
            try await withDeadline(.seconds(30)) { [client] in
                try await client.query("DELETE FROM applepay_replay_claims WHERE expires_at < now()")
            }
        } catch {
            logger.warning("replay store prune failed", metadata: ["error": "\(Self.summary(error))"])
        }
    }

    static func summary(_ error: any Error) -> String {
        if let error = error as? PSQLError {
            return "\(error.code)" + (error.serverInfo?[.message].map { ": \($0)" } ?? "")
        }
        return "\(error)"
    }
}

struct DeadlineExceeded: Error, CustomStringConvertible {
    var description: String { "timed out" }
}

/// Runs `body`, giving up after `limit` whether or not `body` notices its cancellation, so a database
/// that stopped answering cannot hold a request longer than the store timeout.
func withDeadline<T: Sendable>(_ limit: Duration, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
    let race = DeadlineRace<T>()
    return try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
        race.continuation.withLock { $0 = continuation }
        let work = Task { @Sendable in
            let result: Result<T, any Error>
            do { result = .success(try await body()) } catch { result = .failure(error) }
            race.finish(result)
        }
        let timer = Task { @Sendable in
            try? await Task.sleep(for: limit)
            race.finish(.failure(DeadlineExceeded()))
        }
        race.tasks.withLock { $0 = [work, timer] }
    }
}

/// Whichever of the work and the timer ends first resumes the caller and cancels the other.
private final class DeadlineRace<T: Sendable>: Sendable {
    let continuation = Mutex<CheckedContinuation<T, any Error>?>(nil)
    let tasks = Mutex<[Task<Void, Never>]>([])

    func finish(_ result: Result<T, any Error>) {
        guard let continuation = continuation.withLock({ $0.take() }) else { return }
        continuation.resume(with: result)
        for task in tasks.withLock({ $0 }) { task.cancel() }
    }
}
