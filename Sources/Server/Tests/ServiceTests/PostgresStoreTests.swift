// The shared replay store against a real PostgreSQL server: instances agree on replays, a stopped
// database fails closed with 503, and the service recovers when it is back. Needs
// APPLEPAY_TEST_POSTGRES (an admin URL) and APPLEPAY_TEST_PG_CONTROL (a script taking stop|start),
// which Sources/Server/ci.sh provides; skipped without them.
import ApplePayDecryption
import Foundation
import XCTest

final class PostgresStoreTests: XCTestCase {
    var adminURL = ""
    var control = ""

    override func setUpWithError() throws {
        let environment = ProcessInfo.processInfo.environment
        guard let url = environment["APPLEPAY_TEST_POSTGRES"], let control = environment["APPLEPAY_TEST_PG_CONTROL"]
        else {
            // ci.sh sets this too, so that CI cannot pass by skipping the database tests.
            if environment["APPLEPAY_TEST_REQUIRE_POSTGRES"] == "1" {
                XCTFail("APPLEPAY_TEST_REQUIRE_POSTGRES=1 but no test server is given")
            }
            throw XCTSkip("APPLEPAY_TEST_POSTGRES and APPLEPAY_TEST_PG_CONTROL are not set (ci.sh sets them)")
        }
        adminURL = url
        self.control = control
    }

    /// Stops or starts the server. Its output is not captured: the server inherits the descriptors,
    /// and a pipe it holds open would never reach end of file.
    func control(_ verb: String) throws -> Int32 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: control)
        process.arguments = [verb]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        return process.terminationStatus
    }

    /// A fresh database on the test server, returned as the service's --replay-store URL.
    func freshDatabase() throws -> String {
        let name = "applepay_test_\(UInt32.random(in: 0...UInt32.max))"
        let result = try runCommand(
            "/usr/bin/psql", [adminURL, "-v", "ON_ERROR_STOP=1", "-c", "CREATE DATABASE \(name)"])
        XCTAssertEqual(result.status, 0, result.output)
        var parts = URLComponents(string: adminURL)!
        parts.path = "/\(name)"
        return parts.string!
    }

    /// --insecure-testing-fixed-now judges the claims by the same fixed time as freshness: a replay that
    /// stays fresh (the time never moves) is refused however long after its claim's retention.
    func testAFixedNowJudgesClaimsInTheTableByTheSameTime() async throws {
        let database = try freshDatabase()
        let keys = MintedKeys()
        let merchant = keys.pki.makeMerchant(identifier: "merchant.com.example.fixedpg")
        // 2026-01-01T12:00:00Z
        let token = keys.token(for: merchant, signedAt: Date(timeIntervalSince1970: 1_767_268_800))
        let service = try ServiceProcess([
            "--merchant", keys.writeMerchant(merchant, as: "m"), "--trust-root", keys.rootPath, "--replay-store",
            database,
            "--insecure-testing-fixed-now", "2026-01-01T12:00:00Z", "--window", "1", "--clock-skew", "1",
        ])
        let first = try await HTTP.post("\(service.base)/v1/decrypt", token)
        XCTAssertEqual(first.status, 200, first.text)
        try await Task.sleep(for: .milliseconds(4500))
        let again = try await HTTP.post("\(service.base)/v1/decrypt", token)
        XCTAssertEqual(again.code, "replayedTransaction", again.text)
        let expiry = try runCommand(
            "/usr/bin/psql",
            [database, "-tA", "-c", "SELECT DISTINCT extract(epoch from expires_at)::int8 FROM applepay_replay_claims"])
        XCTAssertEqual(
            expiry.output.trimmingCharacters(in: .whitespacesAndNewlines), "1767268803",
            "the fixed time plus the 3 s retention")
    }

    /// A Google Pay message valid for an hour is claimed in the table until it expires (plus the skew),
    /// not for the store's retention (here 2 × 0 + 1 s): a replay after that second is still refused.
    func testAGooglePayClaimInTheTableLastsUntilItsMessageExpires() async throws {
        let database = try freshDatabase()
        let google = GooglePayKeys()
        let now = Date()
        let service = try ServiceProcess(
            google.options(now: now) + ["--replay-store", database, "--window", "0", "--clock-skew", "1"])
        let token = google.token(now: now) { $0.messageLifetime = 3_600_000 }
        let first = try await HTTP.post("\(service.base)/v1/decrypt", token)
        XCTAssertEqual(first.status, 200, first.text)
        try await Task.sleep(for: .milliseconds(2500))
        let again = try await HTTP.post("\(service.base)/v1/decrypt", token)
        XCTAssertEqual(again.code, "replayedTransaction", again.text)
        let left = try runCommand(
            "/usr/bin/psql",
            [
                database, "-tA", "-c",
                "SELECT min(extract(epoch from expires_at - now()))::int8 FROM applepay_replay_claims",
            ])
        XCTAssertGreaterThan(Int(left.output.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0, 3500, left.output)
    }

    func testTwoInstancesOnOneDatabaseAgreeOnReplays() async throws {
        let database = try freshDatabase()
        let keys = MintedKeys()
        let merchant = keys.pki.makeMerchant(identifier: "merchant.com.example.fleet")
        let options = [
            "--merchant", keys.writeMerchant(merchant, as: "m"), "--trust-root", keys.rootPath, "--replay-store",
            database,
        ]
        let first = try ServiceProcess(options)
        let second = try ServiceProcess(options)
        let ready = try await HTTP.get("\(first.base)/readyz")
        XCTAssertEqual(ready.json["replayStore"] as? String, "postgres")

        let token = keys.token(for: merchant)
        let accepted = try await HTTP.post("\(first.base)/v1/decrypt", token)
        XCTAssertEqual(accepted.status, 200, accepted.text)
        let replayed = try await HTTP.post("\(second.base)/v1/decrypt", token)
        XCTAssertEqual(replayed.status, 422)
        XCTAssertEqual(replayed.code, "replayedTransaction")
        // The same token in another form is the same claim.
        let reframed = try await HTTP.post(
            "\(second.base)/v1/decrypt", Data("{\"paymentToken\": \(String(decoding: token, as: UTF8.self))}".utf8))
        XCTAssertEqual(reframed.code, "replayedTransaction")

        // Many tokens raced at both instances at once: each is accepted exactly once.
        let tokens = (0..<40).map { _ in keys.token(for: merchant) }
        let bases = [first.base, second.base]
        let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
            for token in tokens {
                for base in bases { group.addTask { try await HTTP.post("\(base)/v1/decrypt", token).status } }
            }
            var all: [Int] = []
            for try await status in group { all.append(status) }
            return all
        }
        XCTAssertEqual(statuses.filter { $0 == 200 }.count, tokens.count, "\(statuses)")
        XCTAssertEqual(statuses.filter { $0 == 422 }.count, tokens.count)

        let rows = try runCommand(
            "/usr/bin/psql", [database, "-tA", "-c", "SELECT count(*) FROM applepay_replay_claims"])
        XCTAssertEqual(
            rows.output.trimmingCharacters(in: .whitespacesAndNewlines), "\(2 * (tokens.count + 1))",
            "two claim keys per accepted token")
    }

    func testARefusedClaimLeavesNeitherKeyInTheTable() async throws {
        let database = try freshDatabase()
        let keys = MintedKeys()
        let merchant = keys.pki.makeMerchant(identifier: "merchant.com.example.atomic")
        let options = [
            "--merchant", keys.writeMerchant(merchant, as: "m"), "--trust-root", keys.rootPath, "--replay-store",
            database,
        ]
        let first = try ServiceProcess(options)
        let second = try ServiceProcess(options)
        let transactionId = String(repeating: "a5", count: 32)
        let accepted = try await HTTP.post(
            "\(first.base)/v1/decrypt", keys.token(for: merchant, transactionId: transactionId))
        XCTAssertEqual(accepted.status, 200, accepted.text)
        // The same transactionId with other signed contents, raced at both instances: each refused
        // on its transactionId, and none may leave its content key behind.
        let others = (0..<6).map { _ in keys.token(for: merchant, transactionId: transactionId) }
        let codes = try await withThrowingTaskGroup(of: String?.self) { group in
            for (i, token) in others.enumerated() {
                let base = [first.base, second.base][i % 2]
                group.addTask { try await HTTP.post("\(base)/v1/decrypt", token).code }
            }
            var codes: [String?] = []
            for try await code in group { codes.append(code) }
            return codes
        }
        XCTAssertEqual(codes, Array(repeating: "replayedTransaction", count: others.count))
        let rows = try runCommand(
            "/usr/bin/psql", [database, "-tA", "-c", "SELECT count(*) FROM applepay_replay_claims"])
        XCTAssertEqual(
            rows.output.trimmingCharacters(in: .whitespacesAndNewlines), "2",
            "only the accepted token's two keys are held")
    }

    /// A COMMIT slower than the store timeout (deferred constraint triggers that sleep at COMMIT time,
    /// against a 3 s timeout): the answer must be what the table holds. 2 × 1.6 s: the COMMIT ends
    /// within the grace the service gives a sent COMMIT (6 s in all; 2.8 s to spare), so 200 and
    /// claimed. 2 × 4 s: it ends after (2 s after the grace), so 503 and the claim undone, and the
    /// token's retry is accepted. Before the fix both answered 503 at the timeout and the COMMIT claimed
    /// the token anyway: its retry was refused as a replay.
    func testAClaimWhoseCommitOutlastsTheStoreTimeoutIsAnsweredByItsOutcome() async throws {
        for (sleep, expected) in [(1.6, 200), (4.0, 503)] {
            let database = try freshDatabase()
            let keys = MintedKeys()
            let merchant = keys.pki.makeMerchant(identifier: "merchant.com.example.slowcommit")
            let service = try ServiceProcess([
                "--merchant", keys.writeMerchant(merchant, as: "m"), "--trust-root", keys.rootPath,
                "--replay-store", database, "--store-timeout-ms", "3000",
            ])
            try slowCommits(database, seconds: sleep)
            let token = keys.token(for: merchant)
            let first = try await HTTP.post("\(service.base)/v1/decrypt", token)
            XCTAssertEqual(first.status, expected, "COMMIT of 2 × \(sleep) s: \(first.text)")
            // Until a COMMIT the service stopped waiting for has finished anyway, and been undone.
            let rows = try await claimRows(database, until: first.status == 200 ? "2" : "0", seconds: 2 * sleep + 15)
            XCTAssertEqual(
                rows, first.status == 200 ? "2" : "0",
                "answered \(first.status): the table must agree (COMMIT of 2 × \(sleep) s)")
            XCTAssertEqual(
                try runCommand(
                    "/usr/bin/psql",
                    [database, "-c", "DROP TRIGGER applepay_test_slow_commit ON applepay_replay_claims"]
                ).status, 0)
            // DROP TRIGGER waited for the slow COMMIT to land; the service's undo of a claim it answered 503
            // for follows that COMMIT. The retry waits for the undo: sent at once, it raced it (and lost on a
            // loaded CI machine: 422), since the rows read as 0 above while the COMMIT was still pending.
            let settled = try await claimRows(database, until: first.status == 200 ? "2" : "0", seconds: 15)
            XCTAssertEqual(settled, first.status == 200 ? "2" : "0", "after the COMMIT of 2 × \(sleep) s")
            let retry = try await HTTP.post("\(service.base)/v1/decrypt", token)
            XCTAssertEqual(
                retry.status, first.status == 503 ? 200 : 422,
                "a retry succeeds exactly when the first answer was 503: \(retry.text)")
        }
    }

    /// Deferred triggers that sleep `seconds` per inserted row at COMMIT.
    func slowCommits(_ database: String, seconds: Double) throws {
        let slow = try runCommand(
            "/usr/bin/psql",
            [
                database, "-v", "ON_ERROR_STOP=1", "-c",
                """
                CREATE FUNCTION applepay_test_slow_commit() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN PERFORM pg_sleep(\(seconds)); RETURN NULL; END $$;
                CREATE CONSTRAINT TRIGGER applepay_test_slow_commit AFTER INSERT ON applepay_replay_claims
                    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION applepay_test_slow_commit();
                """,
            ])
        XCTAssertEqual(slow.status, 0, slow.output)
    }

    /// The table's row count once it reads `expected`, or whatever it reads after `seconds`.
    func claimRows(_ database: String, until expected: String, seconds: Double) async throws -> String {
        let deadline = Date().addingTimeInterval(seconds)
        var rows = ""
        repeat {
            try await Task.sleep(for: .milliseconds(250))
            rows = try runCommand(
                "/usr/bin/psql", [database, "-tA", "-c", "SELECT count(*) FROM applepay_replay_claims"]
            )
            .output.trimmingCharacters(in: .whitespacesAndNewlines)
        } while rows != expected && Date() < deadline
        return rows
    }

    /// SIGTERM right after a 503 whose COMMIT is still pending: the service stops only once that COMMIT
    /// has landed and been undone (without the wait the client stopped first and the claim stayed).
    func testShutdownWaitsForTheUndoOfAClaimAnswered503() async throws {
        let database = try freshDatabase()
        let keys = MintedKeys()
        let merchant = keys.pki.makeMerchant(identifier: "merchant.com.example.shutdownundo")
        let service = try ServiceProcess([
            "--merchant", keys.writeMerchant(merchant, as: "m"), "--trust-root", keys.rootPath,
            "--replay-store", database, "--store-timeout-ms", "1000",
        ])
        try slowCommits(database, seconds: 2.0)
        let first = try await HTTP.post("\(service.base)/v1/decrypt", keys.token(for: merchant))
        XCTAssertEqual(first.status, 503, "COMMIT of 4 s against 1 + 1 s: \(first.text)")
        service.signal(SIGTERM)
        XCTAssertEqual(service.waitForExit(seconds: 30), 0, service.log)
        // Past the time the COMMIT lands (4 s after it began) whoever waited for it.
        try await Task.sleep(for: .seconds(3))
        let rows = try runCommand(
            "/usr/bin/psql", [database, "-tA", "-c", "SELECT count(*) FROM applepay_replay_claims"])
        XCTAssertEqual(
            rows.output.trimmingCharacters(in: .whitespacesAndNewlines), "0",
            "released before the client stopped: \(service.log)")
        XCTAssertTrue(service.log.contains("was released"), service.log)
    }

    /// The undo of a claim answered 503 (its COMMIT landed after the grace) is retried when the DELETE
    /// fails: two failures, then released (the retry is accepted). When every attempt fails, an error
    /// names a hash of the claim key (never the token) and the token stays claimed: the residual case.
    func testAFailedUndoIsRetriedAndAFinalFailureIsLoggedAsAnError() async throws {
        for failures in [2, 1000] {
            let database = try freshDatabase()
            let keys = MintedKeys()
            let merchant = keys.pki.makeMerchant(identifier: "merchant.com.example.failedundo")
            let service = try ServiceProcess([
                "--merchant", keys.writeMerchant(merchant, as: "m"), "--trust-root", keys.rootPath,
                "--replay-store", database, "--store-timeout-ms", "1000",
            ])
            try slowCommits(database, seconds: 2.0)
            // Sequences are not transactional: each refused DELETE still counts.
            let refuse = try runCommand(
                "/usr/bin/psql",
                [
                    database, "-v", "ON_ERROR_STOP=1", "-c",
                    """
                    CREATE SEQUENCE applepay_test_deletes;
                    CREATE FUNCTION applepay_test_refuse_delete() RETURNS trigger LANGUAGE plpgsql AS $$
                    BEGIN IF nextval('applepay_test_deletes') <= \(failures) THEN RAISE EXCEPTION 'refused by the test'; END IF; RETURN OLD; END $$;
                    CREATE TRIGGER applepay_test_refuse_delete BEFORE DELETE ON applepay_replay_claims
                        FOR EACH ROW EXECUTE FUNCTION applepay_test_refuse_delete();
                    """,
                ])
            XCTAssertEqual(refuse.status, 0, refuse.output)
            let token = keys.token(for: merchant)
            let first = try await HTTP.post("\(service.base)/v1/decrypt", token)
            XCTAssertEqual(first.status, 503, "COMMIT of 4 s against 1 + 1 s: \(first.text)")
            let expected = failures == 2 ? "0" : "2"
            // Released after the third attempt; or all five (backoff 0.1 + 0.2 + 0.4 + 0.8 s) failed.
            var log = ""
            let deadline = Date().addingTimeInterval(30)
            repeat {
                try await Task.sleep(for: .milliseconds(250))
                log = service.log
            } while !log.contains("claim answered 503") && Date() < deadline
            let rows = try await claimRows(database, until: expected, seconds: 5)
            XCTAssertEqual(rows, expected, "\(failures) refused DELETEs: \(log)")
            if failures == 2 {
                XCTAssertTrue(log.contains("was released") && log.contains("attempts=3"), log)
                XCTAssertEqual(
                    try runCommand(
                        "/usr/bin/psql",
                        [database, "-c", "DROP TRIGGER applepay_test_slow_commit ON applepay_replay_claims"]
                    ).status, 0)
                let retry = try await HTTP.post("\(service.base)/v1/decrypt", token)
                XCTAssertEqual(retry.status, 200, "released: the retry is accepted: \(retry.text)")
            } else {
                XCTAssertTrue(log.contains("error") && log.contains("could NOT be released"), log)
                let hashes = try runCommand(
                    "/usr/bin/psql",
                    [
                        database, "-tA", "-c",
                        "SELECT left(encode(sha256(claim_key), 'hex'), 16) FROM applepay_replay_claims",
                    ]
                )
                .output.split(separator: "\n").map(String.init)
                XCTAssertTrue(
                    hashes.contains { log.contains("claim_sha256=\($0)") },
                    "the logged hash finds the row: \(hashes) in \(log)")
                XCTAssertFalse(
                    log.contains(String(decoding: token, as: UTF8.self).prefix(40)), "the token is never logged")
            }
        }
    }

    /// /readyz answers from a probe at most a second old: 40 calls in a row reach the database a couple
    /// of times, not 40. Counted in the server's statement log (APPLEPAY_TEST_PG_LOG, set by ci.sh),
    /// with log_statement turned on for this test's database only.
    func testReadinessProbesTheDatabaseAtMostOncePerSecond() async throws {
        guard let logPath = ProcessInfo.processInfo.environment["APPLEPAY_TEST_PG_LOG"] else {
            if ProcessInfo.processInfo.environment["APPLEPAY_TEST_REQUIRE_POSTGRES"] == "1" {
                XCTFail("APPLEPAY_TEST_PG_LOG is not set")
            }
            throw XCTSkip("APPLEPAY_TEST_PG_LOG (the test server's log file) is not set (ci.sh sets it)")
        }
        let database = try freshDatabase()
        let name = URLComponents(string: database)!.path.dropFirst()
        XCTAssertEqual(
            try runCommand("/usr/bin/psql", [adminURL, "-c", "ALTER DATABASE \(name) SET log_statement = 'all'"])
                .status, 0)
        let keys = MintedKeys()
        let merchant = keys.pki.makeMerchant(identifier: "merchant.com.example.ready")
        let service = try ServiceProcess([
            "--merchant", keys.writeMerchant(merchant, as: "m"), "--trust-root", keys.rootPath, "--replay-store",
            database,
        ])
        func probes() -> Int {
            let log = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
            return log.split(separator: "\n").filter { $0.hasSuffix("SELECT 1") }.count
        }
        let before = probes()
        let start = Date()
        for _ in 0..<40 {
            let ready = try await HTTP.get("\(service.base)/readyz")
            XCTAssertEqual(ready.status, 200, ready.text)
        }
        let seconds = Date().timeIntervalSince(start)
        try await Task.sleep(for: .milliseconds(300))  // the server's log is written asynchronously
        let made = probes() - before
        XCTAssertGreaterThanOrEqual(made, 1, "the database was asked at least once (is log_statement logging?)")
        XCTAssertLessThanOrEqual(made, Int(seconds) + 2, "40 calls in \(seconds) s made \(made) probes")
    }

    func testStoppedDatabaseGives503AndTheServiceRecovers() async throws {
        let database = try freshDatabase()
        let keys = MintedKeys()
        let merchant = keys.pki.makeMerchant(identifier: "merchant.com.example.outage")
        let service = try ServiceProcess([
            "--merchant", keys.writeMerchant(merchant, as: "m"), "--trust-root", keys.rootPath,
            "--replay-store", database, "--store-timeout-ms", "1500",
        ])
        let before = try await HTTP.post("\(service.base)/v1/decrypt", keys.token(for: merchant))
        XCTAssertEqual(before.status, 200, before.text)

        XCTAssertEqual(try control("stop"), 0)
        let token = keys.token(for: merchant)
        do {
            let during = try await HTTP.post("\(service.base)/v1/decrypt", token)
            XCTAssertEqual(during.status, 503, during.text)
            XCTAssertEqual(during.code, "replayStoreUnavailable")
            XCTAssertFalse(during.text.contains("payment\""), "nothing decrypted is returned without the check")
            let ready = try await HTTP.get("\(service.base)/readyz")
            XCTAssertEqual(ready.status, 503)
            let malformed = try await HTTP.post("\(service.base)/v1/decrypt", Data("{}".utf8))
            XCTAssertEqual(malformed.status, 422, "a token that fails verification needs no store")
        }
        XCTAssertEqual(try control("start"), 0)

        // The same token, refused while the store was down, was never claimed: it is accepted now.
        try await waitFor(seconds: 30) { try await HTTP.get("\(service.base)/readyz").status == 200 }
        let after = try await HTTP.post("\(service.base)/v1/decrypt", token)
        XCTAssertEqual(after.status, 200, after.text)
        let again = try await HTTP.post("\(service.base)/v1/decrypt", token)
        XCTAssertEqual(again.code, "replayedTransaction")
    }

    func testExpiredClaimsArePrunedAtStart() async throws {
        let database = try freshDatabase()
        let keys = MintedKeys()
        let merchant = keys.pki.makeMerchant(identifier: "merchant.com.example.prune")
        let options = [
            "--merchant", keys.writeMerchant(merchant, as: "m"), "--trust-root", keys.rootPath, "--replay-store",
            database,
        ]
        do {
            let service = try ServiceProcess(options)
            _ = try await HTTP.post("\(service.base)/v1/decrypt", keys.token(for: merchant))
        }
        XCTAssertEqual(
            try runCommand(
                "/usr/bin/psql",
                [database, "-c", "UPDATE applepay_replay_claims SET expires_at = now() - interval '1 second'"]
            ).status, 0)
        let restarted = try ServiceProcess(options)
        try await waitFor {
            try runCommand("/usr/bin/psql", [database, "-tA", "-c", "SELECT count(*) FROM applepay_replay_claims"])
                .output.hasPrefix("0")
        }
        _ = restarted
    }
}
