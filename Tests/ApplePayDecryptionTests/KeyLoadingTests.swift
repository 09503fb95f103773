// Merchant keys load from every format processors hold them in; bad keys are configuration errors.
import ApplePayDecryption
import ApplePayTestSupport
import Foundation
import Testing

@Suite("Merchant key loading")
struct KeyLoadingTests {
    let f = Fixtures.shared

    func decrypts(_ identity: MerchantIdentity, merchant: TestMerchant) throws -> Bool {
        let decryptor = try PaymentTokenDecryptor(merchants: [identity], trustAnchor: f.pki.trustAnchor)
        return try decryptor.decrypt(f.mint(for: merchant).bytes, at: .at(signingInstant))
            .applicationPrimaryAccountNumber == "4761120010000492"
    }

    @Test("PKCS#8 PEM, SEC1 PEM, DER, and PEM behind a Bag Attributes block")
    func pemAndDer() throws {
        let m = f.ecMerchant
        let bagAttributes =
            "Bag Attributes\n    friendlyName: merchant\n    localKeyID: 01 02 03\nKey Attributes: <No Attributes>\n"
            + m.privateKeyPEM
        #expect(m.sec1PrivateKeyPEM.contains("BEGIN EC PRIVATE KEY"))
        for key in [
            Array(m.privateKeyPEM.utf8), Array(m.sec1PrivateKeyPEM.utf8), m.privateKeyDER, Array(bagAttributes.utf8),
        ] {
            #expect(try decrypts(MerchantIdentity(certificate: m.certificateDER, privateKey: key), merchant: m))
            #expect(
                try decrypts(MerchantIdentity(certificate: Array(m.certificatePEM.utf8), privateKey: key), merchant: m))
        }
    }

    @Test("PKCS#12, modern and legacy RC2-40, with a password", .tags(.pkcs12))
    func pkcs12() throws {
        for legacy in [false, true] {
            let p12 = f.ecMerchant.pkcs12(password: "s3cret", legacy: legacy)
            #expect(try decrypts(MerchantIdentity(pkcs12: p12, password: "s3cret"), merchant: f.ecMerchant))
            #expect(throws: ConfigurationError.self) { try MerchantIdentity(pkcs12: p12, password: "wrong") }
        }
        let rsa = f.rsaMerchant.pkcs12(password: "pw", legacy: true)
        let identity = try MerchantIdentity(pkcs12: rsa, password: "pw")
        #expect(identity.keyKind == .rsa)
        #expect(try decrypts(identity, merchant: f.rsaMerchant))
    }

    @Test("a key that does not match the certificate is a configuration error")
    func mismatchedKey() {
        #expect(throws: ConfigurationError.self) {
            try MerchantIdentity(
                certificate: f.ecMerchant.certificateDER, privateKey: Array(f.rsaMerchant.privateKeyPEM.utf8))
        }
    }

    @Test("garbage key bytes are a configuration error")
    func garbageKey() {
        #expect(throws: ConfigurationError.self) {
            try MerchantIdentity(
                merchantIdentifier: "merchant.x",
                privateKey: Array("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n".utf8))
        }
        #expect(throws: ConfigurationError.self) {
            try MerchantIdentity(merchantIdentifier: "merchant.x", privateKey: [1, 2, 3])
        }
    }

    @Test("an EC merchant needs partyV: a certificate extension or an identifier")
    func partyVRequired() throws {
        let bare = f.pki.makeMerchant(identifier: "merchant.com.example.noext", includeIdentifierExtension: false)
        #expect(throws: ConfigurationError.self) {
            try MerchantIdentity(certificate: bare.certificateDER, privateKey: bare.privateKeyDER)
        }
        let named = try MerchantIdentity(
            certificate: bare.certificateDER, privateKey: bare.privateKeyDER, merchantIdentifier: bare.identifier)
        #expect(try decrypts(named, merchant: bare))
    }

    @Test("two identities with the same key are a configuration error")
    func duplicateKeys() {
        #expect(throws: ConfigurationError.self) {
            try PaymentTokenDecryptor(merchants: [f.ecMerchant.identity(), f.ecMerchant.identity()])
        }
        #expect(throws: ConfigurationError.self) { try PaymentTokenDecryptor(merchants: []) }
    }
}
