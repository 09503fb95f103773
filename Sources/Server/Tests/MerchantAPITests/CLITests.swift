// The `applepay-merchant` executable (and, when built, `applepay-decrypt merchant-session`) run as processes.
import Foundation
import XCTest

final class CLITests: XCTestCase {
    let pki = TestPKI.shared

    /// Built beside the test bundle by `swift build --build-tests`.
    static var merchantTool: String {
        let tests =
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        return URL(fileURLWithPath: tests).deletingLastPathComponent().appendingPathComponent("applepay-merchant").path
    }

    struct Run {
        let status: Int32
        let stdout: [UInt8]
        let stderr: String
        var stdoutText: String { String(decoding: stdout, as: UTF8.self) }
        var stdoutJSON: [String: Any] {
            (try? JSONSerialization.jsonObject(with: Data(stdout))) as? [String: Any] ?? [:]
        }
    }

    func run(_ executable: String, _ arguments: [String], environment: [String: String] = [:]) throws -> Run {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        try process.run()
        // Read stderr on another thread while stdout is read here, so that neither pipe can fill up and stall it.
        let errors = DataBox()
        let done = DispatchGroup()
        done.enter()
        DispatchQueue.global().async {
            errors.data = err.fileHandleForReading.readDataToEndOfFile()
            done.leave()
        }
        let output = out.fileHandleForReading.readDataToEndOfFile()
        done.wait()
        process.waitUntilExit()
        return Run(
            status: process.terminationStatus, stdout: [UInt8](output),
            stderr: String(decoding: errors.data, as: UTF8.self))
    }

    private final class DataBox: @unchecked Sendable { var data = Data() }  // written once, read after the group's wait

    func gatewayArguments(_ gateway: TestGateway) -> [String] {
        [
            "--identity", "cert=\(pki.path("client.pem")),key=\(pki.path("client.key"))", "--merchant-id",
            "merchant.com.example.test",
            "--insecure-test-gateway", gateway.baseURL + "/paymentservices", "--insecure-test-gateway-ca",
            pki.path("ca.pem"),
        ]
    }

    func testSessionPrintsTheSessionJSONUnchangedAndWarnsAboutTheTestGateway() async throws {
        let gateway = try await TestGateway { _ in .answer(status: 200, body: GatewayTests.sessionBytes) }
        let result = try run(
            Self.merchantTool,
            ["session"] + gatewayArguments(gateway) + [
                "--domain", "shop.example.com", "--display-name", "Example Store",
                "--validation-url", "https://apple-pay-gateway.apple.com/paymentservices/paymentSession",
            ])
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(result.stdout, GatewayTests.sessionBytes)
        XCTAssertTrue(result.stderr.contains("WARNING: --insecure-test-gateway"), result.stderr)
        await gateway.stop()
    }

    func testSessionWithPKCS12IdentityReadsThePasswordFromTheNamedVariable() async throws {
        let gateway = try await TestGateway { _ in .answer(status: 200, body: GatewayTests.sessionBytes) }
        var arguments =
            ["session"] + gatewayArguments(gateway) + ["--domain", "shop.example.com", "--display-name", "Store"]
        arguments[2] = "p12=\(pki.path("client.p12")),password-env=MERCHANT_P12_PASSWORD"
        let result = try run(Self.merchantTool, arguments, environment: ["MERCHANT_P12_PASSWORD": TestPKI.p12Password])
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(result.stdout, GatewayTests.sessionBytes)
        let wrong = try run(Self.merchantTool, arguments, environment: ["MERCHANT_P12_PASSWORD": "wrong"])
        XCTAssertEqual(wrong.status, 2)
        XCTAssertTrue(wrong.stderr.contains("PKCS#12"), wrong.stderr)
        await gateway.stop()
    }

    func testRefusedValidationURLExitsOneWithAJSONErrorAndNoConnection() async throws {
        let gateway = try await TestGateway { _ in .answer(status: 200, body: GatewayTests.sessionBytes) }
        let result = try run(
            Self.merchantTool,
            ["session"] + gatewayArguments(gateway) + [
                "--domain", "shop.example.com", "--display-name", "Store",
                "--validation-url",
                "https://apple-pay-gateway.apple.com@127.0.0.1:\(gateway.port)/paymentservices/paymentSession",
            ])
        XCTAssertEqual(result.status, 1, result.stderr)
        XCTAssertEqual(result.stdoutJSON["error"] as? String, "invalidValidationURL")
        XCTAssertEqual(gateway.connectionCount, 0)
        await gateway.stop()
    }

    func testGatewayErrorIsPrintedWithItsStatusCodeAndMessage() async throws {
        let gateway = try await TestGateway { _ in
            .answer(status: 400, body: Array(#"{"statusCode":"400","statusMessage":"domain not verified"}"#.utf8))
        }
        let result = try run(
            Self.merchantTool, ["domains", "register"] + gatewayArguments(gateway) + ["shop.example.com"])
        XCTAssertEqual(result.status, 1)
        XCTAssertEqual(result.stdoutJSON["error"] as? String, "gatewayError")
        XCTAssertEqual(result.stdoutJSON["httpStatus"] as? Int, 400)
        XCTAssertEqual(result.stdoutJSON["statusCode"] as? String, "400")
        XCTAssertEqual(result.stdoutJSON["statusMessage"] as? String, "domain not verified")
        await gateway.stop()
    }

    func testDomainsListPrintsTheDomains() async throws {
        let gateway = try await TestGateway { _ in
            .answer(
                status: 200,
                body: Array(
                    #"{"merchantIdentifier":"merchant.com.example.test","domainNames":["shop.example.com"]}"#.utf8))
        }
        let result = try run(Self.merchantTool, ["domains", "list"] + gatewayArguments(gateway))
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(result.stdoutJSON["domainNames"] as? [String], ["shop.example.com"])
        XCTAssertEqual(
            gateway.requests.first?.uri, "/paymentservices/domains?merchantIdentifier=merchant.com.example.test")
        await gateway.stop()
    }

    func testHelpExplainsTheCommandsAndTheTestOnlyOptions() throws {
        let root = try run(Self.merchantTool, ["--help"])
        XCTAssertEqual(root.status, 0)
        XCTAssertTrue(root.stdoutText.contains("session") && root.stdoutText.contains("domains"), root.stdoutText)
        let session = try run(Self.merchantTool, ["session", "--help"])
        for word in [
            "--validation-url", "--display-name", "--identity", "password-env", "TESTING ONLY", "--sandbox", "64",
        ] {
            XCTAssertTrue(session.stdoutText.contains(word), "session --help lacks \(word)")
        }
    }

    func testPasswordsAreNeverTakenFromTheCommandLine() throws {
        let result = try run(
            Self.merchantTool,
            [
                "domains", "list", "--identity", "p12=\(pki.path("client.p12")),password=\(TestPKI.p12Password)",
                "--merchant-id", "merchant.com.example.test",
            ])
        XCTAssertEqual(result.status, 2)
        XCTAssertTrue(result.stderr.contains("unknown member"), result.stderr)
    }

    /// `applepay-decrypt merchant-session` runs this tool with the same arguments. Needs the main package's
    /// CLI: ci.sh builds it and names it in APPLEPAY_DECRYPT_BIN.
    func testMainCLIDispatchesMerchantSessionToTheTool() async throws {
        guard let decrypt = ProcessInfo.processInfo.environment["APPLEPAY_DECRYPT_BIN"] else {
            throw XCTSkip("APPLEPAY_DECRYPT_BIN is not set (ci.sh sets it)")
        }
        let gateway = try await TestGateway { _ in .answer(status: 200, body: GatewayTests.sessionBytes) }
        let arguments = gatewayArguments(gateway) + ["--domain", "shop.example.com", "--display-name", "Store"]
        let viaEnvironment = try run(
            decrypt, ["merchant-session"] + arguments, environment: ["APPLEPAY_MERCHANT_TOOL": Self.merchantTool])
        XCTAssertEqual(viaEnvironment.status, 0, viaEnvironment.stderr)
        XCTAssertEqual(viaEnvironment.stdout, GatewayTests.sessionBytes)
        let refused = try run(
            decrypt, ["merchant-session"] + arguments + ["--validation-url", "http://127.0.0.1/"],
            environment: ["APPLEPAY_MERCHANT_TOOL": Self.merchantTool])
        XCTAssertEqual(refused.status, 1, "the tool's exit status passes through")
        let help = try run(
            decrypt, ["merchant-domains", "list", "--help"], environment: ["APPLEPAY_MERCHANT_TOOL": Self.merchantTool])
        XCTAssertTrue(help.stdoutText.contains("listMerchantDomains"), help.stdoutText)
        let missing = try run(
            decrypt, ["merchant-session"] + arguments,
            environment: ["APPLEPAY_MERCHANT_TOOL": "/nonexistent/applepay-merchant"])
        XCTAssertEqual(missing.status, 2)
        XCTAssertTrue(
            missing.stderr.contains("swift build -c release --package-path Sources/Server --product applepay-merchant"),
            missing.stderr)
        await gateway.stop()
    }
}
