// What every service test needs: the built executable started as a real process on a free loopback
// port, an HTTP client over real sockets, the bundled vectors, and freshly minted tokens.
import ApplePayDecryption
import ApplePayTestSupport
import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
import XCTest

enum Paths {
    /// Sources/Server (this package).
    static let package = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static let repository = package.deletingLastPathComponent().deletingLastPathComponent()
    static let vectors = repository.appendingPathComponent("Vectors").path

    static var binary: String {
        if let path = ProcessInfo.processInfo.environment["APPLEPAY_SERVICE_BIN"] { return path }
        // The test bundle sits beside the executable in the build folder.
        for bundle in Bundle.allBundles where bundle.bundlePath.hasSuffix(".xctest") {
            let candidate = URL(fileURLWithPath: bundle.bundlePath).deletingLastPathComponent().appendingPathComponent(
                "applepay-service"
            ).path
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        let fallback = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
            .appendingPathComponent("applepay-service").path
        if FileManager.default.isExecutableFile(atPath: fallback) { return fallback }
        return package.appendingPathComponent(".build/release/applepay-service").path
    }
}

/// The bundled vectors: their merchants, trust root and reference time.
enum Bundled {
    static let now = "2026-03-01T12:01:00Z"
    static let options = [
        "--merchant", "cert=\(Paths.vectors)/merchants/ec.cert.pem,key=\(Paths.vectors)/merchants/ec.key.pem",
        "--merchant", "cert=\(Paths.vectors)/merchants/rsa.cert.pem,key=\(Paths.vectors)/merchants/rsa.key.pem",
        "--trust-root", "\(Paths.vectors)/trust/test-root.pem", "--insecure-testing-fixed-now", now,
    ]
    static let tokenFiles = [
        "ec-3dsecure.json", "ec-emv-pkpaymenttoken.json", "ec-merchant-token-applepayjs.json",
        "ec-application-data.json", "rsa-3dsecure.json", "ec-base64.txt",
    ]

    static func token(_ name: String) throws -> Data {
        try Data(contentsOf: URL(fileURLWithPath: "\(Paths.vectors)/tokens/\(name)"))
    }

    static func archiveLines() throws -> [String] {
        try String(contentsOfFile: "\(Paths.vectors)/archive.jsonl", encoding: .utf8).split(separator: "\n").map(
            String.init)
    }

    static func archiveExpectations() throws -> [String] {
        let manifest =
            try JSONSerialization.jsonObject(
                with: Data(contentsOf: URL(fileURLWithPath: "\(Paths.vectors)/manifest.json"))) as! [String: Any]
        return (manifest["archive"] as! [String: Any])["expect"] as! [String]
    }
}

/// A temporary directory removed when the object goes away.
final class Scratch {
    let url: URL
    init() {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("applepay-service-\(UUID().uuidString)")
        try! FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }
    deinit { try? FileManager.default.removeItem(at: url) }
    func path(_ name: String) -> String { url.appendingPathComponent(name).path }
    func write(_ name: String, _ text: String) -> String {
        let path = path(name)
        try! text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }
}

/// A test PKI of our own (root, intermediate, leaf) and merchants, written out for the service, and
/// tokens minted now (so the service can run with the real clock) with unique transactionIds.
final class MintedKeys: @unchecked Sendable {  // used by one test at a time
    let pki = TestPKI()
    let scratch = Scratch()
    lazy var factory = TestTokenFactory(pki: pki)
    let rootPath: String

    init() {
        rootPath = scratch.write("root.pem", pki.rootPEM)
    }

    /// Writes a merchant's certificate and key to NAME.cert.pem / NAME.key.pem and returns its spec.
    func writeMerchant(_ merchant: TestMerchant, as name: String) -> String {
        let cert = scratch.write("\(name).cert.pem", merchant.certificatePEM)
        let key = scratch.write("\(name).key.pem", merchant.privateKeyPEM)
        return "cert=\(cert),key=\(key)"
    }

    /// A fresh token (new ephemeral key, so new signed contents); random transactionId unless given.
    func token(
        for merchant: TestMerchant, signedAt: Date = Date(), transactionId: String? = nil,
        wrapping: TokenWrapping = .bare
    ) -> Data {
        let minted = factory.mint(
            payload: TestPayload.threeDSecure(), for: merchant,
            options: .init(signingTime: signedAt, transactionId: transactionId))
        return Data(wrapping.wrap(minted.paymentData, transactionId: minted.transactionId))
    }
}

/// The service as a child process. Its stdout announces the bound port; its stderr (the log) is kept.
final class ServiceProcess {
    let process = Process()
    let logPath: String
    private(set) var port = 0
    let scheme: String
    private let scratch = Scratch()

    /// The port of `--operations-listen`, when the service was started with it.
    private(set) var operationsPort: Int?

    /// `launcher`: a command that runs the service (say `prlimit --nofile=256:256 --`), or none.
    init(
        _ arguments: [String], environment: [String: String] = [:], scheme: String = "http", expectStart: Bool = true,
        launcher: [String] = [], file: StaticString = #filePath, line: UInt = #line
    ) throws {
        self.scheme = scheme
        logPath = scratch.path("service.log")
        FileManager.default.createFile(atPath: logPath, contents: nil)
        process.executableURL = URL(fileURLWithPath: launcher.first ?? Paths.binary)
        process.arguments =
            Array(launcher.dropFirst()) + (launcher.isEmpty ? [] : [Paths.binary]) + ["--listen", "127.0.0.1:0"]
            + arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let stdout = Pipe()
        process.standardOutput = stdout
        process.standardError = FileHandle(forWritingAtPath: logPath)
        try process.run()
        guard expectStart else { return }
        // Wait for "applepay-service listening on 127.0.0.1:PORT" (and, with --operations-listen, for
        // "applepay-service operations endpoints on 127.0.0.1:PORT").
        let wantsOperations = arguments.contains("--operations-listen")
        func portAfter(_ marker: String, in text: String) -> Int? {
            guard let range = text.range(of: marker), let newline = text[range.upperBound...].firstIndex(of: "\n")
            else { return nil }
            return Int(text[range.upperBound..<newline])
        }
        var seen = Data()
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline {
            let chunk = stdout.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            seen.append(chunk)
            let text = String(decoding: seen, as: UTF8.self)
            if let found = portAfter("listening on 127.0.0.1:", in: text) { self.port = found }
            if wantsOperations, let found = portAfter("operations endpoints on 127.0.0.1:", in: text) {
                operationsPort = found
            }
            if self.port != 0, !wantsOperations || operationsPort != nil { break }
        }
        if port == 0 {
            process.terminate()
            process.waitUntilExit()
            XCTFail("the service did not start: \(log)", file: file, line: line)
            throw CancellationError()
        }
    }

    deinit {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }

    var base: String { "\(scheme)://127.0.0.1:\(port)" }
    var operationsBase: String { "http://127.0.0.1:\(operationsPort ?? 0)" }
    var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    func signal(_ signal: Int32) { kill(process.processIdentifier, signal) }

    /// Waits for the process to exit and returns its status (nil on timeout).
    func waitForExit(seconds: Double = 30) -> Int32? {
        let deadline = Date().addingTimeInterval(seconds)
        while process.isRunning, Date() < deadline { usleep(20_000) }
        return process.isRunning ? nil : process.terminationStatus
    }

    /// Resident memory high-water mark, in KiB.
    var peakResidentKiB: Int {
        let status = (try? String(contentsOfFile: "/proc/\(process.processIdentifier)/status", encoding: .utf8)) ?? ""
        for line in status.split(separator: "\n") where line.hasPrefix("VmHWM:") {
            return Int(line.split(separator: " ", omittingEmptySubsequences: true)[1]) ?? 0
        }
        return 0
    }
}

struct HTTPResult {
    let status: Int
    let body: Data
    let headers: [String: String]
    var text: String { String(decoding: body, as: UTF8.self) }
    var json: [String: Any] { (try? JSONSerialization.jsonObject(with: body)) as? [String: Any] ?? [:] }
    var code: String? { json["error"] as? String }
}

enum HTTP {
    static let session: URLSession = {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = 60
        configuration.httpMaximumConnectionsPerHost = 16
        return URLSession(configuration: configuration)
    }()

    static func request(_ method: String, _ url: String, body: Data? = nil, headers: [String: String] = [:])
        async throws -> HTTPResult
    {
        var request = URLRequest(url: URL(string: url)!)
        request.httpMethod = method
        request.httpBody = body
        if body != nil, headers["Content-Type"] == nil {
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        let (data, response) = try await session.data(for: request)
        let http = response as! HTTPURLResponse
        var fields: [String: String] = [:]
        for (name, value) in http.allHeaderFields { fields["\(name)".lowercased()] = "\(value)" }
        return HTTPResult(status: http.statusCode, body: data, headers: fields)
    }

    static func post(_ url: String, _ body: Data, headers: [String: String] = [:]) async throws -> HTTPResult {
        try await request("POST", url, body: body, headers: headers)
    }

    static func get(_ url: String, headers: [String: String] = [:]) async throws -> HTTPResult {
        try await request("GET", url, headers: headers)
    }
}

/// Runs a command and returns its exit status and combined output.
@discardableResult
func runCommand(_ executable: String, _ arguments: [String], environment: [String: String] = [:]) throws -> (
    status: Int32, output: String
) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
    let pipe = Pipe()
    process.standardOutput = pipe
    process.standardError = pipe
    try process.run()
    let data = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return (process.terminationStatus, String(decoding: data, as: UTF8.self))
}

/// A raw HTTP/1.1 exchange over one socket, sent in two parts, so a test can hold a request in
/// flight (headers and half the body sent) while something happens to the server.
final class RawConnection: Sendable {
    let fd: Int32

    /// `timeout`: the longest wait for one read, so that a server that never answers fails the test
    /// instead of hanging it.
    init?(port: Int, timeout: Int = 60) {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var limit = timeval(tv_sec: timeout, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        if connected != 0 {
            close(fd)
            return nil
        }
    }

    deinit { close(fd) }

    /// Reads until `marker` has arrived (or the server closes, or a read times out).
    func receive(until marker: String) -> String {
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 65536)
        while !String(decoding: data, as: UTF8.self).contains(marker) {
            let n = recv(fd, &buffer, buffer.count, 0)
            if n <= 0 { break }
            data.append(contentsOf: buffer[0..<n])
        }
        return String(decoding: data, as: UTF8.self)
    }

    func send(_ bytes: Data) {
        bytes.withUnsafeBytes { raw in
            var sent = 0
            while sent < raw.count {
                let n = Foundation.send(fd, raw.baseAddress! + sent, raw.count - sent, Int32(MSG_NOSIGNAL))
                if n <= 0 { return }
                sent += n
            }
        }
    }

    /// Reads until the server closes the connection (or a read times out).
    func receiveAll() -> String {
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = recv(fd, &buffer, buffer.count, 0)
            if n <= 0 { break }
            data.append(contentsOf: buffer[0..<n])
        }
        return String(decoding: data, as: UTF8.self)
    }
}
