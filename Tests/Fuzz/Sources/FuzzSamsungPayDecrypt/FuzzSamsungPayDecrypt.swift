// libFuzzer harness for the whole Samsung Pay decrypt: one engine, built once from the merchant keys in
// the folder $APPLEPAY_FUZZ_SAMSUNG_ENGINE (run-fuzzers.sh writes it from the shared Samsung vectors and
// the factory's keys: merchant_key_*.pem), then every input decrypted against it (the key by kid, RSA1_5
// with implicit rejection, AES-128-GCM, the payment) with no freshness check, so that the fuzzer reaches
// the payment, and its result written by the one writer in every shape.
import ApplePayDecryption
import Foundation

enum Engine {
    static let decryptor: SamsungPayTokenDecryptor = {
        guard let path = ProcessInfo.processInfo.environment["APPLEPAY_FUZZ_SAMSUNG_ENGINE"] else {
            fatalError("set APPLEPAY_FUZZ_SAMSUNG_ENGINE to the folder run-fuzzers.sh writes (see make-seeds.py)")
        }
        do {
            let files = try FileManager.default.contentsOfDirectory(atPath: path).sorted()
            let keys = try files.filter { $0.hasPrefix("merchant_key") && $0.hasSuffix(".pem") }.map {
                try SamsungPayMerchantKey(privateKeyFile: path + "/" + $0)
            }
            return try SamsungPayTokenDecryptor(merchantKeys: keys)
        } catch {
            fatalError("cannot build the Samsung Pay engine from \(path): \(error)")
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
public func fuzzSamsungPayDecrypt(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = UnsafeRawBufferPointer(start: data, count: size)
    let result: Result<SamsungPayment, ApplePayError>
    do throws(ApplePayError) {
        result = .success(try Engine.decryptor.decrypt(SamsungPayToken.parse(bytes), at: .signingTime))
    } catch {
        result = .failure(error)
    }
    for projection in [
        ResultProjection.payment, .response, .line(index: 7, source: "fuzz", sourceLine: 3, maskingPAN: true),
    ] {
        written.removeAll()
        ResultWriter.write(transactionId: nil, samsungPay: result, as: projection, into: written)
    }
    return 0
}
