// One loaded, immutable set of merchant keys, loaded from the --merchant specs exactly as the CLI loads them.
import ApplePayDecryption
import Foundation

/// One loaded, immutable set of merchant keys with the engine built over it.
final class KeySet: Sendable {
    let decryptor: PaymentTokenDecryptor
    /// Merchant label by publicKeyHash, for the request log and metrics (labels are not secret).
    let labels: [[UInt8]: String]
    /// When each merchant certificate named by a `cert=` spec expires.
    let certificateExpiry: [(label: String, notAfter: Date)]
    let loadedAt: Date

    private init(decryptor: PaymentTokenDecryptor, labels: [[UInt8]: String], certificateExpiry: [(label: String, notAfter: Date)]) {
        self.decryptor = decryptor
        self.labels = labels
        self.certificateExpiry = certificateExpiry
        self.loadedAt = Date()
    }

    static func load(specs: [MerchantSpec], anchor: TrustAnchor, window: Int64) throws -> KeySet {
        var identities: [MerchantIdentity] = []
        var expiry: [(label: String, notAfter: Date)] = []
        for spec in specs {
            let identity: MerchantIdentity
            do { identity = try spec.load() } catch { throw ServiceConfigurationError("--merchant '\(spec)': \(error.message)") }
            identities.append(identity)
            if let path = certificatePath(spec), let bytes = FileManager.default.contents(atPath: path),
               let notAfter = CertificateValidity.notAfter(Array(bytes)) {
                expiry.append((identity.label, notAfter))
            }
        }
        let decryptor: PaymentTokenDecryptor
        do {
            decryptor = try PaymentTokenDecryptor(merchants: identities, trustAnchor: anchor, signingTimeWindow: window)
        } catch {
            throw ServiceConfigurationError(error.message)
        }
        var labels: [[UInt8]: String] = [:]
        for identity in identities { labels[identity.publicKeyHash] = identity.label }
        return KeySet(decryptor: decryptor, labels: labels, certificateExpiry: expiry)
    }

    /// The `cert=` path of a spec (certificates are public; only their validity is read here).
    static func certificatePath(_ spec: MerchantSpec) -> String? {
        for part in spec.text.split(separator: ",") where part.hasPrefix("cert=") {
            return String(part.dropFirst(5))
        }
        return nil
    }
}
