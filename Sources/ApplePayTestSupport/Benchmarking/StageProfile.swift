// Times each stage of the pipeline on one token, so an optimisation has a target. Uses the
// very steps `decrypt` composes, one at a time, each repeated.
import ApplePayCrypto
import ApplePayDecryption
import Foundation

/// The cost of one pipeline stage, from ``ApplePayDecryption/PaymentTokenDecryptor/stageProfile(_:at:iterations:allocationCounter:)``.
public struct StageTiming: Sendable, Codable {
    /// The stage's name.
    public let stage: String
    /// Mean wall-clock microseconds per call.
    public let microseconds: Double
    /// Mean heap allocations per call, when an allocation counter was supplied.
    public let allocations: Double?
}

extension PaymentTokenDecryptor {
    /// Mean time per stage over `iterations` runs of each stage on `token` (which must decrypt).
    /// Stages: parse, chain/CMS (cache hit), signature (attributes and content digests + verify),
    /// key agreement (point import + ECDH + KDF, or RSA unwrap), GCM, payload model.
    /// - Parameters:
    ///   - token: a token that decrypts with this engine.
    ///   - reference: the reference time it decrypts at.
    ///   - iterations: runs of each stage.
    ///   - allocationCounter: a monotonic count of heap allocations (the benchmark passes its
    ///     malloc interposer's); each stage then also reports allocations per call.
    /// - Returns: one timing per stage, in pipeline order.
    public func stageProfile(
        _ token: [UInt8], at reference: ReferenceTime, iterations: Int = 2000,
        allocationCounter: (() -> Int)? = nil
    ) throws -> [StageTiming] {
        _ = try decrypt(token, at: reference)  // warm the chain cache and the lane contexts; must succeed
        let lane = Lane()
        var allocations: Double? = nil
        func time<E: Error>(_ body: () throws(E) -> Void) throws(E) -> Double {
            try body()  // first call outside the measurement: lazily created contexts
            let before = allocationCounter?()
            let start = DispatchTime.now().uptimeNanoseconds
            for _ in 0..<iterations { try body() }
            let elapsed = Double(DispatchTime.now().uptimeNanoseconds - start) / 1000 / Double(iterations)
            if let before, let after = allocationCounter?() {
                allocations = Double(after - before) / Double(iterations)
            }
            return elapsed
        }
        return try token.withUnsafeBytes { raw throws -> [StageTiming] in
            var timings: [StageTiming] = []
            timings.append(
                StageTiming(
                    stage: "parse",
                    microseconds: try time { () throws(ApplePayError) in
                        _ = try withParsedToken(raw, lane: lane) { _ in 0 }
                    }, allocations: allocations))
            let rest = try withParsedToken(raw, lane: lane) { (view) throws(ApplePayError) -> [StageTiming] in
                let signature = view[view.fields.signature]
                var rest: [StageTiming] = []
                let (cms, signer) = try resolveSigner(signature)
                rest.append(
                    StageTiming(
                        stage: "chain/CMS",
                        microseconds: try time { () throws(ApplePayError) in _ = try resolveSigner(signature) },
                        allocations: allocations))
                rest.append(
                    StageTiming(
                        stage: "signature",
                        microseconds: try time { () throws(ApplePayError) in
                            try checkSignature(view, cms: cms, signer: signer, lane: lane)
                        }, allocations: allocations))
                let signingTime = try checkSigningTime(cms, signer: signer, referenceSeconds: reference.unixSeconds)
                let merchant = try selectMerchant(view)
                let key = try agreeKey(view, merchant: merchant, lane: lane)
                rest.append(
                    StageTiming(
                        stage: "key agreement",
                        microseconds: try time { () throws(ApplePayError) in
                            _ = try agreeKey(view, merchant: merchant, lane: lane)
                        }, allocations: allocations))
                if view.fields.version == .ecV1 {
                    // Part of key agreement, shown alone: decoding the ephemeral point into the lane's EC_POINT.
                    rest.append(
                        StageTiming(
                            stage: "  of which point import",
                            microseconds: time {
                                _ = lane.keyAgreement.importEphemeral(view[view.fields.ephemeralPoint])
                            }, allocations: allocations))
                }
                let plaintext = try openData(view, key: key, lane: lane)
                rest.append(
                    StageTiming(
                        stage: "GCM",
                        microseconds: try time { () throws(ApplePayError) in
                            _ = try openData(view, key: key, lane: lane)
                        }, allocations: allocations))
                rest.append(
                    StageTiming(
                        stage: "payload",
                        microseconds: try time { () throws(ApplePayError) in
                            _ = try DecryptedPayment.build(
                                plaintext: plaintext, version: view.fields.version,
                                decodedTransactionId: view[view.fields.transactionId], signingTime: signingTime,
                                replayIdentity: replayIdentity(view, cms: cms, lane: lane))
                        }, allocations: allocations))
                return rest
            }
            return timings + rest
        }
    }
}
