// A Google Pay merchant key in a PKCS#11 token (SoftHSM2): the token does the ECDH, the engine the
// rest, through the same key abstraction as Apple Pay's EC keys. In the PKCS#11 suite, which is
// serialized (one of its tests closes every session of the process).
import ApplePayDecryption
import ApplePayTestSupport
import Foundation
import Testing

extension PKCS11KeyTests {
    @Test("a Google Pay ECv2 token decrypts with the merchant key in the token, as with the software key")
    func googlePayKeyInToken() throws {
        let hsm = try SoftHSMToken.require()
        let publicKey = try SoftHSMToken.publicKey(id: "01")
        let key = try GooglePayMerchantKey(publicKey: publicKey, pkcs11: hsm.reference(object: "ec-key"))
        #expect(key.keyIsInToken)
        let factory = GooglePayBench.shared.factory
        let now = GooglePayBench.shared.now
        var options = GooglePayTestFactory.Options(now: now)
        options.merchantPublicKey = publicKey
        let minted = factory.mint(options)
        let decryptor = try GooglePayTokenDecryptor(
            merchantKeys: [try factory.merchantKey(0), key], recipientIds: [options.recipientId],
            rootKeys: GooglePayRootKeys(json: factory.rootKeysDocument(now: now)))
        let payment = try decryptor.decrypt(minted.token, at: .at(now))
        #expect(payment.message.plaintext.withUnsafeBytes { Array($0) } == minted.payload)
        // Sealed to the software key, a token goes past the token's key (its tag fails) to it.
        let software = try decryptor.decrypt(factory.mint(GooglePayTestFactory.Options(now: now)).token, at: .at(now))
        #expect(software.pan == "4111111111111111")
    }

    @Test(
        "in a batch, a PKCS#11 Google Pay key keeps the engine's path: the same results with the multi-buffer backend on and off (auto where crypto_mb cannot run)"
    )
    func googlePayKeyInTokenInBatch() throws {
        let hsm = try SoftHSMToken.require()
        let publicKey = try SoftHSMToken.publicKey(id: "01")
        let key = try GooglePayMerchantKey(publicKey: publicKey, pkcs11: hsm.reference(object: "ec-key"))
        let factory = GooglePayBench.shared.factory
        let now = GooglePayBench.shared.now
        var inToken = GooglePayTestFactory.Options(now: now)
        inToken.merchantPublicKey = publicKey
        var badTag = inToken
        badTag.corruptTag = true
        let tokens = (0..<10).map { i in
            factory.mint(i % 3 == 0 ? GooglePayTestFactory.Options(now: now) : i == 5 ? badTag : inToken).token
        }
        // The key in the token first: the group's agreement has no scalar for it.
        let decryptor = try GooglePayTokenDecryptor(
            merchantKeys: [key, try factory.merchantKey(0)], recipientIds: [inToken.recipientId],
            rootKeys: GooglePayRootKeys(json: factory.rootKeysDocument(now: now)))
        func run(_ mode: MultiBufferMode) throws -> [String] {
            var source = ArrayTokenSource(tokens)
            var codes: [String] = []
            try BatchDecryptor(
                decryptor: Fixtures.shared.decryptor(), lanes: 1, reference: .at(now), windowSize: 512,
                backend: try .resolve(mode), googlePay: decryptor
            ).run(
                &source,
                deliver: { result in
                    switch result.googlePay {
                    case .success(let payment)?: codes.append("ok \(payment.messageId)")
                    case .failure(let error)?: codes.append("\(error.code.rawValue) \(error.message)")
                    case nil: codes.append("Apple Pay path")
                    }
                })
            return codes
        }
        let off = try run(.off)
        #expect(try run(.auto) == off)
        #expect(off.filter { $0.hasPrefix("ok ") }.count == 9)
        #expect(off[5].hasPrefix("decryptionFailed"))
    }
}
