// The headline benchmark: the hardware floor and the engine measured in one run on this machine,
// printed as a table and written as JSON. Run: swift run -c release --package-path Benchmarks applepay-bench
import ApplePayDecryption
import ApplePayTestSupport
import Dispatch
import Foundation
import MallocInterposerSwift
import Synchronization

@main
struct ApplePayBench {
    static func main() throws {
        let options = try Options(CommandLine.arguments.dropFirst())
        MallocInterposerSwift.initialize()
        if let library = options.cabiLibrary {
            try CABIOverhead.run(libraryPath: library, tokenCount: options.cabiTokens, rounds: options.slices)
            return
        }
        if options.samsungOnly {
            log(
                "minting \(options.samsungTokens) Samsung Pay tokens; \(options.slices) paired slices against openssl speed rsa2048…"
            )
            let samsung = try SamsungPayRun.run(
                count: options.samsungTokens, slices: options.slices, seconds: options.seconds, command: options.command
            )
            print(samsung.table())
            if let path = options.jsonPath {
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
                try encoder.encode(samsung).write(to: URL(fileURLWithPath: path))
                log("wrote \(path)")
            }
            return
        }
        if options.stagesOnly {
            // For profilers: the stage loop alone, many times.
            let corpus = FactoryCorpus(ecCount: 4, rsaCount: 4)
            for timing in try corpus.decryptor.stageProfile(
                corpus.ec[0], at: corpus.reference, iterations: options.stageIterations)
            {
                print(
                    timing.stage.padding(toLength: 24, withPad: " ", startingAt: 0),
                    String(format: "%.1f µs", timing.microseconds))
            }
            if let apple = try AppleCorpus.load(options.vectors) {
                for (i, token) in apple.tokens.enumerated() {
                    let stages = try apple.decryptor.stageProfile(
                        token, at: .signingTime, iterations: max(1, options.stageIterations / 10))
                    print(
                        "Apple vector \(i):",
                        stages.map { String(format: "%@ %.1f", $0.stage, $0.microseconds) }.joined(separator: ", "))
                }
            }
            return
        }
        var report = Report(
            date: ISO8601DateFormatter().string(from: Date()), cores: ProcessInfo.processInfo.activeProcessorCount)
        log("minting \(options.ecTokens) EC_v1 and \(options.rsaTokens) RSA_v1 tokens with fresh ephemeral keys…")
        let corpus = FactoryCorpus(ecCount: options.ecTokens, rsaCount: options.rsaTokens)

        // This machine's speed drifts (shared cores, frequency scaling) by up to 2× within a minute,
        // so every ratio is taken between measurements made back to back: short paired slices of
        // floor and engine, and the median over the slices is reported with its range.
        log("\(options.slices) paired slices: floor (libcrypto, contexts prepared once) and the engine…")
        let ecOne = EngineRunner(corpus.decryptor, tokens: corpus.ec, reference: corpus.reference, lanes: 1)
        let ecAll = EngineRunner(corpus.decryptor, tokens: corpus.ec, reference: corpus.reference, lanes: report.cores)
        let rsaOne = EngineRunner(corpus.decryptor, tokens: corpus.rsa, reference: corpus.reference, lanes: 1)
        var slices: [Report.Slice] = []
        for _ in 1...options.slices {
            let floor = HardwareFloor.measure(seconds: options.seconds / 6)
            let floorAll =
                report.cores > 1
                ? ParallelFloor.measure(threads: report.cores, seconds: options.seconds / 6) : floor.ecV1TokensPerSecond
            let ec = try ecOne.measure(seconds: options.seconds / 2)
            let rsa = try rsaOne.measure(seconds: options.seconds / 4)
            let ecParallel = report.cores > 1 ? try ecAll.measure(seconds: options.seconds / 2) : ec
            slices.append(
                Report.Slice(
                    floor: floor, floorAllCores: floorAll, ecSingleLane: ec, rsaSingleLane: rsa, ecAllLanes: ecParallel)
            )
        }
        report.slices = slices

        // Google Pay ECv2 beside Apple EC_v1, one lane each (the single-token API on this thread),
        // back to back in every slice: the ratio survives the machine's drift.
        log("minting \(options.googleTokens) Google Pay ECv2 tokens; \(options.slices) paired slices against EC_v1…")
        let google = GooglePayCorpus(count: options.googleTokens)
        _ = try google.single(seconds: 0.1)
        _ = try AppleSingleLane.measure(corpus, seconds: 0.1)
        var googleSlices: [Report.GooglePaySlice] = []
        for _ in 1...options.slices {
            let apple = try AppleSingleLane.measure(corpus, seconds: options.seconds / 4)
            let ecV2 = try google.single(seconds: options.seconds / 4)
            googleSlices.append(Report.GooglePaySlice(appleECv1SingleLane: apple, googleECv2SingleLane: ecV2))
        }
        report.googlePaySlices = googleSlices
        if let directory = options.googleExport {
            // Minted at the current time with a day's lifetime: other implementations check expirations
            // against their own clock. The same tokens are measured here, for the side-by-side.
            let shared = GooglePayCorpus(count: options.googleTokens, now: Date(), lifetime: 86_400_000)
            try shared.export(to: directory)
            _ = try shared.single(seconds: 0.1)
            report.googleExported = Report.Spread(
                (1...options.slices).map { _ in (try? shared.single(seconds: options.seconds / 4)) ?? 0 })
            log("wrote \(shared.tokens.count) Google Pay tokens and their keys to \(directory)")
        }
        log("interleaved per-token samples: one floor token, then one engine token, alternately…")
        let probe = FloorProbe()
        let ecFloors = ECFloorProbe()
        report.interleavedEC = try Interleaved.measure(
            corpus.decryptor, tokens: corpus.ec, reference: corpus.reference, floor: ecFloors.classicECTokenNanoseconds,
            fixedKeyFloor: ecFloors.fixedKeyECTokenNanoseconds)
        report.interleavedRSA = try Interleaved.measure(
            corpus.decryptor, tokens: corpus.rsa, reference: corpus.reference, floor: probe.rsaTokenNanoseconds)
        report.opensslSpeed = OpenSSLSpeed.run(seconds: Int(max(1, options.seconds.rounded())))

        log("engine: latency, allocations, stages…")
        report.latency = try Latency.measure(corpus.decryptor, tokens: corpus.ec, reference: corpus.reference)
        report.allocationsPerToken = try Allocations.perToken(
            corpus.decryptor, tokens: corpus.ec, reference: corpus.reference)
        MallocInterposerSwift.hook()
        let counter = { MallocInterposerSwift.getStatistics().mallocCount }
        report.stagesEC = try corpus.decryptor.stageProfile(
            corpus.ec[0], at: corpus.reference, allocationCounter: counter)
        report.stagesRSA = try corpus.decryptor.stageProfile(
            corpus.rsa[0], at: corpus.reference, iterations: 300, allocationCounter: counter)
        MallocInterposerSwift.unhook()

        if let apple = try AppleCorpus.load(options.vectors) {
            log("engine: \(apple.tokens.count) real Apple sample tokens, each at its signing time…")
            report.appleVectors = Report.AppleVectors(
                count: apple.tokens.count,
                tokensPerSecond: try Throughput.single(apple.decryptor, tokens: apple.tokens, seconds: options.seconds))
        } else {
            log("note: no Apple vectors at \(options.vectors); that row is left out")
        }

        log(
            "Samsung Pay: \(options.samsungTokens) tokens; \(options.slices) paired slices against openssl speed rsa2048…"
        )
        let samsung = try SamsungPayRun.run(
            count: options.samsungTokens, slices: options.slices, seconds: options.seconds / 2, command: options.command
        )
        print(report.table())
        print(samsung.table())
        if let path = options.jsonPath {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            try encoder.encode(report).write(to: URL(fileURLWithPath: path))
            log("wrote \(path)")
        }
    }

    static func log(_ text: String) { FileHandle.standardError.write(Data(("applepay-bench: " + text + "\n").utf8)) }
}

struct Options {
    var seconds = 3.0
    var slices = 8
    var stagesOnly = false
    var stageIterations = 20_000
    var jsonPath: String?
    var ecTokens = 6000
    var rsaTokens = 1500
    var googleTokens = 3000
    /// `--google-export DIR`: also write the Google Pay corpus (tokens, root keys, merchant key) there.
    var googleExport: String?
    /// `--cabi PATH`: only the C ABI overhead (ap_decrypt, ap_decrypt_batch through PATH) against the Swift API.
    var cabiLibrary: String?
    var cabiTokens = 1000
    /// `--samsung`: only the Samsung Pay rows (tokens/s per lane against `openssl speed rsa2048`).
    var samsungOnly = false
    var samsungTokens = 2000
    /// The command line, for the record the figures go into.
    var command = "applepay-bench"
    var vectors = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("shared/vectors/apple").path

    init<S: Sequence>(_ arguments: S) throws where S.Element == String {
        command = (["applepay-bench"] + Array(arguments)).joined(separator: " ")
        var it = arguments.makeIterator()
        while let argument = it.next() {
            switch argument {
            case "--seconds": seconds = Double(it.next() ?? "") ?? seconds
            case "--slices": slices = max(1, Int(it.next() ?? "") ?? slices)
            case "--json": jsonPath = it.next()
            case "--stages-only": stagesOnly = true
            case "--stage-iterations": stageIterations = Int(it.next() ?? "") ?? stageIterations
            case "--ec-tokens": ecTokens = Int(it.next() ?? "") ?? ecTokens
            case "--rsa-tokens": rsaTokens = Int(it.next() ?? "") ?? rsaTokens
            case "--vectors": vectors = it.next() ?? vectors
            case "--google-tokens": googleTokens = max(1, Int(it.next() ?? "") ?? googleTokens)
            case "--google-export": googleExport = it.next()
            case "--cabi": cabiLibrary = it.next()
            case "--cabi-tokens": cabiTokens = max(1, Int(it.next() ?? "") ?? cabiTokens)
            case "--samsung": samsungOnly = true
            case "--samsung-tokens": samsungTokens = max(1, Int(it.next() ?? "") ?? samsungTokens)
            case "--help", "-h":
                print(
                    """
                    usage: applepay-bench [--seconds S] [--slices N] [--json PATH] [--ec-tokens N] [--rsa-tokens N] [--vectors DIR]
                                          [--google-tokens N] [--google-export DIR]
                           applepay-bench --cabi ../.build/release/libapplepay.so [--cabi-tokens N] [--slices N]
                           applepay-bench --samsung [--samsung-tokens N] [--seconds S] [--slices N] [--json PATH]
                    Measures the hardware floor (P-256 verify + ECDH, RSA-2048 decrypt) and the engine end to end in one run.
                    """)
                exit(0)
            default: throw ConfigurationError("unknown argument \(argument) (try --help)")
            }
        }
    }
}

/// Factory-made tokens: a test PKI like Apple's, one EC and one RSA merchant, fresh ephemeral keys per token.
struct FactoryCorpus {
    let decryptor: PaymentTokenDecryptor
    let ec: [[UInt8]]
    let rsa: [[UInt8]]
    let reference: ReferenceTime

    init(ecCount: Int, rsaCount: Int) {
        let pki = TestPKI()
        let ecMerchant = pki.makeMerchant(identifier: "merchant.com.example.bench")
        let rsaMerchant = pki.makeMerchant(identifier: "merchant.com.example.bench.rsa", kind: .rsa)
        let factory = TestTokenFactory(pki: pki)
        let signingTime = Date(timeIntervalSince1970: 1_772_366_400)
        let options = TestTokenFactory.Options(signingTime: signingTime)
        ec = (0..<ecCount).map { i in
            factory.mint(
                payload: TestPayload.threeDSecure(pan: "4761\(100_000_000_000 + i)"), for: ecMerchant, options: options
            ).bytes
        }
        rsa = (0..<rsaCount).map { i in
            factory.mint(
                payload: TestPayload.threeDSecure(pan: "5204\(100_000_000_000 + i)"), for: rsaMerchant, options: options
            ).bytes
        }
        decryptor = try! PaymentTokenDecryptor(
            merchants: [ecMerchant.identity(), rsaMerchant.identity()], trustAnchor: pki.trustAnchor)
        reference = .at(signingTime.addingTimeInterval(30))
    }
}

/// The real Apple sample tokens that decrypt, with their merchants, verified at their signing times.
struct AppleCorpus {
    let decryptor: PaymentTokenDecryptor
    let tokens: [[UInt8]]

    static func load(_ directory: String) throws -> AppleCorpus? {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return nil }
        var identities: [String: MerchantIdentity] = [:]
        var tokens: [[UInt8]] = []
        for name in names.sorted() {
            let folder = URL(fileURLWithPath: directory).appendingPathComponent(name)
            guard
                let meta = try? JSONValue.parse([UInt8](Data(contentsOf: folder.appendingPathComponent("meta.json")))),
                meta["expect"]?.stringValue == "ok"
            else { continue }
            let key = [UInt8](try Data(contentsOf: folder.appendingPathComponent("merchant_key.pem")))
            let identity: MerchantIdentity
            if let cert = try? Data(contentsOf: folder.appendingPathComponent("merchant_cert.pem")) {
                identity = try MerchantIdentity(certificate: [UInt8](cert), privateKey: key)
            } else {
                identity = try MerchantIdentity(
                    merchantIdentifier: meta["merchantIdentifier"]?.stringValue ?? "", privateKey: key)
            }
            identities[identity.publicKeyHashHex] = identity
            tokens.append([UInt8](try Data(contentsOf: folder.appendingPathComponent("token.json"))))
        }
        guard !tokens.isEmpty else { return nil }
        return AppleCorpus(decryptor: try PaymentTokenDecryptor(merchants: Array(identities.values)), tokens: tokens)
    }
}

/// The batch engine on a fixed set of lanes, measured in short bursts over consecutive chunks of
/// the corpus (each chunk its own run, so no token is ever a replay).
final class EngineRunner {
    let engine: BatchDecryptor
    let tokens: [[UInt8]]
    private var next = 0
    private let chunk: Int

    init(_ decryptor: PaymentTokenDecryptor, tokens: [[UInt8]], reference: ReferenceTime, lanes: Int) {
        engine = BatchDecryptor(decryptor: decryptor, lanes: lanes, reference: reference, windowSize: 128)
        self.tokens = tokens
        chunk = min(256, tokens.count)
        _ = try? measure(seconds: 0)  // warm-up: chain cache, lane contexts
    }

    /// Tokens per second over about `seconds` (at least one chunk).
    func measure(seconds: Double) throws -> Double {
        var done = 0
        var failures = 0
        let start = DispatchTime.now().uptimeNanoseconds
        var elapsed = 0.0
        repeat {
            if next + chunk > tokens.count { next = 0 }
            var source = ArrayTokenSource(Array(tokens[next..<next + chunk]))
            next += chunk
            try engine.run(&source, deliver: { if case .failure = $0.outcome { failures += 1 } })
            done += chunk
            elapsed = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        } while elapsed < seconds
        precondition(failures == 0, "benchmark tokens were rejected")
        return Double(done) / elapsed
    }
}

/// The floor measured on every core at once.
enum ParallelFloor {
    static func measure(threads: Int, seconds: Double) -> Double {
        let rates = Mutex<Double>(0)
        DispatchQueue.concurrentPerform(iterations: threads) { _ in
            let rate = HardwareFloor.measure(seconds: seconds).ecV1TokensPerSecond
            rates.withLock { $0 += rate }
        }
        return rates.withLock { $0 }
    }
}

enum Throughput {
    /// The single-token API in a loop on one thread.
    static func single(_ decryptor: PaymentTokenDecryptor, tokens: [[UInt8]], seconds: Double) throws -> Double {
        for token in tokens { _ = try decryptor.decrypt(token, at: .signingTime) }
        var done = 0
        let start = DispatchTime.now().uptimeNanoseconds
        var elapsed = 0.0
        repeat {
            for token in tokens { _ = try decryptor.decrypt(token, at: .signingTime) }
            done += tokens.count
            elapsed = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        } while elapsed < seconds
        return Double(done) / elapsed
    }
}

/// Floor(s) and engine sampled token by token, alternately, on one thread: the medians come from the
/// same moments of the machine, so their ratios survive its drift. EC_v1 alternates three samples:
/// classic floor token, fixed-key floor token, engine token.
enum Interleaved {
    static func measure(
        _ decryptor: PaymentTokenDecryptor, tokens: [[UInt8]], reference: ReferenceTime,
        floor: () -> UInt64, fixedKeyFloor: (() -> UInt64)? = nil
    ) throws -> Report.Interleaved {
        for token in tokens.prefix(100) {
            _ = try decryptor.decrypt(token, at: reference); _ = floor(); _ = fixedKeyFloor?()
        }
        var floorSamples: [Double] = []
        var fixedKeySamples: [Double] = []
        var engineSamples: [Double] = []
        for token in tokens {
            floorSamples.append(Double(floor()) / 1000)
            if let fixedKeyFloor { fixedKeySamples.append(Double(fixedKeyFloor()) / 1000) }
            let start = DispatchTime.now().uptimeNanoseconds
            _ = try decryptor.decrypt(token, at: reference)
            engineSamples.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1000)
        }
        func median(_ samples: [Double]) -> Double? { samples.isEmpty ? nil : samples.sorted()[samples.count / 2] }
        let floorMedian = median(floorSamples)!
        let engineMedian = median(engineSamples)!
        let fixedKeyMedian = median(fixedKeySamples)
        return Report.Interleaved(
            samples: tokens.count, floorMicroseconds: floorMedian, engineMicroseconds: engineMedian,
            ratio: floorMedian / engineMedian, fixedKeyFloorMicroseconds: fixedKeyMedian,
            fixedKeyRatio: fixedKeyMedian.map { $0 / engineMedian })
    }
}

enum Latency {
    /// Per-call wall time of the single-token API, one thread.
    static func measure(_ decryptor: PaymentTokenDecryptor, tokens: [[UInt8]], reference: ReferenceTime) throws
        -> Report.Latency
    {
        for token in tokens.prefix(200) { _ = try decryptor.decrypt(token, at: reference) }
        var samples: [Double] = []
        samples.reserveCapacity(tokens.count)
        for token in tokens {
            let start = DispatchTime.now().uptimeNanoseconds
            _ = try decryptor.decrypt(token, at: reference)
            samples.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1000)
        }
        samples.sort()
        func percentile(_ p: Double) -> Double { samples[min(samples.count - 1, Int(Double(samples.count) * p))] }
        return Report.Latency(p50: percentile(0.5), p99: percentile(0.99), max: samples.last ?? 0)
    }
}

enum Allocations {
    /// Heap allocations per token in steady state: the single-token API and one batch lane.
    static func perToken(_ decryptor: PaymentTokenDecryptor, tokens: [[UInt8]], reference: ReferenceTime) throws
        -> Report.AllocationCounts
    {
        let sample = Array(tokens.prefix(2000))
        for token in sample.prefix(100) { _ = try decryptor.decrypt(token, at: reference) }
        MallocInterposerSwift.reset()
        MallocInterposerSwift.hook()
        for token in sample { _ = try decryptor.decrypt(token, at: reference) }
        MallocInterposerSwift.unhook()
        let single = Double(MallocInterposerSwift.getStatistics().mallocCount) / Double(sample.count)

        let engine = BatchDecryptor(decryptor: decryptor, lanes: 1, reference: reference)
        var warm = ArrayTokenSource(Array(sample.prefix(600)))
        try engine.run(&warm, deliver: { _ in })
        var source = ArrayTokenSource(sample)
        MallocInterposerSwift.reset()
        MallocInterposerSwift.hook()
        try engine.run(&source, deliver: { _ in })
        MallocInterposerSwift.unhook()
        let batch = Double(MallocInterposerSwift.getStatistics().mallocCount) / Double(sample.count)
        return Report.AllocationCounts(singleTokenAPI: single, batchLane: batch)
    }
}

/// `openssl speed` in a child process, for comparison with the in-process floor.
enum OpenSSLSpeed {
    static func run(seconds: Int) -> Report.OpenSSLSpeed? {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments = ["speed", "-seconds", String(seconds), "ecdsap256", "ecdhp256"]
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return nil }
        let text = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        var verify: Double?
        var ecdh: Double?
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: " ").map(String.init)
            if line.contains("ecdsa (nistp256)"), fields.count >= 2 { verify = Double(fields[fields.count - 1]) }
            if line.contains("ecdh (nistp256)"), let last = fields.last { ecdh = Double(last) }
        }
        guard let verify, let ecdh else { return nil }
        return Report.OpenSSLSpeed(ecdsaP256VerifyPerSecond: verify, ecdhP256PerSecond: ecdh)
    }
}
