// A lane's sessions on the PKCS#11 tokens of its merchants: one per merchant key, opened on first use,
// replaced after a session or device error so that the next token works again without a restart.
internal import ApplePayCrypto

package final class TokenKeySessions {
    private var sessions = ContextCache<MerchantIdentity, Entry>()

    private final class Entry {
        var session: PKCS11Session?
        var key: UInt = 0
    }

    package init() {}

    /// ECDH in the token with the point `importEphemeral` checked, into `secret` (32 bytes).
    func deriveSharedSecret(
        merchant: MerchantIdentity, token: PKCS11PrivateKey, peer: UnsafeRawBufferPointer,
        into secret: SensitiveBytes
    ) throws(PKCS11PrivateKey.Fault) {
        try run(merchant: merchant, token: token) { (session, key) throws(PKCS11Failure) in
            try secret.write { (out) throws(PKCS11Failure) in
                try session.deriveSharedSecret(key: key, peer: peer, into: out)
                return 32
            }
        }
    }

    /// RSA-OAEP unwrap in the token into a wiped buffer.
    func unwrap(merchant: MerchantIdentity, token: PKCS11PrivateKey, _ wrapped: UnsafeRawBufferPointer)
        throws(PKCS11PrivateKey.Fault) -> SensitiveBytes
    {
        let out = SensitiveBytes(capacity: token.outputSize)
        try run(merchant: merchant, token: token) { (session, key) throws(PKCS11Failure) in
            try out.write { (buffer) throws(PKCS11Failure) in
                try session.unwrapRSA(
                    key: key, route: token.rsaRoute, modulusBytes: token.outputSize, wrapped, into: buffer)
            }
        }
        return out
    }

    /// The raw RSA operation in the token (Samsung Pay's RSA1_5 unwrap), into `block` (the modulus'
    /// size, right-aligned).
    func rawRSA(
        merchant: MerchantIdentity, token: PKCS11PrivateKey, _ wrapped: UnsafeRawBufferPointer,
        into block: UnsafeMutableRawBufferPointer
    ) throws(PKCS11PrivateKey.Fault) {
        try run(merchant: merchant, token: token) { (session, key) throws(PKCS11Failure) in
            try session.rawRSA(key: key, wrapped, into: block)
        }
    }

    /// Runs `operation` on this lane's session for the merchant; a session or device error drops the
    /// session (the next token opens a new one, logging in again if the token forgot the login).
    private func run(
        merchant: MerchantIdentity, token: PKCS11PrivateKey,
        _ operation: (PKCS11Session, UInt) throws(PKCS11Failure) -> Void
    ) throws(PKCS11PrivateKey.Fault) {
        guard let entry = sessions.context(for: merchant, make: { Entry() }) else { return }
        if entry.session == nil {
            let opened = try token.openLaneSession()
            entry.session = opened.session
            entry.key = opened.key
        }
        do throws(PKCS11Failure) {
            try operation(entry.session!, entry.key)
        } catch {
            if error.sessionLost {
                // A session the module reported gone, or a device error that may mean a reset, is never
                // closed by number (the number may be reused); one that failed otherwise (a lost key or
                // object handle, a forgotten login) is closed.
                if error.sessionGone { entry.session?.markLost() }
                entry.session = nil
                token.sessionsLost(gone: error.sessionGone)
                throw PKCS11PrivateKey.Fault(
                    reason: "\(error); the session is reopened for the next token", sessionLost: true)
            }
            throw PKCS11PrivateKey.Fault(reason: "\(error)", sessionLost: false)
        }
    }
}
