// The trust layer under hostile input (issue 7, findings 5–7): the chain cache, the strict CMS and
// ASN.1 edges, merchant key types, and key loading. One test per rule, named after it.
@testable import ApplePayDecryption
@testable import ApplePayTestSupport
import ApplePayCrypto
import Foundation
import Testing

@Suite("Trust hardening")
struct TrustHardeningTests {
    let f = Fixtures.shared

    /// A token of `pki` for a merchant of its own, with the decryptor that holds that merchant.
    func forged(_ pki: TestPKI, _ configure: (inout TestTokenFactory.Options) -> Void = { _ in }) -> (
        token: [UInt8], merchant: TestMerchant
    ) {
        let merchant = pki.makeMerchant(identifier: "merchant.com.example.shop")
        var options = TestTokenFactory.Options(signingTime: signingInstant)
        configure(&options)
        return (
            TestTokenFactory(pki: pki).mint(payload: TestPayload.threeDSecure(), for: merchant, options: options).bytes,
            merchant
        )
    }

    /// A junk element in the certificate set: a SEQUENCE, but no certificate.
    static let junkSequence: [UInt8] = [0x30, 0x03, 0x02, 0x01, 0x00]

    // MARK: the chain cache (finding 5)

    @Test("extra certificates in the unsigned set are ignored: same cache entry, no new chain verification")
    func testExtraCertificatesDoNotChangeTheCachedChain() throws {
        let decryptor = f.decryptor()
        var names = TestPKI.Options()
        names.appleNames = false  // (a certificate with the signer's issuer and serial would be taken for the signer's)
        let stranger = TestPKI(options: names)
        _ = try decryptor.decrypt(f.mint().bytes, at: .at(signingInstant))
        for (extras, first) in [
            ([Self.junkSequence], false), ([stranger.leafDER, stranger.intermediateDER], false),
            ([Self.junkSequence, stranger.leafDER], true), ([[UInt8](repeating: 0x30, count: 1) + [0x00]], true),
        ] {
            let token = f.mint {
                $0.extraCertificates = extras; $0.extraCertificatesFirst = first
            }
            #expect(
                try decryptor.decrypt(token.bytes, at: .at(signingInstant)).applicationPrimaryAccountNumber
                    == "4761120010000492")
        }
        #expect(decryptor.verifiedChainCount == 1)
        // --- new internals
        #expect(decryptor.chains.chainVerifications == 1)
        // --- end
    }

    @Test("a token whose signature does not verify leaves nothing in the chain cache")
    func testTokensWithBadSignaturesLeaveNothingInTheChainCache() {
        let decryptor = f.decryptor()
        for i in 0..<20 {
            // Each one a new certificate set, as an attacker would send: none of it may be stored.
            let padding = [UInt8](repeating: UInt8(i), count: 4096)
            let minted = f.mint { $0.extraCertificates = [DER.sequence([DER.octetString(padding)])] }
            let altered = tamperBase64(minted.paymentData, path: ["signature"]) { $0[$0.count - 15] ^= 0x01 }
            #expect(rejection { try decryptor.decrypt(bytes(altered), at: .at(signingInstant)) } == .invalidSignature)
        }
        #expect(decryptor.verifiedChainCount == 0)
        // --- new internals
        #expect(decryptor.chains.storedBytes == 0)
        #expect(decryptor.chains.chainVerifications == 0)
        // --- end
    }

    @Test("the chain cache holds at most 8 MiB of certificates")
    func testChainCacheIsBoundedInBytes() {
        let decryptor = f.decryptor()
        var options = TestPKI.Options()
        options.leafPaddingBytes = 1 << 20
        for _ in 0..<10 {
            // Signed by a leaf of its own (so it gets past the signature check), untrusted chain.
            let (token, _) = forged(TestPKI(options: options))
            #expect(rejection { try decryptor.decrypt(token, at: .at(signingInstant)) } == .untrustedCertificateChain)
        }
        #expect(decryptor.verifiedChainCount <= 8)
        // --- new internals
        #expect(decryptor.chains.storedBytes <= 8 << 20)
        #expect(decryptor.chains.storedBytes > 6 << 20)
        // --- end
    }

    @Test("certificates that are not DER (padded lengths: a new cache key for the same certificate) are untrusted")
    func testCertificatesThatAreNotDERAreRejected() throws {
        let leaf = f.pki.leafDER
        #expect(leaf[0] == 0x30 && leaf[1] == 0x82)
        let padded = [0x30, 0x83, 0x00] + leaf[2...]  // same length, one needless leading zero
        let decryptor = f.decryptor()
        let token = f.mint {
            $0.extraCertificates = [Array(padded)]; $0.extraCertificatesFirst = true
        }
        #expect(rejection { try decryptor.decrypt(token.bytes, at: .at(signingInstant)) } == .untrustedCertificateChain)
        #expect(decryptor.verifiedChainCount == 0)
    }

    // MARK: strict edges (finding 7)

    @Test("a merchant key on a 256-bit curve other than P-256 is refused at load time, naming the curve")
    func testMerchantKeyOnAnotherCurveIsRefused() throws {
        for curve in ["secp256k1", "brainpoolP256r1"] {
            let pem = try #require(EVPKey.generateEC(curve: curve).privateKeyPEM())
            do {
                _ = try MerchantIdentity(merchantIdentifier: "merchant.com.example.shop", privateKey: Array(pem.utf8))
                Issue.record("a key on \(curve) was accepted as a P-256 merchant key")
            } catch {
                #expect(error.message.contains(curve))
            }
        }
        let rsa1024 = try #require(EVPKey.generateRSA(bits: 1024).privateKeyPEM())
        #expect(throws: ConfigurationError.self) {
            try MerchantIdentity(merchantIdentifier: "merchant.x", privateKey: Array(rsa1024.utf8))
        }
    }

    @Test("signed attributes without contentType are invalidSignature (RFC 5652 §5.3)")
    func testSignedAttributesWithoutContentTypeAreRejected() {
        let token = f.mint { $0.includeContentType = false }
        let error = thrown { try f.decryptor().decrypt(token.bytes, at: .at(signingInstant)) }
        #expect(error?.code == .invalidSignature)
        #expect(error?.message.contains("contentType") == true)
    }

    @Test("the signature algorithm must match the leaf's key type: ECDSA with EC, RSA with RSA")
    func testSignatureAlgorithmIsBoundToTheLeafKeyType() throws {
        for algorithm in [TestTokenFactory.CMSSignatureAlgorithm.sha256WithRSA, .rsaEncryption] {
            let token = f.mint { $0.signatureAlgorithm = algorithm }
            #expect(rejection { try f.decryptor().decrypt(token.bytes, at: .at(signingInstant)) } == .invalidSignature)
        }
        #expect(
            rejection {
                try f.decryptor().decrypt(
                    f.mint { $0.signatureAlgorithm = .ecPublicKey }.bytes, at: .at(signingInstant))
            } == nil)

        // Apple's RSA_v1 tokens are signed by an RSA-2048 leaf with sha256WithRSAEncryption.
        var options = TestPKI.Options()
        options.leafKey = .rsa(bits: 2048)
        let rsaPKI = TestPKI(options: options)
        let (good, merchant) = forged(rsaPKI)
        let decryptor = try PaymentTokenDecryptor(merchants: [merchant.identity()], trustAnchor: rsaPKI.trustAnchor)
        #expect(rejection { try decryptor.decrypt(good, at: .at(signingInstant)) } == nil)
        for algorithm in [TestTokenFactory.CMSSignatureAlgorithm.ecdsaWithSHA256, .ecPublicKey] {
            let (token, _) = forged(rsaPKI) { $0.signatureAlgorithm = algorithm }
            #expect(rejection { try decryptor.decrypt(token, at: .at(signingInstant)) } == .invalidSignature)
        }
    }

    @Test("a signing key other than EC P-256 or RSA ≥ 2048 is untrusted, and not cached")
    func testSigningKeysOtherThanP256OrRSA2048AreRefused() throws {
        // An RSA exponent other than 65537 is refused too: a huge one made each token cost ~60 verifications.
        for key in [
            TestPKI.KeySpec.ec(curve: "P-384"), .ec(curve: "secp256k1"), .rsa(bits: 1024),
            .rsaWithExponent(bits: 2048, exponent: 3),
            .rsaWithExponent(bits: 2048, exponent: 0x1_0000_0001),
        ] {
            var options = TestPKI.Options()
            options.leafKey = key
            let pki = TestPKI(options: options)
            let (token, merchant) = forged(pki)
            let decryptor = try PaymentTokenDecryptor(merchants: [merchant.identity()], trustAnchor: pki.trustAnchor)
            #expect(rejection { try decryptor.decrypt(token, at: .at(signingInstant)) } == .untrustedCertificateChain)
            #expect(decryptor.verifiedChainCount == 0)
        }
    }

    @Test("GeneralizedTime is accepted for 2050 and later only (RFC 5280 §4.1.2.5)")
    func testGeneralizedTimeBefore2050IsRejected() {
        let token = f.mint { $0.signingTimeEncoding = .generalizedTime }
        let error = thrown { try f.decryptor().decrypt(token.bytes, at: .signingTime) }
        #expect(error?.code == .invalidSignature)
        #expect(error?.message.contains("signingTime") == true)
    }

    @Test("UTCTime means 1950–2049 (a 2050 date cannot be written as UTCTime), GeneralizedTime 2050 on")
    func testUTCTimeAfter2049IsRejected() throws {
        var options = TestPKI.Options()
        let day: TimeInterval = 86_400
        options.rootValidity =
            Date(timeIntervalSince1970: -30 * 365 * day)...Date(timeIntervalSince1970: 100 * 365 * day)
        options.intermediateValidity = options.rootValidity
        options.leafValidity = options.rootValidity
        let pki = TestPKI(options: options)
        let merchant = pki.makeMerchant(identifier: "merchant.com.example.shop")
        let decryptor = try PaymentTokenDecryptor(merchants: [merchant.identity()], trustAnchor: pki.trustAnchor)
        let cases: [(UInt8, String, Int64?)] = [
            (0x17, "491231235959Z", 2_524_607_999),  // 2049-12-31T23:59:59Z
            (0x17, "500101000000Z", -631_152_000),  // 1950-01-01: "50" is never 2050
            (0x18, "20500101000000Z", 2_524_608_000),
            (0x18, "20491231235959Z", nil),  // must have been UTCTime
            (0x18, "19991231235959Z", nil),
        ]
        for (tag, text, expected) in cases {
            var o = TestTokenFactory.Options(signingTime: signingInstant)
            o.signingTimeEncoding = .literal(tag: tag, text: text)
            let token = TestTokenFactory(pki: pki).mint(payload: TestPayload.threeDSecure(), for: merchant, options: o)
                .bytes
            if let expected {
                #expect(try decryptor.decrypt(token, at: .signingTime).signingTime == expected, "\(text)")
            } else {
                #expect(rejection { try decryptor.decrypt(token, at: .signingTime) } == .invalidSignature, "\(text)")
            }
        }
    }

    @Test("impossible dates in signingTime are rejected, not normalised")
    func testImpossibleDatesAreRejected() throws {
        let impossible: [(UInt8, String)] = [
            (0x17, "260230120000Z"),  // Feb 30
            (0x17, "250229120000Z"),  // Feb 29 of a common year
            (0x17, "260431120000Z"),  // Apr 31
            (0x17, "261301120000Z"),  // month 13
            (0x17, "260001120000Z"),  // month 0
            (0x17, "260300120000Z"),  // day 0
            (0x17, "260301240000Z"),  // hour 24
            (0x17, "260301126000Z"),  // minute 60
            (0x17, "260301120060Z"),  // second 60
            (0x17, "2603011200Z"),  // no seconds
            (0x17, "260301120000+0000"),
            (0x18, "20500230000000Z"),
        ]
        for (tag, text) in impossible {
            let token = f.mint { $0.signingTimeEncoding = .literal(tag: tag, text: text) }
            #expect(
                rejection { try f.decryptor().decrypt(token.bytes, at: .signingTime) } == .invalidSignature, "\(text)")
        }
        let leapDay = f.mint { $0.signingTimeEncoding = .literal(tag: 0x17, text: "280229120000Z") }
        #expect(try f.decryptor().decrypt(leapDay.bytes, at: .signingTime).signingTime == 1_835_438_400)
    }

    @Test("SignedData version must be 1 (RFC 5652 §5.1, as Apple uses it)", arguments: [0, 3, 5])
    func testSignedDataVersionOtherThan1IsRejected(version: Int) {
        let token = f.mint { $0.signedDataVersion = version }
        let error = thrown { try f.decryptor().decrypt(token.bytes, at: .at(signingInstant)) }
        #expect(error?.code == .invalidSignature)
        #expect(error?.message.contains("SignedData version") == true)
    }

    @Test("SignerInfo version must be 1 (issuerAndSerialNumber, RFC 5652 §5.3)", arguments: [0, 3])
    func testSignerInfoVersionOtherThan1IsRejected(version: Int) {
        let token = f.mint { $0.signerInfoVersion = version }
        let error = thrown { try f.decryptor().decrypt(token.bytes, at: .at(signingInstant)) }
        #expect(error?.code == .invalidSignature)
        #expect(error?.message.contains("SignerInfo version") == true)
    }

    @Test("digestAlgorithms must list SHA-256, the signer's digest algorithm")
    func testDigestAlgorithmsMustListSHA256() {
        let token = f.mint { $0.digestAlgorithmsListSHA256 = false }
        let error = thrown { try f.decryptor().decrypt(token.bytes, at: .at(signingInstant)) }
        #expect(error?.code == .invalidSignature)
        #expect(error?.message.contains("digestAlgorithms") == true)
    }

    @Test("ECDSA malleability is accepted by design: (r, n−s) verifies, and the signed content is the same")
    func testMalleatedECDSASignatureIsAcceptedByDesign() throws {
        // Accepted on purpose (OpenSSL does too): nothing keys on the signature bytes. Replay detection
        // keys on the transactionId and on the signed content digest (the messageDigest attribute),
        // which a re-encoded signature does not change, so the variant is caught as the same payment.
        let original = f.mint()
        let variant = f.mint {
            $0.transactionId = original.transactionId; $0.malleateSignature = true
        }
        let decryptor = f.decryptor()
        let a = try decryptor.decrypt(original.bytes, at: .at(signingInstant))
        let b = try decryptor.decrypt(variant.bytes, at: .at(signingInstant))
        #expect(original.paymentData["signature"] != variant.paymentData["signature"])
        #expect(a.transactionId == b.transactionId)
        #expect(a.applicationPrimaryAccountNumber == b.applicationPrimaryAccountNumber)
    }

    // MARK: key loading (finding 6)

    @Test("the PEM marker is found in the raw bytes, after any binary prefix")
    func testPEMMarkerIsFoundInTheKeyBytes() throws {
        let m = f.ecMerchant
        let prefixed = [0xFF, 0xFE, 0x00, 0xC3] + Array("Bag Attributes\n".utf8) + Array(m.privateKeyPEM.utf8)
        #expect(
            try MerchantIdentity(certificate: m.certificateDER, privateKey: prefixed).publicKeyHash
                == m.identity().publicKeyHash)
    }

    @Test("a PKCS#12 password reaches OpenSSL exactly (non-ASCII and empty) from the wiped C string", .tags(.pkcs12))
    func testPKCS12PasswordsReachOpenSSLExactly() throws {
        for password in ["pässwörd ✓", ""] {
            let p12 = f.ecMerchant.pkcs12(password: password)
            #expect(
                try MerchantIdentity(pkcs12: p12, password: password).publicKeyHash
                    == f.ecMerchant.identity().publicKeyHash)
            #expect(throws: ConfigurationError.self) { try MerchantIdentity(pkcs12: p12, password: password + "x") }
        }
    }

    // --- new internals
    // MARK: the cache's own rules, with small limits

    /// The signature bytes of a token, to drive a `SignerChainCache` directly.
    func resolve(_ cache: SignerChainCache, _ token: [UInt8]) throws -> CachedSigner {
        let json = try! JSONValue.parse(token)
        let signature = Array(Data(base64Encoded: json["signature"]!.stringValue!)!)
        return try signature.withUnsafeBytes { raw in
            try cache.signer(for: try CMSSignedData.parse(raw), in: raw)
        }
    }

    @Test("eviction takes untrusted verdicts first: a flood of chains of the sender's own making never flushes Apple's")
    func testAFloodOfUntrustedChainsDoesNotEvictTheTrustedChain() throws {
        let cache = SignerChainCache(anchor: f.pki.trustAnchor, limits: .init(entries: 4, bytes: 1 << 20))
        #expect(try resolve(cache, f.mint().bytes).isTrusted)
        for _ in 0..<12 {
            #expect(try !resolve(cache, forged(TestPKI()).token).isTrusted)
            #expect(cache.cachedChainCount <= 4)
        }
        let before = cache.chainVerifications
        #expect(try resolve(cache, f.mint().bytes).isTrusted)
        #expect(cache.chainVerifications == before)

        // Bytes too: one large untrusted chain evicts untrusted ones, never the trusted one.
        var options = TestPKI.Options()
        options.leafPaddingBytes = 600 << 10
        for _ in 0..<3 { _ = try? resolve(cache, forged(TestPKI(options: options)).token) }
        #expect(cache.storedBytes <= 1 << 20)
        #expect(try resolve(cache, f.mint().bytes).isTrusted)
        #expect(cache.chainVerifications == before + 3)
    }

    @Test("a transient failure while verifying the chain is reported but never cached")
    func testTransientChainFailuresAreNotCached() throws {
        final class Calls: @unchecked Sendable { var count = 0 }
        let calls = Calls()
        let cache = SignerChainCache(anchor: f.pki.trustAnchor) { _, _ in
            calls.count += 1
            if calls.count == 1 { return .transient(ApplePayError(.untrustedCertificateChain, "out of memory")) }
            return .verdict(.success([Int64.min...Int64.max, Int64.min...Int64.max, Int64.min...Int64.max]))
        }
        let token = f.mint().bytes
        #expect(throws: ApplePayError.self) { try resolve(cache, token) }
        #expect(cache.cachedChainCount == 0)
        #expect(try resolve(cache, token).isTrusted)
        #expect(try resolve(cache, token).isTrusted)
        #expect(calls.count == 2)
        // OpenSSL's out-of-memory and unspecified errors are not verdicts; a bad signature is.
        #expect(SignerChainCache.isTransient(verifyResult: 0, error: 17))  // X509_V_ERR_OUT_OF_MEM
        #expect(SignerChainCache.isTransient(verifyResult: 0, error: 1))  // X509_V_ERR_UNSPECIFIED
        #expect(SignerChainCache.isTransient(verifyResult: -1, error: 7))
        #expect(!SignerChainCache.isTransient(verifyResult: 0, error: 7))  // X509_V_ERR_CERT_SIGNATURE_FAILURE
        #expect(!SignerChainCache.isTransient(verifyResult: 0, error: 20))  // unable to get local issuer certificate
    }
    // --- end
}

/// The error a decryption throws, or nil if it succeeds.
func thrown(_ body: () throws -> DecryptedPayment) -> ApplePayError? {
    do {
        _ = try body()
        return nil
    } catch {
        return error as? ApplePayError
    }
}
