// The DocC articles' Swift examples (Examples/ArticleExamples.swift, quoted verbatim by the articles) run
// against real tokens and give what the articles say they give.
import ApplePayDecryption
import ApplePayTestSupport
import Foundation
import Testing

@Suite("DocC article examples")
struct ArticleExampleTests {
    let f = Fixtures.shared

    @Test("the overview's example trusts only Apple's root: the bundled test token is refused with a stable code")
    func overview() throws {
        let v = BundledVectors.directory
        let token = try Data(contentsOf: v.appendingPathComponent("tokens/ec-3dsecure.json"))
        #expect(throws: ApplePayError.self) {
            do {
                _ = try ArticleExamples.overview(
                    certificateURL: v.appendingPathComponent("merchants/ec.cert.pem"),
                    keyURL: v.appendingPathComponent("merchants/ec.key.pem"), tokenData: token)
            } catch let error as ApplePayError {
                #expect(error.code == .untrustedCertificateChain, "\(error)")
                throw error
            }
        }
    }

    @Test(
        "key rotation: one decryptor opens tokens sealed to the new PEM key and to the old PKCS#12 key", .tags(.pkcs12))
    func rotation() throws {
        let dir = ScratchDirectory()
        let certificate = dir.write("new.cert.pem", Array(f.ecMerchant.certificatePEM.utf8))
        let key = dir.write("new.key.pem", Array(f.ecMerchant.privateKeyPEM.utf8))
        let p12 = dir.write("old.p12", f.rsaMerchant.pkcs12(password: "s3cret"))
        let decryptor = try ArticleExamples.rotation(
            newCertificate: URL(fileURLWithPath: certificate), newKey: URL(fileURLWithPath: key),
            oldP12: URL(fileURLWithPath: p12), p12Password: "s3cret", trustAnchor: f.pki.trustAnchor)
        for merchant in [f.ecMerchant, f.rsaMerchant] {
            let payment = try decryptor.decrypt(f.mint(for: merchant).bytes, at: .at(signingInstant))
            #expect(payment.applicationPrimaryAccountNumber == "4761120010000492")
        }
    }

    @Test("the batch example over Vectors/archive.jsonl gives the manifest's counts")
    func batch() throws {
        let vectors = try BundledVectors()
        let summary = try ArticleExamples.batch(
            decryptor: vectors.decryptor(), tokens: vectors.archiveTokens(), reference: .at(vectors.now))
        #expect(summary.processed == 22)
        #expect(summary.counts["ok"] == 12)
        #expect(summary.counts["replayedTransaction"] == 1)
    }

    @Test("the async batch example records every token's replay identity, in order")
    func asyncBatch() async throws {
        let vectors = try BundledVectors()
        let tokens = try vectors.archiveTokens()
        let engine = BatchDecryptor(decryptor: try vectors.decryptor(), lanes: 2, reference: .at(vectors.now))
        let stream = AsyncStream<[UInt8]> { continuation in
            for token in tokens { continuation.yield(token) }
            continuation.finish()
        }
        var indices: [Int] = []
        var identities = 0
        let summary = try await ArticleExamples.asyncBatch(engine: engine, tokenStream: stream) { index, identity in
            indices.append(index)
            if case .success = identity { identities += 1 }
        }
        #expect(indices == Array(0..<tokens.count))
        #expect(identities == summary.counts["ok"])
    }

    @Test("the binding example refuses the bundled token against a 900.00 order")
    func binding() throws {
        let vectors = try BundledVectors()
        let request = RequestJSON().total("900.00").bytes
        #expect(throws: ApplePayError.self) {
            do {
                _ = try ArticleExamples.binding(
                    decryptor: vectors.decryptor(), requestBytes: request,
                    tokenBytes: vectors.file("tokens/ec-3dsecure.json"), reference: .at(vectors.now))
            } catch let error as ApplePayError {
                #expect(error.code == .paymentRequestMismatch, "\(error)")
                throw error
            }
        }
    }
}
