// The Google Pay options of `decrypt` and `batch`: root keys document, recipient ids, merchant keys.
import ApplePayDecryption
import ArgumentParser
import Foundation

struct GooglePayOptions: ParsableArguments {
    @Option(
        name: .customLong("google-root-keys"),
        help: ArgumentHelp(
            "Google's root signing keys document (JSON, {\"keys\": [...]}) for Google Pay tokens.",
            discussion:
                "Google publishes one for its test environment and one for production; only keys of a token's protocolVersion that are not expired count.",
            valueName: "file"))
    var rootKeys: String?

    @Option(
        name: .customLong("google-recipient-id"),
        help: ArgumentHelp(
            "A recipient id Google Pay tokens are accepted for (repeatable): merchant:MERCHANT_ID or gateway:GATEWAY_ID.",
            valueName: "id"))
    var recipientIds: [String] = []

    @Option(
        name: .customLong("google-merchant-key"),
        help: ArgumentHelp(
            "A Google Pay merchant private key (repeatable, tried in order): \(GooglePayMerchantKey.syntax).",
            discussion:
                "PATH is a P-256 private key in PEM (SEC1 or PKCS#8) or DER; key-password-env=VAR decrypts an encrypted PEM; pkcs11=URI keeps the key in an HSM and takes its public key (pub=PATH) or certificate (cert=PATH).",
            valueName: "spec"))
    var merchantKeys: [String] = []

    @Option(
        name: .customLong("google-protocol-version"),
        help: ArgumentHelp(
            "A Google Pay protocolVersion accepted (repeatable): ECv1, ECv2 or ECv2SigningOnly (default: ECv1 and ECv2).",
            discussion:
                "Naming versions replaces the default: --google-protocol-version ECv2 alone refuses ECv1 tokens. A token of a version not accepted is unsupportedVersion (field protocolVersion), before any signature is checked. Google issues ECv2 to current integrations and ECv1 to those built before it; ECv2SigningOnly carries the card data signed but not encrypted, and is accepted only when named.",
            valueName: "version"))
    var protocolVersions: [String] = []

    /// The versions accepted: those named, or the engine's default.
    func acceptedVersions() throws -> Set<GooglePayToken.ProtocolVersion> {
        do throws(ConfigurationError) {
            return try GooglePayTokenDecryptor.protocolVersions(named: protocolVersions)
        } catch {
            throw ValidationError("--google-protocol-version: \(error.message)")
        }
    }

    /// Whether any Google Pay option was given.
    var isConfigured: Bool {
        rootKeys != nil || !recipientIds.isEmpty || !merchantKeys.isEmpty || !protocolVersions.isEmpty
    }

    func validate() throws {
        guard isConfigured else { return }
        guard rootKeys != nil else { throw ValidationError("Google Pay options need --google-root-keys") }
        guard !recipientIds.isEmpty else { throw ValidationError("Google Pay options need --google-recipient-id") }
        _ = try acceptedVersions()
    }

    /// The Google Pay engine, or nil when no Google Pay option was given.
    func makeDecryptor() throws -> GooglePayTokenDecryptor? {
        guard isConfigured, let rootKeys else { return nil }
        do {
            var keys: [GooglePayMerchantKey] = []
            for spec in merchantKeys {
                do throws(ConfigurationError) { keys.append(try GooglePayMerchantKey(spec: spec)) } catch {
                    throw CLIError("--google-merchant-key '\(spec)': \(error.message)")
                }
            }
            return try GooglePayTokenDecryptor(
                merchantKeys: keys, recipientIds: recipientIds, rootKeys: GooglePayRootKeys(contentsOfFile: rootKeys),
                protocolVersions: acceptedVersions())
        } catch let error as ConfigurationError {
            throw CLIError(error.message)
        }
    }

    /// The run's key facts with the Google Pay configuration added (shards of one run must share it):
    /// what the keys are, not only where they were read from (SHA-256 of the root keys document and
    /// of each merchant public key), as the Apple facts record key hashes and the anchor's fingerprint.
    func addingFacts(to facts: JSONValue, _ google: GooglePayTokenDecryptor?) -> JSONValue {
        guard isConfigured, case var .object(members) = facts else { return facts }
        members.append(
            (
                "googlePay",
                .object([
                    ("rootKeys", rootKeys.map(JSONValue.string) ?? .null),
                    ("rootKeysSHA256", google.map { .string($0.rootKeys.fingerprint) } ?? .null),
                    ("recipientIds", .array(recipientIds.map(JSONValue.string))),
                    (
                        "protocolVersions",
                        .array(
                            GooglePayToken.ProtocolVersion.allCases.filter {
                                google?.protocolVersions.contains($0) ?? false
                            }
                            .map { .string($0.rawValue) })
                    ),
                    ("merchantKeys", .array(merchantKeys.map(JSONValue.string))),
                    (
                        "merchantKeyHashes",
                        .array((google?.merchantKeys ?? []).map { .string($0.publicKeyHashHex) })
                    ),
                ])
            ))
        return .object(members)
    }
}
