// The test-support product itself: what it mints decrypts, its exports load back, its probes run.
import ApplePayDecryption
import ApplePayTestSupport
import Foundation
import Testing

@Suite("Test support")
struct TestSupportTests {
    static let signingTime = Date(timeIntervalSince1970: 1_772_366_400)
    let pki = TestPKI()

    @Test("a minted EC_v1 and RSA_v1 token decrypts under the PKI's own anchor, in every wrapping")
    func mintedTokensDecrypt() throws {
        let merchants = [
            pki.makeMerchant(identifier: "merchant.test.ec"),
            pki.makeMerchant(identifier: "merchant.test.rsa", kind: .rsa),
        ]
        let decryptor = try PaymentTokenDecryptor(
            merchants: merchants.map { $0.identity() }, trustAnchor: pki.trustAnchor)
        let factory = TestTokenFactory(pki: pki)
        for merchant in merchants {
            let minted = factory.mint(
                payload: TestPayload.threeDSecure(), for: merchant, options: .init(signingTime: Self.signingTime))
            for wrapping in TokenWrapping.allCases {
                let payment = try decryptor.decrypt(
                    wrapping.wrap(minted.paymentData, transactionId: minted.transactionId),
                    at: .at(Self.signingTime))
                #expect(payment.applicationPrimaryAccountNumber == "4761120010000492")
            }
        }
    }

    @Test(
        "a test merchant's exports (PKCS#8, SEC1, DER, PKCS#12 modern and legacy) load as the same key", .tags(.pkcs12))
    func exportsLoadBack() throws {
        let merchant = pki.makeMerchant(identifier: "merchant.test.exports")
        let expected = merchant.identity().publicKeyHash
        for key in [Array(merchant.privateKeyPEM.utf8), Array(merchant.sec1PrivateKeyPEM.utf8), merchant.privateKeyDER]
        {
            #expect(
                try MerchantIdentity(certificate: merchant.certificateDER, privateKey: key).publicKeyHash == expected)
        }
        for legacy in [false, true] {
            #expect(
                try MerchantIdentity(pkcs12: merchant.pkcs12(password: "pw", legacy: legacy), password: "pw")
                    .publicKeyHash == expected)
        }
    }

    @Test("the floor probe's primitives and the stage profile run (benchmark probes)")
    func probesRun() throws {
        let probe = FloorProbe()
        #expect(probe.ecTokenNanoseconds() > 0)
        #expect(probe.rsaTokenNanoseconds() > 0)
        let merchant = pki.makeMerchant(identifier: "merchant.test.stages")
        let decryptor = try PaymentTokenDecryptor(merchants: [merchant.identity()], trustAnchor: pki.trustAnchor)
        let minted = TestTokenFactory(pki: pki).mint(
            payload: TestPayload.emv(), for: merchant, options: .init(signingTime: Self.signingTime))
        let stages = try decryptor.stageProfile(minted.bytes, at: .at(Self.signingTime), iterations: 3).map(\.stage)
        #expect(
            stages == ["parse", "chain/CMS", "signature", "key agreement", "  of which point import", "GCM", "payload"])
    }
}
