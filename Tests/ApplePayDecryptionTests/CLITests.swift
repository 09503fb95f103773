// The applepay-decrypt process: contract for stdout, stderr and exit status, run for real.
import ApplePayDecryption
import ApplePayTestSupport
import Foundation
import Testing

@Suite("CLI decrypt")
struct CLITests {
    let f = Fixtures.shared

    func files(_ dir: ScratchDirectory) -> (root: String, merchant: String) {
        let root = dir.write("root.pem", f.pki.rootPEM)
        let cert = dir.write("merchant.pem", f.ecMerchant.certificatePEM)
        let key = dir.write("merchant.key", f.ecMerchant.privateKeyPEM)
        return (root, "cert=\(cert),key=\(key)")
    }

    @Test("success: payment JSON on stdout, exit 0, a loud warning for the test root")
    func success() throws {
        let dir = ScratchDirectory()
        let (root, merchant) = files(dir)
        let token = dir.write("token.json", f.mint().bytes)
        let result = try runCLI([
            "decrypt", token, "--merchant", merchant, "--trust-root", root, "--now", "2026-03-01T12:01:00Z",
        ])
        #expect(result.status == 0)
        #expect(try JSONValue.parse(result.stdout) == (try JSONValue.parse(TestPayload.threeDSecure())))
        #expect(result.stderr.contains("WARNING"))
        #expect(result.stderr.contains("NOT proven to come from Apple"))
    }

    @Test("stdin with -, id= merchant and p12= merchant with password-env", .tags(.pkcs12))
    func stdinAndMerchantForms() throws {
        let dir = ScratchDirectory()
        let (root, _) = files(dir)
        let key = dir.write("merchant.key", f.ecMerchant.privateKeyPEM)
        let p12 = dir.write("merchant.p12", f.ecMerchant.pkcs12(password: "pw", legacy: true))
        let token = f.mint().bytes
        for merchant in ["id=\(f.ecMerchant.identifier),key=\(key)", "p12=\(p12),password-env=P12_PASSWORD"] {
            let result = try runCLI(
                ["decrypt", "-", "--merchant", merchant, "--trust-root", root, "--now", "2026-03-01T12:00:00Z"],
                stdin: token, environment: ["P12_PASSWORD": "pw"])
            #expect(result.status == 0, "\(merchant): \(result.stderr)")
        }
    }

    @Test("rejection: error JSON with code, message and field on stdout, exit 1")
    func rejection() throws {
        let dir = ScratchDirectory()
        let (root, merchant) = files(dir)
        let token = dir.write("token.json", f.mint().bytes)
        let stale = try runCLI([
            "decrypt", token, "--merchant", merchant, "--trust-root", root, "--now", "2026-03-01T13:00:00Z",
        ])
        #expect(stale.status == 1)
        let output = try JSONValue.parse(stale.stdout)
        #expect(output["error"]?.stringValue == "signingTimeOutOfRange")
        #expect(output["message"]?.stringValue != nil)
        #expect(output["field"] != nil)
        let bad = dir.write("bad.json", Array(#"{"version":"EC_v1","data":"AAAA"}"#.utf8))
        let malformed = try runCLI(["decrypt", bad, "--merchant", merchant, "--trust-root", root])
        #expect(malformed.status == 1)
        #expect(try JSONValue.parse(malformed.stdout)["field"]?.stringValue == "data")
    }

    @Test(
        "bad usage or unreadable keys: a message on stderr, exit 2",
        arguments: [
            ["decrypt", "token.json"],
            ["decrypt", "token.json", "--merchant", "cert=/nonexistent.pem,key=/nonexistent.key"],
            ["decrypt", "token.json", "--merchant", "bogus"],
            ["decrypt", "token.json", "--merchant", "id=merchant.x,key=KEY", "--now", "yesterday"],
            ["decrypt", "/nonexistent/token.json", "--merchant", "id=merchant.x,key=KEY"],
            ["frobnicate"],
        ])
    func badUsage(_ arguments: [String]) throws {
        let dir = ScratchDirectory()
        let key = dir.write("merchant.key", f.ecMerchant.privateKeyPEM)
        let result = try runCLI(arguments.map { $0.replacingOccurrences(of: "KEY", with: key) })
        #expect(result.status == 2)
        #expect(!result.stderr.isEmpty)
        #expect(result.stdout.isEmpty)
    }

    @Test("--help explains the merchant forms and exit codes")
    func help() throws {
        let result = try runCLI(["decrypt", "--help"])
        #expect(result.status == 0)
        for phrase in [
            "cert=PATH,key=PATH", "p12=PATH", "--trust-root", "TESTING ONLY", "unknownMerchantKey", "exit 1",
        ] {
            #expect(result.stdout.contains(phrase), "\(phrase)")
        }
    }

    @Test("each subcommand's --help states each default once (the parser appends it; the text must not repeat it)")
    func helpStatesDefaultsOnce() throws {
        for subcommand in ["decrypt", "batch", "merge"] {
            let result = try runCLI([subcommand, "--help"])
            #expect(result.status == 0)
            let text = result.stdout.split(whereSeparator: \.isWhitespace).joined(separator: " ")
            #expect(!text.contains("(default 1048576)"), "\(subcommand): \(text)")
            // Two defaults in a row: the help text's own and the one the parser appends.
            #expect(!text.contains(#/\(default:? [^)]+\)\.? \(default: /#), "\(subcommand): \(text)")
        }
    }

    @Test("the committed Vectors/ decrypt through the CLI as the README shows")
    func readmeCommand() throws {
        let v = BundledVectors.directory.path
        let result = try runCLI([
            "decrypt", "\(v)/tokens/ec-3dsecure.json", "--merchant",
            "cert=\(v)/merchants/ec.cert.pem,key=\(v)/merchants/ec.key.pem",
            "--trust-root", "\(v)/trust/test-root.pem", "--now", "2026-03-01T12:01:00Z",
        ])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(try JSONValue.parse(result.stdout)["paymentDataType"]?.stringValue == "3DSecure")
    }
}
