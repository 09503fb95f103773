// Samsung Pay tokens/s per lane against the floor, `openssl speed rsa2048`'s private-key (sign) rate,
// measured back to back in paired slices of one run (`applepay-bench --samsung`, and after the table of
// a full run). Both sides are rates per CPU second of the lane: `openssl speed` divides by its user CPU
// time unless given -elapsed, and on a shared machine (load 28 on 2 cores while this was written) a
// wall-clock rate measures the neighbours.
import ApplePayDecryption
import ApplePayTestSupport
import Dispatch
import Foundation
import Synchronization

/// A Samsung Pay token costs one RSA-2048 private-key operation plus AES-128-GCM and a small JSON: the
/// floor is OpenSSL's RSA-2048 private-key rate, on one core (one lane) and in N processes at once (N lanes),
/// per CPU second; the engine's lanes are measured per CPU second of their threads likewise (and by
/// the wall clock, for the record).
struct SamsungPayRun: Codable {
    struct Slice: Codable {
        /// `openssl speed rsa2048`: private-key operations per CPU second, one process.
        let opensslRSA2048PrivatePerSecond: Double
        /// The engine's single-token API on this thread, tokens per CPU second of the thread.
        let samsungSingleLane: Double
        /// The same run's tokens per wall-clock second.
        let samsungSingleLaneWallClock: Double
        /// N `openssl speed rsa2048` processes at once, their sum divided by N (per lane); nil on one core.
        let opensslRSA2048PrivatePerSecondPerLaneMulti: Double?
        /// The engine on N threads sharing one decryptor, tokens per CPU second of each thread, averaged
        /// over the N (per lane); nil on one core.
        let samsungPerLaneAllLanes: Double?
    }

    let date: String
    let cores: Int
    let tokens: Int
    let command: String
    var slices: [Slice] = []

    static func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }
    var singleLaneRatio: [Double] { slices.map { $0.samsungSingleLane / $0.opensslRSA2048PrivatePerSecond } }
    var allLanesRatio: [Double] {
        slices.compactMap { s in
            s.samsungPerLaneAllLanes.flatMap { lane in s.opensslRSA2048PrivatePerSecondPerLaneMulti.map { lane / $0 } }
        }
    }

    /// Mints `count` tokens (the app's envelope, one RSA-2048 merchant key, each its own payment) and
    /// measures `slices` paired slices of `seconds` each.
    static func run(count: Int, slices: Int, seconds: Double, command: String) throws -> SamsungPayRun {
        let cores = ProcessInfo.processInfo.activeProcessorCount
        let now = Date(timeIntervalSince1970: 1_772_366_400)
        let factory = SamsungPayTestFactory(merchantKeyCount: 1)
        let tokens = (0..<count).map { i -> [UInt8] in
            var options = SamsungPayTestFactory.Options(now: now)
            options.utcOffset = -Int64(i % 1000)
            options.tokenPAN = "41110000" + String(format: "%08d", i)
            return factory.mint(options).token
        }
        let decryptor = try SamsungPayTokenDecryptor(merchantKeys: [factory.merchantKey(0)])
        let reference = ReferenceTime.at(now.addingTimeInterval(30))
        var run = SamsungPayRun(
            date: ISO8601DateFormatter().string(from: Date()), cores: cores, tokens: count, command: command)
        _ = try single(decryptor, tokens, reference, seconds: 0.2)
        for _ in 1...slices {
            let openssl = opensslSpeed(seconds: seconds, processes: 1) ?? .nan
            let samsung = try single(decryptor, tokens, reference, seconds: seconds)
            var multiFloor: Double? = nil
            var multi: Double? = nil
            if cores > 1 {
                multiFloor = opensslSpeed(seconds: seconds, processes: cores).map { $0 / Double(cores) }
                multi = parallel(decryptor, tokens, reference, threads: cores, seconds: seconds) / Double(cores)
            }
            run.slices.append(
                Slice(
                    opensslRSA2048PrivatePerSecond: openssl, samsungSingleLane: samsung.cpu,
                    samsungSingleLaneWallClock: samsung.wall,
                    opensslRSA2048PrivatePerSecondPerLaneMulti: multiFloor, samsungPerLaneAllLanes: multi))
        }
        return run
    }

    /// CPU seconds this thread has run.
    static func threadCPUSeconds() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }

    /// The single-token API in a loop on this thread: tokens per CPU second and per wall-clock second.
    static func single(
        _ decryptor: SamsungPayTokenDecryptor, _ tokens: [[UInt8]], _ reference: ReferenceTime, seconds: Double
    ) throws -> (cpu: Double, wall: Double) {
        var done = 0
        var next = 0
        let start = DispatchTime.now().uptimeNanoseconds
        let cpuStart = threadCPUSeconds()
        var elapsed = 0.0
        repeat {
            for _ in 0..<32 {
                _ = try decryptor.decrypt(tokens[next], at: reference)
                next = (next + 1) % tokens.count
            }
            done += 32
            elapsed = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        } while elapsed < seconds
        return (Double(done) / (threadCPUSeconds() - cpuStart), Double(done) / elapsed)
    }

    /// `threads` threads sharing the decryptor (each borrows its own lane): the sum over the threads of
    /// each one's tokens per CPU second (as the N openssl processes are summed).
    static func parallel(
        _ decryptor: SamsungPayTokenDecryptor, _ tokens: [[UInt8]], _ reference: ReferenceTime, threads: Int,
        seconds: Double
    ) -> Double {
        let rates = Mutex<[Double]>([])
        let deadline = DispatchTime.now().uptimeNanoseconds + UInt64(seconds * 1e9)
        DispatchQueue.concurrentPerform(iterations: threads) { thread in
            var next = thread * 7919 % tokens.count
            var done = 0
            let cpuStart = threadCPUSeconds()
            while DispatchTime.now().uptimeNanoseconds < deadline {
                for _ in 0..<16 {
                    _ = try? decryptor.decrypt(tokens[next], at: reference)
                    next = (next + 1) % tokens.count
                }
                done += 16
            }
            let rate = Double(done) / (threadCPUSeconds() - cpuStart)
            rates.withLock { $0.append(rate) }
        }
        return rates.withLock { $0.reduce(0, +) }
    }

    /// `openssl speed -seconds S rsa2048` in `processes` processes at once: the private-key (sign)
    /// operations per second of user CPU time (openssl's default divisor), summed over the processes.
    /// Not `-multi N`, whose parent combines its children's figures by the wall clock.
    static func opensslSpeed(seconds: Double, processes: Int) -> Double? {
        let runs = (0..<processes).compactMap { _ -> (Process, Pipe)? in
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
            process.arguments = ["speed", "-seconds", String(max(1, Int(seconds.rounded()))), "rsa2048"]
            let pipe = Pipe()
            process.standardOutput = pipe
            process.standardError = FileHandle.nullDevice
            return (try? process.run()) != nil ? (process, pipe) : nil
        }
        guard runs.count == processes else { return nil }
        var total = 0.0
        for (process, pipe) in runs {
            let text = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            // `rsa 2048 bits 0.000262s 0.000008s   3812.6 124000.3`: sign/s is the second-to-last field.
            guard
                let line = text.split(separator: "\n").first(where: { $0.hasPrefix("rsa 2048 bits") }),
                let sign = Double(line.split(separator: " ").dropLast().last ?? "")
            else { return nil }
            total += sign
        }
        return total
    }

    func table() -> String {
        func n(_ x: Double) -> String { String(format: "%.0f", x) }
        func r(_ xs: [Double]) -> String {
            xs.isEmpty ? "-" : String(format: "%.2f (%.2f–%.2f)", Self.median(xs), xs.min()!, xs.max()!)
        }
        var out = [
            "Samsung Pay (RSA1_5 + A128GCM, RSA-2048), \(tokens) tokens, \(slices.count) paired slices, \(cores) cores"
        ]
        out.append(
            "  single lane:  \(n(Self.median(slices.map(\.samsungSingleLane)))) tokens/s against openssl speed rsa2048 private \(n(Self.median(slices.map(\.opensslRSA2048PrivatePerSecond))))/s: \(r(singleLaneRatio)) × the floor"
        )
        out.append(
            "                (per CPU second of the lane; by the wall clock \(n(Self.median(slices.map(\.samsungSingleLaneWallClock)))) tokens/s on this machine's load)"
        )
        let lanes = slices.compactMap(\.samsungPerLaneAllLanes)
        let floors = slices.compactMap(\.opensslRSA2048PrivatePerSecondPerLaneMulti)
        if !lanes.isEmpty, !floors.isEmpty {
            out.append(
                "  \(cores) lanes:      \(n(Self.median(lanes))) tokens/s per lane against \(cores) × openssl speed rsa2048 at once, \(n(Self.median(floors)))/s per lane: \(r(allLanesRatio)) × the floor"
            )
        }
        out.append("  command: \(command)")
        return out.joined(separator: "\n")
    }
}
