// Mints Samsung Pay tokens (JWE, RSA1_5 + A128GCM, empty AAD) under RSA merchant keys of its own or the
// caller's, in each envelope, with a knob to break or vary each rule the decryptor checks.
import ApplePayCrypto
import ApplePayDecryption
import Foundation

/// TESTING ONLY. A Samsung Pay sender: seals payments to RSA merchant keys as Samsung's wallet does.
///
/// Nothing in a Samsung Pay token is signed, so this factory makes tokens exactly as real as the
/// wallet's: that is the point of the engine's freshness, replay and binding checks.
public final class SamsungPayTestFactory: @unchecked Sendable {
    // Sendable: the keys are immutable after creation (OpenSSL keys are read-only here).
    let merchantKeys: [EVPKey]

    /// A factory with `merchantKeyCount` fresh RSA merchant keys of `bits` bits (key rotation: the
    /// decryptor selects by kid).
    public init(merchantKeyCount: Int = 2, bits: Int = 2048) {
        merchantKeys = (0..<max(merchantKeyCount, 1)).map { _ in EVPKey.generateRSA(bits: bits) }
    }

    /// A factory sealing to your own RSA merchant keys (PEM or DER private keys).
    /// - Throws: `ConfigurationError` (`unreadableKey`, `unsupportedKeyType`).
    public init(merchantPrivateKeys: [[UInt8]]) throws(ConfigurationError) {
        var keys: [EVPKey] = []
        for (index, bytes) in merchantPrivateKeys.enumerated() {
            let key: EVPKey
            do throws(OpenSSLFailure) {
                key = try EVPKey.privateKey(from: bytes, password: nil)
            } catch {
                throw ConfigurationError(.unreadableKey, "merchant key \(index): \(error.reason)")
            }
            guard key.kind == .rsa else {
                throw ConfigurationError(.unsupportedKeyType, "merchant key \(index) is not an RSA key")
            }
            keys.append(key)
        }
        merchantKeys = keys.isEmpty ? [EVPKey.generateRSA(bits: 2048)] : keys
    }

    /// Merchant private key `index` as PKCS#8 PEM.
    public func merchantKeyPEM(_ index: Int = 0) -> String { merchantKeys[index].privateKeyPEM() ?? "" }

    /// Merchant public key `index`, DER SubjectPublicKeyInfo.
    public func merchantPublicKeyDER(_ index: Int = 0) -> [UInt8] {
        merchantKeys[index].subjectPublicKeyInfoDER() ?? []
    }

    /// The `kid` of merchant key `index`.
    public func kid(_ index: Int = 0) -> String {
        SamsungPayMerchantKey.kid(ofSubjectPublicKeyInfo: merchantPublicKeyDER(index))
    }

    /// Merchant key `index` loaded as the decryptor takes it.
    public func merchantKey(_ index: Int = 0) throws(ConfigurationError) -> SamsungPayMerchantKey {
        try SamsungPayMerchantKey(privateKey: Array(merchantKeyPEM(index).utf8), label: "test Samsung Pay key \(index)")
    }

    /// How the JWE is delivered.
    public enum Wrapper: String, Sendable, CaseIterable {
        /// `{"3DS": {"type", "version", "data"}, "card_brand", …}` (the app's paymentCredential).
        case paymentCredential
        /// `{"paymentCredential": {…}}` (web checkout's credential as a front end posts it).
        case webCheckout
        /// The compact JWE as text.
        case compactJWE
        /// The compact JWE as a JSON string.
        case jsonString
    }

    /// The JWE's five parts, to break one.
    public enum Part: Int, Sendable, CaseIterable {
        case protectedHeader = 0, encryptedKey, iv, ciphertext, tag
    }

    /// Ways to make the RSA block not a PKCS#1 v1.5 encoding of a 16-byte key (all must fail alike).
    public enum PaddingBreak: Sendable, CaseIterable {
        /// Block type 01 instead of 02.
        case blockType
        /// A zero byte inside the padding string (the message would be longer than 16 bytes).
        case zeroInPadding
        /// A valid encoding of a 17-byte message.
        case seventeenByteKey
        /// A valid encoding of a 15-byte message.
        case fifteenByteKey
    }

    /// Everything a test may want to control or break.
    public struct Options: Sendable {
        /// The wallet's clock: `utc` is now + ``utcOffset``.
        public var now: Date
        /// Milliseconds added to `now` for `utc` (negative: an older payment).
        public var utcOffset: Int64 = 0
        /// The merchant key the token is sealed to.
        public var merchantKeyIndex = 0
        /// Seal to this public key (DER SubjectPublicKeyInfo, RSA) instead: one the factory does not
        /// hold, e.g. one generated inside a PKCS#11 token.
        public var merchantPublicKey: [UInt8]? = nil
        /// The envelope.
        public var wrapper = Wrapper.paymentCredential
        /// The plaintext to seal; nil: ``SamsungPayTestFactory/payload(amount:currency:utc:tokenPAN:cryptogram:eci:expiration:cardholderName:)``
        /// with the fields below.
        public var payload: [UInt8]? = nil
        /// The default payload's fields.
        public var amount = "1000"
        public var currency = "USD"
        public var tokenPAN = "4111111111111111"
        /// The cryptogram; random when nil.
        public var cryptogram: String? = nil
        public var eci = "05"
        public var expiration = "1230"
        public var cardholderName: String? = nil
        /// The protected header's members, in order (edit to break one); `kid` nil: the key's.
        public var alg = "RSA1_5"
        public var enc = "A128GCM"
        public var typ: String? = "JOSE"
        public var channelSecurityContext: String? = "RSA_PKI"
        public var kid: String? = nil
        /// Members added to the protected header (`crit`, `zip`, …), as JSON text of their values.
        public var extraHeaderMembers: [(String, String)] = []
        /// `3DS.type` and `3DS.version` of the envelopes.
        public var threeDSType = "S"
        public var threeDSVersion = "100"
        /// Repeat a member: in the protected header, the envelope's top level, `3DS`, the web wrapper,
        /// or the payload.
        public var duplicateHeaderMember = false
        public var duplicateEnvelopeMember = false
        public var duplicateThreeDSMember = false
        public var duplicateWebMember = false
        public var duplicatePayloadMember = false
        /// Break the RSA block's padding (the decryptor continues with a random key: a tag failure).
        public var breakPadding: PaddingBreak? = nil
        /// Flip a bit of the tag.
        public var corruptTag = false
        /// Seal with RFC 7516's AAD (ASCII of the protected header), which real tokens do not use.
        public var rfcAAD = false
        /// Write the JWE with this many parts (five is right).
        public var partCount = 5
        /// Put a character outside base64url (`+`) into this part.
        public var nonBase64URLPart: Part? = nil
        /// Add `=` padding to this part.
        public var paddedPart: Part? = nil
        /// The IV's and tag's lengths (12 and 16 are right).
        public var ivLength = 12
        public var tagLength = 16
        /// Drop the encrypted key's last byte.
        public var truncateEncryptedKey = false

        /// A well-formed token in the app's envelope, made at `now`.
        public init(now: Date, wrapper: Wrapper = .paymentCredential) {
            self.now = now
            self.wrapper = wrapper
        }
    }

    /// A minted token and facts about it.
    public struct Minted: Sendable {
        /// The token, as a processor receives it.
        public let token: [UInt8]
        /// The compact JWE inside it.
        public let jwe: String
        /// The plaintext that was sealed.
        public let payload: [UInt8]
        /// `utc`, milliseconds.
        public let utc: Int64
    }

    /// A payment as Samsung's wallet seals it (Visa's member order).
    public static func payload(
        amount: String = "1000", currency: String = "USD", utc: Int64, tokenPAN: String = "4111111111111111",
        cryptogram: String, eci: String = "05", expiration: String = "1230", cardholderName: String? = nil
    ) -> [UInt8] {
        var members: [(String, JSONValue)] = [
            ("amount", .string(amount)), ("currency_code", .string(currency)), ("utc", .string(String(utc))),
            ("eci_indicator", .string(eci)), ("tokenPAN", .string(tokenPAN)),
            ("tokenPanExpiration", .string(expiration)), ("cryptogram", .string(cryptogram)),
        ]
        if let cardholderName { members.append(("cardholder_name", .string(cardholderName))) }
        return Array(JSONValue.object(members).description.utf8)
    }

    /// Seals the payload of `options` to its merchant key and wraps it.
    public func mint(_ options: Options) -> Minted {
        let utc = Self.milliseconds(options.now) + options.utcOffset
        var payload =
            options.payload
            ?? Self.payload(
                amount: options.amount, currency: options.currency, utc: utc, tokenPAN: options.tokenPAN,
                cryptogram: options.cryptogram ?? Base64.encode(SecureRandom.bytes(20)), eci: options.eci,
                expiration: options.expiration, cardholderName: options.cardholderName)
        if options.duplicatePayloadMember { payload = Self.repeatFirstMember(payload) }
        let key =
            options.merchantPublicKey.flatMap(EVPKey.publicKey(fromDER:)) ?? merchantKeys[options.merchantKeyIndex]
        let kid =
            options.kid ?? SamsungPayMerchantKey.kid(ofSubjectPublicKeyInfo: key.subjectPublicKeyInfoDER() ?? [])
        var header = "{\"alg\":\(Self.quoted(options.alg)),\"kid\":\(Self.quoted(kid))"
        if let typ = options.typ { header += ",\"typ\":\(Self.quoted(typ))" }
        if let context = options.channelSecurityContext {
            header += ",\"channelSecurityContext\":\(Self.quoted(context))"
        }
        header += ",\"enc\":\(Self.quoted(options.enc))"
        for (name, value) in options.extraHeaderMembers { header += ",\(Self.quoted(name)):\(value)" }
        if options.duplicateHeaderMember { header += ",\"alg\":\"RSA1_5\"" }
        header += "}"
        let encodedHeader = Base64URL.encode(Array(header.utf8))
        var contentKey = SecureRandom.bytes(16)
        defer { SecureMemory.wipe(&contentKey) }
        var encryptedKey = wrap(contentKey, to: key, breaking: options.breakPadding)
        if options.truncateEncryptedKey { encryptedKey.removeLast() }
        var iv = SecureRandom.bytes(12)
        let sealed = NonceCipherContext.seal(
            key: contentKey, iv: iv, plaintext: payload, aad: options.rfcAAD ? Array(encodedHeader.utf8) : [])
        var tag = sealed.tag
        if options.corruptTag { tag[0] ^= 0x01 }
        if options.ivLength != 12 { iv = Array((iv + SecureRandom.bytes(32)).prefix(options.ivLength)) }
        if options.tagLength != 16 { tag = Array((tag + SecureRandom.bytes(32)).prefix(options.tagLength)) }
        var parts = [
            encodedHeader, Base64URL.encode(encryptedKey), Base64URL.encode(iv), Base64URL.encode(sealed.ciphertext),
            Base64URL.encode(tag),
        ]
        if let part = options.nonBase64URLPart { parts[part.rawValue] = "+" + parts[part.rawValue].dropFirst() }
        if let part = options.paddedPart { parts[part.rawValue] += "=" }
        if options.partCount < 5 {
            parts = Array(parts.prefix(options.partCount))
        } else if options.partCount > 5 {
            parts += Array(repeating: parts[4], count: options.partCount - 5)
        }
        let jwe = parts.joined(separator: ".")
        return Minted(token: wrapped(jwe, options), jwe: jwe, payload: payload, utc: utc)
    }

    /// The same payment sealed again (a new content key and IV) in `wrapper`: what a replay of it
    /// through another front door looks like.
    public func rewrap(_ minted: Minted, options: Options, wrapper: Wrapper) -> Minted {
        var again = options
        again.payload = minted.payload
        again.wrapper = wrapper
        return mint(again)
    }

    /// RSAES-PKCS1-v1_5 of the content key, or a block broken as asked, through the raw operation.
    private func wrap(_ contentKey: [UInt8], to key: EVPKey, breaking: PaddingBreak?) -> [UInt8] {
        guard let breaking else {
            guard let wrapped = contentKey.withUnsafeBytes({ PKeyContext.pkcs1Encrypter(key)?.encrypt($0) }) else {
                fatalError("RSA encryption failed: \(OpenSSLErrors.drain() ?? "")")
            }
            return wrapped
        }
        let k = key.size
        var message = contentKey
        switch breaking {
        case .seventeenByteKey: message.append(0x42)
        case .fifteenByteKey: message.removeLast()
        default: break
        }
        var block = [UInt8](repeating: 0, count: k)
        block[1] = breaking == .blockType ? 1 : 2
        let separator = k - message.count - 1
        for i in 2..<separator {
            var b: UInt8 = 0
            while b == 0 { b = SecureRandom.bytes(1)[0] }
            block[i] = b
        }
        if breaking == .zeroInPadding { block[5] = 0 }
        block[separator] = 0
        block.replaceSubrange(separator + 1..<k, with: message)
        defer { SecureMemory.wipe(&block) }
        guard let wrapped = block.withUnsafeBytes({ PKeyContext.rawRSAEncrypter(key)?.encrypt($0) }) else {
            fatalError("raw RSA encryption failed: \(OpenSSLErrors.drain() ?? "")")
        }
        return wrapped
    }

    /// The JWE in the envelope of `options`.
    private func wrapped(_ jwe: String, _ options: Options) -> [UInt8] {
        var threeDS =
            "{\"type\":\(Self.quoted(options.threeDSType)),\"version\":\(Self.quoted(options.threeDSVersion)),\"data\":\(Self.quoted(jwe))"
        if options.duplicateThreeDSMember { threeDS += ",\"type\":\"S\"" }
        threeDS += "}"
        var credential =
            "{\"3DS\":\(threeDS),\"card_brand\":\"VI\",\"card_last4digits\":\"\(options.tokenPAN.suffix(4))\",\"method\":\"3DS\",\"recurring_payment\":false,\"merchant_ref\":\"test-merchant\""
        if options.duplicateEnvelopeMember { credential += ",\"method\":\"3DS\"" }
        credential += "}"
        switch options.wrapper {
        case .paymentCredential:
            return Array(credential.utf8)
        case .webCheckout:
            var web = "{\"paymentCredential\":\(credential),\"paymentMethod\":\"samsungPay\""
            if options.duplicateWebMember { web += ",\"paymentMethod\":\"samsungPay\"" }
            return Array((web + "}").utf8)
        case .compactJWE:
            return Array(jwe.utf8)
        case .jsonString:
            return Array(Self.quoted(jwe).utf8)
        }
    }

    /// `{"a":…,` becomes `{"a":…,"a":…,`: the first member, repeated.
    private static func repeatFirstMember(_ payload: [UInt8]) -> [UInt8] {
        let text = String(decoding: payload, as: UTF8.self)
        guard let comma = text.firstIndex(of: ",") else { return payload }
        let first = text[text.index(after: text.startIndex)..<comma]
        return Array(("{" + first + "," + text.dropFirst()).utf8)
    }

    private static func quoted(_ text: String) -> String { JSONValue.string(text).description }

    /// Milliseconds since the epoch, rounded to the nearest.
    public static func milliseconds(_ date: Date) -> Int64 { Int64((date.timeIntervalSince1970 * 1000).rounded()) }
}
