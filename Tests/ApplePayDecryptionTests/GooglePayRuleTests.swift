// One test per rule of the Google Pay token format, on tokens from GooglePayTestFactory: each
// signature broken alone, expirations to the millisecond, recipient ids, root key selection,
// several intermediate signatures, leading-zero secrets, key rotation, off-curve points, bad tags,
// duplicate members at every level, the typed payment and its masked description.
import ApplePayDecryption
import ApplePayTestSupport
import Foundation
import Testing

/// One factory and its configuration, shared by the rules (key generation is the slow part).
final class GooglePayBench: Sendable {
    static let shared = GooglePayBench()
    let factory = GooglePayTestFactory()
    let now = Date(timeIntervalSince1970: 1_767_225_600.123)
    let recipient = "merchant:12345678901234567890"
    let gateway = "gateway:examplegateway"

    func options(_ version: GooglePayToken.ProtocolVersion = .ecV2) -> GooglePayTestFactory.Options {
        var options = GooglePayTestFactory.Options(now: now, protocolVersion: version)
        options.recipientId = recipient
        return options
    }

    func decryptor(
        merchantKeys: [Int] = [0, 1], recipientIds: [String]? = nil, rootKeys: [UInt8]? = nil
    ) throws -> GooglePayTokenDecryptor {
        try GooglePayTokenDecryptor(
            merchantKeys: merchantKeys.map { try factory.merchantKey($0) },
            recipientIds: recipientIds ?? [recipient, gateway],
            rootKeys: GooglePayRootKeys(json: rootKeys ?? factory.rootKeysDocument(now: now)),
            // Every version: the rules of each are tested here (the default set: GooglePayProtocolVersionTests).
            protocolVersions: Set(GooglePayToken.ProtocolVersion.allCases))
    }

    /// The code a token gives at `at` (nil: it verified and decrypted to a payment).
    func code(
        _ token: [UInt8], decryptor: GooglePayTokenDecryptor? = nil, at: Date? = nil
    ) throws -> ApplePayError? {
        let engine = try decryptor ?? self.decryptor()
        do throws(ApplePayError) {
            _ = try engine.decrypt(token, at: .at(at ?? now))
            return nil
        } catch {
            return error
        }
    }
}

@Suite("Google Pay token rules")
struct GooglePayRuleTests {
    let bench = GooglePayBench.shared

    @Test(
        "a well-formed token of each protocolVersion verifies and decrypts to its payment",
        arguments: GooglePayToken.ProtocolVersion.allCases)
    func decrypts(_ version: GooglePayToken.ProtocolVersion) throws {
        let minted = bench.factory.mint(bench.options(version))
        let payment = try bench.decryptor().decrypt(minted.token, at: .at(bench.now))
        #expect(payment.protocolVersion == version)
        #expect(payment.messageId == minted.messageId)
        #expect(payment.recipientId == bench.recipient)
        #expect(payment.pan == "4111111111111111")
        #expect(payment.expirationMonth == "12")
        #expect(payment.expirationYear == "2030")
        #expect(payment.authMethod == .cryptogram3DS)
        #expect(payment.isNetworkToken)
        #expect(payment.cryptogram == "AgAAAAAABk4DWZ4C28yUQAAAAAA=")
        #expect(payment.eciIndicator == "07")
        #expect(payment.gatewayMerchantId == "test-gateway-merchant")
        #expect(payment.paymentMethod == "CARD")
        let plaintext = payment.message.plaintext.withUnsafeBytes { Array($0) }
        #expect(plaintext == minted.payload)
    }

    @Test("printing a payment masks the PAN and shows no cryptogram")
    func descriptionMasks() throws {
        let payment = try bench.decryptor().decrypt(bench.factory.mint(bench.options()).token, at: .at(bench.now))
        var dumped = ""
        dump(payment, to: &dumped)
        for text in [payment.description, "\(payment)", String(reflecting: payment), dumped] {
            #expect(!text.contains("4111111111111111"))
            #expect(!text.contains("AgAAAAAABk4DWZ4C28yUQAAAAAA="))
            #expect(text.contains("4111********1111"))
        }
    }

    @Test("an intermediate signature by a key no root lists is invalidSignature, naming the signatures")
    func intermediateSignatureBroken() throws {
        var options = bench.options()
        options.breakIntermediateSignature = true
        let error = try bench.code(bench.factory.mint(options).token)
        #expect(error?.code == .invalidSignature)
        #expect(error?.field == "intermediateSigningKey.signatures")
    }

    @Test(
        "a message signature by another key is invalidSignature, naming signature",
        arguments: GooglePayToken.ProtocolVersion.allCases)
    func messageSignatureBroken(_ version: GooglePayToken.ProtocolVersion) throws {
        var options = bench.options(version)
        options.breakMessageSignature = true
        let error = try bench.code(bench.factory.mint(options).token)
        #expect(error?.code == .invalidSignature)
        #expect(error?.field == "signature")
    }

    @Test("several intermediate signatures: the token verifies when one of them does")
    func oneOfSeveralSignatures() throws {
        var options = bench.options()
        options.extraIntermediateSignaturesBefore = 2
        #expect(try bench.code(bench.factory.mint(options).token) == nil)
    }

    @Test("the intermediate key counts until its keyExpiration, to the millisecond")
    func intermediateExpires() throws {
        var options = bench.options()
        options.intermediateLifetime = 5_000
        options.messageLifetime = 60_000
        let token = bench.factory.mint(options).token
        let expiry = bench.now.addingTimeInterval(5)
        #expect(try bench.code(token, at: expiry.addingTimeInterval(-0.001)) == nil)
        let error = try bench.code(token, at: expiry)
        #expect(error?.code == .intermediateKeyExpired)
        #expect(error?.field == "intermediateSigningKey.signedKey.keyExpiration")
    }

    @Test("an expired intermediate key is intermediateKeyExpired even once cached as verified")
    func intermediateExpiresWhenCached() throws {
        let decryptor = try bench.decryptor()
        var options = bench.options()
        options.intermediateLifetime = 5_000
        options.messageLifetime = 60_000
        let token = bench.factory.mint(options).token
        #expect(try bench.code(token, decryptor: decryptor) == nil)
        #expect(
            try bench.code(token, decryptor: decryptor, at: bench.now.addingTimeInterval(5))?.code
                == .intermediateKeyExpired)
    }

    @Test("the message counts until its messageExpiration, to the millisecond")
    func messageExpires() throws {
        var options = bench.options()
        options.messageLifetime = 2_000
        let token = bench.factory.mint(options).token
        let expiry = bench.now.addingTimeInterval(2)
        #expect(try bench.code(token, at: expiry.addingTimeInterval(-0.001)) == nil)
        let error = try bench.code(token, at: expiry)
        #expect(error?.code == .messageExpired)
        #expect(error?.field == "messageExpiration")
    }

    @Test(
        "an already expired message is messageExpired, whatever the protocolVersion",
        arguments: GooglePayToken.ProtocolVersion.allCases)
    func expiredMessage(_ version: GooglePayToken.ProtocolVersion) throws {
        var options = bench.options(version)
        options.messageLifetime = -1
        #expect(try bench.code(bench.factory.mint(options).token)?.code == .messageExpired)
    }

    @Test("the message signature binds the recipient id: another id is invalidSignature")
    func wrongRecipient() throws {
        let token = bench.factory.mint(bench.options()).token
        let error = try bench.code(token, decryptor: bench.decryptor(recipientIds: ["merchant:other"]))
        #expect(error?.code == .invalidSignature)
        #expect(error?.field == "signature")
    }

    @Test("a token verifies for any of the configured recipient ids (gateway:ID here)")
    func secondRecipient() throws {
        var options = bench.options()
        options.recipientId = bench.gateway
        let payment = try bench.decryptor().decrypt(bench.factory.mint(options).token, at: .at(bench.now))
        #expect(payment.recipientId == bench.gateway)
    }

    @Test("only root keys of the token's protocolVersion count")
    func rootOfWrongVersion() throws {
        let document = bench.factory.rootKeysDocument([
            .init(protocolVersion: "ECv1", keyExpiration: nil),
            .init(protocolVersion: "ECv2SigningOnly", keyExpiration: 4_000_000_000_000),
        ])
        let token = bench.factory.mint(bench.options(.ecV2)).token
        #expect(try bench.code(token, decryptor: bench.decryptor(rootKeys: document))?.code == .invalidSignature)
    }

    @Test("an expired root key does not count")
    func expiredRoot() throws {
        let expired = GooglePayTestFactory.milliseconds(bench.now)
        let document = bench.factory.rootKeysDocument([.init(protocolVersion: "ECv2", keyExpiration: expired)])
        let token = bench.factory.mint(bench.options(.ecV2)).token
        #expect(try bench.code(token, decryptor: bench.decryptor(rootKeys: document))?.code == .invalidSignature)
    }

    @Test("a root key that verifies nothing, beside the real one, is harmless")
    func strangerRootBeside() throws {
        let document = bench.factory.rootKeysDocument([
            .init(protocolVersion: "ECv2", keyExpiration: 4_000_000_000_000, stranger: true),
            .init(protocolVersion: "ECv2", keyExpiration: 4_000_000_000_000),
        ])
        #expect(
            try bench.code(bench.factory.mint(bench.options()).token, decryptor: bench.decryptor(rootKeys: document))
                == nil)
    }

    @Test(
        "a shared secret with a leading zero byte is kept whole (32 bytes) in the key derivation",
        arguments: [GooglePayToken.ProtocolVersion.ecV1, .ecV2])
    func leadingZero(_ version: GooglePayToken.ProtocolVersion) throws {
        var options = bench.options(version)
        options.requireLeadingZeroSharedSecret = true
        let minted = bench.factory.mint(options)
        #expect(minted.sharedSecretHasLeadingZero)
        #expect(try bench.code(minted.token) == nil)
    }

    @Test("key rotation: the merchant keys are tried in order; a token for none of them is decryptionFailed")
    func keyRotation() throws {
        var options = bench.options()
        options.merchantKeyIndex = 1
        let token = bench.factory.mint(options).token
        #expect(try bench.code(token, decryptor: bench.decryptor(merchantKeys: [0, 1])) == nil)
        #expect(try bench.code(token, decryptor: bench.decryptor(merchantKeys: [1])) == nil)
        let error = try bench.code(token, decryptor: bench.decryptor(merchantKeys: [0]))
        #expect(error?.code == .decryptionFailed)
        #expect(error?.field == "signedMessage.tag")
    }

    @Test("an ephemeral public key off the curve is decryptionFailed, naming it")
    func offCurve() throws {
        var options = bench.options()
        options.ephemeralPointOffCurve = true
        let error = try bench.code(bench.factory.mint(options).token)
        #expect(error?.code == .decryptionFailed)
        #expect(error?.field == "signedMessage.ephemeralPublicKey")
    }

    @Test("a tag that does not verify is decryptionFailed", arguments: [GooglePayToken.ProtocolVersion.ecV1, .ecV2])
    func badTag(_ version: GooglePayToken.ProtocolVersion) throws {
        var options = bench.options(version)
        options.corruptTag = true
        #expect(try bench.code(bench.factory.mint(options).token)?.code == .decryptionFailed)
    }

    @Test(
        "a duplicate member inside signedMessage is malformedToken, though signed",
        arguments: GooglePayToken.ProtocolVersion.allCases)
    func duplicateInSignedMessage(_ version: GooglePayToken.ProtocolVersion) throws {
        var options = bench.options(version)
        options.duplicateMemberInSignedMessage = true
        let error = try bench.code(bench.factory.mint(options).token)
        #expect(error?.code == .malformedToken)
        #expect(error?.field == "signedMessage")
    }

    @Test("a duplicate member inside signedKey is malformedToken, though signed")
    func duplicateInSignedKey() throws {
        var options = bench.options()
        options.duplicateMemberInSignedKey = true
        let error = try bench.code(bench.factory.mint(options).token)
        #expect(error?.code == .malformedToken)
        #expect(error?.field == "intermediateSigningKey.signedKey")
    }

    @Test("a duplicate member in the token or in intermediateSigningKey is malformedToken")
    func duplicateOutside() throws {
        let token = String(decoding: bench.factory.mint(bench.options()).token, as: UTF8.self)
        let twiceVersion = "{\"protocolVersion\":\"ECv2\"," + token.dropFirst()
        #expect(try bench.code(Array(twiceVersion.utf8))?.code == .malformedToken)
        let twiceSignatures = token.replacingOccurrences(
            of: "\"intermediateSigningKey\":{", with: "\"intermediateSigningKey\":{\"signatures\":[],")
        #expect(try bench.code(Array(twiceSignatures.utf8))?.code == .malformedToken)
    }

    @Test("a protocolVersion other than ECv1, ECv2, ECv2SigningOnly is unsupportedVersion")
    func unsupported() throws {
        let token = String(decoding: bench.factory.mint(bench.options()).token, as: UTF8.self)
            .replacingOccurrences(of: "\"protocolVersion\":\"ECv2\"", with: "\"protocolVersion\":\"ECv3\"")
        #expect(try bench.code(Array(token.utf8))?.code == .unsupportedVersion)
    }

    @Test("an ECv2 message without messageExpiration is not a payment: invalidPayload")
    func payloadWithoutExpiration() throws {
        var options = bench.options()
        options.payload = Array(
            #"{"messageId":"m1","paymentMethod":"CARD","paymentMethodDetails":{"pan":"4111111111111111"}}"#.utf8)
        #expect(try bench.code(bench.factory.mint(options).token)?.code == .invalidPayload)
    }

    @Test(
        "a message that is not a card payment is invalidPayload, naming what is missing",
        arguments: [
            (
                #"{"messageId":"m","messageExpiration":"4000000000000","paymentMethodDetails":{"pan":"4111111111111111"}}"#,
                "paymentMethod"
            ),
            (#"{"messageId":"m","messageExpiration":"4000000000000","paymentMethod":"CARD"}"#, "paymentMethodDetails"),
            (
                #"{"messageId":"m","messageExpiration":"4000000000000","paymentMethod":"CARD","paymentMethodDetails":{"pan":""}}"#,
                "paymentMethodDetails.pan"
            ),
            (
                #"{"messageExpiration":"4000000000000","paymentMethod":"CARD","paymentMethodDetails":{"pan":"4111"}}"#,
                "messageId"
            ),
            (#"{"messageId":"m","messageId":"n","messageExpiration":"4000000000000"}"#, "messageId"),
        ])
    func notAPayment(_ payload: String, field: String) throws {
        var options = bench.options(.ecV2)
        options.payload = Array(payload.utf8)
        let error = try bench.code(bench.factory.mint(options).token)
        #expect(error?.code == .invalidPayload)
        #expect(error?.field == field)
    }

    @Test("each distinct intermediate key is verified once and then cached")
    func intermediateCached() throws {
        let decryptor = try bench.decryptor()
        for _ in 0..<3 { _ = try decryptor.decrypt(bench.factory.mint(bench.options()).token, at: .at(bench.now)) }
        #expect(decryptor.verifiedIntermediateKeyCount == 1)
    }

    @Test("a token claims its messageId and the signed message's digest; the same token claims the same")
    func replayIdentity() throws {
        let decryptor = try bench.decryptor()
        let minted = bench.factory.mint(bench.options())
        let first = try decryptor.decrypt(minted.token, at: .at(bench.now)).replayIdentity
        let again = try decryptor.decrypt(minted.token, at: .at(bench.now)).replayIdentity
        let other = try decryptor.decrypt(bench.factory.mint(bench.options()).token, at: .at(bench.now)).replayIdentity
        #expect(first == again)
        #expect(first.transactionKey != other.transactionKey)
        #expect(first.contentKey != other.contentKey)
    }

    @Test("a factory under a saved root: its tokens verify with the root keys document written before")
    func ownRoot() throws {
        let first = bench.factory
        let again = try GooglePayTestFactory(
            rootPrivateKey: Array(first.rootPrivateKeyPEM.utf8),
            merchantPrivateKeys: [Array(first.merchantKeyPEM(0).utf8)])
        // The decryptor holds the first factory's document and merchant keys.
        #expect(try bench.code(again.mint(bench.options()).token) == nil)
        #expect {
            try GooglePayTestFactory(rootPrivateKey: Array("no key".utf8))
        } throws: { ($0 as? ConfigurationError)?.code == .unreadableKey }
    }

    @Test("a PKCS#8 PEM Google Pay merchant key loads; bytes that are no key are unreadableKey")
    func keyForms() throws {
        let pem = bench.factory.merchantKeyPEM(0)
        #expect(throws: Never.self) { try GooglePayMerchantKey(privateKey: Array(pem.utf8)) }
        #expect {
            try GooglePayMerchantKey(privateKey: Array("not a key".utf8))
        } throws: { ($0 as? ConfigurationError)?.code == .unreadableKey }
    }

    // MARK: review of issue 36

    @Test(
        "a cached intermediate key counts only with a signature that verified: junk signatures are invalidSignature, warm or cold"
    )
    func cachedIntermediateNeedsItsSignature() throws {
        // Same options: the same signedKey, once with the root's signature, once with a stranger's only.
        let genuine = bench.factory.mint(bench.options()).token
        var junk = bench.options()
        junk.breakIntermediateSignature = true
        let tampered = bench.factory.mint(junk).token
        let cold = try bench.code(tampered)
        let warm = try bench.decryptor()
        #expect(try bench.code(genuine, decryptor: warm) == nil)
        let after = try bench.code(tampered, decryptor: warm)
        #expect(cold?.code == .invalidSignature)
        #expect(after?.code == .invalidSignature)
        #expect(after?.field == "intermediateSigningKey.signatures")
        // The genuine token still uses the cached entry.
        #expect(try bench.code(genuine, decryptor: warm) == nil)
        #expect(warm.verifiedIntermediateKeyCount == 1)
    }

    @Test(
        "intermediateSigningKey.signatures holds at most 8 signatures: more is malformedToken, naming it"
    )
    func intermediateSignaturesBounded() throws {
        var eight = bench.options()
        eight.extraIntermediateSignaturesBefore = GooglePayToken.maximumIntermediateSignatures - 1
        #expect(try bench.code(bench.factory.mint(eight).token) == nil)
        var nine = bench.options()
        nine.extraIntermediateSignaturesBefore = GooglePayToken.maximumIntermediateSignatures
        let error = try bench.code(bench.factory.mint(nine).token)
        #expect(error?.code == .malformedToken)
        #expect(error?.field == "intermediateSigningKey.signatures")
    }

    @Test(
        "pan and dpan must be strings: a number is invalidPayload, naming it",
        arguments: [
            (#"{"pan":4111111111111111,"dpan":"5555555555554444"}"#, "pan"),
            (#"{"pan":"4111111111111111","dpan":5555555555554444}"#, "dpan"),
        ])
    func panIsString(_ details: String, _ name: String) throws {
        var options = bench.options()
        options.payload = Array(
            (#"{"messageId":"m","messageExpiration":"4000000000000","paymentMethod":"CARD","paymentMethodDetails":"#
                + details + "}").utf8)
        let error = try bench.code(bench.factory.mint(options).token)
        #expect(error?.code == .invalidPayload)
        #expect(error?.field == "paymentMethodDetails.\(name)")
    }

    @Test("masked JSON masks every pan and dpan of paymentMethodDetails")
    func maskedJSONMasksEveryPAN() throws {
        var options = bench.options()
        options.payload = Array(
            #"{"messageId":"m","messageExpiration":"4000000000000","paymentMethod":"CARD","paymentMethodDetails":{"pan":"4111111111111111","dpan":"5555555555554444","authMethod":"PAN_ONLY"}}"#
                .utf8)
        let payment = try bench.decryptor().decrypt(bench.factory.mint(options).token, at: .at(bench.now))
        #expect(payment.pan == "4111111111111111")
        let out = SensitiveBuffer()
        payment.writeJSON(into: out, maskingPAN: true)
        let json = out.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
        #expect(!json.contains("4111111111111111"))
        #expect(!json.contains("5555555555554444"))
        #expect(json.contains("4111********1111"))
        #expect(json.contains("5555********4444"))
    }

    @Test(
        "a decrypted message that is not JSON, or not an object, is invalidPayload naming where in the message",
        arguments: [(#"{"messageId":"m","#, "$"), ("[1]", "$"), (#"{"messageId":"m","x":{"y":}}"#, "x.y")])
    func invalidPayloadNamesField(_ payload: String, _ field: String) throws {
        var options = bench.options(.ecV2)
        options.payload = Array(payload.utf8)
        let error = try bench.code(bench.factory.mint(options).token)
        #expect(error?.code == .invalidPayload)
        #expect(error?.field == field)
    }

    @Test("a root keys document holds at most 64 keys")
    func rootKeysBounded() throws {
        let many = bench.factory.rootKeysDocument(
            (0...GooglePayRootKeys.maximumKeyCount).map {
                .init(protocolVersion: "ECv2", keyExpiration: 4_000_000_000_000 + Int64($0))
            })
        #expect {
            try GooglePayRootKeys(json: many)
        } throws: { ($0 as? ConfigurationError)?.code == .invalidOption }
    }

    @Test("a root keys document with the same protocolVersion and keyValue twice is refused")
    func rootKeysDuplicate() throws {
        let twice = bench.factory.rootKeysDocument([
            .init(protocolVersion: "ECv2", keyExpiration: 4_000_000_000_000),
            .init(protocolVersion: "ECv2", keyExpiration: 4_000_000_000_001),
        ])
        #expect {
            try GooglePayRootKeys(json: twice)
        } throws: { ($0 as? ConfigurationError)?.message.contains("Google root key 1") ?? false }
        // The same key for two versions is two keys.
        let twoVersions = bench.factory.rootKeysDocument([
            .init(protocolVersion: "ECv2", keyExpiration: 4_000_000_000_000),
            .init(protocolVersion: "ECv2SigningOnly", keyExpiration: 4_000_000_000_000),
        ])
        #expect(throws: Never.self) { try GooglePayRootKeys(json: twoVersions) }
    }

    @Test(
        "a root keys document with no usable key is a configuration error naming the file",
        arguments: [#"{"keys":[]}"#, "ECv2 without keyExpiration", "ECv3"])
    func rootKeysUnusable(_ document: String) throws {
        let bytes: [UInt8]
        switch document {
        case "ECv2 without keyExpiration":
            bytes = bench.factory.rootKeysDocument([.init(protocolVersion: "ECv2", keyExpiration: nil)])
        case "ECv3":
            bytes = bench.factory.rootKeysDocument([.init(protocolVersion: "ECv3", keyExpiration: 4_000_000_000_000)])
        default:
            bytes = Array(document.utf8)
        }
        let dir = ScratchDirectory()
        let path = dir.write("roots.json", bytes)
        #expect {
            try GooglePayRootKeys(contentsOfFile: path)
        } throws: { error in
            guard let error = error as? ConfigurationError else { return false }
            return error.code == .invalidOption && error.message.contains(path)
                && error.message.contains("no usable key")
        }
    }
}
