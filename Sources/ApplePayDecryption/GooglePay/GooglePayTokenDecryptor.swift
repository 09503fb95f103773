// The Google Pay engine: the three signatures of a PaymentMethodToken (intermediate key by a root
// key, message by the intermediate or root key, for one of our recipient ids), the expirations, then
// ECDH + HKDF + HMAC + AES-CTR with the merchant keys; one token at a time, from many threads at once.
internal import ApplePayCrypto

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// Verifies Google Pay tokens (ECv1, ECv2, ECv2SigningOnly) and decrypts them.
///
/// Create one at start-up and share it: it is `Sendable`, and concurrent calls each borrow their own
/// contexts. Each distinct intermediate signing key is verified once against the root keys, then
/// cached (with a precomputed table for its message signatures) while it is valid; a later token
/// reuses it only when it carries one of the signatures that verified.
///
/// ```swift
/// let decryptor = try GooglePayTokenDecryptor(
///     merchantKeys: [GooglePayMerchantKey(privateKeyFile: "google-key.pem")],
///     recipientIds: ["merchant:12345678901234567890"],
///     rootKeys: GooglePayRootKeys(contentsOfFile: "google-root-keys.json"))
/// let payment = try decryptor.decrypt(tokenBytes)
/// ```
///
/// Checks, in order, each with its ``ApplePayError/Code``: strict reading (`malformedToken`,
/// `unsupportedVersion`); the version is one of ``protocolVersions`` (`unsupportedVersion`, field
/// `protocolVersion`); ECv2*: one of `intermediateSigningKey.signatures` verifies with a root key
/// of the token's version that is not expired (`invalidSignature`), then the intermediate
/// `keyExpiration` is after the reference time (`intermediateKeyExpired`); `signature` verifies for
/// one of the recipient ids (`invalidSignature`); the tag verifies under one of the merchant keys
/// (`decryptionFailed`); a message's `messageExpiration` is after the reference time (`messageExpired`);
/// for ``decrypt(_:at:)-(GooglePayToken,_)``, the message is a payment, with `messageExpiration` for
/// ECv2 and ECv2SigningOnly (`invalidPayload`). With ``ReferenceTime/signingTime`` (re-processing an
/// archive) no expiration is checked: keys and messages are taken as valid.
public final class GooglePayTokenDecryptor: Sendable {
    /// The merchant private keys, tried in order (key rotation).
    public let merchantKeys: [GooglePayMerchantKey]
    /// The recipient ids this engine accepts messages for: `merchant:` + merchant id, or `gateway:` +
    /// gateway id.
    public let recipientIds: [String]
    /// Google's root signing keys.
    public let rootKeys: GooglePayRootKeys
    /// The protocol versions accepted; a token of another is `unsupportedVersion` before any signature
    /// is checked.
    public let protocolVersions: Set<GooglePayToken.ProtocolVersion>
    let intermediates: IntermediateKeyCache
    /// The signed strings' parts before each document, framed once for these recipient ids.
    let prefixes: SignedString.Prefixes
    let lanes = LanePool()

    /// An engine for a set of merchant keys and recipient ids under a root keys document.
    ///
    /// - Parameters:
    ///   - merchantKeys: the keys tokens are sealed to (none only for ECv2SigningOnly).
    ///   - recipientIds: at least one; a token verifies when its message signature verifies for one.
    ///   - rootKeys: Google's keys document for the environment (test or production).
    ///   - intermediateKeyCacheLimit: how many verified intermediate keys are kept (default 64).
    ///   - protocolVersions: the versions accepted (default ``defaultProtocolVersions``: ECv1 and ECv2).
    /// - Throws: ``ConfigurationError`` with `invalidOption` for no recipient id or an empty one, or no
    ///   protocol version, or `cryptoUnavailable`.
    public init(
        merchantKeys: [GooglePayMerchantKey], recipientIds: [String], rootKeys: GooglePayRootKeys,
        intermediateKeyCacheLimit: Int = 64,
        protocolVersions: Set<GooglePayToken.ProtocolVersion> = GooglePayTokenDecryptor.defaultProtocolVersions
    ) throws(ConfigurationError) {
        guard SecureMemory.isReady else {
            throw ConfigurationError(.cryptoUnavailable, "libsodium failed to initialise")
        }
        guard !recipientIds.isEmpty, recipientIds.allSatisfy({ !$0.isEmpty }) else {
            throw ConfigurationError(
                .invalidOption, "at least one Google Pay recipient id (merchant:ID or gateway:ID) is required")
        }
        guard !protocolVersions.isEmpty else {
            throw ConfigurationError(.invalidOption, "at least one Google Pay protocol version is required")
        }
        self.merchantKeys = merchantKeys
        self.recipientIds = recipientIds
        self.protocolVersions = protocolVersions
        self.rootKeys = rootKeys
        self.intermediates = IntermediateKeyCache(limit: intermediateKeyCacheLimit)
        self.prefixes = SignedString.Prefixes(recipientIds: recipientIds)
    }

    /// What Google issues for merchants' integrations today: ECv2 to current ones, and still ECv1 to
    /// those built before ECv2 that never moved. A processor cannot tell from a key document which its
    /// merchants use, so both are accepted; naming versions replaces this set. ECv2SigningOnly (the card
    /// data signed but not encrypted) is accepted only when named.
    public static let defaultProtocolVersions: Set<GooglePayToken.ProtocolVersion> = [.ecV1, .ecV2]

    /// The versions `names` spell (each one of ECv1, ECv2, ECv2SigningOnly), or
    /// ``defaultProtocolVersions`` when there are none: what every front end's list of names means (the
    /// CLI's and the service's `--google-protocol-version`, the C ABI's `ap_config_add_google_protocol_version`).
    /// - Throws: ``ConfigurationError`` with `invalidOption` quoting the first name that is no version.
    public static func protocolVersions(
        named names: [String]
    ) throws(ConfigurationError) -> Set<GooglePayToken.ProtocolVersion> {
        guard !names.isEmpty else { return defaultProtocolVersions }
        var versions: Set<GooglePayToken.ProtocolVersion> = []
        for name in names {
            guard let version = GooglePayToken.ProtocolVersion(rawValue: name) else {
                throw ConfigurationError(
                    .invalidOption,
                    "Google Pay protocol version \"\(name.prefix(32))\" is none of ECv1, ECv2, ECv2SigningOnly")
            }
            versions.insert(version)
        }
        return versions
    }

    /// How many distinct intermediate signing keys are cached as verified.
    public var verifiedIntermediateKeyCount: Int { intermediates.count }

    // MARK: entry points

    /// Verifies and decrypts a token and returns its message as it was sealed, read as nothing more
    /// than Google's rules require (a message that is a JSON object with `messageExpiration` is
    /// checked against the reference time; a message that is not JSON has none, as in Tink).
    public func open(_ token: some DataProtocol, at reference: ReferenceTime = .now) throws(ApplePayError)
        -> GooglePayMessage
    {
        try open(GooglePayToken.parse(token), at: reference)
    }

    /// The same for a parsed token.
    public func open(_ token: GooglePayToken, at reference: ReferenceTime = .now) throws(ApplePayError)
        -> GooglePayMessage
    {
        try lanes.withLane { (lane) throws(ApplePayError) in
            try open(token, referenceMilliseconds: reference.unixMilliseconds, lane: lane)
        }
    }

    /// Verifies and decrypts a token and reads its payment: the PAN or network token, expiry,
    /// cryptogram and ECI, gateway merchant id, messageId.
    ///
    /// - Throws: ``ApplePayError``; ``ApplePayError/Code/invalidPayload`` when the message is not a
    ///   strict JSON object with `messageId`, `paymentMethod` and `paymentMethodDetails` (and, for
    ///   ECv2, `messageExpiration`).
    public func decrypt(_ token: some DataProtocol, at reference: ReferenceTime = .now) throws(ApplePayError)
        -> GooglePayment
    {
        try decrypt(GooglePayToken.parse(token), at: reference)
    }

    /// The same for a parsed token.
    public func decrypt(_ token: GooglePayToken, at reference: ReferenceTime = .now) throws(ApplePayError)
        -> GooglePayment
    {
        try GooglePayment.build(open(token, at: reference))
    }

    // MARK: the procedure (the batch lanes' multi-buffer stage runs the same steps, the message
    // signature and the key agreement of eight tokens at once: Batch/MultiBufferStage+GooglePay.swift)

    package func open(_ token: GooglePayToken, referenceMilliseconds now: Int64?, lane: Lane) throws(ApplePayError)
        -> GooglePayMessage
    {
        OpenSSLErrors.clear()
        defer { OpenSSLErrors.clear() }
        let signingKey = try checkSigningKey(token, now: now, lane: lane)
        let recipientId = try verifyMessage(token, signingKey, lane: lane)
        let plaintext: SensitiveBytes
        if let sealed = token.sealed {
            plaintext = try decryptMessage(token.protocolVersion, sealed, lane: lane)
        } else {
            plaintext = Self.clearMessage(token)
        }
        return try message(token, recipientId: recipientId, plaintext: plaintext, now: now, lane: lane)
    }

    /// What verifies a token's message signature.
    enum MessageSigningKey {
        /// ECv2*: the intermediate key, verified and not expired.
        case intermediate(VerifiedIntermediateKey)
        /// ECv1: the root keys of the token's version valid at the reference time.
        case roots([GooglePayRootKeys.Key])
    }

    /// ECv2*: the intermediate key verified by a root key (or found verified in the cache) and not
    /// expired; ECv1: the root keys that count.
    func checkSigningKey(_ token: GooglePayToken, now: Int64?, lane: Lane) throws(ApplePayError)
        -> MessageSigningKey
    {
        // First, so that both paths (one token, and the batch lanes' multi-buffer stage) refuse it alike.
        guard protocolVersions.contains(token.protocolVersion) else {
            let accepted = GooglePayToken.ProtocolVersion.allCases.filter(protocolVersions.contains).map(\.rawValue)
            throw ApplePayError(
                .unsupportedVersion,
                "protocolVersion \(token.protocolVersion.rawValue) is not accepted here (accepted: \(accepted.joined(separator: ", ")))",
                field: "protocolVersion")
        }
        guard let intermediate = token.intermediate else {
            return .roots(rootKeys.usable(for: token.protocolVersion, at: now))
        }
        let key = try verifiedIntermediate(
            token, intermediate, now: now, digest: lane.digests.context, state: lane.googlePay)
        guard now.map({ intermediate.keyExpiration > $0 }) ?? true else {
            throw ApplePayError(
                .intermediateKeyExpired,
                "the intermediate signing key expired at \(intermediate.keyExpiration) ms, before the reference time \(now ?? 0) ms",
                field: "intermediateSigningKey.signedKey.keyExpiration")
        }
        return .intermediate(key)
    }

    /// ECv2*: the intermediate key from the cache, or verified now with a root key and cached.
    private func verifiedIntermediate(
        _ token: GooglePayToken, _ intermediate: GooglePayToken.IntermediateSigningKey, now: Int64?,
        digest: DigestContext, state: GooglePayLaneState
    ) throws(ApplePayError) -> VerifiedIntermediateKey {
        // The cache is keyed by the signed string's digest: the same key signed for another version
        // is another entry.
        SignedString.digest(
            prefix: prefixes.key[token.protocolVersion.index], document: intermediate.signedKey, digest: digest,
            into: state.digestOut)
        let signedDigest = UnsafeRawBufferPointer(start: state.digestOut, count: 32)
        let id = SignedKeyDigest(signedDigest)
        // A cached key counts only for a token carrying a signature that verified before: another
        // token with the same signedKey but signatures of its own is verified on its own.
        let cached = intermediates.lookup(id, signatures: intermediate.signatures, at: now)
        if let verified = cached.verified { return verified }
        let roots = rootKeys.usable(for: token.protocolVersion, at: now)
        var verified: IntermediateKeyCache.VerifiedSignatures = [:]
        for signature in intermediate.signatures {
            for root in roots where signature.withUnsafeBytes({ root.key.verify($0, overDigest: signedDigest) }) {
                let end = root.keyExpiration ?? Int64.max
                verified[signature] = max(verified[signature] ?? end, end)
            }
        }
        guard !verified.isEmpty else {
            throw ApplePayError(
                .invalidSignature,
                roots.isEmpty
                    ? "no root key of protocolVersion \(token.protocolVersion.rawValue) is valid at the reference time"
                    : "no intermediateSigningKey signature verifies with a root key",
                field: "intermediateSigningKey.signatures", reason: OpenSSLErrors.drain())
        }
        let entry: VerifiedIntermediateKey
        if let known = cached.known {
            entry = known
        } else {
            guard let key = EVPKey.publicKey(fromDER: intermediate.keyValue), key.p256PublicPoint() != nil else {
                throw ApplePayError.malformed(
                    "intermediateSigningKey.signedKey.keyValue",
                    "the intermediate signing key is not a P-256 public key")
            }
            entry = VerifiedIntermediateKey(
                key: key, table: P256SignerTable.build(for: key), keyExpiration: intermediate.keyExpiration)
        }
        intermediates.insert(id, entry, signatures: verified, at: now)
        return entry
    }

    /// The digest of the message's signed string for recipient id `recipient` (its index in
    /// ``recipientIds``), into the lane's scratch; returns that scratch.
    func messageDigest(_ token: GooglePayToken, recipient: Int, lane: Lane) -> UnsafeRawBufferPointer {
        let state = lane.googlePay
        SignedString.digest(
            prefix: prefixes.message[token.protocolVersion.index][recipient], document: token.signedMessage,
            digest: lane.digests.context, into: state.digestOut)
        return UnsafeRawBufferPointer(start: state.digestOut, count: 32)
    }

    /// The message signature for each recipient id in turn; returns the one it verifies for.
    func verifyMessage(_ token: GooglePayToken, _ signingKey: MessageSigningKey, lane: Lane) throws(ApplePayError)
        -> String
    {
        let state = lane.googlePay
        for (index, recipientId) in recipientIds.enumerated() {
            let messageDigest = messageDigest(token, recipient: index, lane: lane)
            let verified = token.signature.withUnsafeBytes { signature in
                switch signingKey {
                case let .intermediate(key):
                    if let table = key.table {
                        return state.fixedKey.verify(signature, overDigest: messageDigest, with: table)
                    }
                    return key.key.verify(signature, overDigest: messageDigest)
                case let .roots(roots):
                    return roots.contains { $0.key.verify(signature, overDigest: messageDigest) }
                }
            }
            if verified { return recipientId }
        }
        throw ApplePayError(
            .invalidSignature,
            "the message signature does not verify for any configured recipient id (\(recipientIds.count))",
            field: "signature", reason: OpenSSLErrors.drain())
    }

    /// ECv2SigningOnly: the message is `signedMessage` itself.
    static func clearMessage(_ token: GooglePayToken) -> SensitiveBytes {
        let plaintext = SensitiveBytes(capacity: token.signedMessage.count)
        _ = token.signedMessage.withUnsafeBytes { source in
            plaintext.write { out in
                out.copyMemory(from: source)
                return source.count
            }
        }
        return plaintext
    }

    /// The verified message: its messageId and messageExpiration read, the expiration checked.
    func message(
        _ token: GooglePayToken, recipientId: String, plaintext: SensitiveBytes, now: Int64?, lane: Lane
    ) throws(ApplePayError) -> GooglePayMessage {
        let fields = try GooglePayMessage.readFields(plaintext)
        // Any version whose message carries messageExpiration is held to it (ECv2 payments must carry it).
        if let expiration = fields.messageExpiration, let now, expiration <= now {
            throw ApplePayError(
                .messageExpired,
                "the message expired at \(expiration) ms, before the reference time \(now) ms",
                field: "messageExpiration")
        }
        return GooglePayMessage(
            protocolVersion: token.protocolVersion, recipientId: recipientId, plaintext: plaintext,
            messageId: fields.messageId, messageExpiration: fields.messageExpiration,
            replayIdentity: GooglePayMessage.replayIdentity(
                messageId: fields.messageId, signedMessage: token.signedMessage, hasher: lane.digests.context))
    }

    /// Decodes the ephemeral public key into the lane's point (OpenSSL judges it: off the curve, at
    /// infinity, coordinates ≥ p, or not uncompressed are refused).
    func importEphemeral(_ sealed: GooglePayToken.SealedMessage, lane: Lane) throws(ApplePayError) {
        guard sealed.ephemeralPublicKey.withUnsafeBytes({ lane.keyAgreement.importEphemeral($0) }) else {
            throw ApplePayError(
                .decryptionFailed, "the ephemeral public key is not an uncompressed point on P-256",
                field: "signedMessage.ephemeralPublicKey", reason: OpenSSLErrors.drain())
        }
    }

    /// The AES key's length: AES-128 for ECv1, AES-256 for ECv2 (the HMAC key is as long).
    static func symmetricLength(_ version: GooglePayToken.ProtocolVersion) -> Int { version == .ecV1 ? 16 : 32 }

    /// ECDH with each merchant key in turn until the tag verifies, then AES-CTR.
    func decryptMessage(
        _ version: GooglePayToken.ProtocolVersion, _ sealed: GooglePayToken.SealedMessage, lane: Lane
    ) throws(ApplePayError) -> SensitiveBytes {
        let state = lane.googlePay
        try importEphemeral(sealed, lane: lane)
        let symmetricLength = Self.symmetricLength(version)
        let keys = state.derivedKeys
        defer { keys.wipe() }
        var failures: [String] = []
        for merchant in merchantKeys {
            let derived: Bool
            do throws(ApplePayError) {
                derived = try deriveKeys(
                    merchant, point: sealed.ephemeralPublicKey, length: 2 * symmetricLength, lane: lane)
            } catch {
                failures.append(error.message)
                continue
            }
            guard derived else { continue }
            if let plaintext = try openSealed(sealed, symmetricLength: symmetricLength, lane: lane) { return plaintext }
        }
        throw ApplePayError(
            .decryptionFailed,
            merchantKeys.isEmpty
                ? "no Google Pay merchant key is loaded"
                : "the tag does not verify under any of the \(merchantKeys.count) merchant keys: wrong key or altered message",
            field: "signedMessage.tag", reason: failures.first)
    }

    /// With the lane's derived keys (AES key ‖ HMAC key): the tag checked in constant time, then
    /// AES-CTR; nil when the tag does not verify.
    func openSealed(_ sealed: GooglePayToken.SealedMessage, symmetricLength: Int, lane: Lane) throws(ApplePayError)
        -> SensitiveBytes?
    {
        let state = lane.googlePay
        let keys = state.derivedKeys
        let tagValid = keys.withUnsafeBytes { raw -> Bool in
            state.mac.start(key: UnsafeRawBufferPointer(rebasing: raw[symmetricLength..<2 * symmetricLength]))
            sealed.encryptedMessage.withUnsafeBytes { state.mac.update($0) }
            state.mac.finish(into: state.tagOut)
            return sealed.tag.withUnsafeBytes {
                SecureMemory.constantTimeEquals($0, UnsafeRawBufferPointer(start: state.tagOut, count: 32))
            }
        }
        guard tagValid else { return nil }
        let plaintext = SensitiveBytes(capacity: sealed.encryptedMessage.count)
        let opened = keys.withUnsafeBytes { raw in
            plaintext.write { out -> Int? in
                sealed.encryptedMessage.withUnsafeBytes { input in
                    state.counterMode.apply(
                        key: UnsafeRawBufferPointer(rebasing: raw[0..<symmetricLength]), input,
                        into: out.baseAddress!.assumingMemoryBound(to: UInt8.self))
                } ? sealed.encryptedMessage.count : nil
            }
        }
        guard opened else {
            throw ApplePayError(.decryptionFailed, "AES-CTR failed", reason: OpenSSLErrors.drain())
        }
        return plaintext
    }

    /// HKDF-SHA256 over the ephemeral point ‖ Z into the lane's derived keys (`length` bytes).
    func deriveKeys(point: [UInt8], sharedSecret secret: SensitiveBytes, length: Int, lane: Lane) -> Bool {
        let state = lane.googlePay
        return point.withUnsafeBytes { pointBytes in
            secret.withUnsafeBytes { z in
                SignedString.google.withUnsafeBytes { info in
                    SignedString.zeroSalt.withUnsafeBytes { salt in
                        state.derivedKeys.write { out in
                            state.mac.hkdf(
                                salt: salt, ikm1: pointBytes, ikm2: z, info: info,
                                into: UnsafeMutableRawBufferPointer(rebasing: out[0..<length]))
                            return length
                        }
                    }
                }
            }
        }
    }

    /// ECDH (in OpenSSL or in the PKCS#11 token) then HKDF-SHA256 into the lane's key buffer; false
    /// when the agreement fails for a software key.
    private func deriveKeys(_ merchant: GooglePayMerchantKey, point: [UInt8], length: Int, lane: Lane)
        throws(ApplePayError) -> Bool
    {
        let identity = merchant.identity
        if case .pkcs11(let token) = identity.key {
            let secret = SensitiveBytes(capacity: 32)
            defer { secret.wipe() }
            do throws(PKCS11PrivateKey.Fault) {
                try point.withBytes { (peer) throws(PKCS11PrivateKey.Fault) in
                    try lane.tokenSessions.deriveSharedSecret(
                        merchant: identity, token: token, peer: peer, into: secret)
                }
            } catch {
                throw ApplePayError(.decryptionFailed, "ECDH in the PKCS#11 token failed", reason: error.reason)
            }
            return deriveKeys(point: point, sharedSecret: secret, length: length, lane: lane)
        }
        return lane.keyAgreement.withSharedSecret(merchant: identity) {
            deriveKeys(point: point, sharedSecret: $0, length: length, lane: lane)
        } ?? false
    }
}
