// Mints a directory of factory tokens for the C ABI's binding tests and benchmark: a test root,
// one EC merchant (PEM and PKCS#12, password
// "insecure-test-password") and N distinct tokens (one per line). Usage: mint-tokens DIRECTORY COUNT [rsa]
// (rsa: an RSA-2048 merchant and RSA_v1 tokens, for Benchmarks/pkcs11-throughput.sh)
import ApplePayDecryption
import ApplePayTestSupport
import Dispatch
import Foundation

@main
struct MintTokens {
    /// 2026-03-01T12:00:00Z, as in Vectors/: tests verify at AP_REFERENCE_SIGNING_TIME or this time.
    static let signingTime = Date(timeIntervalSince1970: 1_772_366_400)
    static let pkcs12Password = "insecure-test-password"

    static func main() throws {
        let arguments = CommandLine.arguments
        guard arguments.count == 3 || (arguments.count == 4 && arguments[3] == "rsa"), let count = Int(arguments[2]), count > 0 else {
            FileHandle.standardError.write(Data("usage: mint-tokens DIRECTORY COUNT [rsa]\n".utf8))
            exit(2)
        }
        let directory = URL(fileURLWithPath: arguments[1])
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let pki = TestPKI()
        let merchant = pki.makeMerchant(identifier: "merchant.com.example.cabi", kind: arguments.count == 4 ? .rsa : .ec)
        let factory = TestTokenFactory(pki: pki)
        try Data(pki.rootPEM.utf8).write(to: directory.appendingPathComponent("insecure-test-root.pem"))
        try Data(merchant.certificatePEM.utf8).write(to: directory.appendingPathComponent("merchant.cert.pem"))
        try Data(merchant.privateKeyPEM.utf8).write(to: directory.appendingPathComponent("merchant.key.pem"))
        try Data(merchant.pkcs12(password: pkcs12Password)).write(to: directory.appendingPathComponent("merchant.p12"))

        // Minting signs each token; both cores share the work, each writing its own slots.
        final class Lines: @unchecked Sendable { var items: [[UInt8]] = [] }
        let lines = Lines()
        lines.items = Array(repeating: [], count: count)
        lines.items.withUnsafeMutableBufferPointer { slots in
            nonisolated(unsafe) let slots = slots
            DispatchQueue.concurrentPerform(iterations: count) { i in
                let pan = "4761" + String(format: "%012d", i)
                slots[i] = factory.mint(payload: TestPayload.threeDSecure(pan: pan), for: merchant,
                                        options: .init(signingTime: signingTime)).bytes
            }
        }
        var out = [UInt8]()
        for line in lines.items { out += line; out.append(0x0A) }
        try Data(out).write(to: directory.appendingPathComponent("tokens.jsonl"))
    }
}
