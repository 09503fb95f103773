// POST /v1/merchant-session against a real HTTPS gateway on loopback (Python's ssl module) that requires
// a client certificate from a test CA and records every connection, handshake and request it sees.
import Foundation
import XCTest

/// The test PKI, made once with the openssl tool: one CA issues the gateway's server certificate
/// (127.0.0.1) and the merchant identity; `stranger` is self-signed, so the gateway refuses it.
final class GatewayPKI: @unchecked Sendable {  // immutable after init
    let scratch = Scratch()
    static let merchantID = "merchant.com.example.store"
    static let shared = GatewayPKI()

    func path(_ name: String) -> String { scratch.path(name) }
    var identity: String { "cert=\(path("merchant.pem")),key=\(path("merchant.key"))" }
    var stranger: String { "cert=\(path("stranger.pem")),key=\(path("stranger.key"))" }

    private init() {
        func ssl(_ arguments: [String]) {
            let result = try! runCommand("/usr/bin/openssl", arguments)
            precondition(result.status == 0, result.output)
        }
        let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
        ssl(["req", "-x509"] + ec + ["-days", "2", "-subj", "/CN=Test Gateway CA", "-keyout", path("ca.key"), "-out", path("ca.pem"),
             "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign"])
        for (name, subject, ext) in [
            ("gateway", "/CN=127.0.0.1", "basicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\nsubjectAltName=IP:127.0.0.1,DNS:localhost\n"),
            ("merchant", "/UID=\(Self.merchantID)/CN=Merchant ID: \(Self.merchantID)", "basicConstraints=CA:FALSE\nextendedKeyUsage=clientAuth\n"),
        ] {
            let extfile = scratch.write("\(name).ext", ext)
            ssl(["req", "-new"] + ec + ["-subj", subject, "-keyout", path("\(name).key"), "-out", path("\(name).csr")])
            ssl(["x509", "-req", "-in", path("\(name).csr"), "-CA", path("ca.pem"), "-CAkey", path("ca.key"),
                 "-set_serial", String(Int.random(in: 1...Int(Int32.max))), "-days", "2", "-extfile", extfile, "-out", path("\(name).pem")])
        }
        ssl(["req", "-x509"] + ec + ["-days", "2", "-subj", "/CN=Not The Merchant", "-keyout", path("stranger.key"), "-out", path("stranger.pem")])
    }
}

/// Python 3's http.server over ssl, client certificate required. Writes one JSON line per event to its
/// log: `connection` (TCP accepted), `handshake` or `handshakeFailed`, and `request` (path, body, the
/// client certificate's commonName). Answers every POST with a fixed status and body, or never.
final class TestGateway {
    static let script = #"""
    import http.server, json, os, socketserver, ssl, sys, threading, time
    cert, key, ca, portfile, logfile, mode = sys.argv[1:7]
    status = int(sys.argv[7]) if mode == "answer" else 0
    answer = open(sys.argv[8], "rb").read() if mode == "answer" else b""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    context.load_verify_locations(ca)
    context.verify_mode = ssl.CERT_REQUIRED
    lock = threading.Lock()
    def record(event):
        with lock, open(logfile, "a") as f:
            f.write(json.dumps(event) + "\n")
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            subject = dict(pair[0] for pair in self.connection.getpeercert()["subject"])
            record({"event": "request", "path": self.path, "body": body.decode("utf-8"),
                    "contentType": self.headers.get("Content-Type"), "client": subject.get("commonName")})
            if mode == "hang":
                time.sleep(600)
                return
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)
        def log_message(self, *args):
            pass
    class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
        daemon_threads = True
        def get_request(self):
            sock, address = self.socket.accept()
            record({"event": "connection"})
            try:
                tls = context.wrap_socket(sock, server_side=True)
            except Exception as error:
                record({"event": "handshakeFailed", "error": str(error)})
                sock.close()
                raise OSError(str(error))
            record({"event": "handshake"})
            return tls, address
    server = Server(("127.0.0.1", 0), Handler)
    with open(portfile + ".tmp", "w") as f:
        f.write(str(server.server_address[1]))
    os.rename(portfile + ".tmp", portfile)
    server.serve_forever()
    """#

    enum Mode {
        case answer(status: Int, body: Data)
        case hang
    }

    let process = Process()
    let scratch = Scratch()
    let port: Int
    let logPath: String

    init(_ mode: Mode, pki: GatewayPKI = .shared) throws {
        let script = scratch.write("gateway.py", Self.script)
        logPath = scratch.path("events.jsonl")
        FileManager.default.createFile(atPath: logPath, contents: nil)
        let portPath = scratch.path("port")
        var arguments = [script, pki.path("gateway.pem"), pki.path("gateway.key"), pki.path("ca.pem"), portPath, logPath]
        switch mode {
        case let .answer(status, body):
            let bodyPath = scratch.path("answer.json")
            try body.write(to: URL(fileURLWithPath: bodyPath))
            arguments += ["answer", String(status), bodyPath]
        case .hang:
            arguments += ["hang"]
        }
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        let errPath = logPath + ".err"
        FileManager.default.createFile(atPath: errPath, contents: nil)
        process.standardError = FileHandle(forWritingAtPath: errPath)
        try process.run()
        let deadline = Date().addingTimeInterval(30)
        var found = 0
        while Date() < deadline, process.isRunning {
            if let text = try? String(contentsOfFile: portPath, encoding: .utf8), let value = Int(text) { found = value; break }
            usleep(20_000)
        }
        guard found > 0 else {
            kill(process.processIdentifier, SIGKILL)
            throw NSError(domain: "TestGateway", code: 1, userInfo: [NSLocalizedDescriptionKey: "the test gateway did not start: "
                + ((try? String(contentsOfFile: errPath, encoding: .utf8)) ?? "")])
        }
        port = found
    }

    deinit {
        // SIGKILL: the test runner's children inherit a signal mask that blocks SIGTERM.
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }

    var url: String { "https://127.0.0.1:\(port)" }

    var events: [[String: Any]] {
        let text = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
    }

    var requests: [[String: Any]] { events.filter { $0["event"] as? String == "request" } }

    /// The service's options for this gateway: identity, names and the test-only replacement.
    func serviceOptions(identity: String = GatewayPKI.shared.identity, timeout: Int = 10) -> [String] {
        Bundled.options + [
            "--merchant-identity", identity, "--merchant-id", GatewayPKI.merchantID,
            "--merchant-domain", "shop.example.com", "--merchant-domain", "pay.example.org",
            "--merchant-display-name", "Example Store", "--merchant-timeout", String(timeout),
            "--insecure-testing-merchant-gateway", url, "--insecure-testing-merchant-gateway-ca", GatewayPKI.shared.path("ca.pem"),
        ]
    }
}

final class MerchantSessionTests: XCTestCase {
    static let appleURL = "https://apple-pay-gateway.apple.com/paymentservices/paymentSession"

    func session(_ service: ServiceProcess, _ members: [String: String], headers: [String: String] = [:]) async throws -> HTTPResult {
        try await HTTP.post("\(service.base)/v1/merchant-session", JSONSerialization.data(withJSONObject: members), headers: headers)
    }

    func testSessionJSONPassesThroughByteForByteAndTheGatewaySawTheMerchantAndItsCertificate() async throws {
        // Odd spacing, member order and escapes: any decode and re-encode would change these bytes.
        let answer = Data(#"{ "epochTimestamp":1700000000000,"expiresAt":1700003600000, "merchantSessionIdentifier":"SSH9A8F\u00e9","nonce":"5a1f3c","merchantIdentifier":"ABCDEF0123","domainName":"shop.example.com","displayName":"Example Store","signature":"308006092a864886f70d010702a0803080SECRETSIG","retries":0 }"#.utf8)
        let gateway = try TestGateway(.answer(status: 200, body: answer))
        let service = try ServiceProcess(gateway.serviceOptions() + ["--merchant-allow-display-name"])

        let first = try await session(service, ["validationURL": Self.appleURL, "initiativeContext": "Shop.Example.com"])
        XCTAssertEqual(first.status, 200, first.text)
        XCTAssertEqual(first.body, answer, "the session JSON passes through byte for byte")
        XCTAssertEqual(first.headers["content-type"], "application/json")
        XCTAssertEqual(first.headers["cache-control"], "no-store", "a session is single-use: no cache keeps it")

        let second = try await session(service, ["validationURL": "https://apple-pay-gateway-nc-pod3.apple.com/paymentservices/startSession",
                                                 "initiativeContext": "pay.example.org", "displayName": "Other Store ✓"])
        XCTAssertEqual(second.status, 200, second.text)
        XCTAssertEqual(second.body, answer)

        let requests = gateway.requests
        XCTAssertEqual(requests.count, 2, "\(gateway.events)")
        let bodies = requests.map { (try? JSONSerialization.jsonObject(with: Data(($0["body"] as? String ?? "").utf8))) as? [String: String] ?? [:] }
        XCTAssertEqual(requests.first?["path"] as? String, "/paymentservices/paymentSession")
        XCTAssertEqual(bodies.first, ["merchantIdentifier": GatewayPKI.merchantID, "displayName": "Example Store",
                                      "initiative": "web", "initiativeContext": "shop.example.com"])
        XCTAssertEqual(requests.last?["path"] as? String, "/paymentservices/startSession", "an accepted validation URL keeps its path")
        XCTAssertEqual(bodies.last, ["merchantIdentifier": GatewayPKI.merchantID, "displayName": "Other Store ✓",
                                     "initiative": "web", "initiativeContext": "pay.example.org"])
        for request in requests {
            XCTAssertEqual(request["client"] as? String, "Merchant ID: \(GatewayPKI.merchantID)", "the merchant identity certificate was presented")
            XCTAssertEqual(request["contentType"] as? String, "application/json")
        }

        let metrics = try await HTTP.get("\(service.base)/metrics").text
        XCTAssertTrue(metrics.contains(#"applepay_merchant_sessions_total{outcome="ok"} 2"#), metrics)
        service.signal(SIGTERM)
        XCTAssertEqual(service.waitForExit(), 0, "the client is shut down on drain: \(service.log)")
        let log = service.log
        XCTAssertFalse(log.contains("SECRETSIG") || log.contains("merchantSessionIdentifier"), "the session is never logged")
        XCTAssertEqual(log.components(separatedBy: "route=/v1/merchant-session").count - 1, 2, "one log line per request: \(log)")
    }

    func testRefusedValidationURLsAndMembersAre422AndNothingIsSent() async throws {
        let gateway = try TestGateway(.answer(status: 200, body: Data("{}".utf8)))
        let service = try ServiceProcess(gateway.serviceOptions() + ["--api-key-env", "APPLEPAY_TEST_KEY", "--merchant-allow-display-name"],
                                         environment: ["APPLEPAY_TEST_KEY": "k1"])
        let key = ["Authorization": "Bearer k1"]
        let path = "/paymentservices/paymentSession"
        let port = gateway.port
        // The loopback ones point at the live test gateway itself: a proxy that followed them would reach it.
        for url in [
            "https://localhost:\(port)\(path)", "https://127.0.0.1:\(port)\(path)", "https://[::1]:\(port)\(path)",
            "https://127.0.0.1\(path)", "https://2130706433\(path)", "https://localhost\(path)",
            "https://apple-pay-gateway.apple.com:\(port)\(path)", "https://apple-pay-gateway.apple.com:8443\(path)",
            "http://apple-pay-gateway.apple.com\(path)",
            "https://apple-pay-gateway.apple.com@127.0.0.1:\(port)\(path)", "https://user:pass@apple-pay-gateway.apple.com\(path)",
            "https://apple-pay-gateway.apple.com.example.net\(path)", "https://evil-apple-pay-gateway.apple.com\(path)",
            "https://apple-pay-gateway-cert.apple.com\(path)",  // sandbox host, production service
            "https://apple-pay-gateway.apple.com/admin", "https://apple-pay-gateway.apple.com\(path)?next=http://127.0.0.1",
            "https://apple-pay-gateway.apple.com%2f@127.0.0.1\(path)", "",
        ] {
            let result = try await session(service, ["validationURL": url, "initiativeContext": "shop.example.com"], headers: key)
            XCTAssertEqual(result.status, 422, "\(url): \(result.text)")
            XCTAssertEqual(result.headers["cache-control"], "no-store", url)
            XCTAssertEqual(result.code, "invalidValidationURL", url)
            XCTAssertEqual(result.json["field"] as? String, "validationURL", url)
        }
        for (members, field) in [
            (["validationURL": Self.appleURL, "initiativeContext": "other.example.com"], "initiativeContext"),
            (["validationURL": Self.appleURL, "initiativeContext": "127.0.0.1"], "initiativeContext"),
            (["validationURL": Self.appleURL, "initiativeContext": "shop.example.com", "displayName": String(repeating: "x", count: 65)], "displayName"),
            (["validationURL": Self.appleURL, "initiativeContext": "shop.example.com", "displayName": "line\nbreak"], "displayName"),
            (["validationURL": Self.appleURL, "initiativeContext": "shop.example.com", "displayName": "Store\u{202E}erots"], "displayName"),
            (["validationURL": Self.appleURL, "initiativeContext": "shop.example.com", "displayName": "Sto\u{200B}re"], "displayName"),
            (["validationURL": Self.appleURL, "initiativeContext": "shop.example.com", "displayName": "Store\u{2028}Line"], "displayName"),
            (["validationURL": Self.appleURL, "initiativeContext": "shop.example.com", "merchantIdentifier": "merchant.com.other"], "merchantIdentifier"),
            (["initiativeContext": "shop.example.com"], "validationURL"),
            (["validationURL": Self.appleURL], "initiativeContext"),
        ] {
            let result = try await session(service, members, headers: key)
            XCTAssertEqual(result.status, 422, "\(members): \(result.text)")
            XCTAssertEqual(result.code, "invalidRequest", "\(members)")
            XCTAssertEqual(result.json["field"] as? String, field, "\(members)")
        }
        for body in ["not json", "[]", #"{"validationURL": 1, "initiativeContext": "shop.example.com"}"#,
                     #"{"validationURL": "\#(Self.appleURL)", "validationURL": "\#(Self.appleURL)", "initiativeContext": "shop.example.com"}"#] {
            let result = try await HTTP.post("\(service.base)/v1/merchant-session", Data(body.utf8), headers: key)
            XCTAssertEqual(result.status, 422, "\(body): \(result.text)")
            XCTAssertEqual(result.code, "invalidRequest", body)
        }
        let big = try await HTTP.post("\(service.base)/v1/merchant-session", Data(repeating: 0x20, count: 9000), headers: key)
        XCTAssertEqual(big.status, 413, big.text)
        let anonymous = try await session(service, ["validationURL": Self.appleURL, "initiativeContext": "shop.example.com"])
        XCTAssertEqual(anonymous.status, 401, "the API key rule of the other /v1 routes applies")

        XCTAssertTrue(gateway.events.isEmpty, "no connection reached the gateway: \(gateway.events)")
        let metrics = try await HTTP.get("\(service.base)/metrics").text
        XCTAssertTrue(metrics.contains(#"applepay_merchant_sessions_total{outcome="invalidValidationURL"} 18"#), metrics)
    }

    func testGatewayErrorIs502CarryingItsStatusCodeAndStatusMessage() async throws {
        // A bidi override, a zero-width space and a line separator: never passed on as they are.
        let answer = Data(#"{"statusCode":"400","statusMessage":"Payment Services Exception merchantId=ABC unregistered domain\u202Egnp.exe\u200B\u2028Injected"}"#.utf8)
        let gateway = try TestGateway(.answer(status: 400, body: answer))
        let service = try ServiceProcess(gateway.serviceOptions())
        let result = try await session(service, ["validationURL": Self.appleURL, "initiativeContext": "shop.example.com"])
        XCTAssertEqual(result.status, 502, result.text)
        XCTAssertEqual(result.code, "gatewayError")
        XCTAssertEqual(result.json["gatewayStatus"] as? Int, 400)
        XCTAssertEqual(result.json["statusCode"] as? String, "400")
        XCTAssertEqual(result.json["statusMessage"] as? String, "Payment Services Exception merchantId=ABC unregistered domain\u{FFFD}gnp.exe\u{FFFD}\u{FFFD}Injected")
        XCTAssertEqual(result.headers["cache-control"], "no-store")
        XCTAssertEqual(gateway.requests.count, 1)
    }

    func testGatewayThatNeverAnswersIs504WithinTheMerchantTimeout() async throws {
        let gateway = try TestGateway(.hang)
        let service = try ServiceProcess(gateway.serviceOptions(timeout: 2))
        let start = Date()
        let result = try await session(service, ["validationURL": Self.appleURL, "initiativeContext": "shop.example.com"])
        let elapsed = Date().timeIntervalSince(start)
        XCTAssertEqual(result.status, 504, result.text)
        XCTAssertEqual(result.code, "timeout")
        XCTAssertGreaterThan(elapsed, 1.5, "the gateway was given its time")
        XCTAssertLessThan(elapsed, 6, "answered within the --merchant-timeout of 2 s (took \(elapsed) s)")
        XCTAssertEqual(gateway.requests.count, 1, "the request reached the gateway, which held it")
    }

    func testIdentityTheGatewayDoesNotTrustIs502WithAClearError() async throws {
        let gateway = try TestGateway(.answer(status: 200, body: Data("{}".utf8)))
        let service = try ServiceProcess(gateway.serviceOptions(identity: GatewayPKI.shared.stranger))
        let result = try await session(service, ["validationURL": Self.appleURL, "initiativeContext": "shop.example.com"])
        XCTAssertEqual(result.status, 502, result.text)
        XCTAssertTrue(["tlsFailure", "connectionFailed"].contains(result.code ?? ""), result.text)
        XCTAssertTrue((result.json["message"] as? String ?? "").contains("merchant identity certificate"), result.text)
        for detail in ["127.0.0.1", "\(gateway.port)", "SSL", "ALERT", "Error"] {
            XCTAssertFalse(result.text.contains(detail), "transport detail (\(detail)) stays in the log: \(result.text)")
        }
        XCTAssertTrue(gateway.requests.isEmpty, "the gateway served nothing to a stranger")
        XCTAssertTrue(gateway.events.contains { $0["event"] as? String == "handshakeFailed" }, "\(gateway.events)")
    }

    func testUnconfiguredEndpointIs404NotConfigured() async throws {
        let service = try ServiceProcess(Bundled.options)
        let result = try await session(service, ["validationURL": Self.appleURL, "initiativeContext": "shop.example.com"])
        XCTAssertEqual(result.status, 404, result.text)
        XCTAssertEqual(result.code, "merchantSessionNotConfigured")
        let again = try await HTTP.get("\(service.base)/healthz")
        XCTAssertEqual(again.status, 200)
    }

    func testPartialOrBadMerchantConfigurationRefusesToStart() throws {
        let pki = GatewayPKI.shared
        let full = ["--merchant-identity": pki.identity, "--merchant-id": GatewayPKI.merchantID,
                    "--merchant-domain": "shop.example.com", "--merchant-display-name": "Example Store"]
        for left in full.keys.sorted() {
            let arguments = Bundled.options + full.filter { $0.key != left }.flatMap { [$0.key, $0.value] }
            let service = try ServiceProcess(arguments, expectStart: false)
            let status = service.waitForExit()
            XCTAssertNotNil(status, "without \(left)")
            XCTAssertNotEqual(status, 0, "without \(left)")
            XCTAssertTrue(service.log.contains("missing: \(left)"), "the message names \(left): \(service.log)")
        }
        let complete = Bundled.options + full.flatMap { [$0.key, $0.value] }
        for (arguments, says) in [
            (Bundled.options + ["--merchant-sandbox"], "missing: --merchant-identity"),
            (complete.map { $0 == pki.identity ? "cert=/nonexistent.pem,key=/nonexistent.key" : $0 }, "/nonexistent.pem"),
            (complete.map { $0 == pki.identity ? "cert=\(pki.path("merchant.pem")),key=\(pki.path("stranger.key"))" : $0 }, "does not belong"),
            (complete.map { $0 == "Example Store" ? String(repeating: "x", count: 65) : $0 }, "displayName"),
            (complete.map { $0 == "shop.example.com" ? "127.0.0.1" : $0 }, "domain"),
            (complete + ["--insecure-testing-merchant-gateway", "https://127.0.0.1:1"], "go together"),
        ] {
            let service = try ServiceProcess(arguments, expectStart: false)
            let status = service.waitForExit()
            XCTAssertNotNil(status, "\(arguments)")
            XCTAssertNotEqual(status, 0, "\(arguments)")
            XCTAssertTrue(service.log.contains(says), "\(says): \(service.log)")
        }
    }
    func testTransportDetailOfAFailedConnectionGoesToTheLogNotTheCaller() async throws {
        // A port nobody listens on: the client's error text names the address; the caller must not see it.
        let closed = try TestGateway(.answer(status: 200, body: Data("{}".utf8)))
        let options = closed.serviceOptions()
        let port = closed.port
        kill(closed.process.processIdentifier, SIGKILL)
        closed.process.waitUntilExit()
        let service = try ServiceProcess(options)
        let result = try await session(service, ["validationURL": Self.appleURL, "initiativeContext": "shop.example.com"])
        XCTAssertEqual(result.status, 502, result.text)
        XCTAssertEqual(result.code, "connectionFailed", result.text)
        XCTAssertFalse(result.text.contains("127.0.0.1") || result.text.contains("\(port)"), "no address reaches the caller: \(result.text)")
        service.signal(SIGTERM)
        _ = service.waitForExit()
        XCTAssertTrue(service.log.contains("merchant session failed"), "the detail is logged: \(service.log)")
    }

    func testUpperCaseAndTrailingDotHostsAreAcceptedAndARequestDisplayNameNeedsTheOption() async throws {
        let answer = Data(#"{"merchantSessionIdentifier":"S","signature":"X"}"#.utf8)
        let gateway = try TestGateway(.answer(status: 200, body: answer))
        let service = try ServiceProcess(gateway.serviceOptions())
        for url in ["https://APPLE-PAY-GATEWAY.Apple.COM/paymentservices/paymentSession",
                    "https://apple-pay-gateway.apple.com./paymentservices/paymentSession"] {
            let result = try await session(service, ["validationURL": url, "initiativeContext": "shop.example.com"])
            XCTAssertEqual(result.status, 200, "\(url): \(result.text)")
            XCTAssertEqual(result.body, answer, url)
        }
        XCTAssertEqual(gateway.requests.count, 2, "both reached the (test) gateway: \(gateway.events)")
        // Without --merchant-allow-display-name the configured store name is the only one shown.
        let named = try await session(service, ["validationURL": Self.appleURL, "initiativeContext": "shop.example.com", "displayName": "Other Store"])
        XCTAssertEqual(named.status, 422, named.text)
        XCTAssertEqual(named.code, "invalidRequest")
        XCTAssertEqual(named.json["field"] as? String, "displayName")
        XCTAssertEqual(gateway.requests.count, 2, "the refused request was not sent")
    }

    func testRequestsOverTheInFlightLimitAre503BusyAtOnceAndNotSent() async throws {
        let gateway = try TestGateway(.hang)
        let service = try ServiceProcess(gateway.serviceOptions(timeout: 6) + ["--merchant-max-in-flight", "2"])
        let members = ["validationURL": Self.appleURL, "initiativeContext": "shop.example.com"]
        let url = "\(service.base)/v1/merchant-session"
        let body = try JSONSerialization.data(withJSONObject: members)
        let held = (0..<2).map { _ in Task { try await HTTP.post(url, body) } }
        // Both held requests have reached the gateway (which holds them): the limit is full.
        let deadline = Date().addingTimeInterval(20)
        while gateway.requests.count < 2, Date() < deadline { try await Task.sleep(for: .milliseconds(50)) }
        XCTAssertEqual(gateway.requests.count, 2, "\(gateway.events)")
        let start = Date()
        let busy = try await session(service, members)
        XCTAssertEqual(busy.status, 503, busy.text)
        XCTAssertEqual(busy.code, "merchantSessionBusy")
        XCTAssertEqual(busy.headers["retry-after"], "1")
        XCTAssertLessThan(Date().timeIntervalSince(start), 3, "answered at once, not queued behind the held calls")
        for task in held {
            let result = try await task.value
            XCTAssertEqual(result.status, 504, result.text)
        }
        XCTAssertEqual(gateway.requests.count, 2, "the refused request was never sent")
        // The held calls gave their places back.
        let after = try await session(service, members)
        XCTAssertEqual(after.status, 504, after.text)
        XCTAssertEqual(gateway.requests.count, 3)
        let metrics = try await HTTP.get("\(service.base)/metrics").text
        XCTAssertTrue(metrics.contains(#"applepay_merchant_sessions_total{outcome="merchantSessionBusy"} 1"#), metrics)
    }

    func testWithoutAnAPIKeyTheEndpointStartsOnlyOnLoopbackAndSaysSoWhateverTheLogLevel() async throws {
        let gateway = try TestGateway(.answer(status: 200, body: Data("{}".utf8)))
        // The harness listens on 127.0.0.1; a later --listen wins.
        let exposed = try ServiceProcess(gateway.serviceOptions() + ["--listen", "0.0.0.0:0"], expectStart: false)
        let status = exposed.waitForExit()
        XCTAssertNotNil(status)
        XCTAssertNotEqual(status, 0)
        XCTAssertTrue(exposed.log.contains("needs --api-key-env"), exposed.log)
        let local = try ServiceProcess(gateway.serviceOptions() + ["--log-level", "error"])
        let healthy = try await HTTP.get("\(local.base)/healthz")
        XCTAssertEqual(healthy.status, 200)
        let log = local.log
        XCTAssertTrue(log.contains("runs without --api-key-env"), "the loopback-only warning is printed at --log-level error: \(log)")
        XCTAssertTrue(log.contains("--insecure-testing-merchant-gateway sends merchant-session requests"), "so is the test-gateway warning: \(log)")
        let keyed = try ServiceProcess(gateway.serviceOptions() + ["--listen", "0.0.0.0:0", "--api-key-env", "APPLEPAY_TEST_KEY"],
                                       environment: ["APPLEPAY_TEST_KEY": "k1"], expectStart: false)
        // With a key it starts on any address (the harness reads the port only for 127.0.0.1, so the log says it).
        let started = Date().addingTimeInterval(30)
        while !keyed.log.contains("listening"), keyed.process.isRunning, Date() < started { usleep(50_000) }
        XCTAssertTrue(keyed.process.isRunning, keyed.log)
        XCTAssertFalse(keyed.log.contains("runs without --api-key-env"), keyed.log)
    }
}
