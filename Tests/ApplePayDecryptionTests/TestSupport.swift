// Shared fixtures for the tests: locations, a test PKI with merchants, a CLI runner, a seeded generator
// and the Wycheproof ECDSA vectors.
import ApplePayCrypto
import ApplePayDecryption
import ApplePayTestSupport
import Foundation
import Testing

enum Paths {
    /// The package root, from this file's location (Tests/ApplePayDecryptionTests/…).
    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    /// ../shared/vectors/apple beside the project (CI has it too), or $APPLEPAY_SHARED_VECTORS.
    static let appleVectors: URL = {
        if let override = ProcessInfo.processInfo.environment["APPLEPAY_SHARED_VECTORS"] {
            return URL(fileURLWithPath: override)
        }
        return packageRoot.deletingLastPathComponent().appendingPathComponent("shared/vectors/apple")
    }()

    /// ../shared/vectors/google beside the project, or $APPLEPAY_SHARED_VECTORS/../google.
    static let googleVectors: URL = appleVectors.deletingLastPathComponent().appendingPathComponent("google")

    /// The applepay-decrypt executable built beside the test bundle.
    static var cli: URL {
        let beside = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent(
            "applepay-decrypt")
        if FileManager.default.isExecutableFile(atPath: beside.path) { return beside }
        return packageRoot.appendingPathComponent(".build/debug/applepay-decrypt")
    }
}

/// 2026-03-01T12:00:00Z: when factory tokens are signed.
let signingInstant = Date(timeIntervalSince1970: 1_772_366_400)

/// One test PKI and a few merchants, made once for the whole run.
final class Fixtures: Sendable {
    static let shared = Fixtures()

    let pki = TestPKI()
    let ecMerchant: TestMerchant
    let rsaMerchant: TestMerchant
    let factory: TestTokenFactory

    private init() {
        ecMerchant = pki.makeMerchant(identifier: "merchant.com.example.shop")
        rsaMerchant = pki.makeMerchant(identifier: "merchant.com.example.rsa", kind: .rsa)
        factory = TestTokenFactory(pki: pki)
    }

    func decryptor(_ merchants: [TestMerchant]? = nil, window: Int64 = 300) -> PaymentTokenDecryptor {
        let list = (merchants ?? [ecMerchant, rsaMerchant]).map { $0.identity() }
        return try! PaymentTokenDecryptor(merchants: list, trustAnchor: pki.trustAnchor, signingTimeWindow: window)
    }

    func mint(
        _ payload: [UInt8] = TestPayload.threeDSecure(), for merchant: TestMerchant? = nil,
        _ configure: (inout TestTokenFactory.Options) -> Void = { _ in }
    ) -> TestTokenFactory.Minted {
        var options = TestTokenFactory.Options(signingTime: signingInstant)
        configure(&options)
        return factory.mint(payload: payload, for: merchant ?? ecMerchant, options: options)
    }
}

/// The error code a decryption throws, or nil if it succeeds.
func rejection(_ body: () throws -> DecryptedPayment) -> ApplePayError.Code? {
    do {
        _ = try body()
        return nil
    } catch let error as ApplePayError {
        return error.code
    } catch {
        Issue.record("unexpected error type: \(error)")
        return nil
    }
}

struct ProcessResult {
    let status: Int32
    let stdout: String
    let stderr: String
}

/// Runs the real CLI executable.
func runCLI(
    _ arguments: [String], stdin: [UInt8]? = nil, environment: [String: String] = [:], directory: URL? = nil
) throws -> ProcessResult {
    let process = Process()
    process.executableURL = Paths.cli
    process.arguments = arguments
    if let directory { process.currentDirectoryURL = directory }
    var env = ProcessInfo.processInfo.environment
    env.merge(environment) { _, new in new }
    process.environment = env
    let out = Pipe(), err = Pipe(), input = Pipe()
    process.standardOutput = out
    process.standardError = err
    process.standardInput = input
    try process.run()
    // A CLI that refuses its arguments exits without reading stdin: the write then fails with EPIPE
    // (the error is ignored) rather than killing the test process with SIGPIPE.
    signal(SIGPIPE, SIG_IGN)
    if let stdin { try? input.fileHandleForWriting.write(contentsOf: Data(stdin)) }
    try input.fileHandleForWriting.close()
    let outData = out.fileHandleForReading.readDataToEndOfFile()
    let errData = err.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return ProcessResult(
        status: process.terminationStatus, stdout: String(decoding: outData, as: UTF8.self),
        stderr: String(decoding: errData, as: UTF8.self))
}

/// A scratch directory removed when the value is released.
final class ScratchDirectory {
    let url: URL
    init() {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("applepay-tests-\(UUID().uuidString)")
        try! FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }
    deinit { try? FileManager.default.removeItem(at: url) }

    @discardableResult
    func write(_ name: String, _ contents: [UInt8]) -> String {
        let file = url.appendingPathComponent(name)
        try! Data(contents).write(to: file)
        return file.path
    }

    func write(_ name: String, _ text: String) -> String { write(name, Array(text.utf8)) }
}

extension Data {
    var bytes: [UInt8] { [UInt8](self) }
}

/// Re-encodes one base64 field of a bare paymentData after `mutate` changes its bytes.
func tamperBase64(_ paymentData: JSONValue, path: [String], _ mutate: (inout [UInt8]) -> Void) -> JSONValue {
    rewrite(paymentData, path: path) { value in
        var bytes = Data(base64Encoded: value.stringValue!)!.bytes
        mutate(&bytes)
        return .string(Data(bytes).base64EncodedString())
    }
}

/// Replaces the value at `path` (object keys) with `transform(old)`.
func rewrite(_ value: JSONValue, path: [String], _ transform: (JSONValue) -> JSONValue) -> JSONValue {
    guard let key = path.first, case let .object(members) = value else { return transform(value) }
    return .object(
        members.map { name, child in
            name == key ? (name, rewrite(child, path: Array(path.dropFirst()), transform)) : (name, child)
        })
}

/// Removes the member at `path`.
func removing(_ value: JSONValue, path: [String]) -> JSONValue {
    guard case let .object(members) = value, let key = path.first else { return value }
    if path.count == 1 { return .object(members.filter { $0.0 != key }) }
    return .object(
        members.map { name, child in
            name == key ? (name, removing(child, path: Array(path.dropFirst()))) : (name, child)
        })
}

func bytes(_ value: JSONValue) -> [UInt8] { Array(value.description.utf8) }

/// A deterministic generator (SplitMix64), so that a randomized test's failure replays from its seed.
struct SplitMix: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Project Wycheproof's ECDSA P-256/SHA-256 vectors (../shared/vectors/wycheproof): the key, the
/// message's SHA-256, the DER signature and the expected result of each.
struct WycheproofECDSAVector {
    let id: String, key: [UInt8], digest: [UInt8], signature: [UInt8], result: String

    static func load() throws -> [WycheproofECDSAVector] {
        let url = SharedVectors.wycheproofFolder.appendingPathComponent("ecdsa_secp256r1_sha256_test.json")
        let root = try JSONValue.parse(Data(contentsOf: url).bytes)
        var vectors: [WycheproofECDSAVector] = []
        guard case let .array(groups)? = root["testGroups"] else { return [] }
        for group in groups {
            let key = try #require(group["publicKey"]?["uncompressed"]?.stringValue.flatMap { Hex.decode($0) })
            guard case let .array(tests)? = group["tests"] else { continue }
            for test in tests {
                vectors.append(
                    WycheproofECDSAVector(
                        id: test["tcId"]!.description, key: key,
                        digest: SHA256.hash(Hex.decode(test["msg"]!.stringValue!)!),
                        signature: Hex.decode(test["sig"]!.stringValue!)!, result: test["result"]!.stringValue!))
            }
        }
        return vectors
    }
}

/// HMAC-SHA-256 (RFC 2104) as the CLI seals its checkpoint and a part's manifest with OUT.runkey: to
/// forge one as the run's own user could (who can read the key).
enum RunKeySeal {
    static func mac(keyFile: String, _ message: [UInt8]) throws -> String {
        try mac(key: Array(Data(contentsOf: URL(fileURLWithPath: keyFile))), message)
    }

    static func mac(key: [UInt8], _ message: [UInt8]) -> String {
        let pad = key + [UInt8](repeating: 0, count: 64 - key.count)
        var inner = InputDigest(), outer = InputDigest()
        inner.update(pad.map { $0 ^ 0x36 })
        inner.update(message)
        outer.update(pad.map { $0 ^ 0x5C })
        outer.update(Hex.decode(inner.hex)!)
        return outer.hex
    }
}

/// A shared library compiled from C source by the system's cc, for tests that need a real library
/// with a given behaviour (a constructor that leaves a mark, a PKCS#11 module that lies).
enum CLibrary {
    static func build(_ source: String, at path: String) throws {
        let file = path + ".c"
        try Data(source.utf8).write(to: URL(fileURLWithPath: file))
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/cc")
        process.arguments = [
            "-shared", "-fPIC", "-O1", "-I", Paths.packageRoot.appendingPathComponent("CShims").path, "-o", path, file,
        ]
        try process.run()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "cc failed for \(path)")
    }

    /// A library whose constructor creates the file `marker`: proof that it was loaded.
    static func marking(_ marker: String, at path: String) throws {
        try build(
            """
            #include <fcntl.h>
            #include <unistd.h>
            __attribute__((constructor)) static void mark(void) {
                int fd = open("\(marker)", O_WRONLY | O_CREAT, 0644);
                if (fd >= 0) close(fd);
            }
            int mbx_is_crypto_mb_applicable(unsigned long long features) { (void)features; return 0; }
            int mbx_nistp256_ecdh_mb8(void) { return 0; }
            """, at: path)
    }
}
