// A throwaway PKI made with the openssl command-line tool: gateway CA and server, merchant identities, a rogue CA.
import Foundation
import XCTest

/// Files in a fresh temporary directory. The gateway's server certificate (127.0.0.1, localhost) and the
/// merchant identity certificate are issued by one test CA; `rogueClient` by another CA the gateway does
/// not trust; `client.p12` holds the merchant identity under `p12Password`.
final class TestPKI: @unchecked Sendable {  // immutable after init
    let directory: URL
    static let p12Password = "p12 secret ü"
    static let keyPassword = "pem-key-secret"

    func path(_ name: String) -> String { directory.appendingPathComponent(name).path }
    func bytes(_ name: String) -> [UInt8] { [UInt8](FileManager.default.contents(atPath: path(name))!) }

    /// One PKI for the whole test run (openssl takes a moment per key).
    static let shared: TestPKI = {
        do { return try TestPKI() } catch { fatalError("cannot make the test PKI with openssl: \(error)") }
    }()

    private init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "applepay-merchant-pki-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try makeCA("ca", subject: "/CN=Test Gateway Root")
        try makeCA("rogue-ca", subject: "/CN=Rogue Root")
        try issue(
            "server", by: "ca", subject: "/CN=localhost",
            extensions:
                "basicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=serverAuth\nsubjectAltName=IP:127.0.0.1,DNS:localhost\n"
        )
        let clientExtensions = "basicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=clientAuth\n"
        try issue(
            "client", by: "ca", subject: "/UID=merchant.com.example.test/CN=Merchant ID: merchant.com.example.test",
            extensions: clientExtensions)
        try issue("rogue-client", by: "rogue-ca", subject: "/CN=Not The Merchant", extensions: clientExtensions)
        try openssl(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", path("other.key")])
        try openssl(
            [
                "pkcs12", "-export", "-in", path("client.pem"), "-inkey", path("client.key"), "-out",
                path("client.p12"),
                "-passout", "env:APPLEPAY_TEST_P12_PASSWORD",
            ], environment: ["APPLEPAY_TEST_P12_PASSWORD": Self.p12Password])
        try openssl(
            [
                "pkey", "-in", path("client.key"), "-aes-256-cbc", "-out", path("client-encrypted.key"),
                "-passout", "env:APPLEPAY_TEST_KEY_PASSWORD",
            ], environment: ["APPLEPAY_TEST_KEY_PASSWORD": Self.keyPassword])
    }

    deinit { try? FileManager.default.removeItem(at: directory) }

    private func makeCA(_ name: String, subject: String) throws {
        try openssl([
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout",
            path("\(name).key"),
            "-out", path("\(name).pem"), "-days", "2", "-subj", subject,
            "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
        ])
    }

    private func issue(_ name: String, by ca: String, subject: String, extensions: String) throws {
        try openssl([
            "req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout",
            path("\(name).key"),
            "-out", path("\(name).csr"), "-subj", subject,
        ])
        try Data(extensions.utf8).write(to: URL(fileURLWithPath: path("\(name).ext")))
        try openssl([
            "x509", "-req", "-in", path("\(name).csr"), "-CA", path("\(ca).pem"), "-CAkey", path("\(ca).key"),
            "-set_serial", String(Int.random(in: 1...Int(Int32.max))), "-days", "2", "-extfile", path("\(name).ext"),
            "-out", path("\(name).pem"),
        ])
    }

    private func openssl(_ arguments: [String], environment: [String: String] = [:]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["openssl"] + arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        let message = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw NSError(
                domain: "openssl", code: Int(process.terminationStatus),
                userInfo: [
                    NSLocalizedDescriptionKey:
                        "openssl \(arguments.joined(separator: " ")): \(String(decoding: message, as: UTF8.self))"
                ])
        }
    }
}
