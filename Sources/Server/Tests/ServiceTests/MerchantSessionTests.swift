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
        ssl(
            ["req", "-x509"] + ec + [
                "-days", "2", "-subj", "/CN=Test Gateway CA", "-keyout", path("ca.key"), "-out", path("ca.pem"),
                "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
            ])
        for (name, subject, ext) in [
            (
                "gateway", "/CN=127.0.0.1",
                "basicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\nsubjectAltName=IP:127.0.0.1,DNS:localhost\n"
            ),
            (
                "merchant", "/UID=\(Self.merchantID)/CN=Merchant ID: \(Self.merchantID)",
                "basicConstraints=CA:FALSE\nextendedKeyUsage=clientAuth\n"
            ),
        ] {
            let extfile = scratch.write("\(name).ext", ext)
            ssl(
                ["req", "-new"] + ec + ["-subj", subject, "-keyout", path("\(name).key"), "-out", path("\(name).csr")])
            ssl([
                "x509", "-req", "-in", path("\(name).csr"), "-CA", path("ca.pem"), "-CAkey", path("ca.key"),
                "-set_serial", String(Int.random(in: 1...Int(Int32.max))), "-days", "2", "-extfile", extfile, "-out",
                path("\(name).pem"),
            ])
        }
        ssl(
            ["req", "-x509"] + ec + [
                "-days", "2", "-subj", "/CN=Not The Merchant", "-keyout", path("stranger.key"), "-out",
                path("stranger.pem"),
            ])
    }
}

/// Python 3's http.server over ssl, client certificate required. Writes one JSON line per event to its
/// log: `connection` (TCP accepted), `handshake` or `handshakeFailed`, and `request` (path, body, the
/// client certificate's commonName). Answers every POST with a fixed status and body, or never.
final class TestGateway: @unchecked Sendable {  // used by one test at a time
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
        var arguments = [
            script, pki.path("gateway.pem"), pki.path("gateway.key"), pki.path("ca.pem"), portPath, logPath,
        ]
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
            if let text = try? String(contentsOfFile: portPath, encoding: .utf8), let value = Int(text) {
                found = value; break
            }
            usleep(20_000)
        }
        guard found > 0 else {
            kill(process.processIdentifier, SIGKILL)
            throw NSError(
                domain: "TestGateway", code: 1,
                userInfo: [
                    NSLocalizedDescriptionKey: "the test gateway did not start: "
                        + ((try? String(contentsOfFile: errPath, encoding: .utf8)) ?? "")
                ])
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
        return text.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
    }

    var requests: [[String: Any]] { events.filter { $0["event"] as? String == "request" } }

    /// The service's options for this gateway: identity, names and the test-only replacement.
    func serviceOptions(identity: String = GatewayPKI.shared.identity, timeout: Int = 10) -> [String] {
        Bundled.options + [
            "--merchant-identity", identity, "--merchant-id", GatewayPKI.merchantID,
            "--merchant-domain", "shop.example.com", "--merchant-domain", "pay.example.org",
            "--merchant-display-name", "Example Store", "--merchant-timeout", String(timeout),
            "--insecure-testing-merchant-gateway", url, "--insecure-testing-merchant-gateway-ca",
            GatewayPKI.shared.path("ca.pem"),
        ]
    }
}

final class MerchantSessionTests: XCTestCase {
    static let appleURL = "https://apple-pay-gateway.apple.com/paymentservices/paymentSession"

    func session(_ service: ServiceProcess, _ members: [String: String], headers: [String: String] = [:]) async throws
        -> HTTPResult
    {
        try await HTTP.post(
            "\(service.base)/v1/merchant-session", JSONSerialization.data(withJSONObject: members), headers: headers)
    }

    func testSessionJSONPassesThroughByteForByteAndTheGatewaySawTheMerchantAndItsCertificate() async throws {
        // Odd spacing, member order and escapes: any decode and re-encode would change these bytes.
        let answer = Data(
            #"{ "epochTimestamp":1700000000000,"expiresAt":1700003600000, "merchantSessionIdentifier":"SSH9A8F\u00e9","nonce":"5a1f3c","merchantIdentifier":"ABCDEF0123","domainName":"shop.example.com","displayName":"Example Store","signature":"308006092a864886f70d010702a0803080SECRETSIG","retries":0 }"#
                .utf8)
        let gateway = try TestGateway(.answer(status: 200, body: answer))
        let service = try ServiceProcess(gateway.serviceOptions() + ["--merchant-allow-display-name"])

        let first = try await session(
            service, ["validationURL": Self.appleURL, "initiativeContext": "Shop.Example.com"])
        XCTAssertEqual(first.status, 200, first.text)
        XCTAssertEqual(first.body, answer, "the session JSON passes through byte for byte")
        XCTAssertEqual(first.headers["content-type"], "application/json")
        XCTAssertEqual(first.headers["cache-control"], "no-store", "a session is single-use: no cache keeps it")

        let second = try await session(
            service,
            [
                "validationURL": "https://apple-pay-gateway-nc-pod3.apple.com/paymentservices/startSession",
                "initiativeContext": "pay.example.org", "displayName": "Other Store ✓",
            ])
        XCTAssertEqual(second.status, 200, second.text)
        XCTAssertEqual(second.body, answer)

        let requests = gateway.requests
        XCTAssertEqual(requests.count, 2, "\(gateway.events)")
        let bodies = requests.map {
            (try? JSONSerialization.jsonObject(with: Data(($0["body"] as? String ?? "").utf8))) as? [String: String]
                ?? [:]
        }
        XCTAssertEqual(requests.first?["path"] as? String, "/paymentservices/paymentSession")
        XCTAssertEqual(
            bodies.first,
            [
                "merchantIdentifier": GatewayPKI.merchantID, "displayName": "Example Store",
                "initiative": "web", "initiativeContext": "shop.example.com",
            ])
        XCTAssertEqual(
            requests.last?["path"] as? String, "/paymentservices/startSession",
            "an accepted validation URL keeps its path")
        XCTAssertEqual(
            bodies.last,
            [
                "merchantIdentifier": GatewayPKI.merchantID, "displayName": "Other Store ✓",
                "initiative": "web", "initiativeContext": "pay.example.org",
            ])
        for request in requests {
            XCTAssertEqual(
                request["client"] as? String, "Merchant ID: \(GatewayPKI.merchantID)",
                "the merchant identity certificate was presented")
            XCTAssertEqual(request["contentType"] as? String, "application/json")
        }

        let metrics = try await HTTP.get("\(service.base)/metrics").text
        XCTAssertTrue(metrics.contains(#"applepay_merchant_sessions_total{outcome="ok"} 2"#), metrics)
        service.signal(SIGTERM)
        XCTAssertEqual(service.waitForExit(), 0, "the client is shut down on drain: \(service.log)")
        let log = service.log
        XCTAssertFalse(
            log.contains("SECRETSIG") || log.contains("merchantSessionIdentifier"), "the session is never logged")
        XCTAssertEqual(
            log.components(separatedBy: "route=/v1/merchant-session").count - 1, 2, "one log line per request: \(log)")
    }

    func testPartialOrBadMerchantConfigurationRefusesToStart() throws {
        let pki = GatewayPKI.shared
        let full = [
            "--merchant-identity": pki.identity, "--merchant-id": GatewayPKI.merchantID,
            "--merchant-domain": "shop.example.com", "--merchant-display-name": "Example Store",
        ]
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
            (
                complete.map { $0 == pki.identity ? "cert=/nonexistent.pem,key=/nonexistent.key" : $0 },
                "/nonexistent.pem"
            ),
            (
                complete.map {
                    $0 == pki.identity ? "cert=\(pki.path("merchant.pem")),key=\(pki.path("stranger.key"))" : $0
                }, "does not belong"
            ),
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
        let result = try await session(
            service, ["validationURL": Self.appleURL, "initiativeContext": "shop.example.com"])
        XCTAssertEqual(result.status, 502, result.text)
        XCTAssertEqual(result.code, "connectionFailed", result.text)
        XCTAssertFalse(
            result.text.contains("127.0.0.1") || result.text.contains("\(port)"),
            "no address reaches the caller: \(result.text)")
        service.signal(SIGTERM)
        _ = service.waitForExit()
        XCTAssertTrue(service.log.contains("merchant session failed"), "the detail is logged: \(service.log)")
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
        XCTAssertTrue(
            log.contains("runs without --api-key-env"),
            "the loopback-only warning is printed at --log-level error: \(log)")
        XCTAssertTrue(
            log.contains("--insecure-testing-merchant-gateway sends merchant-session requests"),
            "so is the test-gateway warning: \(log)")
        let keyed = try ServiceProcess(
            gateway.serviceOptions() + ["--listen", "0.0.0.0:0", "--api-key-env", "APPLEPAY_TEST_KEY"],
            environment: ["APPLEPAY_TEST_KEY": "k1"], expectStart: false)
        // With a key it starts on any address (the harness reads the port only for 127.0.0.1, so the log says it).
        let started = Date().addingTimeInterval(30)
        while !keyed.log.contains("listening"), keyed.process.isRunning, Date() < started { usleep(50_000) }
        XCTAssertTrue(keyed.process.isRunning, keyed.log)
        XCTAssertFalse(keyed.log.contains("runs without --api-key-env"), keyed.log)
    }
}
