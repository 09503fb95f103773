// A merchant private key held in a PKCS#11 token: found, checked against its certificate and logged
// in to at load; lanes open their own sessions on it, logging in again (PIN re-read from its source)
// only when the token forgot the login, never after the token refused the PIN.
package import ApplePayCrypto
#if canImport(FoundationEssentials)
    import FoundationEssentials
    import Glibc  // open, read, memchr, errno: Foundation re-exports them, FoundationEssentials does not
#else
    import Foundation
#endif
import Synchronization

package final class PKCS11PrivateKey: Sendable {
    /// The URI the key was loaded from.
    package let reference: PKCS11KeyReference
    package let module: PKCS11Module
    package let slot: UInt
    /// The merchant certificate's public key (the token's key was checked to match it at load).
    package let publicKey: EVPKey
    /// RSA: the modulus size in bytes, the room C_Decrypt needs.
    package let outputSize: Int
    /// RSA: how the unwrap runs with this module (OAEP in the token, or the raw operation there and
    /// OAEP decoded here), chosen at load by the check that proves the key matches its certificate.
    package let rsaRoute: RSAUnwrapRoute
    /// RSA through the raw operation, OAEP decoded in this process (tests and messages).
    package var decodesOAEPInProcess: Bool { rsaRoute == .rawInTokenOAEPInProcess }
    private let state: Mutex<State>

    private struct State {
        /// A session kept open so that the login outlives the lanes' sessions.
        var loginSession: PKCS11Session?
        /// Set when the token refused the PIN: no further attempt until the configuration is reloaded.
        var refusal: String?

        /// The kept session is forgotten (never closed: its number may have been given to a new
        /// session) and replaced.
        mutating func replaceLoginSession(module: PKCS11Module, slot: UInt) {
            loginSession?.markLost()
            loginSession = try? module.openSession(slot: slot)
        }
    }

    private init(
        reference: PKCS11KeyReference, module: PKCS11Module, slot: UInt, publicKey: EVPKey, rsaRoute: RSAUnwrapRoute,
        loginSession: PKCS11Session
    ) {
        self.rsaRoute = rsaRoute
        self.reference = reference
        self.module = module
        self.slot = slot
        self.publicKey = publicKey
        outputSize = publicKey.size
        state = Mutex(State(loginSession: loginSession, refusal: nil))
    }

    /// A failure of the token for one token being decrypted, or for a lane's session.
    package struct Fault: Error, Sendable {
        package let reason: String
        /// The session is unusable and must be replaced before the next token.
        package let sessionLost: Bool
    }

    /// P-256's OID in DER, as CKA_EC_PARAMS holds it (namedCurve).
    private static let p256Parameters: [UInt8] = [0x06, 0x08, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x03, 0x01, 0x07]

    /// Loads the module, finds the token and the key, logs in and checks the key: type, curve or
    /// size, permission (CKA_DERIVE or CKA_DECRYPT), and that it belongs to `certificateKey`, by one
    /// operation whose result is compared with OpenSSL's from the public side.
    package static func load(
        _ reference: PKCS11KeyReference, certificateKey: EVPKey, label: String,
        environment: [String: String]
    ) throws(ConfigurationError) -> PKCS11PrivateKey {
        func unusable(_ why: String) -> ConfigurationError {
            ConfigurationError(.pkcs11Unusable, "\(label): \(why)")
        }
        let module = try loadModule(reference.modulePath, unusable)
        let present: [PKCS11Module.Token]
        do throws(PKCS11Failure) {
            present = try module.tokens()
        } catch {
            throw unusable("cannot list the tokens of \(reference.modulePath): \(error)")
        }
        let matching = present.filter { token in
            reference.tokenLabel.map { token.label == $0 } ?? true
                && reference.tokenSerial.map { token.serial == $0 } ?? true
        }
        guard matching.count == 1 else {
            throw unusable(
                matching.isEmpty
                    ? "no token \(describeToken(reference)) is present in \(reference.modulePath)"
                    : "\(matching.count) tokens match \(describeToken(reference)); name one with token= or serial=")
        }
        let token = matching[0]
        let session: PKCS11Session
        do throws(PKCS11Failure) {
            session = try module.openSession(slot: token.slot)
        } catch {
            throw unusable("cannot open a session on token '\(token.label)': \(error)")
        }
        if reference.pinFile != nil || reference.pinEnvironmentVariable != nil {
            try login(session, reference: reference, environment: environment, tokenLabel: token.label, unusable)
        }
        let key = try findKey(session, reference: reference, tokenLabel: token.label, unusable)
        let route = try check(key, in: session, certificateKey: certificateKey, unusable)
        return PKCS11PrivateKey(
            reference: reference, module: module, slot: token.slot, publicKey: certificateKey, rsaRoute: route,
            loginSession: session)
    }

    private static func loadModule(_ path: String, _ unusable: (String) -> ConfigurationError)
        throws(ConfigurationError) -> PKCS11Module
    {
        // Never a directory, a FIFO or a device: only a regular file (symbolic links are followed, as
        // Debian installs modules through them).
        var info = stat()
        guard stat(path, &info) == 0 else {
            throw unusable("the PKCS#11 module \(path) cannot be read: \(String(cString: strerror(errno)))")
        }
        guard info.st_mode & S_IFMT == S_IFREG else {
            throw unusable("the PKCS#11 module \(path) is not a regular file")
        }
        // Its constructors run in the process that holds the keys: only root's or this user's, in
        // folders nobody else can change (as crypto_mb).
        // Loaded by its resolved path: a link changed after the check changes nothing.
        let resolved: String
        switch TrustedLibraryPath.resolve(path, what: "the PKCS#11 module") {
        case let .failure(refusal): throw unusable("\(refusal.message); install it where only root (or you) can write")
        case let .success(found): resolved = found
        }
        do throws(PKCS11LoadError) {
            return try PKCS11Module.load(path: resolved)
        } catch {
            throw unusable(error.message)
        }
    }

    private static func describeToken(_ reference: PKCS11KeyReference) -> String {
        [reference.tokenLabel.map { "labelled '\($0)'" }, reference.tokenSerial.map { "with serial \($0)" }].compactMap
        { $0 }.joined(separator: " ")
    }

    /// Reads the PIN into a wiped buffer, logs in once and wipes it; a refused PIN is never retried
    /// (tokens lock the user PIN after a few failures).
    private static func login(
        _ session: PKCS11Session, reference: PKCS11KeyReference, environment: [String: String], tokenLabel: String,
        _ unusable: (String) -> ConfigurationError
    ) throws(ConfigurationError) {
        var pin = try readPIN(reference, environment: environment)
        defer { SensitiveBytes.wipe(&pin) }
        do throws(PKCS11Failure) {
            try session.login(pin: pin)
        } catch {
            throw unusable(
                error.pinRefused
                    ? "token '\(tokenLabel)' refused the PIN (\(error)); not retried, as tokens lock after a few failures"
                    : "cannot log in to token '\(tokenLabel)': \(error)")
        }
    }

    /// The PIN's bytes from its file (one trailing newline dropped) or environment variable.
    private static func readPIN(_ reference: PKCS11KeyReference, environment: [String: String])
        throws(ConfigurationError) -> [UInt8]
    {
        var pin: [UInt8]
        if let file = reference.pinFile {
            // The reader's storage, kept (the reader wipes only a copy-on-write copy): wiped by readPIN's callers.
            pin = try SecretFile.withContents(atPath: file, what: "PIN") { (bytes) throws(ConfigurationError) in
                bytes
            }
        } else if let variable = reference.pinEnvironmentVariable {
            guard let value = environment[variable] else {
                throw ConfigurationError(.invalidOption, "environment variable \(variable) is not set")
            }
            pin = Array(value.utf8)
        } else {
            return []
        }
        if pin.last == UInt8(ascii: "\n") { pin.removeLast() }
        if pin.last == UInt8(ascii: "\r") { pin.removeLast() }
        // An empty PIN would still cost one of the token's few attempts before it locks.
        guard !pin.isEmpty else {
            throw ConfigurationError(
                .invalidOption,
                "the PIN from \(reference.pinFile.map { "file \($0)" } ?? "variable \(reference.pinEnvironmentVariable ?? "")") is empty"
            )
        }
        return pin
    }

    /// Exactly one private key matching the URI.
    private static func findKey(
        _ session: PKCS11Session, reference: PKCS11KeyReference, tokenLabel: String,
        _ unusable: (String) -> ConfigurationError
    ) throws(ConfigurationError) -> UInt {
        let keys: [UInt]
        do throws(PKCS11Failure) {
            keys = try session.findPrivateKeys(
                label: reference.objectLabel.map { Array($0.utf8) }, id: reference.objectID)
        } catch {
            throw unusable("cannot search token '\(tokenLabel)': \(error)")
        }
        let name = [reference.objectLabel.map { "object '\($0)'" }, reference.objectID.map { "id \(Hex.encode($0))" }]
            .compactMap { $0 }.joined(separator: " ")
        guard keys.count == 1 else {
            throw unusable(
                keys.isEmpty
                    ? "token '\(tokenLabel)' holds no private key \(name) visible to this login"
                    : "token '\(tokenLabel)' holds \(keys.count) private keys \(name); name one")
        }
        return keys[0]
    }

    /// Type, curve or size, permission, and the match with the certificate; for RSA, the unwrap route
    /// the module supports.
    private static func check(
        _ key: UInt, in session: PKCS11Session, certificateKey: EVPKey,
        _ unusable: (String) -> ConfigurationError
    ) throws(ConfigurationError) -> RSAUnwrapRoute {
        func read<T>(_ body: () throws(PKCS11Failure) -> T) throws(ConfigurationError) -> T {
            do throws(PKCS11Failure) { return try body() } catch {
                throw unusable("cannot read the token key's attributes: \(error)")
            }
        }
        let type = try read { () throws(PKCS11Failure) in try session.number(PKCS11Session.Attribute.keyType, of: key) }
        switch certificateKey.kind {
        case .ec:
            guard type == PKCS11Session.keyTypeEC else {
                throw unusable("the token's key is not an EC key, but the certificate's is")
            }
            if let parameters = try read({ () throws(PKCS11Failure) in
                try session.attribute(PKCS11Session.Attribute.ecParams, of: key)
            }),
                parameters != p256Parameters
            {
                throw ConfigurationError(.wrongCurve, "the token's EC key is not on P-256")
            }
            guard try read({ () throws(PKCS11Failure) in try session.flag(PKCS11Session.Attribute.derive, of: key) })
            else {
                throw unusable("the token's EC key does not permit derivation (CKA_DERIVE is false); ECDH needs it")
            }
            try checkAgreement(key, in: session, certificateKey: certificateKey, unusable)
            return .oaepInToken
        case .rsa:
            guard type == PKCS11Session.keyTypeRSA else {
                throw unusable("the token's key is not an RSA key, but the certificate's is")
            }
            guard try read({ () throws(PKCS11Failure) in try session.flag(PKCS11Session.Attribute.decrypt, of: key) })
            else {
                throw unusable(
                    "the token's RSA key does not permit decryption (CKA_DECRYPT is false); RSA-OAEP unwrap needs it")
            }
            // The public modulus names the key pair: a token key of another pair is a mismatch before any
            // decryption (a probe wrapped to another modulus may exceed the token key's, which a module
            // then refuses with an error of its choosing).
            if let tokenModulus = try read({ () throws(PKCS11Failure) in
                try session.attribute(PKCS11Session.Attribute.modulus, of: key)
            }),
                Array(tokenModulus.drop { $0 == 0 }) != certificateKey.rsaModulus
            {
                throw mismatch
            }
            return try checkUnwrap(key, in: session, certificateKey: certificateKey, unusable)
        case .other:
            throw ConfigurationError(
                .unsupportedKeyType,
                "the merchant certificate's key must be EC P-256 or RSA; it is \(certificateKey.describe())")
        }
    }

    private static let mismatch = ConfigurationError(
        .keyMismatch, "the token's private key does not belong to the merchant certificate")

    /// ECDH in the token with a fresh ephemeral key equals OpenSSL's ECDH of that key with the certificate's.
    private static func checkAgreement(
        _ key: UInt, in session: PKCS11Session, certificateKey: EVPKey,
        _ unusable: (String) -> ConfigurationError
    ) throws(ConfigurationError) {
        let ephemeral = EVPKey.generateEC(curve: "P-256")
        guard let point = ephemeral.p256PublicPoint(), let deriver = PKeyContext.deriver(ephemeral) else {
            throw unusable("cannot make a check key: \(OpenSSLErrors.drain() ?? "OpenSSL failed")")
        }
        let expected = SensitiveBytes(capacity: 32), derived = SensitiveBytes(capacity: 32)
        guard expected.write({ deriver.derive(peer: certificateKey, into: $0) == 32 ? 32 : nil }) else {
            throw unusable("cannot derive with the certificate's key: \(OpenSSLErrors.drain() ?? "OpenSSL failed")")
        }
        do throws(PKCS11Failure) {
            try derived.write { (out) throws(PKCS11Failure) in
                try session.deriveSharedSecret(key: key, peer: point, into: out)
                return 32
            }
        } catch {
            throw unusable("ECDH in the token fails: \(error)")
        }
        // Both counts set by their writes: comparing two empty views would call any key a match.
        let same = expected.withUnsafeBytes { a in
            derived.withUnsafeBytes { b in SecureMemory.constantTimeEquals(a, b) }
        }
        guard same else { throw mismatch }
    }

    /// A random 16-byte key wrapped to the certificate's key comes back unchanged: through OAEP with
    /// SHA-256 in the token or, when the module refuses those parameters (SoftHSM2 2.6 implements OAEP
    /// with SHA-1 only), through the raw RSA operation in the token and OAEP decoded here. The route
    /// that worked is the one every token then takes.
    private static func checkUnwrap(
        _ key: UInt, in session: PKCS11Session, certificateKey: EVPKey,
        _ unusable: (String) -> ConfigurationError
    ) throws(ConfigurationError) -> RSAUnwrapRoute {
        var probe = SecureRandom.bytes(16)
        defer { SensitiveBytes.wipe(&probe) }
        guard let wrapped = probe.withUnsafeBytes({ PKeyContext.oaepEncrypter(certificateKey)?.encrypt($0) }) else {
            throw unusable("cannot wrap a check key: \(OpenSSLErrors.drain() ?? "OpenSSL failed")")
        }
        let out = SensitiveBytes(capacity: certificateKey.size)
        func unwrap(_ route: RSAUnwrapRoute) throws(PKCS11Failure) -> Int {
            try wrapped.withBytes { (wrapped) throws(PKCS11Failure) in
                try out.write { (buffer) throws(PKCS11Failure) in
                    try session.unwrapRSA(
                        key: key, route: route, modulusBytes: certificateKey.size, wrapped, into: buffer)
                }
                return out.count
            }
        }
        var route = RSAUnwrapRoute.oaepInToken
        let length: Int
        do throws(PKCS11Failure) {
            do throws(PKCS11Failure) {
                length = try unwrap(.oaepInToken)
            } catch {
                // CKR_ARGUMENTS_BAD, CKR_MECHANISM_INVALID, CKR_MECHANISM_PARAM_INVALID: OAEP with SHA-256 unsupported.
                guard [0x7, 0x70, 0x71].contains(error.code) else { throw error }
                route = .rawInTokenOAEPInProcess
                length = try unwrap(route)
            }
        } catch {
            // A key that does not match fails OAEP's padding check rather than returning other bytes.
            if error.code == 0x40 || error.code == 0x41 { throw mismatch }
            throw unusable(
                "RSA-OAEP decryption in the token fails (with CKM_RSA_PKCS_OAEP and SHA-256, and with CKM_RSA_X_509): \(error)"
            )
        }
        guard length == 16 else { throw mismatch }
        let same = out.withUnsafeBytes { a in
            probe.withUnsafeBytes { b in SecureMemory.constantTimeEquals(UnsafeRawBufferPointer(rebasing: a[0..<16]), b)
            }
        }
        guard same else { throw mismatch }
        return route
    }

    /// A session for one lane, with the key's handle in it. Logs in again (re-reading the PIN from its
    /// source, never a kept copy) when the token has forgotten this process's login.
    package func openLaneSession() throws(Fault) -> (session: PKCS11Session, key: UInt) {
        if let refusal = state.withLock({ $0.refusal }) { throw Fault(reason: refusal, sessionLost: true) }
        func lost(_ error: PKCS11Failure) -> Fault {
            Fault(reason: "cannot open a session on the token: \(error)", sessionLost: true)
        }
        let session: PKCS11Session
        var keys: [UInt] = []
        do throws(PKCS11Failure) {
            session = try module.openSession(slot: slot)
        } catch {
            throw lost(error)
        }
        do throws(PKCS11Failure) {
            keys = try find(in: session)
        } catch  where error.notLoggedIn {
        } catch {
            if error.sessionGone { session.markLost() }
            throw lost(error)
        }
        // Only when the token forgot this process's login: logged in and still no key means the key
        // is gone, and a login (or a replaced login session) would change nothing.
        if keys.isEmpty, reference.pinFile != nil || reference.pinEnvironmentVariable != nil,
            session.loginState() != true
        {
            try relogin(session)
            do throws(PKCS11Failure) { keys = try find(in: session) } catch {
                if error.sessionGone { session.markLost() }
                throw lost(error)
            }
        }
        guard keys.count == 1 else {
            throw Fault(
                reason:
                    "the private key \(PKCS11KeyReference.redacted(reference.uri)) is not in the token (or not visible to this login)",
                sessionLost: true)
        }
        return (session, keys[0])
    }

    private func find(in session: PKCS11Session) throws(PKCS11Failure) -> [UInt] {
        try session.findPrivateKeys(label: reference.objectLabel.map { Array($0.utf8) }, id: reference.objectID)
    }

    private func relogin(_ session: PKCS11Session) throws(Fault) {
        let result: Fault? = state.withLock { state in
            if let refusal = state.refusal { return Fault(reason: refusal, sessionLost: true) }
            var pin: [UInt8]
            do throws(ConfigurationError) {
                pin = try Self.readPIN(reference, environment: ProcessInfo.processInfo.environment)
            } catch {
                return Fault(reason: "cannot log in again: \(error.message)", sessionLost: true)
            }
            defer { SensitiveBytes.wipe(&pin) }
            do throws(PKCS11Failure) {
                try session.login(pin: pin)
                // The login was lost, so every session of this process was closed, the kept one too: it
                // is forgotten (never closed: its number may already be a lane's) and replaced.
                state.replaceLoginSession(module: module, slot: slot)
                return nil
            } catch {
                if error.pinRefused {
                    state.refusal =
                        "the token refused the PIN when logging in again (\(error)); reload the configuration after fixing it"
                    return Fault(reason: state.refusal!, sessionLost: true)
                }
                return Fault(reason: "cannot log in again: \(error)", sessionLost: true)
            }
        }
        if let result { throw result }
    }

    /// A lane saw a session or device error. When its session is gone (closed, device reset), the kept
    /// login session is taken for gone too and replaced, never asked about: its number may already be
    /// a new lane session's. Otherwise (a key or object handle refused) it is replaced only when the
    /// module no longer knows it, so such a failing token costs no session.
    package func sessionsLost(gone: Bool) {
        state.withLock { state in
            if !gone, let kept = state.loginSession, kept.loginState() != nil { return }
            state.replaceLoginSession(module: module, slot: slot)
        }
    }

    /// Nil when the token is present and the key usable now; otherwise why not (for readiness checks).
    package func problem() -> String? {
        do throws(Fault) {
            _ = try openLaneSession()
            return nil
        } catch {
            return error.reason
        }
    }

    /// How many sessions of this process the module knows now (tests; SoftHSM2 never reuses a
    /// session number, so every number below a freshly opened one can be asked about).
    package func openSessionCountForTesting() -> Int {
        guard let probe = try? module.openSession(slot: slot) else { return -1 }
        return module.openSessionCountForTesting(below: probe.handle)
    }

    /// Closes every session of this process on the token, as a device reset would (tests of recovery).
    package func closeAllSessionsForTesting() {
        module.closeAllSessions(slot: slot)
        state.withLock { state in
            state.loginSession?.markLost()
            state.loginSession = nil
        }
    }
}
