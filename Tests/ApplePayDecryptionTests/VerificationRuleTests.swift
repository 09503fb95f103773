// Apple's verification procedure, one rule per test, on tokens from the test PKI.
import ApplePayDecryption
import ApplePayTestSupport
import Foundation
import Testing

@Suite("Verification rules")
struct VerificationRuleTests {
    let f = Fixtures.shared

    @Test("a well-formed EC_v1 token decrypts to its payload")
    func ecTokenDecrypts() throws {
        let minted = f.mint()
        let payment = try f.decryptor().decrypt(minted.bytes, at: .at(signingInstant))
        #expect(payment.json == (try JSONValue.parse(TestPayload.threeDSecure())))
        #expect(payment.version == .ecV1)
        #expect(payment.transactionId == minted.transactionId)
        #expect(
            payment.credential
                == .threeDSecure(onlinePaymentCryptogram: "AgAAAAAABk4DWZ4C28yUQAAAAAA=", eciIndicator: "7"))
        #expect(payment.transactionAmount == "1000")
    }

    @Test("a well-formed RSA_v1 token decrypts (RSA-OAEP SHA-256/MGF1-SHA-256, AES-128-GCM)")
    func rsaTokenDecrypts() throws {
        let minted = f.mint(for: f.rsaMerchant)
        let payment = try f.decryptor().decrypt(minted.bytes, at: .at(signingInstant))
        #expect(payment.version == .rsaV1)
        #expect(payment.applicationPrimaryAccountNumber == "4761120010000492")
    }

    @Test("the message digest covers applicationData when it is present")
    func applicationDataIsCovered() throws {
        let appData = String(repeating: "ab", count: 32)
        let minted = f.mint { $0.applicationData = appData }
        #expect(
            try f.decryptor().decrypt(minted.bytes, at: .at(signingInstant)).applicationPrimaryAccountNumber
                == "4761120010000492")
        let altered = rewrite(minted.paymentData, path: ["header", "applicationData"]) { _ in
            .string(String(repeating: "cd", count: 32))
        }
        #expect(rejection { try f.decryptor().decrypt(bytes(altered), at: .at(signingInstant)) } == .invalidSignature)
        let dropped = removing(minted.paymentData, path: ["header", "applicationData"])
        #expect(rejection { try f.decryptor().decrypt(bytes(dropped), at: .at(signingInstant)) } == .invalidSignature)
    }

    @Test("tampered data fails the signature check")
    func tamperedData() {
        let altered = tamperBase64(f.mint().paymentData, path: ["data"]) { $0[3] ^= 0x40 }
        #expect(rejection { try f.decryptor().decrypt(bytes(altered), at: .at(signingInstant)) } == .invalidSignature)
    }

    @Test("a tampered signature value fails the signature check")
    func tamperedSignature() {
        // The ECDSA signature is the last element of the CMS, before five pairs of end-of-contents octets.
        let altered = tamperBase64(f.mint().paymentData, path: ["signature"]) { $0[$0.count - 15] ^= 0x01 }
        #expect(rejection { try f.decryptor().decrypt(bytes(altered), at: .at(signingInstant)) } == .invalidSignature)
    }

    @Test("a tampered transactionId fails the signature check")
    func tamperedTransactionId() {
        let altered = rewrite(f.mint().paymentData, path: ["header", "transactionId"]) { _ in
            .string(String(repeating: "0f", count: 32))
        }
        #expect(rejection { try f.decryptor().decrypt(bytes(altered), at: .at(signingInstant)) } == .invalidSignature)
    }

    @Test("a tampered ephemeral public key fails the signature check")
    func tamperedEphemeralKey() {
        let other = f.mint()
        let altered = rewrite(f.mint().paymentData, path: ["header", "ephemeralPublicKey"]) { _ in
            other.paymentData["header"]!["ephemeralPublicKey"]!
        }
        #expect(rejection { try f.decryptor().decrypt(bytes(altered), at: .at(signingInstant)) } == .invalidSignature)
    }

    @Test("a broken GCM tag that was then signed fails decryption, not verification")
    func brokenTagThenSigned() {
        let minted = f.mint { $0.corruptTagBeforeSigning = true }
        #expect(rejection { try f.decryptor().decrypt(minted.bytes, at: .at(signingInstant)) } == .decryptionFailed)
        let rsa = f.mint(for: f.rsaMerchant) { $0.corruptTagBeforeSigning = true }
        #expect(rejection { try f.decryptor().decrypt(rsa.bytes, at: .at(signingInstant)) } == .decryptionFailed)
    }

    @Test("a signature without signingTime is invalid")
    func missingSigningTime() {
        let minted = f.mint { $0.includeSigningTime = false }
        #expect(rejection { try f.decryptor().decrypt(minted.bytes, at: .at(signingInstant)) } == .invalidSignature)
    }

    @Test("SHA-256 AlgorithmIdentifier with or without NULL parameters is accepted")
    func digestAlgorithmEncodings() throws {
        let minted = f.mint { $0.digestAlgorithmWithNullParameters = true }
        #expect(
            try f.decryptor().decrypt(minted.bytes, at: .at(signingInstant)).applicationPrimaryAccountNumber
                == "4761120010000492")
    }

    @Test(
        "signing time window: just inside passes and just outside fails, on both sides",
        arguments: [(-300, true), (300, true), (-301, false), (301, false), (0, true)])
    func signingTimeWindow(offset: Int, accepted: Bool) {
        let token = f.mint().bytes
        let reference = signingInstant.addingTimeInterval(TimeInterval(offset))
        let code = rejection { try f.decryptor().decrypt(token, at: .at(reference)) }
        #expect(code == (accepted ? nil : .signingTimeOutOfRange))
    }

    @Test("the window is configurable")
    func configurableWindow() {
        let token = f.mint().bytes
        let reference = signingInstant.addingTimeInterval(900)
        #expect(rejection { try f.decryptor(window: 900).decrypt(token, at: .at(reference)) } == nil)
        #expect(
            rejection { try f.decryptor(window: 60).decrypt(token, at: .at(signingInstant.addingTimeInterval(61))) }
                == .signingTimeOutOfRange)
    }

    @Test("a leaf certificate expired (or not yet valid) at the signing time is untrusted")
    func leafOutsideValidity() {
        let day: TimeInterval = 86_400
        let expired = TestPKI(
            options: .init(
                leafValidity: signingInstant.addingTimeInterval(-30 * day)...signingInstant.addingTimeInterval(-1)))
        let notYet = TestPKI(
            options: .init(
                leafValidity: signingInstant.addingTimeInterval(1)...signingInstant.addingTimeInterval(30 * day)))
        for pki in [expired, notYet] {
            let merchant = pki.makeMerchant(identifier: "merchant.com.example.shop")
            let token = TestTokenFactory(pki: pki).mint(
                payload: TestPayload.threeDSecure(), for: merchant, options: .init(signingTime: signingInstant))
            let decryptor = try! PaymentTokenDecryptor(merchants: [merchant.identity()], trustAnchor: pki.trustAnchor)
            #expect(
                rejection { try decryptor.decrypt(token.bytes, at: .at(signingInstant)) } == .untrustedCertificateChain)
        }
    }

    @Test("a missing marker OID on the leaf or on the intermediate is untrusted", arguments: [true, false])
    func missingMarkerOID(onLeaf: Bool) {
        var options = TestPKI.Options()
        if onLeaf { options.leafMarkerOID = false } else { options.intermediateMarkerOID = false }
        let pki = TestPKI(options: options)
        let merchant = pki.makeMerchant(identifier: "merchant.com.example.shop")
        let token = TestTokenFactory(pki: pki).mint(
            payload: TestPayload.threeDSecure(), for: merchant, options: .init(signingTime: signingInstant))
        let decryptor = try! PaymentTokenDecryptor(merchants: [merchant.identity()], trustAnchor: pki.trustAnchor)
        #expect(rejection { try decryptor.decrypt(token.bytes, at: .at(signingInstant)) } == .untrustedCertificateChain)
    }

    @Test("a foreign root with Apple's names is untrusted, both under Apple's anchor and another test root")
    func foreignRootWithAppleNames() throws {
        let forger = TestPKI()  // Apple's subject names, its own keys
        let merchant = forger.makeMerchant(identifier: "merchant.com.example.shop")
        let token = TestTokenFactory(pki: forger).mint(
            payload: TestPayload.threeDSecure(), for: merchant, options: .init(signingTime: signingInstant))
        let underApple = try PaymentTokenDecryptor(merchants: [merchant.identity()])
        #expect(underApple.trustAnchor.isAppleRootCAG3)
        #expect(
            rejection { try underApple.decrypt(token.bytes, at: .at(signingInstant)) } == .untrustedCertificateChain)
        let underOther = try PaymentTokenDecryptor(merchants: [merchant.identity()], trustAnchor: f.pki.trustAnchor)
        #expect(
            rejection { try underOther.decrypt(token.bytes, at: .at(signingInstant)) } == .untrustedCertificateChain)
    }

    @Test("a token sealed to a key we do not hold is unknownMerchantKey, not a decryption failure")
    func unknownMerchant() {
        let stranger = f.pki.makeMerchant(identifier: "merchant.com.example.other")
        let token = f.mint(for: stranger)
        #expect(rejection { try f.decryptor().decrypt(token.bytes, at: .at(signingInstant)) } == .unknownMerchantKey)
    }

    @Test("the chain is verified once and reused across tokens")
    func chainIsCached() throws {
        let decryptor = f.decryptor()
        for _ in 0..<5 { _ = try decryptor.decrypt(f.mint().bytes, at: .at(signingInstant)) }
        #expect(decryptor.verifiedChainCount == 1)
    }

    @Test("an untrusted chain stays untrusted when seen again (cached failure)")
    func untrustedIsCached() {
        let forger = TestPKI()
        let merchant = forger.makeMerchant(identifier: "merchant.com.example.shop")
        let decryptor = try! PaymentTokenDecryptor(merchants: [merchant.identity()], trustAnchor: f.pki.trustAnchor)
        for _ in 0..<3 {
            let token = TestTokenFactory(pki: forger).mint(
                payload: TestPayload.threeDSecure(), for: merchant, options: .init(signingTime: signingInstant))
            #expect(
                rejection { try decryptor.decrypt(token.bytes, at: .at(signingInstant)) } == .untrustedCertificateChain)
        }
    }

    @Test("the Apple trust anchor is pinned by its fingerprint")
    func pinnedAnchor() {
        #expect(
            TrustAnchor.appleRootCAG3.fingerprint == "63343abfb89a6a03ebb57e9b3f5fa7be7c4f5c756f3017b3a8c488c3653e9179")
        #expect(!f.pki.trustAnchor.isAppleRootCAG3)
    }
}
