// The C ABI's cost per token: ap_decrypt and ap_decrypt_batch, called through libapplepay.so's C
// symbols (dlopen/dlsym), against the Swift API on the same tokens in the same run.
import ApplePayDecryption
import ApplePayTestSupport
import Dispatch
import Foundation

enum CABIOverhead {
    typealias ConfigNew = @convention(c) (UnsafeMutablePointer<OpaquePointer?>?) -> Int32
    typealias AddCertificate =
        @convention(c) (
            OpaquePointer?, UnsafePointer<UInt8>?, Int, UnsafePointer<UInt8>?, Int,
            UnsafePointer<CChar>?, UnsafePointer<CChar>?, UnsafeMutableRawPointer?
        ) -> Int32
    typealias SetRoot = @convention(c) (OpaquePointer?, UnsafePointer<UInt8>?, Int, UnsafeMutableRawPointer?) -> Int32
    typealias DecryptorNew =
        @convention(c) (OpaquePointer?, UnsafeMutablePointer<OpaquePointer?>?, UnsafeMutableRawPointer?) -> Int32
    typealias Decrypt =
        @convention(c) (OpaquePointer?, UnsafePointer<UInt8>?, Int, Int64, UnsafeMutablePointer<OpaquePointer?>?) ->
        Int32
    typealias DecryptBatch =
        @convention(c) (
            OpaquePointer?, UnsafePointer<UnsafePointer<UInt8>?>?, UnsafePointer<Int>?, Int, Int64, UInt32,
            UnsafeMutablePointer<OpaquePointer?>?
        ) -> Int32
    typealias Free = @convention(c) (OpaquePointer?) -> Int32
    typealias ResultsFree = @convention(c) (UnsafeMutablePointer<OpaquePointer?>?, Int) -> Int32

    static let referenceSigningTime = Int64.min + 1

    static func symbol<T>(_ library: UnsafeMutableRawPointer, _ name: String, as: T.Type) throws -> T {
        guard let address = dlsym(library, name) else { throw ConfigurationError("\(name) is not exported") }
        return unsafeBitCast(address, to: T.self)
    }

    /// Prints, per token and one lane: Swift API, ap_decrypt, BatchDecryptor, ap_decrypt_batch (medians),
    /// and the C/Swift overheads.
    static func run(libraryPath: String, tokenCount: Int, rounds: Int, chunkSize: Int = 250) throws {
        guard let library = dlopen(libraryPath, RTLD_NOW | RTLD_LOCAL) else {
            throw ConfigurationError("cannot load \(libraryPath): \(String(cString: dlerror()))")
        }
        let configNew = try symbol(library, "ap_config_new", as: ConfigNew.self)
        let addCertificate = try symbol(library, "ap_config_add_merchant_certificate", as: AddCertificate.self)
        let setRoot = try symbol(library, "ap_config_set_insecure_test_root_pem", as: SetRoot.self)
        let decryptorNew = try symbol(library, "ap_decryptor_new", as: DecryptorNew.self)
        let decrypt = try symbol(library, "ap_decrypt", as: Decrypt.self)
        let decryptBatch = try symbol(library, "ap_decrypt_batch", as: DecryptBatch.self)
        let resultFree = try symbol(library, "ap_result_free", as: Free.self)
        let resultsFree = try symbol(library, "ap_results_free", as: ResultsFree.self)

        ApplePayBench.log("C ABI: minting \(tokenCount) EC_v1 tokens…")
        let pki = TestPKI()
        let merchant = pki.makeMerchant(identifier: "merchant.com.example.bench.cabi")
        let factory = TestTokenFactory(pki: pki)
        let options = TestTokenFactory.Options(signingTime: Date(timeIntervalSince1970: 1_772_366_400))
        let tokens = (0..<tokenCount).map { i in
            factory.mint(
                payload: TestPayload.threeDSecure(pan: "4761\(100_000_000_000 + i)"), for: merchant, options: options
            ).bytes
        }
        let swiftDecryptor = try PaymentTokenDecryptor(merchants: [merchant.identity()], trustAnchor: pki.trustAnchor)

        var config: OpaquePointer?
        var handle: OpaquePointer?
        let cert = Array(merchant.certificatePEM.utf8), key = Array(merchant.privateKeyPEM.utf8),
            root = Array(pki.rootPEM.utf8)
        guard configNew(&config) == 0, addCertificate(config, cert, cert.count, key, key.count, nil, nil, nil) == 0,
            setRoot(config, root, root.count, nil) == 0, decryptorNew(config, &handle, nil) == 0
        else {
            throw ConfigurationError("the C ABI refused the benchmark configuration")
        }

        // The tokens in one C-visible block, so the batch call gets an array of stable pointers.
        let total = tokens.reduce(0) { $0 + $1.count }
        let block = UnsafeMutablePointer<UInt8>.allocate(capacity: total)
        defer { block.deallocate() }
        var pointers: [UnsafePointer<UInt8>?] = []
        var lengths: [Int] = []
        var offset = 0
        for token in tokens {
            token.withUnsafeBufferPointer { (block + offset).update(from: $0.baseAddress!, count: token.count) }
            pointers.append(UnsafePointer(block + offset))
            lengths.append(token.count)
            offset += token.count
        }
        var results = [OpaquePointer?](repeating: nil, count: tokenCount)
        let batchEngine = BatchDecryptor(decryptor: swiftDecryptor, lanes: 1, reference: .signingTime)

        // This machine drifts by more than the effect measured, so the two sides are sampled back to back:
        // token by token for ap_decrypt, chunk by chunk for the batch call, the order swapped every time.
        func clock() -> UInt64 { DispatchTime.now().uptimeNanoseconds }
        var failures = 0
        func swiftSingle(_ i: Int) {
            do { _ = try swiftDecryptor.decrypt(tokens[i], at: .signingTime) } catch { failures += 1 }
        }
        func cSingle(_ i: Int) {
            var result: OpaquePointer?
            if decrypt(handle, pointers[i], lengths[i], referenceSigningTime, &result) != 0 { failures += 1 }
            _ = resultFree(result)
        }
        func swiftBatch(_ range: Range<Int>) throws {
            var source = ArrayTokenSource(Array(tokens[range]))
            try batchEngine.run(&source, deliver: { if case .failure = $0.outcome { failures += 1 } })
        }
        func cBatch(_ range: Range<Int>) {
            let code = pointers.withUnsafeBufferPointer { p in
                lengths.withUnsafeBufferPointer { l in
                    decryptBatch(
                        handle, p.baseAddress! + range.lowerBound, l.baseAddress! + range.lowerBound, range.count,
                        referenceSigningTime, 1, &results)
                }
            }
            if code != 0 { failures += 1 }
            _ = resultsFree(&results, range.count)
        }

        ApplePayBench.log("C ABI: \(rounds) rounds over \(tokenCount) tokens, one lane, Swift and C interleaved…")
        for i in 0..<min(100, tokenCount) { swiftSingle(i); cSingle(i) }  // warm-up: chain cache, contexts
        var swiftSamples: [Double] = [], cSamples: [Double] = [], swiftBatchSamples: [Double] = [],
            cBatchSamples: [Double] = []
        let chunk = min(chunkSize, tokenCount)
        for round in 0..<rounds {
            for i in 0..<tokenCount {
                let swiftFirst = (i + round) % 2 == 0
                for side in swiftFirst ? [0, 1] : [1, 0] {
                    let start = clock()
                    if side == 0 { swiftSingle(i) } else { cSingle(i) }
                    (side == 0 ? { swiftSamples.append($0) } : { cSamples.append($0) })(Double(clock() - start))
                }
            }
            for (n, low) in stride(from: 0, to: tokenCount - chunk + 1, by: chunk).enumerated() {
                let range = low..<low + chunk
                for side in (n + round) % 2 == 0 ? [0, 1] : [1, 0] {
                    let start = clock()
                    if side == 0 { try swiftBatch(range) } else { cBatch(range) }
                    let perToken = Double(clock() - start) / Double(chunk)
                    if side == 0 { swiftBatchSamples.append(perToken) } else { cBatchSamples.append(perToken) }
                }
            }
        }
        precondition(failures == 0, "benchmark tokens were rejected")

        func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }
        func row(_ name: String, _ values: [Double]) -> String {
            name.padding(toLength: 44, withPad: " ", startingAt: 0)
                + String(format: "%9.1f µs/token (median of %d)", median(values) / 1000, values.count)
        }
        func overhead(_ name: String, _ c: [Double], _ swift: [Double]) -> String {
            name.padding(toLength: 44, withPad: " ", startingAt: 0)
                + String(
                    format: "%+8.2f %%  (%+.1f µs/token)", (median(c) / median(swift) - 1) * 100,
                    (median(c) - median(swift)) / 1000)
        }
        print(
            """
            C ABI overhead per token, \(tokenCount) EC_v1 tokens × \(rounds) rounds, one lane (batch: chunks of \(chunk)):
            \(row("Swift PaymentTokenDecryptor.decrypt", swiftSamples))
            \(row("C ap_decrypt + ap_result_free", cSamples))
            \(row("Swift BatchDecryptor.run", swiftBatchSamples))
            \(row("C ap_decrypt_batch + ap_results_free", cBatchSamples))
            \(overhead("ap_decrypt vs Swift", cSamples, swiftSamples))
            \(overhead("ap_decrypt_batch vs Swift", cBatchSamples, swiftBatchSamples))
            """)
    }
}
