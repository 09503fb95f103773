// `applepay-decrypt keys` and MerchantKeyTools: the key and CSR for Apple's portal (accepted by
// `openssl req -verify`), the check of a returned certificate (a test CA standing in for Apple's), and
// Google Pay's key pair.
import ApplePayDecryption
import ApplePayTestSupport
import Foundation
import Testing

@Suite("Merchant key tools (keys apple-csr, check, google)")
struct KeyToolTests {
    /// Runs `openssl ARGUMENTS`; its exit status and its output and errors together.
    private func openssl(_ arguments: [String]) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["openssl"] + arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return (process.terminationStatus, output)
    }

    private func mode(_ path: String) throws -> Int {
        try #require(FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int)
    }

    /// The value after "LABEL: " on the line that starts with it.
    private func value(_ label: String, in output: String) -> String? {
        output.split(separator: "\n").first { $0.hasPrefix(label + ": ") }.map {
            String($0.dropFirst(label.count + 2).prefix { $0 != " " })
        }
    }

    @Test(
        "apple-csr: a new 0600 key file and a CSR that openssl req -verify accepts, for the key it names (EC P-256 and RSA-2048)",
        arguments: ["ec", "rsa"])
    func appleCSR(_ algorithm: String) throws {
        let scratch = ScratchDirectory()
        let key = scratch.url.appendingPathComponent("merchant.key").path
        let csr = scratch.url.appendingPathComponent("merchant.csr").path
        let made = try runCLI([
            "keys", "apple-csr", "--key-out", key, "--csr-out", csr, "--algorithm", algorithm,
            "--merchant-id", "merchant.com.example.keys", "--email", "ops@example.com", "--country", "US",
        ])
        #expect(made.status == 0, "\(made.stdout)\(made.stderr)")
        #expect(try mode(key) == 0o600)
        #expect(!made.stdout.contains("PRIVATE KEY") && !made.stderr.contains("PRIVATE KEY"))

        let verified = try openssl(["req", "-in", csr, "-verify", "-noout", "-subject"])
        #expect(verified.status == 0, "\(verified.output)")
        #expect(verified.output.contains("verify OK"), "\(verified.output)")
        #expect(verified.output.contains("CN = merchant.com.example.keys"), "\(verified.output)")
        let text = try openssl(["req", "-in", csr, "-noout", "-text"]).output
        #expect(text.contains(algorithm == "ec" ? "prime256v1" : "Public-Key: (2048 bit)"), "\(text)")
        #expect(text.contains(algorithm == "ec" ? "ecdsa-with-SHA256" : "sha256WithRSAEncryption"), "\(text)")

        // The CSR's key is the key file's: its SubjectPublicKeyInfo as openssl derives it from the key.
        let request = try MerchantKeyTools.readCertificateRequest(
            Array(try Data(contentsOf: URL(fileURLWithPath: csr))))
        let publicKey = scratch.url.appendingPathComponent("public.der").path
        #expect(try openssl(["pkey", "-in", key, "-pubout", "-outform", "DER", "-out", publicKey]).status == 0)
        #expect(request.subjectPublicKeyInfo == Array(try Data(contentsOf: URL(fileURLWithPath: publicKey))))
        #expect(value("publicKeyHash", in: made.stdout) == request.publicKeyHashBase64)
    }

    @Test("apple-csr never replaces a file: an existing key file is refused (exit 2) and left as it was")
    func appleCSRRefusesExistingFiles() throws {
        let scratch = ScratchDirectory()
        let key = scratch.write("merchant.key", "not to be replaced")
        let result = try runCLI([
            "keys", "apple-csr", "--key-out", key, "--csr-out", scratch.url.appendingPathComponent("m.csr").path,
            "--merchant-id", "merchant.com.example.keys",
        ])
        #expect(result.status == 2)
        #expect(result.stderr.contains("File exists"), "\(result.stderr)")
        #expect(try String(contentsOfFile: key, encoding: .utf8) == "not to be replaced")
    }

    @Test(
        "check: the certificate a test CA issued for the CSR matches its key (DER and PEM), another merchant's does not"
    )
    func checkTellsMatchingFromMismatched() throws {
        let scratch = ScratchDirectory()
        let key = scratch.url.appendingPathComponent("merchant.key").path
        let csr = scratch.url.appendingPathComponent("merchant.csr").path
        let made = try runCLI([
            "keys", "apple-csr", "--key-out", key, "--csr-out", csr, "--merchant-id", "merchant.com.example.keys",
        ])
        #expect(made.status == 0, "\(made.stderr)")
        let request = try MerchantKeyTools.readCertificateRequest(
            Array(try Data(contentsOf: URL(fileURLWithPath: csr))))

        // The test CA stands in for Apple's: it certifies the request's key with the merchant id extension.
        let pki = TestPKI()
        let issued = pki.makeMerchant(
            identifier: "merchant.com.example.keys", publicKeyDER: request.subjectPublicKeyInfo)
        let der = scratch.write("apple_pay.cer", issued.certificateDER)
        let pem = scratch.write("apple_pay.pem", issued.certificatePEM)
        for certificate in [der, pem] {
            let check = try runCLI(["keys", "check", certificate, "--key", key])
            #expect(check.status == 0, "\(check.stdout)\(check.stderr)")
            #expect(check.stdout.contains("private key: belongs to this certificate"), "\(check.stdout)")
            #expect(value("publicKeyHash", in: check.stdout) == request.publicKeyHashBase64)
            #expect(value("merchant id", in: check.stdout) == "merchant.com.example.keys")
            #expect(check.stdout.contains(", SHA-256 of the merchant id"), "\(check.stdout)")
            #expect(check.stdout.contains("expires in "), "\(check.stdout)")
        }

        let other = scratch.write(
            "other.cer", pki.makeMerchant(identifier: "merchant.com.example.other").certificateDER)
        let mismatch = try runCLI(["keys", "check", other, "--key", key])
        #expect(mismatch.status == 1, "\(mismatch.stdout)\(mismatch.stderr)")
        #expect(mismatch.stdout.contains("private key: does NOT belong to this certificate"), "\(mismatch.stdout)")
        #expect(mismatch.stdout.contains("problem: keyMismatch"), "\(mismatch.stdout)")

        // The API says the same, and why the engine refuses the pair.
        let report = try MerchantKeyTools.checkMerchantCertificate(issued.certificateDER, privateKeyFile: key)
        #expect(report.keyMatches == true && report.engineRefusal == nil)
        #expect(report.publicKeyHash == request.publicKeyHash)
        let refused = try MerchantKeyTools.checkMerchantCertificate(
            Array(try Data(contentsOf: URL(fileURLWithPath: other))), privateKeyFile: key)
        #expect(refused.keyMatches == false)
        #expect(refused.engineRefusal?.code == .keyMismatch)
    }

    @Test("check: an expired certificate is a problem (exit 1), with the days since it expired")
    func checkReportsExpiry() throws {
        let scratch = ScratchDirectory()
        let merchant = Fixtures.shared.ecMerchant
        let certificate = scratch.write("apple_pay.cer", merchant.certificateDER)
        let key = scratch.write("merchant.key", merchant.privateKeyPEM)
        let report = try MerchantKeyTools.checkMerchantCertificate(merchant.certificateDER)
        let late = report.notAfter.addingTimeInterval(3 * 86_400 + 60)
        let result = try runCLI(["keys", "check", certificate, "--key", key, "--now", late.formatted(.iso8601)])
        #expect(result.status == 1, "\(result.stdout)")
        #expect(result.stdout.contains("expired 3 days ago"), "\(result.stdout)")
        #expect(report.daysToExpiry(at: late) == -3)
    }

    @Test(
        "google: a 0600 P-256 key the engine loads, and its public key as the base64 uncompressed point and X.509 SubjectPublicKeyInfo"
    )
    func googleKeyPair() throws {
        let scratch = ScratchDirectory()
        let key = scratch.url.appendingPathComponent("google.key").path
        let result = try runCLI(["keys", "google", "--key-out", key])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(try mode(key) == 0o600)
        _ = try GooglePayMerchantKey(privateKeyFile: key)

        let point = try #require(
            value("public key (base64 uncompressed point, for Google's console)", in: result.stdout).flatMap {
                Data(base64Encoded: $0)
            })
        #expect(point.count == 65 && point.first == 0x04)
        let publicKey = scratch.url.appendingPathComponent("public.der").path
        #expect(try openssl(["pkey", "-in", key, "-pubout", "-outform", "DER", "-out", publicKey]).status == 0)
        let spki = try Data(contentsOf: URL(fileURLWithPath: publicKey))
        #expect(
            value("public key (base64 X.509 SubjectPublicKeyInfo)", in: result.stdout) == spki.base64EncodedString())
        #expect(spki.suffix(65) == point)
    }
}
