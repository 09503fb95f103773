// The two EC_v1 floors as plain loops, for callgrind (Benchmarks/instruction-ratio.sh): N classic
// floor tokens (EVP verify + EVP derive) and N fixed-key floor tokens (table verify + EC_POINT ECDH).
// No malloc interposer and no RSA key generation, so the instruction counts are repeatable.
import ApplePayTestSupport

@main
struct InstructionFloors {
    static func main() {
        let arguments = CommandLine.arguments.dropFirst()
        let count = arguments.first.flatMap(Int.init) ?? 2000
        // The engine's variants unless told otherwise: --affine (field inversion), --bn-inverse (BN_mod_inverse).
        let comparison: FixedKeyVerificationProbe.Comparison = arguments.contains("--affine") ? .affine : .jacobian
        let inversion: FixedKeyVerificationProbe.Inversion = arguments.contains("--bn-inverse") ? .openSSL : .limbs
        let probe = ECFloorProbe(comparison: comparison, inversion: inversion)
        var ok = true
        for _ in 0..<count { ok = probe.classicECToken() && ok }
        for _ in 0..<count { ok = probe.fixedKeyECToken() && ok }
        precondition(ok, "a floor token failed")
        print("ran \(count) classic and \(count) fixed-key floor tokens (\(comparison), \(inversion))")
    }
}
