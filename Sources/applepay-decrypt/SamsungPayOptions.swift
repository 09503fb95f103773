// The Samsung Pay option of `decrypt` and `batch`: the merchant's RSA keys, selected by a token's kid.
import ApplePayDecryption
import ArgumentParser
import Foundation

struct SamsungPayOptions: ParsableArguments {
    @Option(
        name: .customLong("samsung-key"),
        help: ArgumentHelp(
            "A Samsung Pay merchant private key (repeatable: keys rotate): \(SamsungPayMerchantKey.syntax).",
            discussion:
                "PATH is an RSA private key in PEM (PKCS#1 or PKCS#8) or DER; key-password-env=VAR decrypts an encrypted PEM; p12=PATH reads a PKCS#12 file; pkcs11=URI keeps the key in an HSM and takes its public key (pub=PATH) or certificate (cert=PATH). A token's kid (base64 of SHA-256 over the key's SubjectPublicKeyInfo) picks the key.",
            valueName: "spec"))
    var keys: [String] = []

    /// Whether a Samsung Pay key was given.
    var isConfigured: Bool { !keys.isEmpty }

    /// The Samsung Pay engine, or nil without --samsung-key; a token's utc must lie within `window`
    /// seconds of the reference time (the --window every wallet shares).
    func makeDecryptor(window: Int64) throws -> SamsungPayTokenDecryptor? {
        guard isConfigured else { return nil }
        var loaded: [SamsungPayMerchantKey] = []
        for spec in keys {
            do throws(ConfigurationError) { loaded.append(try SamsungPayMerchantKey(spec: spec)) } catch {
                throw CLIError("--samsung-key '\(MerchantSpec.redacted(spec))': \(error.message)")
            }
        }
        do throws(ConfigurationError) {
            return try SamsungPayTokenDecryptor(merchantKeys: loaded, freshnessWindow: window)
        } catch {
            throw CLIError(error.message)
        }
    }

    /// The run's key facts with the Samsung Pay keys added (shards of one run must share them): the
    /// specs and the kid of each key loaded.
    func addingFacts(to facts: JSONValue, _ samsung: SamsungPayTokenDecryptor?) -> JSONValue {
        guard isConfigured, case var .object(members) = facts else { return facts }
        members.append(
            (
                "samsungPay",
                .object([
                    ("keys", .array(keys.map { .string(MerchantSpec.redacted($0)) })),
                    ("kids", .array((samsung?.merchantKeys ?? []).map { .string($0.kid) })),
                ])
            ))
        return .object(members)
    }
}
