// The Swift examples of the DocC articles, compiled here and run by ArticleExampleTests: each article's
// block is a run of these lines, verbatim once indentation is removed (.ci/check-docs compares them).
import ApplePayDecryption
import Foundation

enum ArticleExamples {
    /// ApplePayDecryption.md, the overview: Apple's root, as in production.
    static func overview(certificateURL: URL, keyURL: URL, tokenData: Data) throws -> DecryptedPayment {
        let merchant = try MerchantIdentity(certificateFile: certificateURL, privateKeyFile: keyURL)
        let decryptor = try PaymentTokenDecryptor(merchants: [merchant])
        let payment = try decryptor.decrypt(tokenData)
        print(payment)  // PAN masked, no cryptogram or EMV data
        return payment
    }

    /// KeyRotation.md: the old and the new key side by side.
    static func rotation(
        newCertificate: URL, newKey: URL, oldP12: URL, p12Password: String, trustAnchor: TrustAnchor
    ) throws -> PaymentTokenDecryptor {
        let current = try MerchantIdentity(certificateFile: newCertificate, privateKeyFile: newKey)
        let previous = try MerchantIdentity(pkcs12File: oldP12, password: p12Password)
        let decryptor = try PaymentTokenDecryptor(merchants: [current, previous], trustAnchor: trustAnchor)
        return decryptor
    }

    /// BatchDecryption.md: tokens in memory, on four lanes.
    static func batch(decryptor: PaymentTokenDecryptor, tokens: [[UInt8]], reference: ReferenceTime) throws
        -> BatchDecryptor.Summary
    {
        let engine = BatchDecryptor(decryptor: decryptor, lanes: 4, reference: reference)
        var source = ArrayTokenSource(tokens)
        let summary = try engine.run(&source) { result in
            switch result.outcome.result {
            case let .success(payment): print(result.index, payment)  // PAN masked
            case let .failure(error): print(result.index, error.code)
            }
        }
        print(summary.counts)  // ["ok": 10, "replayedTransaction": 1, ...]
        return summary
    }

    /// BatchDecryption.md: from async code.
    static func asyncBatch(
        engine: BatchDecryptor, tokenStream: AsyncStream<[UInt8]>,
        record: (Int, Result<ReplayIdentity, ApplePayError>) -> Void
    ) async throws -> BatchDecryptor.Summary {
        let summary = try await engine.run(tokenStream) { result in
            record(result.index, result.outcome.result.map(\.replayIdentity))
        }
        return summary
    }

    /// PaymentRequestBinding.md: a token checked against the merchant's ApplePayPaymentRequest.
    static func binding(
        decryptor: PaymentTokenDecryptor, requestBytes: [UInt8], tokenBytes: [UInt8], reference: ReferenceTime
    ) throws -> DecryptedPayment {
        let request = try PaymentRequest(json: requestBytes)  // throws PaymentRequest.ValidationError(member:message:)
        let payment = try decryptor.decrypt(tokenBytes, at: reference, expecting: request)
        return payment
    }
}
