// The merchant identity certificate and key that authenticate us to Apple's gateway (mutual TLS).
import ApplePayDecryption
import Foundation
import NIOSSL

/// The client side of the gateway's mutual TLS: Apple's merchant identity certificate (with any
/// intermediates) and its private key, loaded from PEM files or a PKCS#12 file.
public struct MerchantTLSIdentity: Sendable {
    let certificateChain: [NIOSSLCertificate]
    let privateKey: NIOSSLPrivateKey

    /// PEM files: `certificatePath` holds the identity certificate first, then any intermediates;
    /// `keyPath` its private key (PKCS#8 or SEC1/PKCS#1), decrypted with `keyPassword` when it is encrypted.
    public static func pem(certificatePath: String, keyPath: String, keyPassword: [UInt8]? = nil)
        throws(MerchantAPIError) -> MerchantTLSIdentity
    {
        // Both files through the engine's secret-file reader (a FIFO or device in their place is refused
        // at once, not waited on) and parsed inside it, so the key's bytes are wiped when it returns.
        let chain: [NIOSSLCertificate]?
        let parsedKey: NIOSSLPrivateKey?
        do {
            chain = try SecretFile.withContents(atPath: certificatePath, what: "certificate") {
                try? NIOSSLCertificate.fromPEMBytes($0)
            }
            // Always a callback: without one BoringSSL prompts on the terminal for an encrypted key.
            let password = keyPassword ?? []
            parsedKey = try SecretFile.withContents(atPath: keyPath, what: "key") {
                try? NIOSSLPrivateKey(bytes: $0, format: .pem) { supply in supply(password) }
            }
        } catch {
            throw MerchantAPIError(.invalidIdentity, error.message)
        }
        guard let chain else {
            throw MerchantAPIError(.invalidIdentity, "cannot read a PEM certificate from \(certificatePath)")
        }
        guard !chain.isEmpty else { throw MerchantAPIError(.invalidIdentity, "no certificate in \(certificatePath)") }
        guard let key = parsedKey else {
            throw MerchantAPIError(
                .invalidIdentity,
                "cannot read a PEM private key from \(keyPath)"
                    + (keyPassword == nil
                        ? " (if it is encrypted, name its password's variable with key-password-env=)"
                        : " (wrong password?)"))
        }
        return try MerchantTLSIdentity(chain: chain, key: key, source: certificatePath)
    }

    /// A PKCS#12 file holding the identity certificate and its key (as the Keychain exports it).
    public static func pkcs12(path: String, password: [UInt8]) throws(MerchantAPIError) -> MerchantTLSIdentity {
        let parsed: NIOSSLPKCS12Bundle?
        do {
            parsed = try SecretFile.withContents(atPath: path, what: "PKCS#12") {
                try? NIOSSLPKCS12Bundle(buffer: $0, passphrase: password)
            }
        } catch {
            throw MerchantAPIError(.invalidIdentity, error.message)
        }
        guard let bundle = parsed else {
            throw MerchantAPIError(
                .invalidIdentity, "cannot read the PKCS#12 file \(path) (not PKCS#12, or the wrong password)")
        }
        guard !bundle.certificateChain.isEmpty else {
            throw MerchantAPIError(.invalidIdentity, "no certificate in the PKCS#12 file \(path)")
        }
        return try MerchantTLSIdentity(chain: bundle.certificateChain, key: bundle.privateKey, source: path)
    }

    /// Loads `cert=PATH,key=PATH[,key-password-env=VAR]` or `p12=PATH[,password-env=VAR]`. Passwords come
    /// only from the environment variable named (never from the spec itself, which may sit in a shell
    /// history or a process list); a p12 without `password-env=` is opened with the empty password.
    public static func load(spec: String, environment: [String: String] = ProcessInfo.processInfo.environment)
        throws(MerchantAPIError) -> MerchantTLSIdentity
    {
        var members: [String: String] = [:]
        for part in spec.split(separator: ",", omittingEmptySubsequences: false) {
            guard let equals = part.firstIndex(of: "=") else {
                throw MerchantAPIError(
                    .invalidIdentity,
                    "identity '\(Printable.bounded(spec))': '\(Printable.bounded(part))' is not NAME=VALUE")
            }
            let name = String(part[..<equals]), value = String(part[part.index(after: equals)...])
            guard ["cert", "key", "p12", "password-env", "key-password-env"].contains(name) else {
                throw MerchantAPIError(
                    .invalidIdentity,
                    "identity: unknown member '\(Printable.bounded(name))' (cert=, key=, key-password-env=, p12=, password-env=)"
                )
            }
            guard members[name] == nil else {
                throw MerchantAPIError(.invalidIdentity, "identity: \(name)= given twice")
            }
            guard !value.isEmpty else { throw MerchantAPIError(.invalidIdentity, "identity: \(name)= is empty") }
            members[name] = value
        }
        func password(_ member: String) throws(MerchantAPIError) -> [UInt8]? {
            guard let variable = members[member] else { return nil }
            guard let value = environment[variable] else {
                throw MerchantAPIError(
                    .invalidIdentity, "identity: \(member)=\(variable) names an environment variable that is not set")
            }
            return Array(value.utf8)
        }
        switch (members["cert"], members["key"], members["p12"]) {
        case let (cert?, key?, nil):
            guard members["password-env"] == nil else {
                throw MerchantAPIError(
                    .invalidIdentity,
                    "identity: password-env= goes with p12=; for an encrypted PEM key use key-password-env=")
            }
            var secret = try password("key-password-env")
            defer { if secret != nil { SensitiveBytes.wipe(&secret!) } }
            return try pem(certificatePath: cert, keyPath: key, keyPassword: secret)
        case let (nil, nil, p12?):
            guard members["key-password-env"] == nil else {
                throw MerchantAPIError(
                    .invalidIdentity, "identity: key-password-env= goes with key=; for p12= use password-env=")
            }
            var secret = try password("password-env") ?? []
            defer { SensitiveBytes.wipe(&secret) }
            return try pkcs12(path: p12, password: secret)
        default:
            throw MerchantAPIError(
                .invalidIdentity, "identity must be cert=PATH,key=PATH or p12=PATH[,password-env=VAR]")
        }
    }

    private init(chain: [NIOSSLCertificate], key: NIOSSLPrivateKey, source: String) throws(MerchantAPIError) {
        // A key that does not match the certificate would only show as a refused handshake at Apple, far
        // from its cause. BoringSSL compares them when both go into a context (KEY_VALUES_MISMATCH).
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.certificateChain = chain.map { .certificate($0) }
        configuration.privateKey = .privateKey(key)
        do {
            _ = try NIOSSLContext(configuration: configuration)
        } catch {
            throw MerchantAPIError(
                .invalidIdentity,
                "the private key does not belong to the certificate in \(source), or cannot be used for TLS")
        }
        certificateChain = chain
        privateKey = key
    }
}
