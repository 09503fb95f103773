// The service's Google Pay options, spelt as the CLI's (`--google-root-keys`, `--google-recipient-id`,
// `--google-merchant-key`), with the root keys from a file or from Google's published URL.
import ApplePayDecryption
import ArgumentParser
import Foundation

public struct GooglePayServiceOptions: ParsableArguments {
    public init() {}

    @Option(
        name: .customLong("google-root-keys"),
        help: ArgumentHelp(
            "Google's root signing keys document for Google Pay tokens: a file (reread on SIGHUP) or an https:// URL (fetched at start, cached for its Cache-Control max-age, refreshed in the background and on SIGHUP).",
            discussion:
                "Production: https://payments.developers.google.com/paymentmethodtoken/keys.json; test environment: https://payments.developers.google.com/paymentmethodtoken/test/keys.json.",
            valueName: "file-or-url"))
    public var rootKeys: String?

    @Option(
        name: .customLong("google-recipient-id"),
        help: ArgumentHelp(
            "A recipient id Google Pay tokens are accepted for (repeatable): merchant:MERCHANT_ID or gateway:GATEWAY_ID.",
            valueName: "id"))
    public var recipientIds: [String] = []

    @Option(
        name: .customLong("google-merchant-key"),
        help: ArgumentHelp(
            "A Google Pay merchant private key (repeatable, tried in order), as in the CLI: \(GooglePayMerchantKey.syntax). SIGHUP reloads them.",
            valueName: "spec"))
    public var merchantKeys: [String] = []

    @Option(
        name: .customLong("google-protocol-version"),
        help: ArgumentHelp(
            "A Google Pay protocolVersion accepted (repeatable), as in the CLI: ECv1, ECv2 or ECv2SigningOnly (default: ECv1 and ECv2; naming versions replaces the default; ECv2SigningOnly, card data signed but not encrypted, only when named).",
            valueName: "version"))
    public var protocolVersions: [String] = []

    /// The versions accepted: those named, or the engine's default (ECv1 and ECv2).
    func acceptedVersions() throws -> Set<GooglePayToken.ProtocolVersion> {
        do throws(ConfigurationError) {
            return try GooglePayTokenDecryptor.protocolVersions(named: protocolVersions)
        } catch {
            throw ValidationError("--google-protocol-version: \(error.message)")
        }
    }

    @Flag(
        name: .customLong("insecure-testing-allow-http-root-keys"),
        help:
            "TESTING ONLY: accept an http:// --google-root-keys URL on a loopback address (127.0.0.0/8, ::1, localhost): the keys that decide which tokens are genuine travel unauthenticated."
    )
    public var allowHTTPRootKeys = false

    /// Whether any Google Pay option was given.
    public var isConfigured: Bool {
        rootKeys != nil || !recipientIds.isEmpty || !merchantKeys.isEmpty || !protocolVersions.isEmpty
    }

    /// Where the root keys come from.
    enum RootKeysSource: Equatable {
        case file(String)
        case url(URL)
    }

    var rootKeysSource: RootKeysSource? {
        guard let rootKeys else { return nil }
        let lowered = rootKeys.lowercased()
        guard lowered.hasPrefix("https://") || lowered.hasPrefix("http://") else { return .file(rootKeys) }
        return URL(string: rootKeys).map(RootKeysSource.url)
    }

    public func validate() throws {
        guard isConfigured else {
            if allowHTTPRootKeys {
                throw ValidationError("--insecure-testing-allow-http-root-keys needs --google-root-keys")
            }
            return
        }
        guard let rootKeys else { throw ValidationError("Google Pay options need --google-root-keys") }
        guard !recipientIds.isEmpty else { throw ValidationError("Google Pay options need --google-recipient-id") }
        _ = try acceptedVersions()
        guard let source = rootKeysSource else {
            throw ValidationError("--google-root-keys '\(rootKeys)' is not a URL")
        }
        guard case let .url(url) = source else { return }
        guard let host = url.host, !host.isEmpty else {
            throw ValidationError("--google-root-keys '\(rootKeys)' has no host")
        }
        if url.scheme?.lowercased() == "http" {
            guard allowHTTPRootKeys else {
                throw ValidationError(
                    "--google-root-keys must be an https:// URL (plain http only for loopback tests, with --insecure-testing-allow-http-root-keys)"
                )
            }
            guard Self.isLoopback(host) else {
                throw ValidationError(
                    "--insecure-testing-allow-http-root-keys allows plain http only to a loopback address, not \(host)")
            }
        }
    }

    static func isLoopback(_ host: String) -> Bool {
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        if bare == "localhost" || bare == "::1" { return true }
        let parts = bare.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts[0] == "127" && parts.allSatisfy { UInt8($0) != nil }
    }
}
