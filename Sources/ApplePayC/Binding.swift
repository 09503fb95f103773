// ap_decrypt_expecting: one token verified, decrypted and checked against the merchant's
// ApplePayPaymentRequest JSON; a request that breaks the schema is reported through ap_error.
import ApplePayDecryption

let maxPaymentRequestLength = PaymentRequest.maxJSONLength

@c(ap_decrypt_expecting)
public func ap_decrypt_expecting(
    _ decryptor: OpaquePointer?, _ token: UnsafePointer<UInt8>?, _ length: UInt,
    _ paymentRequest: UnsafePointer<UInt8>?, _ paymentRequestLength: UInt, _ reference: Int64,
    _ result: UnsafeMutablePointer<OpaquePointer?>?, _ errorOut: UnsafeMutableRawPointer?
) -> Int32 {
    guard let result else { return report(ABICode.invalidArgument, "result must not be NULL", to: errorOut) }
    result.pointee = nil
    guard let box = decryptors.object(decryptor) else {
        return report(ABICode.invalidHandle, "not a live ap_decryptor", to: errorOut)
    }
    guard let token, let count = checkedLength(token, length, limit: maxTokenLength) else {
        return report(
            ABICode.invalidArgument, "token: NULL pointer, zero length or over AP_MAX_TOKEN_LENGTH", to: errorOut)
    }
    guard let paymentRequest,
        let requestCount = checkedLength(paymentRequest, paymentRequestLength, limit: maxPaymentRequestLength)
    else {
        return report(
            ABICode.invalidArgument, "payment_request: NULL pointer, zero length or over AP_MAX_PAYMENT_REQUEST_LENGTH",
            to: errorOut)
    }
    let request: PaymentRequest
    do throws(PaymentRequest.ValidationError) {
        request = try PaymentRequest(json: UnsafeBufferPointer(start: paymentRequest, count: requestCount))
    } catch {
        return report(ABICode.invalidPaymentRequest, "\(error.member): \(error.message)", to: errorOut)
    }
    let outcome = box.wallets.decrypt(
        UnsafeBufferPointer(start: token, count: count), at: box.referenceTime(reference), expecting: request)
    let made = ResultBox(outcome, keepingRejectedId: false)
    result.pointee = results.open(made)
    return report(made.code, made.code == ABICode.ok ? "" : "see the result's message and field", to: errorOut)
}
