// The benchmark's figures, as a table for people and JSON for tools.
import ApplePayDecryption
import Foundation

struct Report: Codable {
    struct Scaling: Codable { let lanes: Int; let tokensPerSecond: Double; let efficiency: Double }
    struct Latency: Codable { let p50: Double; let p99: Double; let max: Double }
    struct AllocationCounts: Codable { let singleTokenAPI: Double; let batchLane: Double }
    struct OpenSSLSpeed: Codable { let ecdsaP256VerifyPerSecond: Double; let ecdhP256PerSecond: Double }
    struct AppleVectors: Codable { let count: Int; let tokensPerSecond: Double }

    let date: String
    let cores: Int
    var floor: HardwareFloor.Measurement? = nil
    var opensslSpeed: OpenSSLSpeed?
    var ecSingleLane = 0.0
    var rsaSingleLane = 0.0
    var scaling: [Scaling] = []
    var latency: Latency?
    var allocationsPerToken: AllocationCounts?
    var stagesEC: [StageTiming] = []
    var stagesRSA: [StageTiming] = []
    var appleVectors: AppleVectors?

    init(date: String, cores: Int) {
        self.floor = nil
        self.date = date
        self.cores = cores
    }

    func table() -> String {
        guard let floor else { return "" }
        var out: [String] = []
        func row(_ label: String, _ value: String) { out.append(label.padding(toLength: 46, withPad: " ", startingAt: 0) + value) }
        func n(_ v: Double) -> String { String(format: "%.0f", v) }
        out.append("Apple Pay token decryption — \(date), \(cores) cores")
        out.append(String(repeating: "-", count: 78))
        row("floor: ECDSA P-256 verify", "\(n(floor.ecdsaP256VerifyPerSecond)) /s (\(String(format: "%.1f", 1e6 / floor.ecdsaP256VerifyPerSecond)) µs)")
        row("floor: ECDH P-256", "\(n(floor.ecdhP256PerSecond)) /s (\(String(format: "%.1f", 1e6 / floor.ecdhP256PerSecond)) µs)")
        row("floor: RSA-2048 OAEP decrypt", "\(n(floor.rsa2048DecryptPerSecond)) /s")
        if let s = opensslSpeed { row("openssl speed (same run): verify / ECDH", "\(n(s.ecdsaP256VerifyPerSecond)) /s / \(n(s.ecdhP256PerSecond)) /s") }
        row("floor: EC_v1 token (verify + ECDH)", "\(n(floor.ecV1TokensPerSecond)) tokens/s per core")
        row("floor: RSA_v1 token (verify + RSA decrypt)", "\(n(floor.rsaV1TokensPerSecond)) tokens/s per core")
        out.append(String(repeating: "-", count: 78))
        row("EC_v1 single lane", "\(n(ecSingleLane)) tokens/s = \(String(format: "%.2f", ecSingleLane / floor.ecV1TokensPerSecond)) × floor")
        row("RSA_v1 single lane", "\(n(rsaSingleLane)) tokens/s = \(String(format: "%.2f", rsaSingleLane / floor.rsaV1TokensPerSecond)) × floor")
        for s in scaling {
            row("EC_v1 batch, \(s.lanes) lane\(s.lanes == 1 ? "" : "s")", "\(n(s.tokensPerSecond)) tokens/s, scaling efficiency \(String(format: "%.2f", s.efficiency))")
        }
        if let a = appleVectors { row("Apple sample vectors (\(a.count), single-token API)", "\(n(a.tokensPerSecond)) tokens/s") }
        if let l = latency { row("EC_v1 latency p50 / p99 / max", String(format: "%.0f / %.0f / %.0f µs", l.p50, l.p99, l.max)) }
        if let a = allocationsPerToken {
            row("heap allocations per token", String(format: "%.1f (single-token API), %.1f (batch lane)", a.singleTokenAPI, a.batchLane))
        }
        out.append(String(repeating: "-", count: 78))
        out.append("stage breakdown per token    EC_v1 µs  allocs    RSA_v1 µs  allocs")
        for ec in stagesEC {
            var line = ec.stage.padding(toLength: 28, withPad: " ", startingAt: 0) + String(format: "%9.1f %7.1f", ec.microseconds, ec.allocations ?? .nan)
            if let rsa = stagesRSA.first(where: { $0.stage == ec.stage }) {
                line += String(format: "    %9.1f %7.1f", rsa.microseconds, rsa.allocations ?? .nan)
            }
            out.append(line)
        }
        return out.joined(separator: "\n")
    }
}

extension Optional where Wrapped == HardwareFloor.Measurement {
    /// The better of two floor measurements, primitive by primitive.
    func best(_ other: HardwareFloor.Measurement) -> HardwareFloor.Measurement {
        guard let self else { return other }
        return HardwareFloor.Measurement(
            ecdsaP256VerifyPerSecond: max(self.ecdsaP256VerifyPerSecond, other.ecdsaP256VerifyPerSecond),
            ecdhP256PerSecond: max(self.ecdhP256PerSecond, other.ecdhP256PerSecond),
            rsa2048DecryptPerSecond: max(self.rsa2048DecryptPerSecond, other.rsa2048DecryptPerSecond))
    }
}
