// libFuzzer harness for the decrypted-payment model: the input is taken as a decrypted plaintext.
@testable import ApplePayDecryption

/// The one call into the model; when DecryptedPayment's construction changes, only this adapts.
func buildPayment(from plaintext: UnsafeRawBufferPointer) {
    let secret = SensitiveBytes(capacity: plaintext.count)
    secret.withUnsafeMutableBytes { $0.copyMemory(from: plaintext) }
    secret.count = plaintext.count
    guard let payment = try? DecryptedPayment.build(plaintext: secret, version: .ecV1,
                                                    transactionId: "00", signingTime: 0) else { return }
    // Serialise what was read back, as the CLI does, so the writer is exercised too.
    _ = payment.json.description
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzDecryptedPayment(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    buildPayment(from: UnsafeRawBufferPointer(start: data, count: size))
    return 0
}
