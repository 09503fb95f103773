// Operating the service: SIGHUP key rotation under load, SIGTERM drain, TLS with a required client
// certificate, and start-up refusals.
import ApplePayDecryption
import Foundation
import XCTest

final class OperationsTests: XCTestCase {
    func testSIGHUPRotatesKeysWithRequestsInFlightAndKeepsTheOldSetOnFailure() async throws {
        let keys = MintedKeys()
        let old = keys.pki.makeMerchant(identifier: "merchant.com.example.old")
        let new = keys.pki.makeMerchant(identifier: "merchant.com.example.new")
        let spec = keys.writeMerchant(old, as: "current")
        let service = try ServiceProcess(["--merchant", spec, "--trust-root", keys.rootPath])
        let tokens = (0..<240).map { _ in keys.token(for: old) }

        // Requests in flight while the keys are reloaded (same keys) again and again.
        let base = service.base
        let pid = service.process.processIdentifier
        let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
            var next = 0
            var statuses: [Int] = []
            for _ in 0..<8 {
                let token = tokens[next]; next += 1
                group.addTask { try await HTTP.post("\(base)/v1/decrypt", token).status }
            }
            while let status = try await group.next() {
                statuses.append(status)
                if statuses.count % 30 == 0 { kill(pid, SIGHUP) }
                if next < tokens.count {
                    let token = tokens[next]; next += 1
                    group.addTask { try await HTTP.post("\(base)/v1/decrypt", token).status }
                }
            }
            return statuses
        }
        XCTAssertEqual(statuses.count, tokens.count)
        XCTAssertEqual(
            statuses.filter { $0 != 200 }.count, 0, "requests failed during reloads: \(statuses.filter { $0 != 200 })")

        // A reload that fails (the key file is garbage) keeps the old set.
        try "not a key".write(toFile: keys.scratch.path("current.key.pem"), atomically: true, encoding: .utf8)
        service.signal(SIGHUP)
        try await waitFor { service.log.contains("reload failed") }
        let stillOld = try await HTTP.post("\(service.base)/v1/decrypt", keys.token(for: old))
        XCTAssertEqual(stillOld.status, 200, stillOld.text)

        // Rotation: the same spec now names the new merchant's files.
        let reloads = { service.log.components(separatedBy: "merchant keys reloaded").count }
        let before = reloads()
        _ = keys.writeMerchant(new, as: "current")
        service.signal(SIGHUP)
        try await waitFor { reloads() > before }
        let fresh = try await HTTP.post("\(service.base)/v1/decrypt", keys.token(for: new))
        XCTAssertEqual(fresh.status, 200, fresh.text)
        let retired = try await HTTP.post("\(service.base)/v1/decrypt", keys.token(for: old))
        XCTAssertEqual(retired.code, "unknownMerchantKey")
        // A SIGHUP sent under load may still be pending when the key file turns to garbage, so the
        // number of failed reloads is not fixed; the metric must count each one the log reports.
        let metrics = try await HTTP.get("\(service.base)/metrics").text
        let failures = service.log.components(separatedBy: "reload failed").count - 1
        XCTAssertGreaterThanOrEqual(failures, 1)
        XCTAssertTrue(
            metrics.contains("applepay_key_reloads_total{result=\"failed\"} \(failures)\n"),
            "\(failures) failures logged: \(metrics)")
    }

    func testSIGTERMFinishesRequestsInFlightThenExitsZero() async throws {
        let keys = MintedKeys()
        let merchant = keys.pki.makeMerchant(identifier: "merchant.com.example.drain")
        let service = try ServiceProcess([
            "--merchant", keys.writeMerchant(merchant, as: "m"), "--trust-root", keys.rootPath,
        ])
        // Five requests with their headers and half their body sent: in flight when SIGTERM arrives.
        var connections: [(RawConnection, Data)] = []
        for _ in 0..<5 {
            let token = keys.token(for: merchant)
            let connection = try XCTUnwrap(RawConnection(port: service.port))
            connection.send(
                Data(
                    "POST /v1/decrypt HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: \(token.count)\r\nConnection: close\r\n\r\n"
                        .utf8))
            connection.send(token.prefix(token.count / 2))
            connections.append((connection, token.suffix(from: token.count / 2)))
        }
        // A batch in flight too.
        let batchTokens = (0..<50).map { _ in keys.token(for: merchant) }
        let batchBody = Data(batchTokens.map { String(decoding: $0, as: UTF8.self) }.joined(separator: "\n").utf8)
        let batch = try XCTUnwrap(RawConnection(port: service.port))
        batch.send(
            Data(
                "POST /v1/decrypt/batch HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: \(batchBody.count)\r\nConnection: close\r\n\r\n"
                    .utf8))
        batch.send(batchBody.prefix(batchBody.count / 2))
        usleep(300_000)

        service.signal(SIGTERM)
        usleep(500_000)
        XCTAssertTrue(service.process.isRunning, "the service waits for requests in flight")
        XCTAssertNil(
            RawConnection(port: service.port).flatMap { c -> RawConnection? in
                c.send(Data("GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".utf8))
                return c.receiveAll().contains("200 OK") ? c : nil
            }, "no new request is served after SIGTERM")

        for (connection, rest) in connections { connection.send(rest) }
        batch.send(batchBody.suffix(from: batchBody.count / 2))
        for (connection, _) in connections {
            let response = connection.receiveAll()
            XCTAssertTrue(response.hasPrefix("HTTP/1.1 200"), response)
            XCTAssertTrue(response.contains("\"payment\":"))
        }
        let batchResponse = batch.receiveAll()
        XCTAssertTrue(batchResponse.hasPrefix("HTTP/1.1 200"), batchResponse)
        XCTAssertEqual(
            batchResponse.components(separatedBy: "\"payment\":").count - 1, 50, "every batch line came back")
        XCTAssertEqual(service.waitForExit(), 0, service.log)
    }

    /// TLS cannot shut its input alone (NIOSSL refuses the half-close the body deadline uses over plain
    /// HTTP): a body trickled over TLS must still be cut off at --request-timeout, by closing the
    /// connection. Before, the deadline's timer fired, the half-close failed silently, and the
    /// connection stayed with its client for as long as it trickled.
    func testTheBodyDeadlineHoldsOverTLS() async throws {
        let dir = Scratch()
        let made = try runCommand(
            "/usr/bin/openssl",
            [
                "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "2",
                "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                "-keyout", dir.path("server.key"), "-out", dir.path("server.pem"),
            ])
        XCTAssertEqual(made.status, 0, made.output)
        let service = try ServiceProcess(
            Bundled.options + [
                "--tls-cert", dir.path("server.pem"), "--tls-key", dir.path("server.key"),
                "--request-timeout", "2",
            ], scheme: "https")
        let body = dir.write("body.json", String(repeating: " ", count: 400))
        let started = Date()
        // 400 bytes at 20 bytes/s would take 20 s; the deadline is 2 s.
        _ = try runCommand(
            "/usr/bin/curl",
            [
                "-sS", "--max-time", "25", "--cacert", dir.path("server.pem"), "--limit-rate", "20",
                "-H", "Content-Type: application/json", "--data-binary", "@\(body)",
                "https://127.0.0.1:\(service.port)/v1/decrypt",
            ])
        let elapsed = Date().timeIntervalSince(started)
        XCTAssertLessThan(
            elapsed, 12, "a body trickled over TLS held its connection for \(elapsed) s past a 2 s --request-timeout")
    }

    func testTLSWithARequiredClientCertificate() async throws {
        let dir = Scratch()
        let openssl = "/usr/bin/openssl"
        func ssl(_ arguments: [String]) throws {
            let result = try runCommand(openssl, arguments)
            XCTAssertEqual(result.status, 0, result.output)
        }
        // A CA, a server certificate for 127.0.0.1, and a client certificate, all made now.
        try ssl([
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "2", "-subj",
            "/CN=test CA",
            "-keyout", dir.path("ca.key"), "-out", dir.path("ca.pem"),
        ])
        let ext = dir.write("server.ext", "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n")
        try ssl([
            "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-subj", "/CN=127.0.0.1",
            "-keyout", dir.path("server.key"), "-out", dir.path("server.csr"),
        ])
        try ssl([
            "x509", "-req", "-in", dir.path("server.csr"), "-CA", dir.path("ca.pem"), "-CAkey", dir.path("ca.key"),
            "-CAcreateserial",
            "-days", "2", "-extfile", ext, "-out", dir.path("server.pem"),
        ])
        let clientExt = dir.write("client.ext", "extendedKeyUsage=clientAuth\n")
        try ssl([
            "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-subj", "/CN=authorizer",
            "-keyout", dir.path("client.key"), "-out", dir.path("client.csr"),
        ])
        try ssl([
            "x509", "-req", "-in", dir.path("client.csr"), "-CA", dir.path("ca.pem"), "-CAkey", dir.path("ca.key"),
            "-CAcreateserial",
            "-days", "2", "-extfile", clientExt, "-out", dir.path("client.pem"),
        ])
        // A client certificate from another CA.
        try ssl([
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "2", "-subj",
            "/CN=stranger",
            "-keyout", dir.path("stranger.key"), "-out", dir.path("stranger.pem"),
        ])

        let service = try ServiceProcess(
            Bundled.options + [
                "--tls-cert", dir.path("server.pem"), "--tls-key", dir.path("server.key"),
                "--client-ca", dir.path("ca.pem"),
            ], scheme: "https")
        let url = "https://127.0.0.1:\(service.port)/v1/decrypt"
        let token = "\(Paths.vectors)/tokens/ec-3dsecure.json"
        let base = [
            "-sS", "--max-time", "20", "--cacert", dir.path("ca.pem"), "-o", "/dev/stderr", "-w", "%{http_code}",
        ]
        let good = try runCommand(
            "/usr/bin/curl",
            base + [
                "--cert", dir.path("client.pem"), "--key", dir.path("client.key"), "--data-binary", "@\(token)", url,
            ])
        XCTAssertEqual(good.status, 0, good.output)
        XCTAssertTrue(good.output.hasSuffix("200"), good.output)
        XCTAssertTrue(good.output.contains("\"payment\":"))

        let none = try runCommand("/usr/bin/curl", base + ["--data-binary", "@\(token)", url])
        XCTAssertNotEqual(none.status, 0, "a handshake without a client certificate must fail: \(none.output)")
        XCTAssertFalse(none.output.contains("\"payment\""))
        let stranger = try runCommand(
            "/usr/bin/curl",
            base + [
                "--cert", dir.path("stranger.pem"), "--key", dir.path("stranger.key"), "--data-binary", "@\(token)",
                url,
            ])
        XCTAssertNotEqual(stranger.status, 0, "a certificate from another CA must fail: \(stranger.output)")
        let plain = try runCommand(
            "/usr/bin/curl", ["-sS", "--max-time", "10", "http://127.0.0.1:\(service.port)/healthz"])
        XCTAssertFalse(plain.output.contains("alive"), "plain HTTP is not served on the TLS port")
    }

    func testBadConfigurationRefusesToStart() throws {
        for arguments in [
            ["--merchant", "cert=/nonexistent.pem,key=/nonexistent.key"],
            Bundled.options + ["--api-key-env", "SURELY_UNSET_VARIABLE_FOR_TEST"],
            Bundled.options + ["--replay-store", "redis://localhost"],
            Bundled.options + ["--tls-cert", "/nonexistent.pem"],
        ] {
            let service = try ServiceProcess(arguments, expectStart: false)
            let status = service.waitForExit()
            XCTAssertNotNil(status, "\(arguments)")
            XCTAssertNotEqual(status, 0, "\(arguments)")
        }
    }
}

func waitFor(seconds: Double = 20, _ condition: () async throws -> Bool) async throws {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if try await condition() { return }
        try await Task.sleep(for: .milliseconds(50))
    }
    XCTFail("condition not met within \(seconds) s")
}
