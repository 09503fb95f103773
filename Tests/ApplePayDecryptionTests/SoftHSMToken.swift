// A private SoftHSM2 token for the PKCS#11 tests: keys generated inside it (never extractable) with
// test-PKI certificates for their public keys, and the real Apple vectors' keys imported with derive
// or decrypt permission. Made once per test process: SoftHSM reads SOFTHSM2_CONF and its token
// directory at C_Initialize, which the engine calls once per process.
import ApplePayDecryption
import ApplePayTestSupport
import Foundation
import Testing

final class SoftHSMToken: Sendable {
    /// The shared token, or why it could not be made (a test then fails, never skips).
    static let shared: Result<SoftHSMToken, SetupFailure> = Result { () throws(SetupFailure) in try SoftHSMToken() }

    struct SetupFailure: Error, CustomStringConvertible { let description: String }

    static let tokenLabel = "applepay-tests"
    static let pin = "246810"
    /// Debian's path (a symbolic link to the multiarch file; the engine follows it to a regular file).
    static let module: String =
        [
            "/usr/lib/softhsm/libsofthsm2.so", "/usr/lib/x86_64-linux-gnu/softhsm/libsofthsm2.so",
            "/usr/lib/aarch64-linux-gnu/softhsm/libsofthsm2.so",
        ].first { FileManager.default.fileExists(atPath: $0) }
        ?? "/usr/lib/softhsm/libsofthsm2.so"

    let directory: URL
    /// SOFTHSM2_CONF for child processes (the CLI).
    let configuration: String
    /// A file holding the PIN, for pin-source=.
    let pinFile: String
    let pki = TestPKI()
    /// Certificates for keys generated inside the token.
    let ecMerchant: TestMerchant
    let rsaMerchant: TestMerchant
    /// Software merchants whose keys were also imported into the token (for the differential test).
    let importedEC: TestMerchant
    let importedRSA: TestMerchant
    /// An EC key imported without CKA_DERIVE, and its certificate.
    let noDeriveMerchant: TestMerchant
    let factory: TestTokenFactory

    private init() throws(SetupFailure) {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("applepay-softhsm-\(getpid())")
        try? FileManager.default.removeItem(at: directory)
        let tokens = directory.appendingPathComponent("tokens")
        do {
            try FileManager.default.createDirectory(at: tokens, withIntermediateDirectories: true)
            configuration = directory.appendingPathComponent("softhsm2.conf").path
            try
                "directories.tokendir = \(tokens.path)\nobjectstore.backend = file\nlog.level = ERROR\nslots.removable = false\n"
                .write(toFile: configuration, atomically: true, encoding: .utf8)
            pinFile = directory.appendingPathComponent("pin").path
            try "\(Self.pin)\n".write(toFile: pinFile, atomically: true, encoding: .utf8)
        } catch {
            throw SetupFailure(description: "cannot write the SoftHSM2 configuration: \(error)")
        }
        // Before any C_Initialize in this process (the engine's), and for the tools run below.
        setenv("SOFTHSM2_CONF", configuration, 1)
        factory = TestTokenFactory(pki: pki)
        try Self.run(
            "softhsm2-util",
            ["--init-token", "--free", "--label", Self.tokenLabel, "--pin", Self.pin, "--so-pin", "13579"])
        try Self.tool([
            "--keypairgen", "--key-type", "EC:prime256v1", "--label", "ec-key", "--id", "01", "--usage-derive",
        ])
        try Self.tool(["--keypairgen", "--key-type", "RSA:2048", "--label", "rsa-key", "--id", "02", "--usage-decrypt"])
        ecMerchant = try pki.makeMerchant(
            identifier: "merchant.com.example.hsm", publicKeyDER: Self.publicKey(id: "01"))
        rsaMerchant = try pki.makeMerchant(
            identifier: "merchant.com.example.hsm-rsa", publicKeyDER: Self.publicKey(id: "02"))
        importedEC = pki.makeMerchant(identifier: "merchant.com.example.imported")
        importedRSA = pki.makeMerchant(identifier: "merchant.com.example.imported-rsa", kind: .rsa)
        noDeriveMerchant = pki.makeMerchant(identifier: "merchant.com.example.noderive")
        let scratch = directory.appendingPathComponent("import.pem").path
        func importKey(_ pem: String, label: String, id: String, usage: String) throws(SetupFailure) {
            do { try pem.write(toFile: scratch, atomically: true, encoding: .utf8) } catch {
                throw SetupFailure(description: "\(error)")
            }
            defer { try? FileManager.default.removeItem(atPath: scratch) }
            try Self.tool(["--write-object", scratch, "--type", "privkey", "--label", label, "--id", id, usage])
        }
        try importKey(importedEC.privateKeyPEM, label: "ec-imported", id: "05", usage: "--usage-derive")
        try importKey(importedRSA.privateKeyPEM, label: "rsa-imported", id: "06", usage: "--usage-decrypt")
        // softhsm2-util --import creates EC keys without CKA_DERIVE (the trap the issue measured).
        do { try noDeriveMerchant.privateKeyPEM.write(toFile: scratch, atomically: true, encoding: .utf8) } catch {
            throw SetupFailure(description: "\(error)")
        }
        try Self.run(
            "softhsm2-util",
            [
                "--import", scratch, "--token", Self.tokenLabel, "--label", "ec-noderive", "--id", "07", "--pin",
                Self.pin,
            ])
        try? FileManager.default.removeItem(atPath: scratch)
        // The shared Apple vectors' keys, for the test that decrypts them through the token (skipped without them).
        for (index, vector) in AppleVector.all.enumerated() where SharedVectors.runs(Paths.appleVectors) {
            let key = vector.directory.appendingPathComponent("merchant_key.pem").path
            let rsa =
                (try? String(contentsOfFile: vector.directory.appendingPathComponent("meta.json").path, encoding: .utf8))?
                .contains("RSA_v1") ?? false
            try Self.tool([
                "--write-object", key, "--type", "privkey", "--label", vector.name, "--id",
                String(format: "%02x", 0x10 + index),
                rsa ? "--usage-decrypt" : "--usage-derive",
            ])
        }
    }

    deinit { try? FileManager.default.removeItem(at: directory) }

    /// A URI for an object of the test token, with the PIN from the file unless `query` says otherwise.
    func uri(object: String, query: String? = nil) -> String {
        "pkcs11:token=\(Self.tokenLabel);object=\(object);type=private?module-path=\(Self.module)&"
            + (query ?? "pin-source=file:\(pinFile)")
    }

    func reference(object: String, query: String? = nil) throws -> PKCS11KeyReference {
        try PKCS11KeyReference(uri: uri(object: object, query: query))
    }

    /// A merchant identity: the certificate and the key `object` in the token.
    func identity(_ merchant: TestMerchant, object: String, query: String? = nil) throws -> MerchantIdentity {
        try MerchantIdentity(certificate: merchant.certificateDER, pkcs11: reference(object: object, query: query))
    }

    /// An RSA key in the token. SoftHSM2 2.6.1 (Debian 12) implements CKM_RSA_PKCS_OAEP with SHA-1 only
    /// ("hashAlg must be CKM_SHA_1", CKR_ARGUMENTS_BAD), so its keys take the raw route (CKM_RSA_X_509 in
    /// the token, OAEP decoded here); a load that fails is a test failure. (Optional for the call sites
    /// written when RSA_v1 could not run through SoftHSM2 at all.)
    func rsaIdentityIfSupported(_ merchant: TestMerchant, object: String) throws -> MerchantIdentity? {
        let identity = try identity(merchant, object: object)
        #expect(identity.key.token?.decodesOAEPInProcess == true)
        return identity
    }

    func decryptor(_ merchants: [MerchantIdentity]) throws -> PaymentTokenDecryptor {
        try PaymentTokenDecryptor(merchants: merchants, trustAnchor: pki.trustAnchor, signingTimeWindow: 300)
    }

    func mint(for merchant: TestMerchant, transactionId: String? = nil) -> [UInt8] {
        factory.mint(
            payload: TestPayload.threeDSecure(), for: merchant,
            options: TestTokenFactory.Options(signingTime: signingInstant, transactionId: transactionId)
        ).bytes
    }

    /// pkcs11-tool logged in to the test token.
    static func tool(_ arguments: [String]) throws(SetupFailure) {
        try run("pkcs11-tool", ["--module", module, "--token-label", tokenLabel, "--login", "--pin", pin] + arguments)
    }

    /// The public key of the pair with CKA_ID `id`, as SubjectPublicKeyInfo DER.
    static func publicKey(id: String) throws(SetupFailure) -> [UInt8] {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("applepay-pub-\(getpid())-\(id).der")
            .path
        defer { try? FileManager.default.removeItem(atPath: file) }
        try run(
            "pkcs11-tool",
            [
                "--module", module, "--token-label", tokenLabel, "--read-object", "--type", "pubkey", "--id", id, "-o",
                file,
            ])
        guard let der = FileManager.default.contents(atPath: file) else {
            throw SetupFailure(description: "pkcs11-tool wrote no public key")
        }
        return Array(der)
    }

    /// Runs a set-up tool found on PATH; its failure is a set-up failure with its output.
    @discardableResult
    static func run(_ tool: String, _ arguments: [String]) throws(SetupFailure) -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [tool] + arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        do { try process.run() } catch { throw SetupFailure(description: "cannot run \(tool): \(error)") }
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw SetupFailure(
                description:
                    "\(tool) \(arguments.filter { $0 != pin }.joined(separator: " ")) failed (\(process.terminationStatus)): \(text)"
            )
        }
        return text
    }

    /// The shared token, or a test failure saying why it is missing (SoftHSM2 and OpenSC must be installed).
    static func require() throws -> SoftHSMToken {
        switch shared {
        case .success(let token): return token
        case .failure(let failure):
            Issue.record("SoftHSM2 test token unavailable: \(failure)")
            throw failure
        }
    }
}
