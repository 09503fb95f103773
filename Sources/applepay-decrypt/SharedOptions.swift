// Options every decrypting subcommand shares: merchant keys, trust root, reference time, window.
import ApplePayDecryption
import ArgumentParser
import Foundation

struct EngineOptions: ParsableArguments {
    @Option(
        name: .customLong("merchant"),
        help: ArgumentHelp(
            "A merchant key (repeatable): \(MerchantSpec.syntax).",
            discussion: """
                cert= is the merchant (payment processing) certificate, PEM or DER; key= its private key (PEM SEC1/PKCS#8 \
                or DER). id= names a merchant without a certificate (partyV = SHA-256 of the identifier). p12= reads a \
                PKCS#12 file whose password is in the environment variable named by password-env= (default: empty). \
                key-password-env=VAR decrypts an encrypted PEM key. Load old and new keys together during rotation. \
                pkcs11=URI keeps the private key in an HSM: an RFC 7512 URI with module-path= (absolute) and \
                pin-source=FILE or pin-env=VAR, e.g. pkcs11:token=T;object=KEY;type=private?module-path=/usr/lib/softhsm/libsofthsm2.so&pin-source=/etc/pin
                """,
            valueName: "spec"))
    var merchants: [String] = []

    @Option(
        name: .customLong("trust-root"),
        help: ArgumentHelp(
            "TESTING ONLY: trust this root certificate (PEM) instead of the pinned Apple Root CA - G3.",
            valueName: "path"))
    var trustRoot: String?

    @Option(
        name: .customLong("now"),
        help: ArgumentHelp(
            "Reference time for the freshness check, ISO 8601, fractional seconds allowed (e.g. 2026-03-01T12:01:00.123Z: Google Pay keys and messages expire to the millisecond). Default: the current time.",
            valueName: "time"))
    var now: String?

    @Flag(
        name: .customLong("at-signing-time"),
        help: ArgumentHelp(
            "Skip the freshness check: verify each token only at its own signing time (archives).",
            discussion:
                "Google Pay tokens have no signing time: under this flag no Google Pay expiry is checked at all (root keys, intermediate key, message), so an expired Google Pay token verifies."
        ))
    var atSigningTime = false

    @Option(
        name: .customLong("window"),
        help: ArgumentHelp(
            "Allowed distance in seconds between the signing time and the reference time.", valueName: "seconds"))
    var window: Int64 = PaymentTokenDecryptor.defaultSigningTimeWindow

    @Option(
        name: .customLong("max-item-bytes"),
        help: ArgumentHelp(
            "The largest token read, in bytes: a JSONL line, a directory file, a zip member, the decrypt input.",
            discussion: "A larger item is rejected as malformedToken without being read whole.",
            valueName: "bytes"))
    var maxItemBytes: Int = ItemLimit.defaultBytes

    /// `--merchant` is required unless Google Pay keys are given (each command checks, see
    /// `requireKeys(google:samsung:)`).
    func validate() throws {
        guard window >= 0 else { throw ValidationError("--window must not be negative") }
        guard maxItemBytes >= 1, maxItemBytes <= 1 << 30 else {
            throw ValidationError("--max-item-bytes must be between 1 and 1073741824")
        }
        if now != nil, atSigningTime { throw ValidationError("--now and --at-signing-time exclude each other") }
        if let now, Self.parseTime(now) == nil {
            throw ValidationError("--now '\(now)' is not an ISO 8601 time such as 2026-03-01T12:01:00Z")
        }
    }

    /// At least one wallet's keys: Apple `--merchant` or the Google Pay options.
    func requireKeys(google: GooglePayOptions, samsung: SamsungPayOptions) throws {
        guard !merchants.isEmpty || google.isConfigured || samsung.isConfigured else {
            throw ValidationError("at least one --merchant (or the --google-* options, or --samsung-key) is required")
        }
    }

    /// An ISO 8601 time with a zone, fractional seconds allowed (`--now`).
    static func parseTime(_ text: String) -> Date? {
        if let date = try? Date(text, strategy: .iso8601) { return date }
        return try? Date(text, strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: true))
    }

    var referenceTime: ReferenceTime {
        if atSigningTime { return .signingTime }
        if let now, let date = Self.parseTime(now) { return .at(date) }
        return .now
    }

    /// Builds the engine, or fails with a configuration error (exit 2) before any token is read. With
    /// `allowingNoMerchants` (Google Pay keys alone) and no --merchant, an engine without merchants: an
    /// Apple Pay token is still read and verified under the trust anchor and window, and one that
    /// verifies is unknownMerchantKey, while junk keeps its own code (malformedToken, ...).
    func makeDecryptor(allowingNoMerchants: Bool = false) throws -> PaymentTokenDecryptor {
        let identities = try merchants.map(Self.loadMerchant)
        var anchor = TrustAnchor.appleRootCAG3
        if let trustRoot {
            do {
                anchor = try TrustAnchor.insecureTestingOnlyRoot(pem: try Self.read(trustRoot, what: "trust root"))
            } catch let error as ConfigurationError {
                throw CLIError("--trust-root \(trustRoot): \(error.message)")
            }
            if !anchor.isAppleRootCAG3 {
                Output.stderr(
                    "applepay-decrypt: WARNING: --trust-root replaces Apple Root CA - G3 with \(trustRoot) (SHA-256 \(anchor.fingerprint)). Tokens accepted now are NOT proven to come from Apple. For testing only."
                )
            }
        }
        do {
            if identities.isEmpty && allowingNoMerchants {
                return try PaymentTokenDecryptor.withoutMerchants(trustAnchor: anchor, signingTimeWindow: window)
            }
            return try PaymentTokenDecryptor(merchants: identities, trustAnchor: anchor, signingTimeWindow: window)
        } catch {
            throw CLIError(error.message)
        }
    }

    /// What the keys and the trust anchor are, beyond their paths: each merchant's public key hash and
    /// label (public), and the anchor's SHA-256 fingerprint.
    func keyFacts(_ decryptor: PaymentTokenDecryptor) -> JSONValue {
        .object([
            ("merchants", .array(decryptor.merchants.map { .string("\($0.publicKeyHashHex) \($0.label)") })),
            ("trustAnchor", .string(decryptor.trustAnchor.fingerprint)),
        ])
    }

    static func read(_ path: String, what: String) throws -> [UInt8] {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw CLIError("cannot read the \(what) file \(path)")
        }
        return [UInt8](data)
    }

    static func loadMerchant(_ spec: String) throws -> MerchantIdentity {
        do {
            let identity = try MerchantSpec(spec).load()
            if let warning = identity.pinFileWarning { Output.stderr("applepay-decrypt: WARNING: \(warning)") }
            if identity.rsaOAEPDecodedInProcess {
                Output.stderr(
                    "applepay-decrypt: note: \(identity.label): the PKCS#11 module refused RSA-OAEP with SHA-256, so RSA_v1 tokens take the raw RSA operation from the token and OAEP is decoded in this process (the decrypted block leaves the device)"
                )
            }
            return identity
        } catch {
            throw CLIError("--merchant '\(MerchantSpec.redacted(spec))': \(error.message)")
        }
    }
}
