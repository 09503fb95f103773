// libFuzzer harness for the whole Google Pay decrypt: one engine, built once from the folder
// $APPLEPAY_FUZZ_GOOGLE_ENGINE (run-fuzzers.sh writes it from the shared Google vectors and the
// factory's minted tokens: root_keys.json, merchant_key_*.pem, recipients.txt), then every input
// decrypted against it (every protocol version is accepted) and no expiry checked (so that the fuzzer
// reaches the signatures, the key agreement and the message), and its result written by the one
// writer in every shape.
import ApplePayDecryption
import Foundation

enum Engine {
    static let folder: URL = {
        guard let path = ProcessInfo.processInfo.environment["APPLEPAY_FUZZ_GOOGLE_ENGINE"] else {
            fatalError("set APPLEPAY_FUZZ_GOOGLE_ENGINE to the engine folder run-fuzzers.sh writes (see make-seeds.py)")
        }
        return URL(fileURLWithPath: path)
    }()

    static let decryptor: GooglePayTokenDecryptor = {
        do {
            let files = try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted()
            let keys = try files.filter { $0.hasPrefix("merchant_key") && $0.hasSuffix(".pem") }.map {
                try GooglePayMerchantKey(privateKeyFile: folder.appendingPathComponent($0).path)
            }
            let recipients = try String(contentsOf: folder.appendingPathComponent("recipients.txt"), encoding: .utf8)
                .split(separator: "\n").map(String.init)
            return try GooglePayTokenDecryptor(
                merchantKeys: keys, recipientIds: recipients,
                rootKeys: GooglePayRootKeys(contentsOfFile: folder.appendingPathComponent("root_keys.json").path),
                intermediateKeyCacheLimit: 8,
                // Every version, so that the fuzzer reaches each one's checks past the allow-list.
                protocolVersions: Set(GooglePayToken.ProtocolVersion.allCases))
        } catch {
            fatalError("cannot build the Google Pay engine from \(folder.path): \(error)")
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

nonisolated(unsafe) let written = SensitiveBuffer()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzGooglePayDecrypt(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = UnsafeRawBufferPointer(start: data, count: size)
    let result: Result<GooglePayment, ApplePayError>
    do throws(ApplePayError) {
        result = .success(try Engine.decryptor.decrypt(GooglePayToken.parse(bytes), at: .signingTime))
    } catch {
        result = .failure(error)
    }
    for projection in [
        ResultProjection.payment, .response, .line(index: 7, source: "fuzz", sourceLine: 3, maskingPAN: true),
    ] {
        written.removeAll()
        ResultWriter.write(
            transactionId: nil, result: result.map(WalletPayment.googlePay), as: projection, into: written)
    }
    return 0
}
