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
}
