// Decryption and payload rules: leading zeros, merchants, payload variants, input forms, errors.
import ApplePayDecryption
import ApplePayTestSupport
import Foundation
import Testing

@Suite("Decryption rules")
struct DecryptionRuleTests {
    let f = Fixtures.shared

    @Test("a shared secret with a leading zero byte keeps it through the KDF")
    func leadingZeroSharedSecret() throws {
        let minted = f.mint { $0.requireLeadingZeroSharedSecret = true }
        #expect(minted.sharedSecretHasLeadingZero)
        #expect(
            try f.decryptor().decrypt(minted.bytes, at: .at(signingInstant)).applicationPrimaryAccountNumber
                == "4761120010000492")
    }

    @Test("a partyV with a leading zero byte from the certificate extension keeps it")
    func leadingZeroPartyVFromCertificate() throws {
        let partyV = [UInt8](repeating: 0, count: 1) + [UInt8](repeating: 0x5A, count: 31)
        let merchant = f.pki.makeMerchant(identifier: "merchant.com.example.zero", partyV: partyV)
        let token = f.mint(for: merchant)
        #expect(
            try f.decryptor([merchant]).decrypt(token.bytes, at: .at(signingInstant)).applicationPrimaryAccountNumber
                == "4761120010000492")
    }

    @Test("a merchant identifier whose SHA-256 starts with a zero byte works when known by identifier only")
    func leadingZeroPartyVFromIdentifier() throws {
        // Find an identifier whose hash begins with 0x00 (about one in 256).
        let identifier = (0..<100_000).lazy.map { "merchant.com.example.z\($0)" }.first { id in
            MerchantIdentity.merchantIdentifierHash(id).first == 0
        }!
        #expect(MerchantIdentity.merchantIdentifierHash(identifier).count == 32)
        let merchant = f.pki.makeMerchant(identifier: identifier)
        let identity = try MerchantIdentity(
            merchantIdentifier: identifier, privateKey: Array(merchant.privateKeyPEM.utf8))
        let decryptor = try PaymentTokenDecryptor(merchants: [identity], trustAnchor: f.pki.trustAnchor)
        #expect(
            try decryptor.decrypt(f.mint(for: merchant).bytes, at: .at(signingInstant)).applicationPrimaryAccountNumber
                == "4761120010000492")
    }

    @Test("a signed ephemeral point that is not on P-256 fails key agreement")
    func ephemeralPointOffCurve() {
        let token = f.mint { $0.ephemeralPointOffCurve = true }
        let error = Result { () throws(ApplePayError) in try f.decryptor().decrypt(token.bytes, at: .at(signingInstant))
        }
        guard case let .failure(e) = error else { Issue.record("an off-curve point was accepted"); return }
        #expect(e.code == .decryptionFailed)
        #expect(e.field == "header.ephemeralPublicKey")
    }

    @Test(
        "one decryptor, tokens in turn: a tag that fails, then EC_v1, RSA_v1 and EC_v1 again all decrypt (the lane's re-keyed GCM contexts carry nothing over)"
    )
    func gcmContextsCarryNothingBetweenTokens() throws {
        let decryptor = f.decryptor()
        let at = ReferenceTime.at(signingInstant)
        let badTag = f.mint { $0.corruptTagBeforeSigning = true }
        for _ in 0..<2 {
            do throws(ApplePayError) {
                _ = try decryptor.decrypt(badTag.bytes, at: at)
                Issue.record("a token whose tag fails decrypted")
            } catch {
                #expect(error.code == .decryptionFailed)
            }
            #expect(try decryptor.decrypt(f.mint().bytes, at: at).applicationPrimaryAccountNumber == "4761120010000492")
            #expect(
                try decryptor.decrypt(f.mint(for: f.rsaMerchant).bytes, at: at).applicationPrimaryAccountNumber
                    == "4761120010000492")
            #expect(try decryptor.decrypt(f.mint().bytes, at: at).applicationPrimaryAccountNumber == "4761120010000492")
        }
    }

    @Test("a merchant known only by its identifier (no certificate) decrypts")
    func merchantByIdentifier() throws {
        let identity = try MerchantIdentity(
            merchantIdentifier: f.ecMerchant.identifier, privateKey: Array(f.ecMerchant.privateKeyPEM.utf8))
        #expect(identity.publicKeyHash == f.ecMerchant.identity().publicKeyHash)
        let decryptor = try PaymentTokenDecryptor(merchants: [identity], trustAnchor: f.pki.trustAnchor)
        #expect(
            try decryptor.decrypt(f.mint().bytes, at: .at(signingInstant)).applicationPrimaryAccountNumber
                == "4761120010000492")
    }

    @Test("three merchants loaded at once: each token finds its own key")
    func threeMerchants() throws {
        let merchants = (1...3).map { f.pki.makeMerchant(identifier: "merchant.com.example.m\($0)") }
        let decryptor = f.decryptor(merchants)
        for (i, merchant) in merchants.enumerated() {
            let pan = "411111111111111\(i)"
            let token = f.mint(TestPayload.threeDSecure(pan: pan), for: merchant)
            #expect(try decryptor.decrypt(token.bytes, at: .at(signingInstant)).applicationPrimaryAccountNumber == pan)
        }
    }

    @Test("an EMV payload is modelled as EMV")
    func emvPayload() throws {
        let payment = try f.decryptor().decrypt(f.mint(TestPayload.emv()).bytes, at: .at(signingInstant))
        #expect(payment.paymentDataType == "EMV")
        #expect(payment.credential == .emv(emvData: "nyYIY2hpcHBlZA==", encryptedPINData: "b2ZmbGluZQ=="))
    }

    @Test("merchant-token fields and unknown fields are kept")
    func merchantTokenFields() throws {
        let extra = TestPayload.merchantTokenFields + [("someFutureField", JSONValue.object([("x", .number("1.50"))]))]
        let payment = try f.decryptor().decrypt(
            f.mint(TestPayload.threeDSecure(cardholderName: "Jane Appleseed", extra: extra)).bytes,
            at: .at(signingInstant))
        #expect(payment.merchantTokenIdentifier == "DNITHE302308980427388297")
        #expect(payment.merchantTokenMetadata?["merchantTokenSource"]?.stringValue == "recurring")
        if case let .array(responses)? = payment.authenticationResponses {
            #expect(responses.count == 1)
        } else {
            Issue.record("no authenticationResponses")
        }
        #expect(payment.cardholderName == "Jane Appleseed")
        #expect(payment.json["someFutureField"]?.description == #"{"x":1.50}"#)
        // The plaintext is kept byte for byte.
        let raw = payment.plaintext.withUnsafeBytes { Array($0) }
        #expect(raw == TestPayload.threeDSecure(cardholderName: "Jane Appleseed", extra: extra))
    }

    @Test("every input form is accepted", arguments: TokenWrapping.allCases)
    func inputForms(_ wrapping: TokenWrapping) throws {
        let minted = f.mint()
        let input = wrapping.wrap(minted.paymentData, transactionId: minted.transactionId)
        #expect(try f.decryptor().decrypt(input, at: .at(signingInstant)).transactionId == minted.transactionId)
    }

    @Test("JSON with escaped slashes (as PHP writes it) is accepted")
    func escapedSlashes() throws {
        let text = f.mint().paymentData.description.replacingOccurrences(of: "/", with: "\\/")
        #expect(
            try f.decryptor().decrypt(Array(text.utf8), at: .at(signingInstant)).applicationPrimaryAccountNumber
                == "4761120010000492")
    }

    @Test(
        "a plaintext that is not a payment object is invalidPayload", arguments: [#"{"foo":1}"#, "[1,2]", "not json"])
    func invalidPayload(_ plaintext: String) {
        let token = f.mint(Array(plaintext.utf8))
        #expect(rejection { try f.decryptor().decrypt(token.bytes, at: .at(signingInstant)) } == .invalidPayload)
    }

    @Test("decryption is safe from many threads at once", .tags(.concurrency))
    func concurrentDecryption() async throws {
        let decryptor = f.decryptor()
        let tokens = (0..<16).map { i in f.mint(TestPayload.threeDSecure(pan: "41111111111111\(10 + i)")) }
        try await withThrowingTaskGroup(of: (Int, String).self) { group in
            for (i, token) in tokens.enumerated() {
                group.addTask {
                    (i, try decryptor.decrypt(token.bytes, at: .at(signingInstant)).applicationPrimaryAccountNumber)
                }
            }
            for try await (i, pan) in group { #expect(pan == "41111111111111\(10 + i)") }
        }
        #expect(decryptor.verifiedChainCount == 1)
    }
}
