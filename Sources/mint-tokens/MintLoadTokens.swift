// Mints unique tokens (signed now) and their keys for the service load run: DIR/root.pem,
// DIR/merchant.cert.pem, DIR/merchant.key.pem, DIR/tokens.jsonl. Usage: mint-load-tokens DIR COUNT
import ApplePayDecryption
import ApplePayTestSupport
import Foundation

@main
struct MintLoadTokens {
    static func main() throws {
        let arguments = CommandLine.arguments.dropFirst()
        guard arguments.count == 2, let count = Int(arguments.last!), count > 0 else {
            FileHandle.standardError.write(Data("usage: mint-load-tokens DIR COUNT\n".utf8))
            exit(2)
        }
        let directory = URL(fileURLWithPath: arguments.first!)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let pki = TestPKI()
        let merchant = pki.makeMerchant(identifier: "merchant.com.example.load")
        try Data(pki.rootPEM.utf8).write(to: directory.appendingPathComponent("root.pem"))
        try Data(merchant.certificatePEM.utf8).write(to: directory.appendingPathComponent("merchant.cert.pem"))
        try Data(merchant.privateKeyPEM.utf8).write(to: directory.appendingPathComponent("merchant.key.pem"))
        let factory = TestTokenFactory(pki: pki)
        let now = Date()
        // Minted on every core: a load run needs tens of thousands.
        let lanes = ProcessInfo.processInfo.activeProcessorCount
        let lines = UnsafeMutableBufferPointer<String>.allocate(capacity: count)
        lines.initialize(repeating: "")
        nonisolated(unsafe) let shared = lines
        DispatchQueue.concurrentPerform(iterations: lanes) { lane in
            for i in stride(from: lane, to: count, by: lanes) {
                let minted = factory.mint(payload: TestPayload.threeDSecure(), for: merchant, options: .init(signingTime: now))
                shared[i] = minted.paymentData.description
            }
        }
        let text = lines.joined(separator: "\n") + "\n"
        lines.deinitialize()
        lines.deallocate()
        try Data(text.utf8).write(to: directory.appendingPathComponent("tokens.jsonl"))
    }
}
