// The multi-buffer figures: the three P-256 floors per token (OpenSSL EVP, the engine's fixed-key
// primitives, crypto_mb eight at a time) and the batch engine with --multibuffer on and off, for Apple
// EC_v1 and Google Pay ECv2 tokens, interleaved slice by slice, on one lane and two.
// Usage: multibuffer-bench [TOKENS] [SLICES]
import ApplePayDecryption
import ApplePayTestSupport
import Dispatch
import Foundation

@main
struct MultiBufferBench {
    static func log(_ text: String) { FileHandle.standardError.write(Data((text + "\n").utf8)) }

    /// CPU seconds this process has used, all threads (CLOCK_PROCESS_CPUTIME_ID).
    static func processCPUSeconds() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }

    static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        return sorted.isEmpty
            ? 0
            : sorted.count % 2 == 1
                ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
    }

    static func main() throws {
        let arguments = CommandLine.arguments
        let count = arguments.count > 1 ? Int(arguments[1]) ?? 4096 : 4096
        let slices = arguments.count > 2 ? Int(arguments[2]) ?? 5 : 5
        let on: MultiBufferBackend
        do { on = try MultiBufferBackend.resolve(.on) } catch {
            log("multibuffer-bench: \(error.message)")
            exit(2)
        }
        guard let mbFloor = MultiBufferFloorProbe() else {
            log("multibuffer-bench: no multi-buffer floor: \(MultiBufferFloorProbe.reason)")
            exit(2)
        }
        log("minting \(count) EC_v1 tokens with fresh ephemeral keys…")
        let pki = TestPKI()
        let merchant = pki.makeMerchant(identifier: "merchant.com.example.bench")
        let factory = TestTokenFactory(pki: pki)
        let signingTime = Date(timeIntervalSince1970: 1_772_366_400)
        let tokens = (0..<count).map { i in
            factory.mint(
                payload: TestPayload.threeDSecure(pan: "4761\(100_000_000_000 + i)"), for: merchant,
                options: .init(signingTime: signingTime)
            ).bytes
        }
        let decryptor = try PaymentTokenDecryptor(merchants: [merchant.identity()], trustAnchor: pki.trustAnchor)
        let reference = ReferenceTime.at(signingTime.addingTimeInterval(30))
        log("minting \(count) Google Pay ECv2 tokens (one intermediate key, fresh ephemeral keys)…")
        let googleFactory = GooglePayTestFactory(merchantKeyCount: 1)
        let googleOptions = GooglePayTestFactory.Options(now: signingTime)
        let googleTokens = (0..<count).map { _ in googleFactory.mint(googleOptions).token }
        let google = try GooglePayTokenDecryptor(
            merchantKeys: [googleFactory.merchantKey(0)], recipientIds: [googleOptions.recipientId],
            rootKeys: GooglePayRootKeys(json: googleFactory.rootKeysDocument(now: signingTime)))

        // Floors, per token, medians over slices.
        let classic = ECFloorProbe()
        var classicSamples: [Double] = [], fixedSamples: [Double] = [], mbVerify: [Double] = [], mbECDH: [Double] = []
        var engineVerify: [Double] = [], engineECDH: [Double] = [], tableVerify: [Double] = []
        _ = mbFloor.tokenNanoseconds(groups: 8)
        for _ in 0..<slices {
            classicSamples.append(median((0..<512).map { _ in Double(classic.classicECTokenNanoseconds()) }))
            fixedSamples.append(median((0..<512).map { _ in Double(classic.fixedKeyECTokenNanoseconds()) }))
            let mb = mbFloor.tokenNanoseconds(groups: 64)
            mbVerify.append(mb.verify)
            mbECDH.append(mb.ecdh)
            tableVerify.append(mb.tableVerify)
            let engine = mbFloor.engineNanoseconds(tokens: 512)
            engineVerify.append(engine.verify)
            engineECDH.append(engine.ecdh)
        }

        // The engine: the same tokens through one BatchDecryptor run per slice, on and off alternately,
        // Apple EC_v1 then Google Pay ECv2.
        var rates: [String: [Double]] = [:]
        let off = try MultiBufferBackend.resolve(.off)
        for lanes in [1, 2] {
            for slice in 0..<(slices + 1) {
                for (name, backend, wallet) in [
                    ("on", on, tokens), ("off", off, tokens), ("google on", on, googleTokens),
                    ("google off", off, googleTokens),
                ] {
                    let batch = BatchDecryptor(
                        decryptor: decryptor, lanes: lanes, reference: reference, windowSize: 512, backend: backend,
                        googlePay: google)
                    var source = ArrayTokenSource(wallet)
                    var failures = 0
                    let start = DispatchTime.now().uptimeNanoseconds
                    let cpuStart = processCPUSeconds()
                    try batch.run(
                        &source,
                        deliver: { result in
                            switch result.googlePay {
                            case .success?: break
                            case .failure?: failures += 1
                            case nil: if case .failure = result.outcome { failures += 1 }
                            }
                        })
                    let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
                    let cpu = processCPUSeconds() - cpuStart
                    precondition(failures == 0, "\(failures) tokens failed with multibuffer \(name)")
                    // Slice 0 warms the chain cache and the lanes; it is not counted.
                    if slice > 0 {
                        rates["\(name) \(lanes)", default: []].append(Double(count) / seconds)
                        rates["cpu \(name) \(lanes)", default: []].append(Double(count) / cpu)
                    }
                }
            }
        }

        let us = { (ns: Double) in String(format: "%.1f µs", ns / 1000) }
        let rate = { (ns: Double) in String(format: "%.0f tokens/s", 1e9 / ns) }
        let classicToken = median(classicSamples), fixedToken = median(fixedSamples)
        let mbToken = median(mbVerify) + median(mbECDH)
        let onToken = median(tableVerify) + median(mbECDH)
        print("multi-buffer P-256 (\(on.description)); \(count) fresh EC_v1 tokens, \(slices) slices, medians")
        print("floor: EC_v1 token, OpenSSL EVP (verify + ECDH)            \(us(classicToken))  = \(rate(classicToken))")
        print("floor: EC_v1 token, fixed-key table + EC_POINT ECDH        \(us(fixedToken))  = \(rate(fixedToken))")
        print("floor: EC_v1 token, crypto_mb ×8 (verify + ECDH)          \(us(mbToken))  = \(rate(mbToken))")
        print("floor: EC_v1 token, on's P-256 (table verify ×8 + ECDH ×8) \(us(onToken))  = \(rate(onToken))")
        print(
            "  verify: fixed-key table \(us(median(engineVerify))), crypto_mb ×8 \(us(median(mbVerify))), crypto_mb fixed-base ×8 + table \(us(median(tableVerify))) per token"
        )
        print("  ECDH:   EC_POINT_mul \(us(median(engineECDH))), crypto_mb ×8 \(us(median(mbECDH))) per token")
        // The crypto_mb floor is the (mbx verify + ECDH); `on` verifies with the table lanes, whose
        // own floor (table verify + ECDH) is printed beside it.
        let floorRate = 1e9 / mbToken, onFloorRate = 1e9 / onToken
        let offFloorRate = 1e9 / fixedToken
        for lanes in [1, 2] {
            let a = median(rates["on \(lanes)"] ?? []), b = median(rates["off \(lanes)"] ?? [])
            let googleOn = rates["google on \(lanes)"] ?? [], googleOff = rates["google off \(lanes)"] ?? []
            let appleOn = rates["on \(lanes)"] ?? []
            print(
                String(
                    format: "engine, %d lane%@: on %.0f tokens/s, off %.0f tokens/s: on/off %.2f ×", lanes,
                    lanes == 1 ? "" : "s", a, b, a / b))
            if lanes == 1 {
                print(
                    String(
                        format:
                            "  on = %.2f × the crypto_mb floor (verify + ECDH ×8), %.2f × on's P-256 floor; off = %.2f × the fixed-key floor",
                        a / floorRate, a / onFloorRate, b / offFloorRate))
            }
            // Ratios per slice (each slice's runs are back to back), then their median.
            print(
                String(
                    format:
                        "  Google Pay ECv2, %d lane%@: on %.0f tokens/s, off %.0f tokens/s: on/off %.2f ×; on = %.2f × Apple EC_v1 on",
                    lanes, lanes == 1 ? "" : "s", median(googleOn), median(googleOff),
                    median(zip(googleOn, googleOff).map { $0 / $1 }), median(zip(googleOn, appleOn).map { $0 / $1 })))
            // Per second of the process's CPU time: what the machine's other loads do not change (a
            // lane descheduled by another process's build costs wall time, not CPU time).
            let cpu = { (name: String) in rates["cpu \(name) \(lanes)"] ?? [] }
            print(
                String(
                    format:
                        "  per CPU second: Apple EC_v1 on %.0f, off %.0f (on/off %.2f ×); Google Pay ECv2 on %.0f, off %.0f (on/off %.2f ×); Google on = %.2f × Apple on, Google off = %.2f × Apple off",
                    median(cpu("on")), median(cpu("off")), median(zip(cpu("on"), cpu("off")).map { $0 / $1 }),
                    median(cpu("google on")), median(cpu("google off")),
                    median(zip(cpu("google on"), cpu("google off")).map { $0 / $1 }),
                    median(zip(cpu("google on"), cpu("on")).map { $0 / $1 }),
                    median(zip(cpu("google off"), cpu("off")).map { $0 / $1 })))
        }
    }
}
