// A merchant key described as text, the way operators write it on a command line:
// `cert=PATH,key=PATH`, `id=MERCHANT_ID,key=PATH`, `p12=PATH[,password-env=VAR]` or
// `cert=PATH,pkcs11=URI` (a key in a PKCS#11 token). Shared by the
// CLI, the service and the C ABI so that every front end reads keys the same way.
#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// A merchant key described as text, as operators write it: `cert=PATH,key=PATH`,
/// `id=MERCHANT_ID,key=PATH`, `p12=PATH[,password-env=VAR]` or `cert=PATH,pkcs11=URI` (an RFC 7512
/// URI, see ``PKCS11KeyReference``; commas inside it are written `%2C`). Passwords and PINs come from
/// the environment variables or files named, never from the text.
public struct MerchantSpec: Sendable, Equatable, CustomStringConvertible {
    /// The field names a spec may use.
    public static let fields = ["cert", "key", "id", "p12", "password-env", "key-password-env", "pkcs11"]
    /// The accepted forms, for help texts.
    public static let syntax =
        "cert=PATH,key=PATH | id=MERCHANT_ID,key=PATH | p12=PATH[,password-env=VAR] | cert=PATH,pkcs11=URI"

    /// The text as given (paths and variable names, unless a PIN was put in a PKCS#11 URI by mistake:
    /// print `redacted(_:)` of it, never the text itself).
    public let text: String
    let values: [String: String]

    /// The text for messages and logs (`redacted(_:)`).
    public var description: String { Self.redacted(text) }

    /// A spec for a message: the pkcs11= URI redacted as `PKCS11KeyReference.description` does, and the
    /// values of unknown fields left out, so that a PIN given by mistake (`pin-value=`, a PIN typed
    /// where a path belongs) is never echoed. Works on any text, also one `init` refuses.
    public static func redacted(_ text: String) -> String {
        text.split(separator: ",", omittingEmptySubsequences: false).map { part in
            guard let eq = part.firstIndex(of: "=") else { return part.isEmpty ? "" : "…" }
            let name = String(part[..<eq]), value = String(part[part.index(after: eq)...])
            if name == "pkcs11" { return "pkcs11=" + PKCS11KeyReference.redacted(value) }
            return fields.contains(name) ? String(part) : "\(name)=…"
        }.joined(separator: ",")
    }

    /// Parses the text; a field that is unknown, repeated or contradictory is a configuration error.
    public init(_ text: String) throws(ConfigurationError) {
        self.text = text
        var values: [String: String] = [:]
        for part in text.split(separator: ",", omittingEmptySubsequences: true) {
            guard let eq = part.firstIndex(of: "=") else { throw ConfigurationError("'\(part)' is not key=value") }
            let name = String(part[..<eq]), value = String(part[part.index(after: eq)...])
            guard Self.fields.contains(name) else {
                throw ConfigurationError("unknown field '\(name)' (\(Self.fields.joined(separator: ", ")))")
            }
            guard values.updateValue(value, forKey: name) == nil else {
                throw ConfigurationError("'\(name)' given twice")
            }
        }
        if let uri = values["pkcs11"] {
            guard values["key"] == nil, values["p12"] == nil, values["password-env"] == nil,
                values["key-password-env"] == nil
            else {
                throw ConfigurationError(
                    "pkcs11= excludes key=, p12= and passwords (the PIN comes from the URI's pin-source= or pin-env=)")
            }
            guard values["cert"] != nil else {
                throw ConfigurationError("pkcs11=URI needs cert=PATH (the certificate gives the public key)")
            }
            _ = try PKCS11KeyReference(uri: uri)
        } else if values["p12"] != nil {
            guard values["cert"] == nil, values["key"] == nil else {
                throw ConfigurationError("p12= excludes cert= and key=")
            }
        } else {
            guard values["key"] != nil else { throw ConfigurationError("key=PATH is required (or p12=PATH)") }
            guard values["cert"] != nil || values["id"] != nil else {
                throw ConfigurationError("give cert=PATH or id=MERCHANT_ID with key=PATH")
            }
        }
        self.values = values
    }

    /// Reads the files (private keys through a buffer wiped after loading) and builds the identity.
    /// Passwords come from the environment variables the spec names.
    public func load(environment: [String: String] = ProcessInfo.processInfo.environment) throws(ConfigurationError)
        -> MerchantIdentity
    {
        func secret(_ field: String) throws(ConfigurationError) -> String? {
            guard let variable = values[field] else { return nil }
            guard let value = environment[variable] else {
                throw ConfigurationError(.invalidOption, "environment variable \(variable) is not set")
            }
            return value
        }
        if let uri = values["pkcs11"], let certPath = values["cert"] {
            let certificate = try SecretFile.withContents(atPath: certPath, what: "merchant certificate") {
                (bytes) throws(ConfigurationError) in bytes
            }
            return try MerchantIdentity(
                certificate: certificate, pkcs11: PKCS11KeyReference(uri: uri), merchantIdentifier: values["id"],
                environment: environment)
        }
        if let p12 = values["p12"] {
            let password = try secret("password-env") ?? ""
            return try SecretFile.withContents(atPath: p12, what: "PKCS#12") { (bytes) throws(ConfigurationError) in
                try MerchantIdentity(pkcs12: bytes, password: password, merchantIdentifier: values["id"])
            }
        }
        let keyPath = values["key"]!
        let keyPassword = try secret("key-password-env")
        if let certPath = values["cert"] {
            let certificate = try SecretFile.withContents(atPath: certPath, what: "merchant certificate") {
                (bytes) throws(ConfigurationError) in bytes
            }
            return try SecretFile.withContents(atPath: keyPath, what: "merchant key") {
                (key) throws(ConfigurationError) in
                try MerchantIdentity(
                    certificate: certificate, privateKey: key, keyPassword: keyPassword,
                    merchantIdentifier: values["id"])
            }
        }
        return try SecretFile.withContents(atPath: keyPath, what: "merchant key") { (key) throws(ConfigurationError) in
            try MerchantIdentity(merchantIdentifier: values["id"]!, privateKey: key, keyPassword: keyPassword)
        }
    }
}
