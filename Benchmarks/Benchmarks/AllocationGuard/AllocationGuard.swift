// Guards heap allocations per token: one iteration decrypts one factory EC_v1 / RSA_v1 token
// (full verification). `swift package benchmark thresholds check` fails CI when the count grows.
import ApplePayDecryption
import ApplePayTestSupport
import Benchmark
import Foundation

private let signingTime = Date(timeIntervalSince1970: 1_772_366_400)

/// Tokens minted once; iterations cycle through them (the single-token API has no replay ledger).
private final class Corpus: @unchecked Sendable {
    let decryptor: PaymentTokenDecryptor
    let ec: [[UInt8]]
    let rsa: [[UInt8]]

    init() {
        let pki = TestPKI()
        let ecMerchant = pki.makeMerchant(identifier: "merchant.com.example.guard")
        let rsaMerchant = pki.makeMerchant(identifier: "merchant.com.example.guard.rsa", kind: .rsa)
        let factory = TestTokenFactory(pki: pki)
        let options = TestTokenFactory.Options(signingTime: signingTime)
        ec = (0..<64).map { _ in factory.mint(payload: TestPayload.threeDSecure(), for: ecMerchant, options: options).bytes }
        rsa = (0..<16).map { _ in factory.mint(payload: TestPayload.threeDSecure(), for: rsaMerchant, options: options).bytes }
        decryptor = try! PaymentTokenDecryptor(merchants: [ecMerchant.identity(), rsaMerchant.identity()], trustAnchor: pki.trustAnchor)
    }
}

let benchmarks: @Sendable () -> Void = {
    let corpus = Corpus()
    // Allocation counts barely move between runs; the tolerance absorbs OpenSSL's internal pools.
    let tolerance = BenchmarkThresholds(relative: [.p90: 5.0], absolute: [.p90: 4])
    let configuration = Benchmark.Configuration(
        metrics: [.mallocCountTotal], warmupIterations: 32, maxDuration: .seconds(3), maxIterations: 2000,
        thresholds: [.mallocCountTotal: tolerance])

    Benchmark("EC_v1_token_full_verification", configuration: configuration) { benchmark in
        var i = 0
        for _ in benchmark.scaledIterations {
            blackHole(try corpus.decryptor.decrypt(corpus.ec[i % corpus.ec.count], at: .at(signingTime)))
            i += 1
        }
    }
    Benchmark("RSA_v1_token_full_verification", configuration: configuration) { benchmark in
        var i = 0
        for _ in benchmark.scaledIterations {
            blackHole(try corpus.decryptor.decrypt(corpus.rsa[i % corpus.rsa.count], at: .at(signingTime)))
            i += 1
        }
    }
}
