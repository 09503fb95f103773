// `mint-tokens [folder] DIRECTORY COUNT [ec|rsa] [--signed-now]`: a test root, one EC merchant and COUNT distinct tokens.
import ApplePayDecryption
import ApplePayTestSupport
import ArgumentParser
import Dispatch
import Foundation

/// Writes DIRECTORY/insecure-test-root.pem, merchant.cert.pem, merchant.key.pem, merchant.p12 (password
/// "insecure-test-password") and tokens.jsonl (one bare `paymentData` per line, each with its own PAN and
/// transaction). The C ABI's tests (Tests/CABI/run-tests.sh) rely on the merchant identifier and on the
/// payload: USD 10.00, 3DSecure, for merchant.com.example.cabi.
struct TokenFolder: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "folder",
        abstract: "A test root, one EC merchant (PEM and PKCS#12) and COUNT distinct tokens (tokens.jsonl)."
    )
    /// 2026-03-01T12:00:00Z, as in Vectors/: the C ABI's tests verify at AP_REFERENCE_SIGNING_TIME or this time.
    static let signingTime = Date(timeIntervalSince1970: 1_772_366_400)
    static let pkcs12Password = "insecure-test-password"

    @Argument(help: "The folder to write (created if missing).")
    var directory: String
    @Argument(help: "How many tokens.")
    var count: Int
    @Flag(
        help:
            "Sign the tokens now rather than at 2026-03-01T12:00:00Z (the service's load runs, which check freshness against the clock)."
    )
    var signedNow = false
    @Argument(help: "ec (default) or rsa: an RSA-2048 merchant and RSA_v1 tokens (Benchmarks/pkcs11-throughput.sh).")
    var kind: Kind = .ec

    enum Kind: String, ExpressibleByArgument { case ec, rsa }

    func validate() throws {
        guard count > 0 else { throw ValidationError("COUNT must be at least 1") }
    }

    func run() throws {
        let directory = URL(fileURLWithPath: self.directory)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let pki = TestPKI()
        let merchant = pki.makeMerchant(identifier: "merchant.com.example.cabi", kind: kind == .rsa ? .rsa : .ec)
        let factory = TestTokenFactory(pki: pki)
        func write(_ name: String, _ bytes: [UInt8]) throws {
            try bytes.withUnsafeBytes { try WholeWrite.file(atPath: directory.appendingPathComponent(name).path, $0) }
        }
        try write("insecure-test-root.pem", Array(pki.rootPEM.utf8))
        try write("merchant.cert.pem", Array(merchant.certificatePEM.utf8))
        try write("merchant.key.pem", Array(merchant.privateKeyPEM.utf8))
        try write("merchant.p12", Array(merchant.pkcs12(password: Self.pkcs12Password)))

        let signingTime = signedNow ? Date() : Self.signingTime
        // Minting signs each token; every core shares the work (a load run needs tens of thousands),
        // each writing its own slots.
        final class Lines: @unchecked Sendable { var items: [[UInt8]] = [] }
        let lines = Lines()
        lines.items = Array(repeating: [], count: count)
        lines.items.withUnsafeMutableBufferPointer { slots in
            nonisolated(unsafe) let slots = slots
            DispatchQueue.concurrentPerform(iterations: count) { i in
                let pan = "4761" + String(format: "%012d", i)
                slots[i] =
                    factory.mint(
                        payload: TestPayload.threeDSecure(pan: pan), for: merchant,
                        options: .init(signingTime: signingTime)
                    ).bytes
            }
        }
        var out = [UInt8]()
        for line in lines.items { out += line; out.append(0x0A) }
        try write("tokens.jsonl", out)
    }
}
