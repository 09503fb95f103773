// A Samsung Pay merchant key in a PKCS#11 token (SoftHSM2): the token does the raw RSA operation
// (CKM_RSA_X_509), the engine the PKCS#1 v1.5 check with implicit rejection and the rest. In the PKCS#11
// suite, which is serialized (one of its tests closes every session of the process).
import ApplePayDecryption
import ApplePayTestSupport
import Foundation
import Testing

extension PKCS11KeyTests {
    @Test("a Samsung Pay token decrypts with the merchant key in the token; its padding and tag failures stay alike")
    func samsungPayKeyInToken() throws {
        let hsm = try SoftHSMToken.require()
        let publicKey = try SoftHSMToken.publicKey(id: "02")
        let key = try SamsungPayMerchantKey(publicKey: publicKey, pkcs11: hsm.reference(object: "rsa-key"))
        #expect(key.keyIsInToken)
        #expect(key.kid == SamsungPayMerchantKey.kid(ofSubjectPublicKeyInfo: publicKey))
        let bench = SamsungPayBench.shared
        let decryptor = try SamsungPayTokenDecryptor(merchantKeys: [bench.factory.merchantKey(0), key])
        var options = bench.options()
        options.merchantPublicKey = publicKey
        let minted = bench.factory.mint(options)
        let payment = try decryptor.decrypt(minted.token, at: .at(bench.now))
        #expect(payment.plaintext.withUnsafeBytes { Array($0) } == minted.payload)
        #expect(payment.kid == key.kid)
        func failure(_ change: (inout SamsungPayTestFactory.Options) -> Void) -> ApplePayError? {
            var broken = options
            change(&broken)
            do throws(ApplePayError) {
                _ = try decryptor.decrypt(bench.factory.mint(broken).token, at: .at(bench.now))
                return nil
            } catch { return error }
        }
        let tag = try #require(failure { $0.corruptTag = true })
        for kind in SamsungPayTestFactory.PaddingBreak.allCases {
            let padding = try #require(failure { $0.breakPadding = kind })
            #expect(padding.code == .decryptionFailed)
            #expect(padding.field == tag.field && padding.message == tag.message && padding.reason == tag.reason)
        }
    }

    @Test("a PKCS#11 Samsung Pay key whose public key is another key's is refused at load")
    func samsungPayTokenKeyMismatch() throws {
        let hsm = try SoftHSMToken.require()
        #expect(throws: ConfigurationError.self) {
            try SamsungPayMerchantKey(
                publicKey: SamsungPayBench.shared.factory.merchantPublicKeyDER(0),
                pkcs11: hsm.reference(object: "rsa-key"))
        }
    }
}
