// One loaded, immutable set of merchant keys, loaded from the --merchant specs exactly as the CLI loads them.
import ApplePayDecryption
import Foundation

/// One loaded, immutable set of merchant keys with the engine built over it.
final class KeySet: Sendable {
    let decryptor: PaymentTokenDecryptor
    let loadedAt: Date

    private init(decryptor: PaymentTokenDecryptor) {
        self.decryptor = decryptor
        self.loadedAt = Date()
    }

    /// When each merchant certificate expires (the engine read it with the certificate), for the
    /// expiry gauge; identities loaded without a certificate have none.
    var certificateExpiry: [(label: String, notAfter: Date)] {
        decryptor.merchants.compactMap { m in m.certificateNotAfter.map { (m.label, $0) } }
    }

    static func load(specs: [MerchantSpec], anchor: TrustAnchor, window: Int64) throws -> KeySet {
        var identities: [MerchantIdentity] = []
        for spec in specs {
            do { identities.append(try spec.load()) } catch {
                throw ServiceConfigurationError("--merchant '\(spec)': \(error.message)")
            }
        }
        do {
            return KeySet(
                decryptor: try PaymentTokenDecryptor(
                    merchants: identities, trustAnchor: anchor, signingTimeWindow: window))
        } catch {
            throw ServiceConfigurationError(error.message)
        }
    }
}
