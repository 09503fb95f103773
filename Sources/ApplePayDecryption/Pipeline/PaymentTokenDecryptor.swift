// The engine: Apple's whole verification procedure, then decryption, for one token at a time,
// safe to call from many threads at once.
internal import ApplePayCrypto
#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// When the token is checked: against a reference time with a freshness window, or (for
/// re-processing archives) only at its own signing time.
public enum ReferenceTime: Sendable {
    /// The current time.
    case now
    /// A fixed instant (tests, replays of an authorization log).
    case at(Date)
    /// No freshness check: the chain is still verified at the token's signing time.
    case signingTime

    /// Unix seconds of the reference, or nil for `.signingTime`. Any date at all is usable: one that
    /// is not finite or lies beyond ±10¹² s (about 31,000 years) is clamped there, so every token is
    /// simply out of range of it.
    package var unixSeconds: Int64? {
        switch self {
        case .signingTime: return nil
        case .now: return Self.clamped(Date().timeIntervalSince1970)
        case let .at(date): return Self.clamped(date.timeIntervalSince1970)
        }
    }

    static let limit: Double = 1e12

    static func clamped(_ seconds: Double) -> Int64 {
        guard !seconds.isNaN else { return Int64(limit) }
        return Int64(min(max(seconds, -limit), limit).rounded(.down))
    }
}

/// The engine: verifies Apple Pay tokens and decrypts them, for any number of merchant keys.
///
/// Create one at start-up and share it: it is `Sendable`, and concurrent calls each borrow their own
/// OpenSSL contexts. Every certificate chain is verified once, then cached.
///
/// ```swift
/// let decryptor = try PaymentTokenDecryptor(merchants: [merchant])   // Apple Root CA - G3, 300 s window
/// let payment = try decryptor.decrypt(tokenData)
/// ```
///
/// <doc:Verification> lists what is checked, in which order, and the error code of each failure.
public final class PaymentTokenDecryptor: Sendable {
    /// The default maximum distance between a token's signing time and the reference time: 300 s.
    public static let defaultSigningTimeWindow: Int64 = 300

    private let merchantsByHash: [[UInt8]: MerchantIdentity]
    /// Every merchant key this engine decrypts for.
    public let merchants: [MerchantIdentity]
    /// The root every token's certificate chain must lead to.
    public let trustAnchor: TrustAnchor
    /// Maximum distance, in seconds, between the signing time and the reference time.
    public let signingTimeWindow: Int64
    let chains: SignerChainCache
    let lanes = LanePool()

    /// An engine for a set of merchant keys.
    ///
    /// - Parameters:
    ///   - merchants: every key the engine may decrypt for; tokens select theirs by `publicKeyHash`.
    ///   - trustAnchor: Apple Root CA - G3 unless a test deliberately passes
    ///     `TrustAnchor.insecureTestingOnlyRoot(pem:)`.
    ///   - signingTimeWindow: seconds (default 300).
    /// - Throws: ``ConfigurationError``: no merchant, two merchants with one public key hash, a negative
    ///   window, or libsodium unavailable.
    public convenience init(
        merchants: [MerchantIdentity], trustAnchor: TrustAnchor = .appleRootCAG3,
        signingTimeWindow: Int64 = PaymentTokenDecryptor.defaultSigningTimeWindow
    ) throws(ConfigurationError) {
        guard !merchants.isEmpty else {
            throw ConfigurationError(.invalidOption, "at least one merchant key is required")
        }
        try self.init(anyMerchants: merchants, trustAnchor: trustAnchor, signingTimeWindow: signingTimeWindow)
    }

    /// An engine that may hold no merchant key at all: an Apple Pay token is still read and verified
    /// (chain, signature, signing time under `trustAnchor` and the window) and, once it verifies, is
    /// `unknownMerchantKey`; junk keeps its own code. Front ends configured for Google Pay only (the CLI,
    /// the C ABI, the service) run Apple Pay tokens through it, so that every front end gives a token the
    /// same code.
    public static func withoutMerchants(
        trustAnchor: TrustAnchor = .appleRootCAG3, signingTimeWindow: Int64 = defaultSigningTimeWindow
    ) throws(ConfigurationError) -> PaymentTokenDecryptor {
        try PaymentTokenDecryptor(anyMerchants: [], trustAnchor: trustAnchor, signingTimeWindow: signingTimeWindow)
    }

    private init(anyMerchants merchants: [MerchantIdentity], trustAnchor: TrustAnchor, signingTimeWindow: Int64)
        throws(ConfigurationError)
    {
        guard SecureMemory.isReady else {
            throw ConfigurationError(.cryptoUnavailable, "libsodium failed to initialise")
        }
        guard signingTimeWindow >= 0 else {
            throw ConfigurationError(.invalidOption, "the signing time window must not be negative")
        }
        var byHash: [[UInt8]: MerchantIdentity] = [:]
        for merchant in merchants {
            guard byHash.updateValue(merchant, forKey: merchant.publicKeyHash) == nil else {
                throw ConfigurationError(
                    .duplicateMerchant,
                    "two merchant identities share the public key hash \(merchant.publicKeyHashBase64)")
            }
        }
        self.merchantsByHash = byHash
        self.merchants = merchants
        self.trustAnchor = trustAnchor
        self.signingTimeWindow = signingTimeWindow
        self.chains = SignerChainCache(anchor: trustAnchor)
    }

    /// Number of distinct certificate chains verified so far (each is verified once).
    public var verifiedChainCount: Int { chains.cachedChainCount }

    /// Verifies and decrypts one token given as raw bytes in any accepted form.
    ///
    /// The bytes are read in place (no copy); see ``decrypt(_:at:)-(DataProtocol,_)`` for the forms accepted.
    public func decrypt(_ tokenBytes: [UInt8], at reference: ReferenceTime = .now) throws(ApplePayError)
        -> DecryptedPayment
    {
        try tokenBytes.withBytes { (raw) throws(ApplePayError) in
            try decrypt(raw, referenceSeconds: reference.unixSeconds)
        }
    }

    /// Verifies and decrypts one token held in `Data`, read in place (no copy).
    public func decrypt(_ tokenData: Data, at reference: ReferenceTime = .now) throws(ApplePayError) -> DecryptedPayment
    {
        try tokenData.withBytes { (raw) throws(ApplePayError) in
            try decrypt(raw, referenceSeconds: reference.unixSeconds)
        }
    }

    /// Verifies and decrypts one token: the whole procedure of <doc:Verification>, then decryption.
    ///
    /// - Parameters:
    ///   - token: the token's bytes in any accepted form: bare `paymentData`; a whole `PKPaymentToken`;
    ///     `{"paymentData": …}`; Apple Pay JS `{"token": {…}}`; or the `paymentData` JSON base64-encoded.
    ///     Any `DataProtocol` will do (`Data`, `[UInt8]`, `ArraySlice`, `DispatchData`, a NIO
    ///     `ByteBuffer`'s `readableBytesView`…): contiguous bytes are read in place, and only a value
    ///     made of several regions is gathered once into one buffer.
    ///   - reference: the time the signing time is checked against (see ``ReferenceTime``).
    /// - Returns: the verified, decrypted payment.
    /// - Throws: ``ApplePayError``, whose ``ApplePayError/code`` says which check failed.
    ///
    /// Safe to call from any number of threads and tasks at once. On one core of the benchmark
    /// machine (<doc:Performance>) a call costs about 0.15–0.3 ms for an EC_v1 token (median 154 µs, p99
    /// 302 µs) and about 1.5 ms for RSA_v1 (the RSA-2048 private key operation), plus a chain
    /// verification the first time a signing certificate is seen; it never waits for I/O or for a
    /// lock held across that work. Call it directly from async code, as any short computation; a
    /// service that takes many RSA_v1 tokens at once may prefer ``BatchDecryptor``'s async `run`.
    public func decrypt(_ token: some DataProtocol, at reference: ReferenceTime = .now) throws(ApplePayError)
        -> DecryptedPayment
    {
        let referenceSeconds = reference.unixSeconds
        if let payment = try token.withContiguousBytesIfAvailable({ (raw) throws(ApplePayError) in
            try decrypt(raw, referenceSeconds: referenceSeconds)
        }) {
            return payment
        }
        if token.regions.count == 1, let region = token.regions.first {
            return try region.withBytes { (raw) throws(ApplePayError) in
                try decrypt(raw, referenceSeconds: referenceSeconds)
            }
        }
        // Several regions: the reader needs one buffer. Token bytes are sealed, not secret.
        let gathered: [UInt8] = Array(token)
        return try decrypt(gathered, at: reference)
    }

    private func decrypt(_ raw: UnsafeRawBufferPointer, referenceSeconds: Int64?) throws(ApplePayError)
        -> DecryptedPayment
    {
        try lanes.withLane { (lane) throws(ApplePayError) in
            try withParsedToken(raw, lane: lane) { (view) throws(ApplePayError) in
                try decrypt(view, referenceSeconds: referenceSeconds, lane: lane)
            }
        }
    }

    /// Decodes a token into the lane's buffer and runs `body` over its fields.
    package func withParsedToken<R>(
        _ raw: UnsafeRawBufferPointer, lane: Lane,
        _ body: (TokenView) throws(ApplePayError) -> R
    ) throws(ApplePayError) -> R {
        let fields = try TokenReader.read(raw, into: &lane.tokenStorage)
        return try lane.tokenStorage.withBytes { (bytes) throws(ApplePayError) in
            try body(TokenView(bytes: bytes, fields: fields))
        }
    }

    /// Verifies and decrypts an already parsed token.
    ///
    /// - Throws: ``ApplePayError`` for any failed check after parsing.
    public func decrypt(_ token: PaymentToken, at reference: ReferenceTime = .now) throws(ApplePayError)
        -> DecryptedPayment
    {
        try lanes.withLane { (lane) throws(ApplePayError) -> DecryptedPayment in
            try token.withView { (view) throws(ApplePayError) -> DecryptedPayment in
                try decrypt(view, referenceSeconds: reference.unixSeconds, lane: lane)
            }
        }
    }

    /// The whole procedure over a token view, with a lane's contexts. Used by the batch engine too.
    package func decrypt(_ view: TokenView, referenceSeconds: Int64?, lane: Lane) throws(ApplePayError)
        -> DecryptedPayment
    {
        OpenSSLErrors.clear()
        defer { OpenSSLErrors.clear() }
        let signatureBytes = view[view.fields.signature]
        let (cms, signer) = try resolveSigner(signatureBytes)
        try checkSignature(view, cms: cms, signer: signer, lane: lane)
        let signingTime = try checkSigningTime(cms, signer: signer, referenceSeconds: referenceSeconds)
        let merchant = try selectMerchant(view)
        let key = try agreeKey(view, merchant: merchant, lane: lane)
        defer { key.wipe() }  // EC_v1's key is the lane's buffer: it must not outlive the token
        let plaintext = try openData(view, key: key, lane: lane)
        return try DecryptedPayment.build(
            plaintext: plaintext, version: view.fields.version, decodedTransactionId: view[view.fields.transactionId],
            signingTime: signingTime, replayIdentity: replayIdentity(view, cms: cms, lane: lane))
    }

    // MARK: the steps, in order

    /// Steps 1–2: the CMS structure, and the signer with the verdict on its chain (verified once per
    /// signer and issuer certificate, after a first signature by that signer verified, then cached).
    package func resolveSigner(_ signatureBytes: UnsafeRawBufferPointer) throws(ApplePayError) -> (
        CMSSignedData, CachedSigner
    ) {
        let cms = try CMSSignedData.parse(signatureBytes)
        return (cms, try chains.signer(for: cms, in: signatureBytes))
    }

    /// Step 3: the signature over the signed attributes, and the message digest over the token; then
    /// step 2's cached verdict. A chain is reported untrusted only for a token its own leaf signed, so
    /// a token gets the same answer whether or not its chain was cached.
    package func checkSignature(_ view: TokenView, cms: CMSSignedData, signer: CachedSigner, lane: Lane)
        throws(ApplePayError)
    {
        try checkSignatureAlgorithm(cms, signer: signer)
        let signatureBytes = view[view.fields.signature]
        let signatureValid = lane.digests.withScratch { attributesDigest, _ in
            signedAttributesDigest(view, cms: cms, lane: lane, into: attributesDigest.baseAddress!)
            return lane.verifiers.verify(
                UnsafeRawBufferPointer(rebasing: signatureBytes[cms.signature]),
                overDigest: UnsafeRawBufferPointer(attributesDigest), signer: signer)
        }
        guard signatureValid else {
            throw ApplePayError(
                .invalidSignature, "the CMS signature does not verify with the signing certificate", field: "signature",
                reason: OpenSSLErrors.drain())
        }
        try checkSignedContent(view, cms: cms, signer: signer, lane: lane)
    }

    /// The first rule of step 3: the CMS signatureAlgorithm fits the signing certificate's key.
    package func checkSignatureAlgorithm(_ cms: CMSSignedData, signer: CachedSigner) throws(ApplePayError) {
        guard cms.signatureAlgorithm.keyType == signer.keyType else {
            throw ApplePayError(
                .invalidSignature,
                "the signatureAlgorithm (\(cms.signatureAlgorithm)) does not match the signing certificate's \(signer.keyType.rawValue) key",
                field: "signature")
        }
    }

    /// SHA-256 of the signed attributes as the signature covers them: the DER SET OF, that is the
    /// [0] IMPLICIT tag byte replaced by 0x31.
    package func signedAttributesDigest(
        _ view: TokenView, cms: CMSSignedData, lane: Lane, into out: UnsafeMutablePointer<UInt8>
    ) {
        let digest = lane.digests.context
        let attributes = UnsafeRawBufferPointer(rebasing: view[view.fields.signature][cms.signedAttributes])
        digest.start()
        withUnsafeBytes(of: UInt8(0x31)) { digest.update($0) }
        digest.update(UnsafeRawBufferPointer(rebasing: attributes[1...]))
        digest.finish(into: out)
    }

    /// The rest of step 3 once the signature verified: the `messageDigest` attribute against the
    /// token's contents, then step 2's cached verdict.
    package func checkSignedContent(_ view: TokenView, cms: CMSSignedData, signer: CachedSigner, lane: Lane)
        throws(ApplePayError)
    {
        let messageDigest = UnsafeRawBufferPointer(rebasing: view[view.fields.signature][cms.messageDigest])
        let digestValid = lane.digests.withScratch { _, contentDigest in
            guard messageDigest.count == SHA256.byteCount else { return false }
            view.signedContentDigest(into: contentDigest.baseAddress!, digest: lane.digests.context)
            return SecureMemory.constantTimeEquals(messageDigest, UnsafeRawBufferPointer(contentDigest))
        }
        guard digestValid else {
            throw ApplePayError(
                .invalidSignature, "the signed message digest does not match the token's contents", field: "signature")
        }
        if let chainError = signer.chainError { throw chainError }
    }

    /// Steps 2 (time part) and 4: every certificate valid at the signing time, and the signing time
    /// within the window of the reference time (unless re-processing at the signing time).
    package func checkSigningTime(_ cms: CMSSignedData, signer: CachedSigner, referenceSeconds: Int64?)
        throws(ApplePayError) -> Int64
    {
        if let chainError = signer.chainError { throw chainError }
        guard let signingTime = cms.signingTime else {
            throw ApplePayError(.invalidSignature, "the signature has no signing time", field: "signature")
        }
        let names = ["signing", "intermediate", "root"]
        for (name, window) in zip(names, signer.validity) where !window.contains(signingTime) {
            throw ApplePayError(
                .untrustedCertificateChain,
                "the \(name) certificate was not valid at the signing time \(Self.format(signingTime))",
                field: "signature")
        }
        guard let referenceSeconds else { return signingTime }
        let skew = signingTime - referenceSeconds
        guard abs(skew) <= signingTimeWindow else {
            throw ApplePayError(
                .signingTimeOutOfRange,
                "signed at \(Self.format(signingTime)), \(abs(skew)) s \(skew < 0 ? "before" : "after") the reference time \(Self.format(referenceSeconds)); the window is \(signingTimeWindow) s",
                field: "signature")
        }
        return signingTime
    }

    /// The loaded merchant whose key `header.publicKeyHash` names, if any (no error built: the request
    /// edge asks for every token's label, failures included).
    package func merchant(for view: TokenView) -> MerchantIdentity? {
        let hash = view[view.fields.publicKeyHash]
        // A linear scan avoids building an array key; processors hold a handful of keys.
        return merchants.count <= 8
            ? merchants.first { bytesEqual($0.publicKeyHash, hash) } : merchantsByHash[Array(hash)]
    }

    /// Step 5: the merchant key the token was sealed to.
    package func selectMerchant(_ view: TokenView) throws(ApplePayError) -> MerchantIdentity {
        guard let found = merchant(for: view) else {
            throw ApplePayError(
                .unknownMerchantKey,
                "no loaded merchant key has publicKeyHash \(Base64.encode(Array(view[view.fields.publicKeyHash])))",
                field: "header.publicKeyHash")
        }
        return found
    }

    /// The symmetric key: ECDH + KDF (EC_v1) or RSA-OAEP unwrap (RSA_v1).
    package func agreeKey(_ view: TokenView, merchant: MerchantIdentity, lane: Lane) throws(ApplePayError)
        -> SensitiveBytes
    {
        switch (view.fields.version, merchant.keyKind) {
        case (.ecV1, .ec):
            guard let partyV = merchant.partyV else {
                throw ApplePayError(.decryptionFailed, "the merchant has no merchant identifier hash for the KDF")
            }
            guard lane.keyAgreement.importEphemeral(view[view.fields.ephemeralPoint]) else {
                throw ApplePayError(
                    .decryptionFailed, "the ephemeral public key is not a point on P-256",
                    field: "header.ephemeralPublicKey",
                    reason: OpenSSLErrors.drain())
            }
            let digest = lane.digests.context
            let keyBuffer = lane.keyAgreement.derivedKey
            if case .pkcs11(let token) = merchant.key {
                return try tokenAgreedKey(view, merchant: merchant, token: token, partyV: partyV, lane: lane)
            }
            guard
                let key = lane.keyAgreement.withSharedSecret(
                    merchant: merchant,
                    { AppleKDF.derive(sharedSecret: $0, partyV: partyV, digest: digest, into: keyBuffer) })
            else {
                throw ApplePayError(.decryptionFailed, "ECDH key agreement failed", reason: OpenSSLErrors.drain())
            }
            return key
        case (.rsaV1, .rsa):
            if case .pkcs11(let token) = merchant.key {
                return try tokenUnwrappedKey(view, merchant: merchant, token: token, lane: lane)
            }
            guard let unwrapped = lane.keyAgreement.unwrap(merchant: merchant, view[view.fields.keyMaterial]),
                unwrapped.count == 16
            else {
                throw ApplePayError(
                    .decryptionFailed, "RSA-OAEP unwrap of the symmetric key failed", field: "header.wrappedKey",
                    reason: OpenSSLErrors.drain())
            }
            return unwrapped
        default:
            throw ApplePayError(
                .decryptionFailed,
                "a \(view.fields.version.rawValue) token cannot be opened with the \(merchant.keyKind.rawValue) key of \(merchant.label)"
            )
        }
    }

    /// EC_v1 with the merchant key in a PKCS#11 token: ECDH in the token, Apple's KDF here.
    private func tokenAgreedKey(
        _ view: TokenView, merchant: MerchantIdentity, token: PKCS11PrivateKey, partyV: [UInt8],
        lane: Lane
    ) throws(ApplePayError) -> SensitiveBytes {
        let secret = SensitiveBytes(capacity: 32)
        defer { secret.wipe() }
        do throws(PKCS11PrivateKey.Fault) {
            try lane.tokenSessions.deriveSharedSecret(
                merchant: merchant, token: token, peer: view[view.fields.ephemeralPoint], into: secret)
        } catch {
            throw ApplePayError(.decryptionFailed, "ECDH in the PKCS#11 token failed", reason: error.reason)
        }
        return AppleKDF.derive(
            sharedSecret: secret, partyV: partyV, digest: lane.digests.context, into: lane.keyAgreement.derivedKey)
    }

    /// RSA_v1 with the merchant key in a PKCS#11 token: RSA-OAEP in the token.
    private func tokenUnwrappedKey(
        _ view: TokenView, merchant: MerchantIdentity, token: PKCS11PrivateKey,
        lane: Lane
    ) throws(ApplePayError) -> SensitiveBytes {
        let unwrapped: SensitiveBytes
        do throws(PKCS11PrivateKey.Fault) {
            unwrapped = try lane.tokenSessions.unwrap(merchant: merchant, token: token, view[view.fields.keyMaterial])
        } catch {
            throw ApplePayError(
                .decryptionFailed, "RSA-OAEP unwrap in the PKCS#11 token failed", field: "header.wrappedKey",
                reason: error.reason)
        }
        guard unwrapped.count == 16 else {
            throw ApplePayError(
                .decryptionFailed, "RSA-OAEP unwrap of the symmetric key failed", field: "header.wrappedKey")
        }
        return unwrapped
    }

    /// AES-GCM with the tag checked.
    package func openData(_ view: TokenView, key: SensitiveBytes, lane: Lane) throws(ApplePayError) -> SensitiveBytes {
        let sealed = view[view.fields.data]
        // Room for a whole block beyond the body, as before; the tag is checked before the count is set.
        let plaintext = SensitiveBytes(capacity: max(sealed.count - CipherContext.tagLength, 0) + 16)
        let opened = key.withUnsafeBytes { key in
            plaintext.write {
                lane.cipher.open(key: key, sealed: sealed, into: $0.baseAddress!.assumingMemoryBound(to: UInt8.self))
            }
        }
        guard opened else {
            throw ApplePayError(
                .decryptionFailed, "the AES-GCM tag does not verify: wrong key or altered data", field: "data")
        }
        return plaintext
    }

    /// The claim of a verified token: its decoded transactionId and the signed messageDigest (which
    /// the signature check proved equal to the digest of the token's contents).
    package func replayIdentity(_ view: TokenView, cms: CMSSignedData, lane: Lane) -> ReplayIdentity {
        let digest = UnsafeRawBufferPointer(rebasing: view[view.fields.signature][cms.messageDigest])
        return ReplayIdentity.of(
            transactionId: view[view.fields.transactionId], signedDigest: digest, hasher: lane.digests.context)
    }

    static func format(_ unixSeconds: Int64) -> String {
        Date(timeIntervalSince1970: TimeInterval(unixSeconds)).formatted(.iso8601)
    }
}
