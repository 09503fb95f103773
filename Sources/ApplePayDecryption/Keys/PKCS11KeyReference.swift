// An RFC 7512 PKCS#11 URI naming a merchant's private key, with the module path and the PIN's source
// in its query: `pkcs11:token=T;object=O;id=%01;type=private?module-path=/abs/lib.so&pin-source=file:/p`.
#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// Which PKCS#11 module, token and private-key object hold a merchant key, and where its PIN comes from.
///
/// Path attributes: `token` (label), `serial`, `object` (CKA_LABEL), `id` (CKA_ID, percent-encoded
/// bytes), `type` (only `private`). Query attributes: `module-path` (required: an absolute path to a
/// regular file; the module is never chosen by anything the token carries), `pin-source` (a file, as
/// `file:/path` or a bare path) or `pin-env` (an environment variable, this library's extension, like
/// `password-env`). A PIN in the URI itself (`pin-value`) is refused: it would sit in process listings
/// and shell histories.
public struct PKCS11KeyReference: Sendable, Equatable, CustomStringConvertible {
    /// The URI as given (it holds no secret).
    public let uri: String
    /// The module's absolute path.
    public let modulePath: String
    /// The token's label (`token=`), when given.
    public let tokenLabel: String?
    /// The token's serial number (`serial=`), when given.
    public let tokenSerial: String?
    /// The private key's CKA_LABEL (`object=`), when given.
    public let objectLabel: String?
    /// The private key's CKA_ID (`id=`), when given.
    public let objectID: [UInt8]?
    /// The file holding the user PIN (`pin-source=`), when given.
    public let pinFile: String?
    /// The environment variable holding the user PIN (`pin-env=`), when given.
    public let pinEnvironmentVariable: String?

    /// The URI for messages and logs, with the values of unknown attributes left out.
    public var description: String { Self.redacted(uri) }

    private static let pathAttributes: Set<String> = ["token", "serial", "object", "id", "type"]
    private static let queryAttributes: Set<String> = ["module-path", "pin-source", "pin-env"]

    /// Parses and checks the URI; anything unknown, repeated or unsafe is a configuration error.
    public init(uri: String) throws(ConfigurationError) {
        self.uri = uri
        guard uri.lowercased().hasPrefix("pkcs11:") else { throw Self.invalid(uri, "it does not start with pkcs11:") }
        // Anywhere, also inside another attribute's value (`module-path=/m.so;pin-value=…`), so that no
        // message can echo it.
        if uri.lowercased().contains("pin-value") {
            throw Self.invalid(uri, "pin-value= puts the PIN on the command line; use pin-source= or pin-env=")
        }
        let rest = uri.dropFirst("pkcs11:".count)
        let path: Substring, query: Substring
        if let mark = rest.firstIndex(of: "?") {
            path = rest[..<mark]
            query = rest[rest.index(after: mark)...]
        } else {
            path = rest
            query = ""
        }
        let pathValues = try Self.attributes(path, separator: ";", known: Self.pathAttributes, uri: uri)
        let queryValues = try Self.attributes(query, separator: "&", known: Self.queryAttributes, uri: uri)
        if let type = pathValues["type"], String(decoding: type, as: UTF8.self) != "private" {
            throw Self.invalid(uri, "type= must be private: the engine uses the private key")
        }
        func text(_ bytes: [UInt8]?) -> String? { bytes.map { String(decoding: $0, as: UTF8.self) } }
        tokenLabel = text(pathValues["token"])
        tokenSerial = text(pathValues["serial"])
        objectLabel = text(pathValues["object"])
        objectID = pathValues["id"]
        guard objectLabel != nil || objectID != nil else {
            throw Self.invalid(uri, "name the key with object= and/or id=")
        }
        guard let module = text(queryValues["module-path"]) else {
            throw Self.invalid(uri, "module-path= (the absolute path of the PKCS#11 module) is required")
        }
        // A NUL would cut the path that dlopen or open sees short of the one logged and checked.
        guard module.hasPrefix("/"), !module.utf8.contains(0) else {
            throw Self.invalid(uri, "module-path= must be an absolute path")
        }
        modulePath = module
        if let source = text(queryValues["pin-source"]) {
            // file:/path, file:///path (RFC 8089, empty host) or an absolute path; never relative
            // (it would depend on the working directory) and never another host.
            var file = source
            if file.hasPrefix("file://") {
                file.removeFirst("file://".count)
            } else if file.hasPrefix("file:") {
                file.removeFirst("file:".count)
            }
            guard file.hasPrefix("/"), !file.utf8.contains(0) else {
                throw Self.invalid(uri, "pin-source= must be an absolute file path (file:/path, file:///path or /path)")
            }
            pinFile = file
        } else {
            pinFile = nil
        }
        pinEnvironmentVariable = text(queryValues["pin-env"])
        guard pinFile == nil || pinEnvironmentVariable == nil else {
            throw Self.invalid(uri, "give pin-source= or pin-env=, not both")
        }
    }

    private static func invalid(_ uri: String, _ why: String) -> ConfigurationError {
        ConfigurationError(.invalidOption, "the PKCS#11 URI '\(redacted(uri))' is not usable: \(why)")
    }

    /// The URI for an error message: the values of attributes other than the known ones are left out,
    /// so a PIN given as `pin-value=` (or under a mistyped name) is never echoed.
    static func redacted(_ uri: String) -> String {
        // A PIN typed where the PIN's file or variable belongs (`pin-source=424242`) is not shown:
        // a file is an absolute path or a file: URI of one, a variable a name that does not start with a digit.
        func looksLikeItsKind(_ name: String, _ value: Substring) -> Bool {
            switch name {
            // The parser's own path rule (`/…`, `file:/…`, `file:///…`), so `file:424242` is not shown.
            case "pin-source": return value.hasPrefix("/") || value.hasPrefix("file:/")
            case "pin-env": return value.first.map { $0 == "_" || ($0.isASCII && $0.isLetter) } ?? true
            default: return true
            }
        }
        func redact(_ part: Substring, separator: Character, known: Set<String>) -> String {
            part.split(separator: separator, omittingEmptySubsequences: false).map { attribute in
                guard let eq = attribute.firstIndex(of: "=") else { return attribute.isEmpty ? "" : "…" }
                let name = attribute[..<eq]
                let value = attribute[attribute.index(after: eq)...]
                let shown =
                    known.contains(name.lowercased()) && !attribute.lowercased().contains("pin-value")
                    && looksLikeItsKind(name.lowercased(), value)
                return shown ? String(attribute) : "\(name)=…"
            }.joined(separator: String(separator))
        }
        guard uri.lowercased().hasPrefix("pkcs11:") else { return "…" }
        let rest = uri.dropFirst("pkcs11:".count)
        guard let mark = rest.firstIndex(of: "?") else {
            return "pkcs11:" + redact(rest, separator: ";", known: pathAttributes)
        }
        return "pkcs11:" + redact(rest[..<mark], separator: ";", known: pathAttributes) + "?"
            + redact(rest[rest.index(after: mark)...], separator: "&", known: queryAttributes)
    }

    /// `name=value` pairs separated by `separator`, values percent-decoded.
    private static func attributes(_ text: Substring, separator: Character, known: Set<String>, uri: String)
        throws(ConfigurationError) -> [String: [UInt8]]
    {
        var values: [String: [UInt8]] = [:]
        for part in text.split(separator: separator, omittingEmptySubsequences: true) {
            guard let eq = part.firstIndex(of: "=") else { throw invalid(uri, "an attribute is not name=value") }
            let name = part[..<eq].lowercased()
            if name == "pin-value" {
                throw invalid(uri, "pin-value= puts the PIN on the command line; use pin-source= or pin-env=")
            }
            guard known.contains(name) else {
                throw invalid(uri, "unknown attribute '\(name)' (\(known.sorted().joined(separator: ", ")))")
            }
            guard let value = percentDecoded(part[part.index(after: eq)...]) else {
                throw invalid(uri, "'\(name)' has a bad %-escape")
            }
            guard values.updateValue(value, forKey: name) == nil else { throw invalid(uri, "'\(name)' given twice") }
        }
        return values
    }

    private static func percentDecoded(_ text: Substring) -> [UInt8]? {
        var out: [UInt8] = []
        var bytes = Array(text.utf8)[...]
        while let byte = bytes.popFirst() {
            guard byte == UInt8(ascii: "%") else { out.append(byte); continue }
            guard bytes.count >= 2, let high = hexValue(bytes.removeFirst()), let low = hexValue(bytes.removeFirst())
            else { return nil }
            out.append(high << 4 | low)
        }
        return out
    }

    private static func hexValue(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): c - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
