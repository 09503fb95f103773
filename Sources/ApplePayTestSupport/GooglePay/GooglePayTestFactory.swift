// Mints Google Pay tokens (ECv1, ECv2, ECv2SigningOnly) under a test root of its own, with a hook to
// break or vary each rule the decryptor checks: for tests, the benchmark and users' own test setups.
import ApplePayCrypto
import ApplePayDecryption
import Foundation
import Synchronization

/// TESTING ONLY. A Google Pay sender under a test root: root keys, one intermediate signing key,
/// and merchant keys, all generated at creation; tokens sealed and signed as Google does.
public final class GooglePayTestFactory: @unchecked Sendable {
    // Sendable: the keys are immutable after creation (OpenSSL keys are read-only here).
    let rootKey: EVPKey
    let intermediateKey: EVPKey
    /// A key no root document lists (for signatures that must not verify).
    let strangerKey: EVPKey
    let merchantKeys: [EVPKey]
    /// The root's (or, to break it, the stranger's) signature of each signed intermediate key, made
    /// once: Google signs an intermediate key once and every token carries that same signature while
    /// the key is valid, so a decryptor verifies it once. Signing it again for every token (randomised
    /// ECDSA: a new signature each time) made every token miss the decryptor's cache and pay a second
    /// ECDSA verification, which real traffic never does. A handful of signed keys at a time.
    private let intermediateSignatures = Mutex<[[UInt8]: [UInt8]]>([:])

    /// A factory with fresh keys and `merchantKeyCount` merchant keys (at least one).
    public init(merchantKeyCount: Int = 2) {
        rootKey = EVPKey.generateEC(curve: "P-256")
        intermediateKey = EVPKey.generateEC(curve: "P-256")
        strangerKey = EVPKey.generateEC(curve: "P-256")
        merchantKeys = (0..<max(merchantKeyCount, 1)).map { _ in EVPKey.generateEC(curve: "P-256") }
    }

    /// A factory under a test root of your own (so that a root keys document written once keeps
    /// working) and, when given, your merchant keys: P-256 private keys in PEM or DER.
    /// - Throws: `ConfigurationError` (`unreadableKey`) for a key that cannot be read.
    public init(rootPrivateKey: [UInt8], merchantPrivateKeys: [[UInt8]] = []) throws(ConfigurationError) {
        func load(_ bytes: [UInt8], _ what: String) throws(ConfigurationError) -> EVPKey {
            let key: EVPKey
            do throws(OpenSSLFailure) {
                key = try EVPKey.privateKey(from: bytes, password: nil)
            } catch {
                throw ConfigurationError(.unreadableKey, "the \(what): \(error.reason)")
            }
            guard key.p256PublicPoint() != nil else {
                throw ConfigurationError(.wrongCurve, "the \(what) is not a P-256 key")
            }
            return key
        }
        rootKey = try load(rootPrivateKey, "root key")
        intermediateKey = EVPKey.generateEC(curve: "P-256")
        strangerKey = EVPKey.generateEC(curve: "P-256")
        var merchants: [EVPKey] = []
        for (index, bytes) in merchantPrivateKeys.enumerated() {
            merchants.append(try load(bytes, "merchant key \(index)"))
        }
        merchantKeys = merchants.isEmpty ? [EVPKey.generateEC(curve: "P-256")] : merchants
    }

    /// The root private key as PKCS#8 PEM (keep it to mint under the same root later).
    public var rootPrivateKeyPEM: String { rootKey.privateKeyPEM() ?? "" }

    /// Merchant private key `index` as PKCS#8 PEM.
    public func merchantKeyPEM(_ index: Int = 0) -> String { merchantKeys[index].privateKeyPEM() ?? "" }

    /// Merchant key `index` loaded as the decryptor takes it.
    public func merchantKey(_ index: Int = 0) throws(ConfigurationError) -> GooglePayMerchantKey {
        try GooglePayMerchantKey(privateKey: Array(merchantKeyPEM(index).utf8), label: "test merchant key \(index)")
    }

    /// Merchant public key `index` as base64 SPKI (what a merchant registers with Google).
    public func merchantPublicKeyBase64(_ index: Int = 0) -> String {
        Base64.encode(merchantKeys[index].subjectPublicKeyInfoDER() ?? [])
    }

    /// One entry of a root keys document.
    public struct RootKeyEntry: Sendable {
        /// `protocolVersion`.
        public var protocolVersion: String
        /// `keyExpiration` (ms), or none.
        public var keyExpiration: Int64?
        /// Publish the stranger key instead of the real root (a root that verifies nothing).
        public var stranger = false

        /// An entry for the factory's root key.
        public init(protocolVersion: String, keyExpiration: Int64?, stranger: Bool = false) {
            self.protocolVersion = protocolVersion
            self.keyExpiration = keyExpiration
            self.stranger = stranger
        }
    }

    /// A keys document listing the factory's root key for ECv1 (no expiration), ECv2 and
    /// ECv2SigningOnly (expiring `rootLifetime` ms after `now`).
    public func rootKeysDocument(now: Date, rootLifetime: Int64 = 365 * 86_400_000) -> [UInt8] {
        let end = Self.milliseconds(now) + rootLifetime
        return rootKeysDocument([
            RootKeyEntry(protocolVersion: "ECv1", keyExpiration: nil),
            RootKeyEntry(protocolVersion: "ECv2", keyExpiration: end),
            RootKeyEntry(protocolVersion: "ECv2SigningOnly", keyExpiration: end),
        ])
    }

    /// A keys document with exactly these entries.
    public func rootKeysDocument(_ entries: [RootKeyEntry]) -> [UInt8] {
        let keys = entries.map { entry -> JSONValue in
            var members: [(String, JSONValue)] = [
                (
                    "keyValue",
                    .string(Base64.encode((entry.stranger ? strangerKey : rootKey).subjectPublicKeyInfoDER() ?? []))
                ),
                ("protocolVersion", .string(entry.protocolVersion)),
            ]
            if let expiration = entry.keyExpiration { members.append(("keyExpiration", .string(String(expiration)))) }
            return .object(members)
        }
        return Array(JSONValue.object([("keys", .array(keys))]).description.utf8)
    }

    /// Everything a test may want to control or break.
    public struct Options: Sendable {
        /// The token's protocolVersion.
        public var protocolVersion: GooglePayToken.ProtocolVersion = .ecV2
        /// The recipient id the message is signed for.
        public var recipientId = "merchant:12345678901234567890"
        /// The sender's clock: expirations are computed from it.
        public var now: Date
        /// Intermediate `keyExpiration` = now + this (ms; negative: already expired).
        public var intermediateLifetime: Int64 = 86_400_000
        /// `messageExpiration` = now + this (ms; negative: already expired).
        public var messageLifetime: Int64 = 3_600_000
        /// The merchant key the message is sealed to.
        public var merchantKeyIndex = 0
        /// Seal to this public key (DER SubjectPublicKeyInfo, P-256) instead: a key the factory does
        /// not hold, e.g. one generated inside a PKCS#11 token.
        public var merchantPublicKey: [UInt8]? = nil
        /// Signatures by a key no root document lists, placed before the good one.
        public var extraIntermediateSignaturesBefore = 0
        /// Sign the intermediate key with a key no root document lists (only).
        public var breakIntermediateSignature = false
        /// Sign the message with a key other than the intermediate (or root, ECv1) key.
        public var breakMessageSignature = false
        /// Flip a bit of the tag before signing: the signatures verify, the tag must not.
        public var corruptTag = false
        /// Retry the ephemeral key until the ECDH shared secret starts with a zero byte.
        public var requireLeadingZeroSharedSecret = false
        /// Sign an ephemeral public key that is not on P-256.
        public var ephemeralPointOffCurve = false
        /// Repeat a member inside `signedMessage` (signed as such).
        public var duplicateMemberInSignedMessage = false
        /// Repeat a member inside `signedKey` (signed as such).
        public var duplicateMemberInSignedKey = false
        /// The payload to seal; nil: ``GooglePayTestFactory/payload(messageId:messageExpiration:pan:authMethod:gatewayMerchantId:)``
        /// with a random messageId and this token's expiration.
        public var payload: [UInt8]? = nil
        /// The messageId of the default payload; random when nil.
        public var messageId: String? = nil

        /// A well-formed ECv2 token sent at `now`.
        public init(now: Date, protocolVersion: GooglePayToken.ProtocolVersion = .ecV2) {
            self.now = now
            self.protocolVersion = protocolVersion
        }
    }

    /// A minted token and facts about how it was made.
    public struct Minted: Sendable {
        /// The token JSON, as a client receives it.
        public let token: [UInt8]
        /// The messageId of the default payload (nil for a caller's payload).
        public let messageId: String?
        /// The plaintext that was sealed.
        public let payload: [UInt8]
        /// True when the ECDH shared secret began with a zero byte.
        public let sharedSecretHasLeadingZero: Bool
    }

    /// A card payment as Google's ECv2 messages carry it.
    public static func payload(
        messageId: String, messageExpiration: Int64, pan: String = "4111111111111111",
        authMethod: String = "CRYPTOGRAM_3DS", gatewayMerchantId: String? = "test-gateway-merchant"
    ) -> [UInt8] {
        var details: [(String, JSONValue)] = [
            ("pan", .string(pan)), ("expirationMonth", .number("12")), ("expirationYear", .number("2030")),
            ("authMethod", .string(authMethod)),
        ]
        if authMethod == "CRYPTOGRAM_3DS" {
            details.append(("cryptogram", .string("AgAAAAAABk4DWZ4C28yUQAAAAAA=")))
            details.append(("eciIndicator", .string("07")))
        }
        var members: [(String, JSONValue)] = []
        if let gatewayMerchantId { members.append(("gatewayMerchantId", .string(gatewayMerchantId))) }
        members += [
            ("messageExpiration", .string(String(messageExpiration))), ("messageId", .string(messageId)),
            ("paymentMethod", .string("CARD")), ("paymentMethodDetails", .object(details)),
        ]
        return Array(JSONValue.object(members).description.utf8)
    }

    /// Seals (ECv1, ECv2) or carries (ECv2SigningOnly) the payload and signs it.
    public func mint(_ options: Options) -> Minted {
        let version = options.protocolVersion
        let now = Self.milliseconds(options.now)
        let messageId = options.payload == nil ? (options.messageId ?? Hex.encode(SecureRandom.bytes(16))) : nil
        let payload =
            options.payload ?? Self.payload(messageId: messageId!, messageExpiration: now + options.messageLifetime)
        var leadingZero = false
        var signedMessage =
            version == .ecV2SigningOnly
            ? String(decoding: payload, as: UTF8.self) : seal(payload, options: options, leadingZero: &leadingZero)
        if options.duplicateMemberInSignedMessage {
            // A member the message already has, repeated at its start.
            let repeated = version == .ecV2SigningOnly ? "\"messageId\":\"x\"," : "\"tag\":\"AAAA\","
            signedMessage = "{" + repeated + signedMessage.dropFirst()
        }
        let versionBytes = Array(version.rawValue.utf8)
        var members: [(String, JSONValue)] = [("protocolVersion", .string(version.rawValue))]
        let messageSigner: EVPKey
        if version == .ecV1 {
            messageSigner = options.breakMessageSignature ? strangerKey : rootKey
        } else {
            messageSigner = options.breakMessageSignature ? strangerKey : intermediateKey
            var signedKey =
                "{\"keyValue\":\"\(Base64.encode(intermediateKey.subjectPublicKeyInfoDER() ?? []))\",\"keyExpiration\":\"\(now + options.intermediateLifetime)\"}"
            if options.duplicateMemberInSignedKey {
                signedKey = "{\"keyExpiration\":\"1\"," + signedKey.dropFirst()
            }
            let keySigned = Self.framed([Array("Google".utf8), versionBytes, Array(signedKey.utf8)])
            var signatures: [JSONValue] = (0..<options.extraIntermediateSignaturesBefore).map { _ in
                .string(Base64.encode(strangerKey.signSHA256(keySigned)))
            }
            signatures.append(
                .string(Base64.encode(intermediateSignature(keySigned, broken: options.breakIntermediateSignature))))
            members.append(
                (
                    "intermediateSigningKey",
                    .object([("signedKey", .string(signedKey)), ("signatures", .array(signatures))])
                ))
        }
        let messageSigned = Self.framed([
            Array("Google".utf8), Array(options.recipientId.utf8), versionBytes, Array(signedMessage.utf8),
        ])
        members.append(("signature", .string(Base64.encode(messageSigner.signSHA256(messageSigned)))))
        members.append(("signedMessage", .string(signedMessage)))
        return Minted(
            token: Array(JSONValue.object(members).description.utf8), messageId: messageId, payload: payload,
            sharedSecretHasLeadingZero: leadingZero)
    }

    /// The signature of a signed intermediate key by the root (`broken`: by the stranger key), the same
    /// for every token that carries that signed key.
    private func intermediateSignature(_ keySigned: [UInt8], broken: Bool) -> [UInt8] {
        let id = keySigned + [broken ? 1 : 0]
        return intermediateSignatures.withLock { known in
            if let signature = known[id] { return signature }
            if known.count >= 64 { known.removeAll() }
            let signature = (broken ? strangerKey : rootKey).signSHA256(keySigned)
            known[id] = signature
            return signature
        }
    }

    /// `{"encryptedMessage", "ephemeralPublicKey", "tag"}` for the merchant key of `options`.
    private func seal(_ payload: [UInt8], options: Options, leadingZero: inout Bool) -> String {
        let keyLength = options.protocolVersion == .ecV1 ? 16 : 32
        let merchant =
            options.merchantPublicKey.flatMap(EVPKey.publicKey(fromDER:)) ?? merchantKeys[options.merchantKeyIndex]
        guard let merchantPoint = merchant.p256PublicPoint() else {
            fatalError("the merchant key has no P-256 point")
        }
        let agreement = P256PointAgreement()
        let shared = SensitiveBytesBox(count: 32)
        var ephemeralPoint: [UInt8]
        repeat {
            let ephemeral = EVPKey.generateEC(curve: "P-256")
            guard let scalar = P256PrivateScalar.of(ephemeral), let point = ephemeral.p256PublicPoint(),
                merchantPoint.withUnsafeBytes({ agreement.setPeer($0) }),
                shared.bytes.withUnsafeMutableBytes({ agreement.sharedSecret(scalar, into: $0) })
            else { fatalError("ECDH failed") }
            ephemeralPoint = point
            leadingZero = shared.bytes[0] == 0
        } while options.requireLeadingZeroSharedSecret && !leadingZero
        var keys = [UInt8](repeating: 0, count: 2 * keyLength)
        defer { SecureMemory.wipe(&keys) }
        let mac = HMACSHA256()
        let salt = [UInt8](repeating: 0, count: 32)
        ephemeralPoint.withUnsafeBytes { point in
            shared.bytes.withUnsafeBytes { z in
                salt.withUnsafeBytes { salt in
                    Array("Google".utf8).withUnsafeBytes { info in
                        keys.withUnsafeMutableBytes { out in
                            mac.hkdf(salt: salt, ikm1: point, ikm2: z, info: info, into: out)
                        }
                    }
                }
            }
        }
        var ciphertext = [UInt8](repeating: 0, count: payload.count)
        let ok = keys.withUnsafeBytes { k in
            payload.withUnsafeBytes { p in
                ciphertext.withUnsafeMutableBufferPointer {
                    CounterModeCipher().apply(
                        key: UnsafeRawBufferPointer(rebasing: k[0..<keyLength]), p, into: $0.baseAddress!)
                }
            }
        }
        precondition(ok || payload.isEmpty, "AES-CTR failed")
        var tag = [UInt8](repeating: 0, count: 32)
        keys.withUnsafeBytes { k in
            mac.start(key: UnsafeRawBufferPointer(rebasing: k[keyLength..<2 * keyLength]))
            ciphertext.withUnsafeBytes { mac.update($0) }
            tag.withUnsafeMutableBufferPointer { mac.finish(into: $0.baseAddress!) }
        }
        if options.corruptTag { tag[0] ^= 0x01 }
        if options.ephemeralPointOffCurve { ephemeralPoint[64] ^= 0x01 }
        return JSONValue.object([
            ("encryptedMessage", .string(Base64.encode(ciphertext))),
            ("ephemeralPublicKey", .string(Base64.encode(ephemeralPoint))),
            ("tag", .string(Base64.encode(tag))),
        ]).description
    }

    /// Each part as a 4-byte little-endian length then its bytes.
    static func framed(_ parts: [[UInt8]]) -> [UInt8] {
        var out: [UInt8] = []
        for part in parts {
            withUnsafeBytes(of: UInt32(part.count).littleEndian) { out += $0 }
            out += part
        }
        return out
    }

    /// Milliseconds since the epoch, rounded to the nearest.
    public static func milliseconds(_ date: Date) -> Int64 { Int64((date.timeIntervalSince1970 * 1000).rounded()) }
}

/// A test's shared secret, wiped when released.
private final class SensitiveBytesBox {
    var bytes: [UInt8]
    init(count: Int) { bytes = [UInt8](repeating: 0, count: count) }
    deinit { SecureMemory.wipe(&bytes) }
}
