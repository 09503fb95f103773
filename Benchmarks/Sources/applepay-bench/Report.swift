// The benchmark's figures, as a table for people and JSON for tools.
import ApplePayDecryption
import ApplePayTestSupport
import Foundation

struct Report: Codable {
    struct Latency: Codable { let p50: Double; let p99: Double; let max: Double }
    struct AllocationCounts: Codable { let singleTokenAPI: Double; let batchLane: Double }
    struct OpenSSLSpeed: Codable { let ecdsaP256VerifyPerSecond: Double; let ecdhP256PerSecond: Double }
    struct AppleVectors: Codable { let count: Int; let tokensPerSecond: Double }
    /// Medians of alternating single-token samples: floor token, engine token, floor token, …
    /// `floor…`/`ratio` are the classic floor (EVP verify + ECDH); `fixedKey…` the fixed-key floor
    /// (table verify + EC_POINT ECDH on prepared inputs), EC_v1 only.
    struct Interleaved: Codable {
        let samples: Int; let floorMicroseconds: Double; let engineMicroseconds: Double; let ratio: Double
        var fixedKeyFloorMicroseconds: Double? = nil
        var fixedKeyRatio: Double? = nil
    }
    /// One paired slice: the floor and the engine measured back to back.
    struct Slice: Codable {
        let floor: HardwareFloor.Measurement
        /// EC_v1 floor with every core running the primitives at once (tokens/s, all cores together).
        let floorAllCores: Double
        let ecSingleLane: Double
        let rsaSingleLane: Double
        let ecAllLanes: Double
    }
    /// A median over the slices with its range.
    struct Spread: Codable {
        let median: Double
        let min: Double
        let max: Double
        init(_ values: [Double]) {
            let sorted = values.sorted()
            median = sorted.isEmpty ? .nan : sorted[sorted.count / 2]
            min = sorted.first ?? .nan
            max = sorted.last ?? .nan
        }
    }

    /// Google Pay ECv2 and Apple EC_v1 tokens/s on one lane (single-token API), back to back.
    struct GooglePaySlice: Codable {
        let appleECv1SingleLane: Double
        let googleECv2SingleLane: Double
    }

    let date: String
    let cores: Int
    var slices: [Slice] = []
    var googlePaySlices: [GooglePaySlice] = []
    /// The engine over the `--google-export` corpus (the tokens other implementations are measured on).
    var googleExported: Spread? = nil
    var googleECv2: Spread { Spread(googlePaySlices.map(\.googleECv2SingleLane)) }
    var googleAppleECv1: Spread { Spread(googlePaySlices.map(\.appleECv1SingleLane)) }
    var googleRatio: Spread { Spread(googlePaySlices.map { $0.googleECv2SingleLane / $0.appleECv1SingleLane }) }
    var opensslSpeed: OpenSSLSpeed? = nil
    var latency: Latency? = nil
    var allocationsPerToken: AllocationCounts? = nil
    var stagesEC: [StageTiming] = []
    var stagesRSA: [StageTiming] = []
    var appleVectors: AppleVectors? = nil
    var interleavedEC: Interleaved? = nil
    var interleavedRSA: Interleaved? = nil

    init(date: String, cores: Int) {
        self.date = date
        self.cores = cores
    }

    // Medians over the slices, and the ratios taken within each slice.
    var verifyRate: Spread { Spread(slices.map(\.floor.ecdsaP256VerifyPerSecond)) }
    var ecdhRate: Spread { Spread(slices.map(\.floor.ecdhP256PerSecond)) }
    var rsaDecryptRate: Spread { Spread(slices.map(\.floor.rsa2048DecryptPerSecond)) }
    var ecFloor: Spread { Spread(slices.map(\.floor.ecV1TokensPerSecond)) }
    var rsaFloor: Spread { Spread(slices.map(\.floor.rsaV1TokensPerSecond)) }
    var ecSingleLane: Spread { Spread(slices.map(\.ecSingleLane)) }
    var rsaSingleLane: Spread { Spread(slices.map(\.rsaSingleLane)) }
    var ecAllLanes: Spread { Spread(slices.map(\.ecAllLanes)) }
    var ecRatio: Spread { Spread(slices.map { $0.ecSingleLane / $0.floor.ecV1TokensPerSecond }) }
    var rsaRatio: Spread { Spread(slices.map { $0.rsaSingleLane / $0.floor.rsaV1TokensPerSecond }) }
    var scalingEfficiency: Spread { Spread(slices.map { $0.ecAllLanes / (Double(cores) * $0.ecSingleLane) }) }
    var hardwareScaling: Spread {
        Spread(slices.map { $0.floorAllCores / (Double(cores) * $0.floor.ecV1TokensPerSecond) })
    }
    var allLanesRatio: Spread { Spread(slices.map { $0.ecAllLanes / $0.floorAllCores }) }

    enum CodingKeys: String, CodingKey {
        case interleavedEC, interleavedRSA
        case date, cores, slices, opensslSpeed, latency, allocationsPerToken, stagesEC, stagesRSA, appleVectors
        case ecRatio, rsaRatio, scalingEfficiency, hardwareScaling, allLanesRatio, ecSingleLane, rsaSingleLane, ecFloor,
            rsaFloor
        case googlePaySlices, googleECv2SingleLane, googleAppleECv1SingleLane, googleECv2VersusAppleECv1
        case googleExported
    }

    func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(date, forKey: .date)
        try c.encode(cores, forKey: .cores)
        try c.encode(slices, forKey: .slices)
        try c.encodeIfPresent(opensslSpeed, forKey: .opensslSpeed)
        try c.encodeIfPresent(latency, forKey: .latency)
        try c.encodeIfPresent(allocationsPerToken, forKey: .allocationsPerToken)
        try c.encode(stagesEC, forKey: .stagesEC)
        try c.encode(stagesRSA, forKey: .stagesRSA)
        try c.encodeIfPresent(appleVectors, forKey: .appleVectors)
        try c.encodeIfPresent(interleavedEC, forKey: .interleavedEC)
        try c.encodeIfPresent(interleavedRSA, forKey: .interleavedRSA)
        try c.encode(ecRatio, forKey: .ecRatio)
        try c.encode(rsaRatio, forKey: .rsaRatio)
        try c.encode(scalingEfficiency, forKey: .scalingEfficiency)
        try c.encode(hardwareScaling, forKey: .hardwareScaling)
        try c.encode(allLanesRatio, forKey: .allLanesRatio)
        try c.encode(ecSingleLane, forKey: .ecSingleLane)
        try c.encode(rsaSingleLane, forKey: .rsaSingleLane)
        try c.encode(ecFloor, forKey: .ecFloor)
        try c.encode(rsaFloor, forKey: .rsaFloor)
        if !googlePaySlices.isEmpty {
            try c.encode(googlePaySlices, forKey: .googlePaySlices)
            try c.encode(googleECv2, forKey: .googleECv2SingleLane)
            try c.encode(googleAppleECv1, forKey: .googleAppleECv1SingleLane)
            try c.encode(googleRatio, forKey: .googleECv2VersusAppleECv1)
        }
        try c.encodeIfPresent(googleExported, forKey: .googleExported)
    }

    init(from decoder: Decoder) throws { fatalError("the report is written, not read") }

    func table() -> String {
        var out: [String] = []
        func row(_ label: String, _ value: String) {
            out.append(label.padding(toLength: 46, withPad: " ", startingAt: 0) + value)
        }
        func n(_ v: Double) -> String { String(format: "%.0f", v) }
        func r(_ s: Spread) -> String { String(format: "%.2f (%.2f–%.2f)", s.median, s.min, s.max) }
        out.append(
            "Apple Pay token decryption — \(date), \(cores) cores; medians over \(slices.count) paired slices (range)")
        out.append(String(repeating: "-", count: 86))
        row(
            "floor: ECDSA P-256 verify",
            "\(n(verifyRate.median)) /s (\(String(format: "%.1f", 1e6 / verifyRate.median)) µs)")
        row("floor: ECDH P-256", "\(n(ecdhRate.median)) /s (\(String(format: "%.1f", 1e6 / ecdhRate.median)) µs)")
        row("floor: RSA-2048 OAEP decrypt", "\(n(rsaDecryptRate.median)) /s")
        if let s = opensslSpeed {
            row(
                "openssl speed (same run): verify / ECDH",
                "\(n(s.ecdsaP256VerifyPerSecond)) /s / \(n(s.ecdhP256PerSecond)) /s")
        }
        row("floor: EC_v1 token (verify + ECDH)", "\(n(ecFloor.median)) tokens/s per core")
        row("floor: RSA_v1 token (verify + RSA decrypt)", "\(n(rsaFloor.median)) tokens/s per core")
        out.append(String(repeating: "-", count: 86))
        if let i = interleavedEC {
            row(
                "EC_v1 token, interleaved medians",
                String(
                    format: "engine %.1f µs vs classic floor %.1f µs = %.2f × classic floor", i.engineMicroseconds,
                    i.floorMicroseconds, i.ratio))
            if let fixed = i.fixedKeyFloorMicroseconds, let ratio = i.fixedKeyRatio {
                row(
                    "",
                    String(
                        format: "engine %.1f µs vs fixed-key floor %.1f µs = %.2f × fixed-key floor",
                        i.engineMicroseconds, fixed, ratio))
            }
        }
        if let i = interleavedRSA {
            row(
                "RSA_v1 token, interleaved medians",
                String(
                    format: "engine %.1f µs vs floor %.1f µs = %.2f × floor", i.engineMicroseconds, i.floorMicroseconds,
                    i.ratio))
        }
        row("EC_v1 single lane", "\(n(ecSingleLane.median)) tokens/s = \(r(ecRatio)) × floor")
        row("RSA_v1 single lane", "\(n(rsaSingleLane.median)) tokens/s = \(r(rsaRatio)) × floor")
        row(
            "EC_v1 batch, \(cores) lanes",
            "\(n(ecAllLanes.median)) tokens/s, scaling efficiency \(r(scalingEfficiency))")
        if cores > 1 {
            row("hardware: floor on \(cores) cores at once", "scaling \(r(hardwareScaling))")
            row("EC_v1 batch, \(cores) lanes vs that floor", "\(r(allLanesRatio)) × floor")
        }
        if !googlePaySlices.isEmpty {
            row(
                "Google Pay ECv2 single lane (token API)",
                "\(n(googleECv2.median)) tokens/s = \(r(googleRatio)) × Apple EC_v1 (\(n(googleAppleECv1.median)) tokens/s, same slices)"
            )
        }
        if let g = googleExported {
            row("Google Pay ECv2, the --google-export tokens", "\(n(g.median)) tokens/s (single-token API, one thread)")
        }
        if let a = appleVectors {
            row("Apple sample vectors (\(a.count), single-token API)", "\(n(a.tokensPerSecond)) tokens/s")
        }
        if let l = latency {
            row("EC_v1 latency p50 / p99 / max", String(format: "%.0f / %.0f / %.0f µs", l.p50, l.p99, l.max))
        }
        if let a = allocationsPerToken {
            row(
                "heap allocations per token",
                String(format: "%.1f (single-token API), %.1f (batch lane)", a.singleTokenAPI, a.batchLane))
        }
        out.append(String(repeating: "-", count: 78))
        out.append("stage breakdown per token    EC_v1 µs  allocs    RSA_v1 µs  allocs")
        for ec in stagesEC {
            var line =
                ec.stage.padding(toLength: 28, withPad: " ", startingAt: 0)
                + String(format: "%9.1f %7.1f", ec.microseconds, ec.allocations ?? .nan)
            if let rsa = stagesRSA.first(where: { $0.stage == ec.stage }) {
                line += String(format: "    %9.1f %7.1f", rsa.microseconds, rsa.allocations ?? .nan)
            }
            out.append(line)
        }
        return out.joined(separator: "\n")
    }
}
