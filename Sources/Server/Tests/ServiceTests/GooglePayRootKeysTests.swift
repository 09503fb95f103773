// Google's root keys in the running service: fetched from a URL (a real HTTP server on loopback) and
// refreshed after its Cache-Control max-age, kept when the server fails, required at start; and read
// from a file that SIGHUP rereads, a broken file keeping the old keys.
import ApplePayDecryption
import ApplePayTestSupport
import Foundation
import XCTest

/// Tests/keys-server/keys-server.py as a child process: serves DIR/keys.json with DIR/max-age, or 503
/// while DIR/fail exists, or 302 while DIR/redirect exists, or trickles the body while DIR/trickle does.
final class KeysServer {
    let process = Process()
    let scratch = Scratch()
    private(set) var port = 0

    /// `tls`: serve HTTPS with this certificate and key (PEM paths).
    init(document: [UInt8], maxAge: Int, tls: (cert: String, key: String)? = nil) throws {
        serve(document, maxAge: maxAge)
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments =
            [
                "python3", Paths.package.appendingPathComponent("Tests/keys-server/keys-server.py").path,
                scratch.url.path,
            ] + (tls.map { [$0.cert, $0.key] } ?? [])
        let stdout = Pipe()
        process.standardOutput = stdout
        process.standardError = FileHandle(forWritingAtPath: "/dev/null")
        try process.run()
        var seen = ""
        while !seen.contains("\n") {
            let chunk = stdout.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            seen += String(decoding: chunk, as: UTF8.self)
        }
        guard let line = seen.split(separator: "\n").first, line.hasPrefix("port "), let port = Int(line.dropFirst(5))
        else { throw CocoaError(.fileReadCorruptFile) }
        self.port = port
    }

    deinit {
        // SIGKILL: a SIGTERM ignored by the parent is ignored by python too.
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }

    var url: String { "http://127.0.0.1:\(port)/keys.json" }

    func serve(_ document: [UInt8], maxAge: Int) {
        _ = scratch.write("max-age", String(maxAge))
        _ = scratch.write("keys.json", String(decoding: document, as: UTF8.self))
    }

    func fail(_ failing: Bool) { flag("fail", failing) }

    /// Answers 302 to this URL.
    func redirect(to url: String) { _ = scratch.write("redirect", url) }

    /// Sends the head at once, then the body a byte a second.
    func trickle(_ trickling: Bool) { flag("trickle", trickling) }

    private func flag(_ name: String, _ on: Bool) {
        if on {
            _ = scratch.write(name, "")
        } else {
            try? FileManager.default.removeItem(atPath: scratch.path(name))
        }
    }
}

final class GooglePayRootKeysTests: XCTestCase {
    /// Two roots; tokens of both sealed to the first factory's merchant key, which the service holds.
    let first = GooglePayKeys()
    let second = GooglePayTestFactory()

    func firstToken() -> Data { first.token(now: Date()) }

    func secondToken() -> Data {
        var options = GooglePayTestFactory.Options(now: Date())
        options.merchantPublicKey = Array(Data(base64Encoded: first.factory.merchantPublicKeyBase64(0))!)
        return Data(second.mint(options).token)
    }

    func serviceOptions(rootKeys: String) -> [String] {
        let key = first.scratch.write("merchant.pem", first.factory.merchantKeyPEM(0))
        return [
            "--google-root-keys", rootKeys, "--google-recipient-id", first.recipientId, "--google-merchant-key", key,
        ]
    }

    func testRootKeysFromAURLAreRefreshedAfterMaxAgeAndKeptWhenTheServerFails() async throws {
        let server = try KeysServer(document: first.factory.rootKeysDocument(now: Date()), maxAge: 2)
        let service = try ServiceProcess(
            serviceOptions(rootKeys: server.url) + ["--insecure-testing-allow-http-root-keys"])
        XCTAssertTrue(service.log.contains("--insecure-testing-allow-http-root-keys"), service.log)
        let decrypted = try await HTTP.post("\(service.base)/v1/decrypt", firstToken())
        XCTAssertEqual(decrypted.status, 200, decrypted.text)
        let unknownRoot = try await HTTP.post("\(service.base)/v1/decrypt", secondToken())
        XCTAssertEqual(unknownRoot.code, "invalidSignature", unknownRoot.text)

        // Google rotates: the server now lists the second root only; after max-age the service has it.
        server.serve(second.rootKeysDocument(now: Date()), maxAge: 2)
        try await waitFor {
            try await HTTP.post("\(service.base)/v1/decrypt", self.secondToken()).status == 200
        }
        let retired = try await HTTP.post("\(service.base)/v1/decrypt", firstToken())
        XCTAssertEqual(retired.code, "invalidSignature", retired.text)
        XCTAssertTrue(service.log.contains("Google root keys refreshed"), service.log)

        // The server fails: the refreshes fail loudly and the last good document stays in use.
        server.fail(true)
        try await waitFor { service.log.contains("Google root keys refresh from") }
        XCTAssertTrue(service.log.contains("stays in use"), service.log)
        let kept = try await HTTP.post("\(service.base)/v1/decrypt", secondToken())
        XCTAssertEqual(kept.status, 200, kept.text)
        let metrics = try await HTTP.get("\(service.base)/metrics").text
        XCTAssertTrue(metrics.contains("applepay_google_root_keys_refreshes_total{result=\"failed\"}"), metrics)
    }

    func testSIGHUPRefetchesRootKeysFromTheURLAtOnce() async throws {
        let server = try KeysServer(document: first.factory.rootKeysDocument(now: Date()), maxAge: 3600)
        let service = try ServiceProcess(
            serviceOptions(rootKeys: server.url) + ["--insecure-testing-allow-http-root-keys"])
        server.serve(second.rootKeysDocument(now: Date()), maxAge: 3600)
        service.signal(SIGHUP)
        try await waitFor { service.log.contains("Google root keys refetched on SIGHUP") }
        XCTAssertTrue(service.log.contains("merchant keys reloaded"), service.log)
        let switched = try await HTTP.post("\(service.base)/v1/decrypt", secondToken())
        XCTAssertEqual(switched.status, 200, switched.text)
        service.signal(SIGTERM)
        XCTAssertEqual(service.waitForExit(), 0, "the fetcher's client is shut down on drain: \(service.log)")
    }

    func testStartFailsWhenTheFirstFetchFails() throws {
        let server = try KeysServer(document: first.factory.rootKeysDocument(now: Date()), maxAge: 60)
        server.fail(true)
        let refused = try ServiceProcess(
            serviceOptions(rootKeys: server.url) + ["--insecure-testing-allow-http-root-keys"], expectStart: false)
        XCTAssertEqual(refused.waitForExit(), 2, refused.log)
        XCTAssertTrue(refused.log.contains("first fetch failed"), refused.log)
        XCTAssertTrue(refused.log.contains("503"), refused.log)

        // A document the engine's strict reader refuses is a failed fetch too.
        server.fail(false)
        server.serve(Array(#"{"keys": [], "keys": []}"#.utf8), maxAge: 60)
        let malformed = try ServiceProcess(
            serviceOptions(rootKeys: server.url) + ["--insecure-testing-allow-http-root-keys"], expectStart: false)
        XCTAssertEqual(malformed.waitForExit(), 2, malformed.log)
        XCTAssertTrue(malformed.log.contains("first fetch failed"), malformed.log)

        // Plain http needs the loudly named test option.
        let plain = try ServiceProcess(serviceOptions(rootKeys: server.url), expectStart: false)
        XCTAssertNotEqual(plain.waitForExit(), 0, plain.log)
        XCTAssertTrue(plain.log.contains("https://"), plain.log)
    }

    /// An https:// URL is checked against the system's CA store: a server whose certificate no system CA
    /// issued (self-signed here) is a failed fetch, and the service does not start.
    func testAnHTTPSServerTheSystemDoesNotTrustIsRefused() throws {
        let cert = first.scratch.path("tls.cert.pem")
        let key = first.scratch.path("tls.key.pem")
        let made = try runCommand(
            "/usr/bin/openssl",
            [
                "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", key,
                "-out", cert, "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
            ])
        XCTAssertEqual(made.status, 0, made.output)
        let server = try KeysServer(
            document: first.factory.rootKeysDocument(now: Date()), maxAge: 60, tls: (cert, key))
        let refused = try ServiceProcess(
            serviceOptions(rootKeys: "https://127.0.0.1:\(server.port)/keys.json"), expectStart: false)
        // AsyncHTTPClient retries a failed handshake until the fetch's deadline (15 s), then says why.
        XCTAssertEqual(refused.waitForExit(seconds: 45), 2, refused.log)
        XCTAssertTrue(refused.log.contains("first fetch failed"), refused.log)
        XCTAssertTrue(refused.log.uppercased().contains("CERTIFICATE"), refused.log)
    }

    /// Cache-Control max-age is bounded (a day): one as large as 18446744073709552 s neither crashes the
    /// service at start nor at a refresh.
    func testAHugeMaxAgeIsBoundedAndCrashesNothing() async throws {
        let server = try KeysServer(
            document: first.factory.rootKeysDocument(now: Date()), maxAge: 18_446_744_073_709_552)
        let service = try ServiceProcess(
            serviceOptions(rootKeys: server.url) + ["--insecure-testing-allow-http-root-keys"])
        XCTAssertTrue(service.log.contains("86400"), "max-age bounded to a day: \(service.log)")
        let decrypted = try await HTTP.post("\(service.base)/v1/decrypt", firstToken())
        XCTAssertEqual(decrypted.status, 200, decrypted.text)

        // A refresh (SIGHUP's) reading the same max-age: still alive and serving.
        service.signal(SIGHUP)
        try await waitFor { service.log.contains("Google root keys refetched on SIGHUP") }
        let after = try await HTTP.post("\(service.base)/v1/decrypt", firstToken())
        XCTAssertEqual(after.status, 200, after.text)
        XCTAssertTrue(service.process.isRunning, service.log)
    }

    /// No redirect is followed (here http to another loopback server serving other roots): a 3xx is a
    /// failed fetch that names its status, so a redirect can neither leave https nor pick the keys.
    func testARedirectIsAFailedFetch() throws {
        let elsewhere = try KeysServer(document: second.rootKeysDocument(now: Date()), maxAge: 60)
        let server = try KeysServer(document: first.factory.rootKeysDocument(now: Date()), maxAge: 60)
        server.redirect(to: elsewhere.url)
        let refused = try ServiceProcess(
            serviceOptions(rootKeys: server.url) + ["--insecure-testing-allow-http-root-keys"], expectStart: false)
        XCTAssertEqual(refused.waitForExit(), 2, refused.log)
        XCTAssertTrue(refused.log.contains("first fetch failed"), refused.log)
        XCTAssertTrue(refused.log.contains("302"), refused.log)
    }

    /// SIGHUP reloads the merchant keys at once even while the keys server trickles its body, and the
    /// refetch gives up at the fetch's deadline (head and body), keeping the last good document.
    func testATricklingKeysServerHoldsNeitherSIGHUPNorTheFetchPastItsDeadline() async throws {
        let server = try KeysServer(document: first.factory.rootKeysDocument(now: Date()), maxAge: 3600)
        let service = try ServiceProcess(
            serviceOptions(rootKeys: server.url) + ["--insecure-testing-allow-http-root-keys"])
        server.trickle(true)
        let reloads = { service.log.components(separatedBy: "merchant keys reloaded").count }
        let before = reloads()
        service.signal(SIGHUP)
        try await waitFor { reloads() > before }
        // Reloaded before the refetch gave up at its deadline, not after it (no wall-clock bound: CI is shared).
        XCTAssertFalse(service.log.contains("refetch on SIGHUP failed"), service.log)
        try await waitFor(seconds: 40) { service.log.contains("refetch on SIGHUP failed") }
        XCTAssertTrue(service.log.contains("no complete answer within 15 s"), service.log)
        let kept = try await HTTP.post("\(service.base)/v1/decrypt", firstToken())
        XCTAssertEqual(kept.status, 200, kept.text)
    }

    /// A refreshed document none of whose keys is valid now (all expired) is a failed refresh: the last
    /// good document stays in use.
    func testARefreshedDocumentWithEveryKeyExpiredKeepsTheLastGoodOne() async throws {
        let server = try KeysServer(document: first.factory.rootKeysDocument(now: Date()), maxAge: 2)
        let service = try ServiceProcess(
            serviceOptions(rootKeys: server.url) + ["--insecure-testing-allow-http-root-keys"])
        let past = Int64(Date().timeIntervalSince1970 * 1000) - 86_400_000
        server.serve(
            first.factory.rootKeysDocument([
                .init(protocolVersion: "ECv2", keyExpiration: past),
                .init(protocolVersion: "ECv2SigningOnly", keyExpiration: past),
            ]), maxAge: 2)
        try await waitFor { service.log.contains("Google root keys refresh from") }
        XCTAssertTrue(service.log.contains("no key in the document is valid now"), service.log)
        let kept = try await HTTP.post("\(service.base)/v1/decrypt", firstToken())
        XCTAssertEqual(kept.status, 200, kept.text)
    }

    func testSIGHUPRereadsTheRootKeysFileAndABrokenFileKeepsTheOldKeys() async throws {
        let path = first.scratch.write(
            "roots.json", String(decoding: first.factory.rootKeysDocument(now: Date()), as: UTF8.self))
        let service = try ServiceProcess(serviceOptions(rootKeys: path))
        let before = try await HTTP.post("\(service.base)/v1/decrypt", firstToken())
        XCTAssertEqual(before.status, 200, before.text)

        let reloads = { service.log.components(separatedBy: "merchant keys reloaded").count }
        var count = reloads()
        _ = first.scratch.write("roots.json", String(decoding: second.rootKeysDocument(now: Date()), as: UTF8.self))
        service.signal(SIGHUP)
        try await waitFor { reloads() > count }
        let switched = try await HTTP.post("\(service.base)/v1/decrypt", secondToken())
        XCTAssertEqual(switched.status, 200, switched.text)
        let retired = try await HTTP.post("\(service.base)/v1/decrypt", firstToken())
        XCTAssertEqual(retired.code, "invalidSignature", retired.text)

        // A broken file (duplicate members: the strict reader refuses it) keeps the second root in use.
        count = reloads()
        _ = first.scratch.write("roots.json", #"{"keys": [], "keys": []}"#)
        service.signal(SIGHUP)
        try await waitFor { service.log.contains("reload failed") }
        XCTAssertEqual(reloads(), count, service.log)
        let kept = try await HTTP.post("\(service.base)/v1/decrypt", secondToken())
        XCTAssertEqual(kept.status, 200, kept.text)
    }
}
