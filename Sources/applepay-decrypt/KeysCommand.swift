// `keys`: make a merchant key and the CSR Apple's portal takes, check the certificate Apple returns
// against its key, make a Google Pay key pair (through MerchantKeyTools; the articles: GettingTheKeys).
import ApplePayDecryption
import ArgumentParser
import Foundation

struct KeysCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keys",
        abstract:
            "Make and check merchant keys: Apple Pay's key and CSR, the certificate Apple returns, Google Pay's key.",
        discussion: """
            Private keys are written by OpenSSL into a new file (mode 0600; an existing file is never \
            replaced) and never printed. Exit status: 0 done (check: the key belongs to the certificate and \
            the engine loads them), 1 check found a problem, 2 bad usage or unreadable input.
            """,
        subcommands: [AppleCSRCommand.self, CheckCommand.self, GoogleKeyCommand.self])
}

extension KeysCommand {
    struct AppleCSRCommand: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "apple-csr",
            abstract: "Make an Apple Pay merchant key and the certificate signing request for Apple's portal.",
            discussion: """
                Upload the CSR in Apple's developer portal (Certificates, Identifiers & Profiles > your \
                merchant ID > Apple Pay Payment Processing Certificate > Create Certificate), download \
                apple_pay.cer, then run `applepay-decrypt keys check apple_pay.cer --key KEY`. EC P-256 \
                is the usual choice; RSA-2048 only where Apple issues RSA_v1 tokens.
                """)

        @Option(name: .customLong("key-out"), help: "The new private key file (PKCS#8 PEM, mode 0600).")
        var keyOut: String

        @Option(name: .customLong("csr-out"), help: "The new certificate signing request file (PEM).")
        var csrOut: String

        @Option(help: "The key: ec (P-256) or rsa (RSA-2048).")
        var algorithm: String = "ec"

        @Option(
            name: .customLong("merchant-id"),
            help: "Your merchant identifier (merchant.com.example), the request's common name.")
        var merchantId: String

        @Option(help: "An email address for the request's subject.")
        var email: String?

        @Option(help: "A two-letter country code for the request's subject.")
        var country: String?

        func run() throws {
            guard let kind = MerchantKeyTools.AppleKeyAlgorithm(rawValue: algorithm) else {
                throw CLIError("--algorithm must be ec or rsa, not \(algorithm)")
            }
            guard !FileManager.default.fileExists(atPath: csrOut) else {
                throw CLIError("\(csrOut) exists: choose a new file for --csr-out")
            }
            let request = try reportingConfiguration {
                try MerchantKeyTools.makeAppleMerchantKey(
                    kind, privateKeyFile: keyOut, commonName: merchantId, emailAddress: email, country: country)
            }
            try NewFile.write(csrOut, Array(request.pem.utf8), mode: 0o644)
            print("private key: \(keyOut) (\(kind == .ecP256 ? "EC P-256" : "RSA-2048"), mode 0600: keep it secret)")
            print("request: \(csrOut) (\(request.subject)): upload it in Apple's portal")
            print("publicKeyHash: \(request.publicKeyHashBase64) (the header.publicKeyHash of this key's tokens)")
        }
    }

    struct CheckCommand: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "check",
            abstract: "Check a merchant certificate (.cer, DER or PEM) against its key; print what tokens match on.",
            discussion: """
                Prints the publicKeyHash tokens carry for this certificate, its merchant id (the subject's \
                UID) and the 1.2.840.113635.100.6.32 extension (SHA-256 of the merchant id, the EC_v1 KDF's \
                partyV), the validity and the days to expiry, and with --key whether the key belongs to the \
                certificate and the engine loads them. Exit 1 when they do not match, the engine refuses \
                them, or the certificate has expired.
                """)

        @Argument(help: "The certificate Apple returned (apple_pay.cer), DER or PEM.")
        var certificate: String

        @Option(help: "The private key file made with the CSR (PEM or DER).")
        var key: String?

        @Option(
            name: .customLong("key-password-env"),
            help: "The environment variable holding the key's password, for an encrypted key.")
        var keyPasswordEnv: String?

        @Option(help: "The time to judge expiry at (ISO 8601; default: now).")
        var now: String?

        func run() throws {
            let certificateBytes = try reportingConfiguration {
                try SecretFile.withContents(atPath: certificate, what: "certificate") { bytes in bytes }
            }
            let password = keyPasswordEnv.flatMap { ProcessInfo.processInfo.environment[$0] }
            let report = try reportingConfiguration {
                try MerchantKeyTools.checkMerchantCertificate(
                    certificateBytes, privateKeyFile: key, keyPassword: password)
            }
            let at =
                try now.map { text in
                    guard let date = try? Date(text, strategy: .iso8601) else { throw CLIError("--now: not ISO 8601") }
                    return date
                } ?? Date()
            let days = report.daysToExpiry(at: at)
            var problems: [String] = []
            print("certificate: \(report.subject) (\(report.keyDescription))")
            print("publicKeyHash: \(report.publicKeyHashBase64) (what this certificate's tokens carry)")
            print("merchant id: \(report.merchantIdentifier ?? "none in the subject (no UID)")")
            if let hash = report.merchantIdentifierHashHex {
                let agrees = report.merchantIdentifierHashMatches == true ? ", SHA-256 of the merchant id" : ""
                print("merchant id extension (1.2.840.113635.100.6.32): \(hash)\(agrees)")
                if report.merchantIdentifierHashMatches == false {
                    problems.append("the extension is not SHA-256 of the subject's merchant id")
                }
            } else {
                print("merchant id extension (1.2.840.113635.100.6.32): none (an EC merchant then needs id=)")
            }
            let format = Date.ISO8601FormatStyle()
            print(
                "valid: \(report.notBefore.formatted(format)) to \(report.notAfter.formatted(format)); "
                    + (days >= 0 ? "expires in \(days) days" : "expired \(-days) days ago"))
            if days < 0 { problems.append("the certificate has expired") }
            if let matches = report.keyMatches {
                print("private key: \(matches ? "belongs to this certificate" : "does NOT belong to this certificate")")
                if !matches { problems.append("keyMismatch: the key is not the one this certificate was made for") }
                if let refusal = report.engineRefusal, matches {
                    problems.append("the engine refuses this merchant: \(refusal)")
                }
            }
            if problems.isEmpty {
                print(report.keyMatches == nil ? "ok (no --key given: the key was not checked)" : "ok")
            } else {
                for problem in problems { print("problem: \(problem)") }
                throw ExitCode(1)
            }
        }
    }

    struct GoogleKeyCommand: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "google",
            abstract: "Make a Google Pay merchant key pair; print the public key as Google's console takes it.",
            discussion: """
                The private key (EC P-256, PKCS#8 PEM) is what --google-merchant-key reads. Paste the \
                uncompressed point's base64 into the Google Pay & Wallet Console (or give it to your gateway).
                """)

        @Option(name: .customLong("key-out"), help: "The new private key file (PKCS#8 PEM, mode 0600).")
        var keyOut: String

        func run() throws {
            let publicKey = try reportingConfiguration { try MerchantKeyTools.makeGooglePayKey(privateKeyFile: keyOut) }
            print("private key: \(keyOut) (EC P-256, mode 0600: keep it secret; --google-merchant-key reads it)")
            print("public key (base64 uncompressed point, for Google's console): \(publicKey.uncompressedPointBase64)")
            print("public key (base64 X.509 SubjectPublicKeyInfo): \(publicKey.subjectPublicKeyInfoBase64)")
        }
    }
}

/// A configuration failure as the CLI reports it: exit 2 with the message.
private func reportingConfiguration<R>(_ body: () throws -> R) throws -> R {
    do {
        return try body()
    } catch let error as ConfigurationError {
        throw CLIError(error.description)
    }
}

/// A file created exclusively (never an existing file or a link) with a given mode.
enum NewFile {
    static func write(_ path: String, _ bytes: [UInt8], mode: mode_t) throws {
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode)
        guard fd >= 0 else { throw CLIError("cannot create \(path): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        let written = bytes.withUnsafeBytes { Foundation.write(fd, $0.baseAddress, $0.count) }
        guard written == bytes.count, fchmod(fd, mode) == 0 else {
            unlink(path)
            throw CLIError("cannot write \(path): \(String(cString: strerror(errno)))")
        }
    }
}
