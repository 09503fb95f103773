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
        /// The raw RSA operation alone in this process (`SamsungPayFloor`), per CPU second.
        let inProcessRawRSAPerSecond: Double
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
    /// Implicit rejection in time: the median CPU time of a token whose padding is broken and of one
    /// whose tag is, measured alternately, µs.
    var paddingFailureMicroseconds: Double = 0
    var tagFailureMicroseconds: Double = 0
    /// The headline: one raw RSA operation (the in-process floor) and one engine token in turn, each
    /// timed by this thread's CPU clock, medians, µs.
    var interleavedFloorMicroseconds: Double = 0
    var interleavedEngineMicroseconds: Double = 0

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
            let raw = SamsungPayFloor.rawRSAPerCPUSecond(factory, seconds: seconds / 2)
            let samsung = try single(decryptor, tokens, reference, seconds: seconds)
            var multiFloor: Double? = nil
            var multi: Double? = nil
            if cores > 1 {
                multiFloor = opensslSpeed(seconds: seconds, processes: cores).map { $0 / Double(cores) }
                multi = parallel(decryptor, tokens, reference, threads: cores, seconds: seconds) / Double(cores)
            }
            run.slices.append(
                Slice(
                    opensslRSA2048PrivatePerSecond: openssl, inProcessRawRSAPerSecond: raw,
                    samsungSingleLane: samsung.cpu,
                    samsungSingleLaneWallClock: samsung.wall,
                    opensslRSA2048PrivatePerSecondPerLaneMulti: multiFloor, samsungPerLaneAllLanes: multi))
        }
        let probe = SamsungPayFloor.RawRSAProbe(factory)
        var floorTimes: [Double] = []
        var engineTimes: [Double] = []
        for i in 0..<tokens.count {
            for floorFirst in i % 2 == 0 ? [true, false] : [false, true] {
                if floorFirst {
                    floorTimes.append(probe.measure())
                } else {
                    let start = threadCPUSeconds()
                    _ = try decryptor.decrypt(tokens[i], at: reference)
                    engineTimes.append((threadCPUSeconds() - start) * 1e6)
                }
            }
        }
        run.interleavedFloorMicroseconds = median(floorTimes)
        run.interleavedEngineMicroseconds = median(engineTimes)
        (run.paddingFailureMicroseconds, run.tagFailureMicroseconds) = failureTimes(
            factory: factory, decryptor: decryptor, now: now, reference: reference, count: 600)
        return run
    }

    /// A padding-failure token and a tag-failure token in turn (each first in every other pair), each
    /// timed by this thread's CPU clock: the medians.
    static func failureTimes(
        factory: SamsungPayTestFactory, decryptor: SamsungPayTokenDecryptor, now: Date, reference: ReferenceTime,
        count: Int
    ) -> (padding: Double, tag: Double) {
        func mint(_ change: (inout SamsungPayTestFactory.Options) -> Void) -> [[UInt8]] {
            (0..<count).map { _ in
                var options = SamsungPayTestFactory.Options(now: now)
                change(&options)
                return factory.mint(options).token
            }
        }
        let padding = mint { $0.breakPadding = .blockType }
        let tag = mint { $0.corruptTag = true }
        var paddingTimes: [Double] = []
        var tagTimes: [Double] = []
        for i in 0..<count {
            // Each kind goes first in every other pair, so that neither pays the pair's cold start.
            for (tokens, isPadding) in i % 2 == 0 ? [(padding, true), (tag, false)] : [(tag, false), (padding, true)] {
                let start = threadCPUSeconds()
                _ = try? decryptor.decrypt(tokens[i], at: reference)
                let micro = (threadCPUSeconds() - start) * 1e6
                if isPadding { paddingTimes.append(micro) } else { tagTimes.append(micro) }
            }
        }
        return (median(paddingTimes), median(tagTimes))
    }

    static func threadCPUSeconds() -> Double { SamsungPayFloor.threadCPUSeconds() }

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
            "                the raw RSA operation alone in this process: \(n(Self.median(slices.map(\.inProcessRawRSAPerSecond))))/s, the engine \(r(slices.map { $0.samsungSingleLane / $0.inProcessRawRSAPerSecond })) × it"
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
        out.append(
            String(
                format:
                    "  interleaved, %d tokens: the engine %.1f µs a token, the raw RSA operation alone %.1f µs (medians, CPU time): the engine %.3f × the floor's rate",
                tokens, interleavedEngineMicroseconds, interleavedFloorMicroseconds,
                interleavedFloorMicroseconds / interleavedEngineMicroseconds))
        out.append(
            String(
                format:
                    "  implicit rejection: a padding failure %.1f µs, a tag failure %.1f µs (medians, alternated, CPU time): %.3f ×",
                paddingFailureMicroseconds, tagFailureMicroseconds, paddingFailureMicroseconds / tagFailureMicroseconds)
        )
        out.append("  command: \(command)")
        return out.joined(separator: "\n")
    }
}
