// The Samsung Pay engine: key selection by kid, RSAES-PKCS1-v1_5 unwrap with implicit rejection,
// AES-128-GCM with the empty AAD, the typed payment, freshness of its utc, and (on request) the binding
// to a payment request; one token at a time, from many threads at once.
internal import ApplePayCrypto

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// Decrypts Samsung Pay tokens (JWE, `RSA1_5` + `A128GCM`) and checks what a processor needs beyond
/// decryption.
///
/// Create one at start-up and share it: it is `Sendable`, and concurrent calls each borrow their own
/// contexts.
///
/// ```swift
/// let decryptor = try SamsungPayTokenDecryptor(
///     merchantKeys: [SamsungPayMerchantKey(privateKeyFile: "samsung-key.pem")])
/// let payment = try decryptor.decrypt(tokenBytes)
/// ```
///
/// Checks, in order, each with its ``ApplePayError/Code``: strict reading (`malformedToken`,
/// `unsupportedVersion`, see ``SamsungPayToken``); a loaded key has the token's `kid`
/// (`unknownMerchantKey`, field `kid`); the encrypted key is the key's modulus size (`malformedToken`,
/// field `encryptedKey`); the content key unwraps and the tag verifies (`decryptionFailed`, field
/// `tag`: a bad padding and a bad tag are the same error, in code and in time, RFC 7516 §11.5); the
/// plaintext is a payment (`invalidPayload`); its `utc` is within ``freshnessWindow`` seconds of the
/// reference time, before or after (`messageExpired`, field `utc`; not checked at
/// ``ReferenceTime/signingTime``, for re-processing an archive); with a payment request, the amount
/// and currency are the request's (`paymentRequestMismatch`). Replays are judged by the caller's
/// ledger from ``SamsungPayment/replayIdentity``.
///
/// Nothing in a Samsung Pay token is signed: a token that passes was sealed to the merchant's key and
/// is fresh, not proven to come from Samsung (see ``SamsungPayment``).
public final class SamsungPayTokenDecryptor: Sendable {
    /// The default freshness window, seconds: Apple Pay's signing-time window.
    public static let defaultFreshnessWindow: Int64 = 300

    /// The merchant private keys, any number (key rotation): a token names its key by `kid`.
    public let merchantKeys: [SamsungPayMerchantKey]
    /// How far `utc` may be from the reference time, seconds, either way.
    public let freshnessWindow: Int64
    private let keysByKid: [String: SamsungPayMerchantKey]
    let lanes = LanePool()

    /// An engine for a set of merchant keys.
    /// - Throws: ``ConfigurationError`` with `duplicateMerchant` for two keys with one `kid`,
    ///   `invalidOption` for a negative window, or `cryptoUnavailable`.
    public init(merchantKeys: [SamsungPayMerchantKey], freshnessWindow: Int64 = defaultFreshnessWindow)
        throws(ConfigurationError)
    {
        guard SecureMemory.isReady else {
            throw ConfigurationError(.cryptoUnavailable, "libsodium failed to initialise")
        }
        guard freshnessWindow >= 0 else {
            throw ConfigurationError(.invalidOption, "the Samsung Pay freshness window must not be negative")
        }
        var byKid: [String: SamsungPayMerchantKey] = [:]
        for key in merchantKeys {
            if let other = byKid.updateValue(key, forKey: key.kid) {
                throw ConfigurationError(
                    .duplicateMerchant, "\(key.label) and \(other.label) are the same Samsung Pay key (kid \(key.kid))")
            }
        }
        self.merchantKeys = merchantKeys
        self.freshnessWindow = freshnessWindow
        keysByKid = byKid
    }

    /// The key a `kid` names, if loaded.
    public func merchantKey(kid: String) -> SamsungPayMerchantKey? { keysByKid[kid] }

    // MARK: entry points

    /// Decrypts a token in any accepted form and reads its payment.
    public func decrypt(_ token: some DataProtocol, at reference: ReferenceTime = .now) throws(ApplePayError)
        -> SamsungPayment
    {
        try decrypt(SamsungPayToken.parse(token), at: reference)
    }

    /// The same for a parsed token.
    public func decrypt(_ token: SamsungPayToken, at reference: ReferenceTime = .now) throws(ApplePayError)
        -> SamsungPayment
    {
        try lanes.withLane { (lane) throws(ApplePayError) in
            try decrypt(token, referenceMilliseconds: reference.unixMilliseconds, lane: lane)
        }
    }

    /// Decrypts a token, then checks that it is the payment `request` asked for: its `currency_code`
    /// is the request's `currencyCode` and, unless the total is pending, its `amount` is `total.amount`
    /// in minor units (see ``PaymentRequest`` and <doc:PaymentRequestBinding>).
    /// - Throws: the errors of ``decrypt(_:at:)-(DataProtocol,_)``, then
    ///   ``ApplePayError/Code/paymentRequestMismatch`` with `field` naming the request member.
    public func decrypt(
        _ token: some DataProtocol, at reference: ReferenceTime = .now, expecting request: PaymentRequest
    ) throws(ApplePayError) -> SamsungPayment {
        try decrypt(SamsungPayToken.parse(token), at: reference, expecting: request)
    }

    /// The same for a parsed token.
    public func decrypt(
        _ token: SamsungPayToken, at reference: ReferenceTime = .now, expecting request: PaymentRequest
    ) throws(ApplePayError) -> SamsungPayment {
        try lanes.withLane { (lane) throws(ApplePayError) in
            try decrypt(token, referenceMilliseconds: reference.unixMilliseconds, lane: lane, expecting: request)
        }
    }

    // MARK: the procedure

    /// The whole procedure on a lane the caller holds (the batch engine's), `now` in milliseconds
    /// (nil: no freshness check).
    package func decrypt(_ token: SamsungPayToken, referenceMilliseconds now: Int64?, lane: Lane)
        throws(ApplePayError) -> SamsungPayment
    {
        OpenSSLErrors.clear()
        defer { OpenSSLErrors.clear() }
        guard let key = keysByKid[token.kid] else {
            throw ApplePayError(
                .unknownMerchantKey,
                "no loaded Samsung Pay merchant key has kid \(PaymentRequest.shown(token.kid)) (\(merchantKeys.count) loaded)",
                field: "kid")
        }
        guard token.encryptedKey.count == key.modulusBytes else {
            throw ApplePayError.malformed(
                "encryptedKey",
                "the encrypted key is \(token.encryptedKey.count) bytes; the key with this kid has a \(key.modulusBytes)-byte modulus"
            )
        }
        let plaintext = try open(token, key: key, lane: lane)
        let payment = try SamsungPayment.read(plaintext, token: token, hasher: lane.digests.context)
        if let now { try checkFreshness(payment.utc, now: now) }
        return payment
    }

    /// The procedure, then, with a payment request, the binding check: a token that fails it is
    /// `paymentRequestMismatch` and, being a failure, claims nothing against replays (the batch
    /// engine's and the front door's entry).
    package func decrypt(
        _ token: SamsungPayToken, referenceMilliseconds now: Int64?, lane: Lane, expecting request: PaymentRequest?
    ) throws(ApplePayError) -> SamsungPayment {
        let payment = try decrypt(token, referenceMilliseconds: now, lane: lane)
        if let request { try request.check(payment) }
        return payment
    }

    /// `utc` within the window of the reference time, either way.
    func checkFreshness(_ utc: Int64, now: Int64) throws(ApplePayError) {
        let window = freshnessWindow.multipliedReportingOverflow(by: 1000)
        let limit = window.overflow ? Int64.max : window.partialValue
        let skew = utc.subtractingReportingOverflow(now)
        guard skew.overflow || skew.partialValue.magnitude > UInt64(limit) else { return }
        let after = skew.overflow ? utc > now : skew.partialValue > 0
        let distance = skew.overflow ? "more than 10¹⁵" : String(skew.partialValue.magnitude / 1000)
        throw ApplePayError(
            .messageExpired,
            "the payment's utc is \(distance) s \(after ? "after" : "before") the reference time; the window is \(freshnessWindow) s",
            field: "utc")
    }

    /// The one failure of the unwrap and the tag: the same code, field and message whichever failed.
    static let sealFailure = ApplePayError(
        .decryptionFailed,
        "the token does not open with the merchant key its kid names: not sealed to it, or altered", field: "tag")

    /// The raw RSA operation, the constant-time PKCS#1 v1.5 check that keeps the recovered key or the
    /// random one drawn before, then AES-128-GCM with the empty AAD. Both failures end at the tag.
    func open(_ token: SamsungPayToken, key: SamsungPayMerchantKey, lane: Lane) throws(ApplePayError)
        -> SensitiveBytes
    {
        let state = lane.samsungPay
        defer { state.wipe() }
        state.fallback.write { out in
            SecureRandom.fill(out)
            return RSAPKCS1Decoding.keyLength
        }
        try rawRSA(token, key: key, lane: lane)
        _ = state.block.withUnsafeBytes { block in
            state.fallback.withUnsafeBytes { fallback in
                state.contentKey.write { out in
                    RSAPKCS1Decoding.selectKey(block: block, fallback: fallback, into: out)
                    return RSAPKCS1Decoding.keyLength
                }
            }
        }
        let plaintext = SensitiveBytes(capacity: token.ciphertext.count)
        let opened = state.contentKey.withUnsafeBytes { contentKey in
            token.iv.withUnsafeBytes { iv in
                token.ciphertext.withUnsafeBytes { ciphertext in
                    token.tag.withUnsafeBytes { tag in
                        plaintext.write { out in
                            state.cipher.open(
                                key: contentKey, iv: iv, ciphertext: ciphertext, tag: tag,
                                into: out.baseAddress!.assumingMemoryBound(to: UInt8.self)) ? ciphertext.count : nil
                        }
                    }
                }
            }
        }
        guard opened else {
            OpenSSLErrors.clear()
            throw Self.sealFailure
        }
        return plaintext
    }

    /// c^d mod n into the lane's block, the modulus' size. A software key's operation fails only for a
    /// ciphertext not below the modulus, a public fact: the block is then all zeros, which fails the
    /// padding check like any other. A token's failure is a fault of the token, reported as such.
    private func rawRSA(_ token: SamsungPayToken, key: SamsungPayMerchantKey, lane: Lane) throws(ApplePayError) {
        let state = lane.samsungPay
        let identity = key.identity
        let size = key.modulusBytes
        if case .pkcs11(let tokenKey) = identity.key {
            do throws(PKCS11PrivateKey.Fault) {
                _ = try token.encryptedKey.withBytes { (input) throws(PKCS11PrivateKey.Fault) in
                    try state.block.write { (out) throws(PKCS11PrivateKey.Fault) in
                        let block = UnsafeMutableRawBufferPointer(rebasing: out[0..<size])
                        try lane.tokenSessions.rawRSA(merchant: identity, token: tokenKey, input, into: block)
                        return size
                    }
                }
            } catch {
                throw ApplePayError(
                    .decryptionFailed, "the raw RSA operation in the PKCS#11 token failed", field: "encryptedKey",
                    reason: error.reason)
            }
            return
        }
        guard let context = state.decrypter(for: identity) else {
            throw ApplePayError(
                .decryptionFailed, "OpenSSL cannot set up the raw RSA operation", reason: OpenSSLErrors.drain())
        }
        let done = token.encryptedKey.withUnsafeBytes { input in
            state.block.write { out in
                context.decrypt(input, into: UnsafeMutableRawBufferPointer(rebasing: out[0..<size])) == size
                    ? size : nil
            }
        }
        if !done {
            state.block.write { out in
                out.baseAddress!.initializeMemory(as: UInt8.self, repeating: 0, count: size)
                return size
            }
        }
    }
}
