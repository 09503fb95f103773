// libFuzzer harness for the decrypted-payment model: the input is taken as a decrypted plaintext.
@testable import ApplePayDecryption

/// The one call into the model; when DecryptedPayment's construction changes, only this adapts.
func buildPayment(from plaintext: UnsafeRawBufferPointer) {
    let secret = SensitiveBytes(capacity: plaintext.count)
    secret.write { out in
        out.copyMemory(from: plaintext)
        return plaintext.count
    }
    let key = ReplayKey([UInt8](repeating: 0, count: 16))!
    guard
        let payment = try? DecryptedPayment.build(
            plaintext: secret, version: .ecV1, transactionId: "00", signingTime: 0,
            replayIdentity: ReplayIdentity(transactionKey: key, contentKey: key))
    else { return }
    // The compact copy written from the plaintext must say exactly what the model reads, and the
    // masked one must still be JSON whose PAN hides at least half.
    let out = SensitiveBuffer()
    payment.writeJSON(into: out)
    let copy = out.withUnsafeBytes { try? JSONValue.parse($0) }
    precondition(copy == payment.json, "writeJSON disagrees with the model")
    out.removeAll()
    payment.writeJSON(into: out, maskingPAN: true)
    let masked = out.withUnsafeBytes { try? JSONValue.parse($0) }
    precondition(masked != nil, "masked output is not JSON")
    let pan = masked?["applicationPrimaryAccountNumber"]?.stringValue ?? ""
    precondition(pan.filter { $0 == "*" }.count * 2 >= pan.count, "the mask shows more than half of the PAN")
    _ = (
        payment.applicationPrimaryAccountNumber, payment.credential, payment.transactionAmount,
        payment.merchantTokenMetadata
    )
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzDecryptedPayment(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    buildPayment(from: UnsafeRawBufferPointer(start: data, count: size))
    return 0
}
