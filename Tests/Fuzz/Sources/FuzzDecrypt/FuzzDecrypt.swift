// libFuzzer harness for the whole decrypt: one decryptor with the bundled Vectors/ merchants and
// test root, built once, then every input decrypted against it at its own signing time, twice: as a
// token (`decrypt`) and as a request body through the request edge (`decryptRequest`: a token, or an
// envelope with its payment request), whose outcome the one writer then writes in every shape.
import ApplePayDecryption
import Foundation

enum Engine {
    /// Vectors/ of this checkout (Tests/Fuzz/Sources/FuzzDecrypt/ is four levels below the root),
    /// or $APPLEPAY_VECTORS when the binary runs elsewhere.
    static let vectors: URL = {
        if let override = ProcessInfo.processInfo.environment["APPLEPAY_VECTORS"] {
            return URL(fileURLWithPath: override)
        }
        var root = URL(fileURLWithPath: #filePath)
        for _ in 0..<5 { root.deleteLastPathComponent() }
        return root.appendingPathComponent("Vectors")
    }()

    static func file(_ relative: String) -> [UInt8] {
        guard let data = FileManager.default.contents(atPath: vectors.appendingPathComponent(relative).path) else {
            fatalError("cannot read \(relative) under \(vectors.path)")
        }
        return [UInt8](data)
    }

    // The chain cache inside is bounded (entries), so the state kept across inputs is bounded too.
    static let decryptor: PaymentTokenDecryptor = {
        do {
            let merchants = try [("ec.cert.pem", "ec.key.pem"), ("rsa.cert.pem", "rsa.key.pem")].map {
                try MerchantIdentity(certificate: file("merchants/" + $0.0), privateKey: file("merchants/" + $0.1))
            }
            return try PaymentTokenDecryptor(
                merchants: merchants,
                trustAnchor: .insecureTestingOnlyRoot(pem: file("trust/test-root.pem")))
        } catch {
            fatalError("cannot build the decryptor from \(vectors.path): \(error)")
        }
    }()
}

@_cdecl("LLVMFuzzerInitialize")
public func fuzzInitialize(
    _ argc: UnsafeMutablePointer<CInt>?,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>?
) -> CInt {
    _ = Engine.decryptor  // built before the first input, so its allocations are not charged to one
    return 0
}

/// The writer's output, reused from input to input.
nonisolated(unsafe) let written = SensitiveBuffer()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzDecrypt(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    _ = try? Engine.decryptor.decrypt(Array(UnsafeBufferPointer(start: data, count: size)), at: .signingTime)
    let outcome = Engine.decryptor.decryptRequest(UnsafeRawBufferPointer(start: data, count: size), at: .signingTime)
    for projection in [
        ResultProjection.payment, .response, .line(index: 7, source: "fuzz", sourceLine: 3, maskingPAN: true),
    ] {
        written.removeAll()
        outcome.write(projection, into: written)
    }
    return 0
}
