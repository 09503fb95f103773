// One loaded, immutable set of keys: the Apple Pay merchants from the --merchant specs and the Google Pay
// merchant keys, recipient ids and root keys, each loaded exactly as the CLI loads them.
import ApplePayDecryption
import Foundation

/// One loaded, immutable set of keys with the engines built over it: Apple Pay's (without merchants when
/// no `--merchant` is given: Apple Pay tokens are still verified, then find no key), and Google Pay's when
/// the `--google-*` options are given.
final class KeySet: Sendable {
    /// The engine's front door over these keys: every token goes through it.
    let wallets: WalletDecryptor
    let loadedAt: Date

    init(
        decryptor: PaymentTokenDecryptor, googlePay: GooglePayTokenDecryptor?,
        samsungPay: SamsungPayTokenDecryptor? = nil
    ) {
        self.wallets = WalletDecryptor(applePay: decryptor, googlePay: googlePay, samsungPay: samsungPay)
        self.loadedAt = Date()
    }

    /// The Apple Pay engine.
    var decryptor: PaymentTokenDecryptor { wallets.applePay }
    /// The Google Pay engine, nil without the --google-* options.
    var googlePay: GooglePayTokenDecryptor? { wallets.googlePay }

    /// The Apple Pay merchants loaded (none when only Google Pay is configured).
    var merchants: [MerchantIdentity] { decryptor.merchants }

    /// When each merchant certificate expires (the engine read it with the certificate), for the
    /// expiry gauge; identities loaded without a certificate have none.
    var certificateExpiry: [(label: String, notAfter: Date)] {
        merchants.compactMap { m in m.certificateNotAfter.map { (m.label, $0) } }
    }

    /// The Apple Pay engine over the --merchant specs; with none (Google Pay only), an engine without
    /// merchants under the same anchor and window, as the CLI and the C ABI build it.
    static func loadApple(specs: [MerchantSpec], anchor: TrustAnchor, window: Int64) throws -> PaymentTokenDecryptor {
        guard !specs.isEmpty else {
            do {
                return try PaymentTokenDecryptor.withoutMerchants(trustAnchor: anchor, signingTimeWindow: window)
            } catch {
                throw ServiceConfigurationError(error.message)
            }
        }
        var identities: [MerchantIdentity] = []
        for spec in specs {
            do { identities.append(try spec.load()) } catch {
                throw ServiceConfigurationError("--merchant '\(spec)': \(error.message)")
            }
        }
        do {
            return try PaymentTokenDecryptor(merchants: identities, trustAnchor: anchor, signingTimeWindow: window)
        } catch {
            throw ServiceConfigurationError(error.message)
        }
    }

    /// The --google-merchant-key specs, loaded (PKCS#11 URIs included).
    static func loadGoogleMerchantKeys(_ specs: [String]) throws -> [GooglePayMerchantKey] {
        var keys: [GooglePayMerchantKey] = []
        for spec in specs {
            do throws(ConfigurationError) { keys.append(try GooglePayMerchantKey(spec: spec)) } catch {
                throw ServiceConfigurationError("--google-merchant-key '\(spec)': \(error.message)")
            }
        }
        return keys
    }

    /// The Google Pay engine over loaded merchant keys and a root keys document (cheap: no I/O).
    static func googlePay(
        merchantKeys: [GooglePayMerchantKey], recipientIds: [String], rootKeys: GooglePayRootKeys,
        protocolVersions: Set<GooglePayToken.ProtocolVersion> = GooglePayTokenDecryptor.defaultProtocolVersions
    ) throws -> GooglePayTokenDecryptor {
        do throws(ConfigurationError) {
            return try GooglePayTokenDecryptor(
                merchantKeys: merchantKeys, recipientIds: recipientIds, rootKeys: rootKeys,
                protocolVersions: protocolVersions)
        } catch {
            throw ServiceConfigurationError("Google Pay: \(error.message)")
        }
    }

    /// The Samsung Pay engine over the --samsung-key specs (nil for none); a token's utc must lie within
    /// `window` seconds of the reference time, as a signing time must.
    static func samsungPay(specs: [String], window: Int64) throws -> SamsungPayTokenDecryptor? {
        guard !specs.isEmpty else { return nil }
        var keys: [SamsungPayMerchantKey] = []
        for spec in specs {
            do throws(ConfigurationError) { keys.append(try SamsungPayMerchantKey(spec: spec)) } catch {
                throw ServiceConfigurationError("--samsung-key '\(MerchantSpec.redacted(spec))': \(error.message)")
            }
        }
        do throws(ConfigurationError) {
            return try SamsungPayTokenDecryptor(merchantKeys: keys, freshnessWindow: window)
        } catch {
            throw ServiceConfigurationError("Samsung Pay: \(error.message)")
        }
    }

    /// The same keys under another root keys document (a refreshed one from the URL).
    func replacingGoogleRootKeys(_ rootKeys: GooglePayRootKeys) throws -> KeySet {
        guard let googlePay else { return self }
        return KeySet(
            decryptor: decryptor,
            googlePay: try Self.googlePay(
                merchantKeys: googlePay.merchantKeys, recipientIds: googlePay.recipientIds, rootKeys: rootKeys,
                protocolVersions: googlePay.protocolVersions),
            samsungPay: wallets.samsungPay)
    }
}
