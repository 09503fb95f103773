// The merchant keys the service decrypts with, loaded from the --merchant specs exactly as the CLI
// loads them, and swapped whole on SIGHUP: requests in flight keep the set they started with.
import ApplePayDecryption
import Foundation
import Synchronization

struct ServiceConfigurationError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

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

/// The current key set, replaced atomically by a reload.
final class KeyRing: Sendable {
    let specs: [MerchantSpec]
    let anchor: TrustAnchor
    let window: Int64
    private let current: Mutex<KeySet>

    init(specs: [MerchantSpec], anchor: TrustAnchor, window: Int64) throws {
        self.specs = specs
        self.anchor = anchor
        self.window = window
        self.current = Mutex(try KeySet.load(specs: specs, anchor: anchor, window: window))
    }

    var keys: KeySet { current.withLock { $0 } }

    /// Loads the specs again; on failure the current set stays and the error is returned.
    func reload() -> Result<KeySet, any Error> {
        do {
            let fresh = try KeySet.load(specs: specs, anchor: anchor, window: window)
            current.withLock { $0 = fresh }
            return .success(fresh)
        } catch {
            return .failure(error)
        }
    }
}

/// Reads a certificate's notAfter from its DER (or PEM), walking only as far as the validity.
enum CertificateValidity {
    static func notAfter(_ bytes: [UInt8]) -> Date? {
        guard let der = derBytes(bytes) else { return nil }
        var reader = DERReader(der[...])
        guard let certificate = reader.element(tag: 0x30) else { return nil }
        var cert = DERReader(certificate)
        guard let tbs = cert.element(tag: 0x30) else { return nil }
        var fields = DERReader(tbs)
        if fields.peekTag == 0xA0 { _ = fields.element(tag: 0xA0) }
        guard fields.element(tag: 0x02) != nil, fields.element(tag: 0x30) != nil, fields.element(tag: 0x30) != nil,
              let validity = fields.element(tag: 0x30) else { return nil }
        var times = DERReader(validity)
        guard times.anyElement() != nil, let (tag, value) = times.anyElement() else { return nil }
        return time(tag: tag, text: String(decoding: value, as: UTF8.self))
    }

    static func derBytes(_ bytes: [UInt8]) -> [UInt8]? {
        let text = String(decoding: bytes, as: UTF8.self)
        guard let begin = text.range(of: "-----BEGIN CERTIFICATE-----") else { return bytes.first == 0x30 ? bytes : nil }
        guard let end = text.range(of: "-----END CERTIFICATE-----", range: begin.upperBound..<text.endIndex) else { return nil }
        let body = text[begin.upperBound..<end.lowerBound].filter { !$0.isWhitespace }
        return Data(base64Encoded: String(body)).map { Array($0) }
    }

    /// UTCTime YYMMDDHHMMSSZ or GeneralizedTime YYYYMMDDHHMMSSZ.
    static func time(tag: UInt8, text: String) -> Date? {
        let digits = text.dropLast()
        guard text.hasSuffix("Z"), digits.allSatisfy(\.isNumber) else { return nil }
        var year: Int, rest: Substring
        if tag == 0x17, digits.count == 12 {
            year = Int(digits.prefix(2))!
            year += year < 50 ? 2000 : 1900
            rest = digits.dropFirst(2)
        } else if tag == 0x18, digits.count == 14 {
            year = Int(digits.prefix(4))!
            rest = digits.dropFirst(4)
        } else {
            return nil
        }
        let n = stride(from: 0, to: 10, by: 2).map { Int(rest.dropFirst($0).prefix(2))! }
        var components = DateComponents(year: year, month: n[0], day: n[1], hour: n[2], minute: n[3], second: n[4])
        components.timeZone = TimeZone(identifier: "UTC")
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        return calendar.date(from: components)
    }

    struct DERReader {
        var rest: ArraySlice<UInt8>
        init(_ bytes: ArraySlice<UInt8>) { rest = bytes }

        var peekTag: UInt8? { rest.first }

        mutating func element(tag: UInt8) -> ArraySlice<UInt8>? {
            guard rest.first == tag else { return nil }
            return anyElement()?.1
        }

        mutating func anyElement() -> (UInt8, ArraySlice<UInt8>)? {
            guard rest.count >= 2 else { return nil }
            let tag = rest[rest.startIndex]
            var index = rest.startIndex + 1
            var length = Int(rest[index])
            index += 1
            if length & 0x80 != 0 {
                let octets = length & 0x7F
                guard octets >= 1, octets <= 3, rest.endIndex - index >= octets else { return nil }
                length = 0
                for _ in 0..<octets {
                    length = length << 8 | Int(rest[index])
                    index += 1
                }
            }
            guard rest.endIndex - index >= length else { return nil }
            let value = rest[index..<index + length]
            rest = rest[(index + length)...]
            return (tag, value)
        }
    }
}
