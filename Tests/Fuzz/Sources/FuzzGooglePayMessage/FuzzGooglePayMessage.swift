// libFuzzer harness for the decrypted Google Pay message: the input is taken as the plaintext just
// opened (its messageId and messageExpiration read, then the payment model), and a payment is written
// by the one writer, whole and masked, in every shape; the copy must be JSON, the mask must hold.
@testable import ApplePayDecryption

nonisolated(unsafe) let written = SensitiveBuffer()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzGooglePayMessage(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard size > 0, let data else { return 0 }
    // The first byte chooses the version (ECv2 payments must carry messageExpiration, ECv1 need not).
    let version = GooglePayToken.ProtocolVersion.allCases[Int(data[0]) % 3]
    let plaintext = UnsafeRawBufferPointer(start: data + 1, count: size - 1)
    let secret = SensitiveBytes(capacity: plaintext.count)
    secret.write { out in
        out.copyMemory(from: plaintext)
        return plaintext.count
    }
    guard let fields = try? GooglePayMessage.readFields(secret) else { return 0 }
    let key = ReplayKey([UInt8](repeating: 0, count: 16))!
    let message = GooglePayMessage(
        protocolVersion: version, recipientId: "merchant:12345", plaintext: secret, messageId: fields.messageId,
        messageExpiration: fields.messageExpiration,
        replayIdentity: ReplayIdentity(transactionKey: key, contentKey: key))
    guard let payment = try? GooglePayment.build(message) else { return 0 }
    written.removeAll()
    payment.writeJSON(into: written)
    let copy = written.withUnsafeBytes { try? JSONValue.parse($0) }
    precondition(copy == payment.json, "writeJSON disagrees with the message")
    written.removeAll()
    payment.writeJSON(into: written, maskingPAN: true)
    let masked = written.withUnsafeBytes { try? JSONValue.parse($0) }
    precondition(masked != nil, "the masked output is not JSON")
    for name in ["pan", "dpan"] {
        let pan = masked?["paymentMethodDetails"]?[name]?.stringValue ?? ""
        precondition(pan.filter { $0 == "*" }.count * 2 >= pan.count, "the mask shows more than half of the PAN")
    }
    for projection in [
        ResultProjection.payment, .response, .line(index: 7, source: "fuzz", sourceLine: 3, maskingPAN: true),
    ] {
        written.removeAll()
        ResultWriter.write(
            transactionId: nil, result: .success(WalletPayment.googlePay(payment)), as: projection, into: written)
        precondition(written.withUnsafeBytes { (try? JSONValue.parse($0)) != nil }, "a written result is not JSON")
    }
    _ = (
        payment.description, payment.pan, payment.maskedPAN, payment.cryptogram, payment.eciIndicator,
        payment.expirationMonth, payment.expirationYear, payment.authMethod, payment.gatewayMerchantId,
    )
    return 0
}
