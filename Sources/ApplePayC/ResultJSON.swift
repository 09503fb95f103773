// ap_result_json: a result as `applepay-decrypt decrypt` prints it (the payment object, or the error
// object with OpenSSL's reason), written by the engine's one writer into a wiped buffer.
import ApplePayDecryption

@c(ap_result_json)
public func ap_result_json(
    _ result: OpaquePointer?, _ flags: UInt32, _ buffer: UnsafeMutablePointer<UInt8>?, _ capacity: UInt,
    _ length: UnsafeMutablePointer<UInt>?
) -> Int32 {
    guard let box = results.object(result) else { return ABICode.invalidHandle }
    guard let length, flags & ~lineMaskPAN == 0, buffer != nil || capacity == 0, let outcome = box.outcome else {
        return ABICode.invalidArgument
    }
    // An ok result's payment JSON is written already, by the same writer (ResultBox.init): copy it.
    if flags == 0, let payment = box.paymentBytes {
        length.pointee = UInt(box.paymentLength)
        guard let buffer, capacity >= UInt(box.paymentLength) else { return ABICode.bufferTooSmall }
        buffer.update(from: payment, count: box.paymentLength)
        return ABICode.ok
    }
    let projection = flags & lineMaskPAN != 0 ? ResultProjection.maskedPayment : .payment
    // The payment holds the card number: rendered into a wiped buffer, copied once into the caller's.
    let out = SensitiveBuffer(capacity: box.paymentLength + 256)
    ResultWriter.write(transactionId: nil, result: outcome.result, as: projection, into: out)
    return out.withUnsafeBytes { bytes in
        length.pointee = UInt(bytes.count)
        guard let buffer, capacity >= UInt(bytes.count) else { return ABICode.bufferTooSmall }
        buffer.update(from: bytes.bindMemory(to: UInt8.self).baseAddress!, count: bytes.count)
        return ABICode.ok
    }
}

extension ResultProjection {
    /// `--mask-pan`'s form of the CLI's decrypt output.
    fileprivate static var maskedPayment: ResultProjection {
        var projection = ResultProjection.payment
        projection.maskingPAN = true
        return projection
    }
}
