// The batch engine's Google Pay path: an item of a Google Pay token's shape, when the batch has a
// Google Pay engine, is verified and decrypted by it on the lane's own contexts.

extension BatchDecryptor {
    /// The slot of a Google Pay item, or nil when the batch has no Google Pay engine or the item is
    /// not a Google Pay token (it then goes the Apple Pay way). `referenceMilliseconds` is the
    /// window's reference (nil: no expiry checks).
    func googlePaySlot(_ bytes: UnsafeRawBufferPointer, lane: Lane, referenceMilliseconds: Int64?) -> Slot? {
        guard let googlePay, GooglePayToken.hasShape(bytes) else { return nil }
        return Slot(
            googlePay: Result { () throws(ApplePayError) -> GooglePayment in
                let token = try GooglePayToken.parse(bytes)
                let message = try googlePay.open(token, referenceMilliseconds: referenceMilliseconds, lane: lane)
                return try GooglePayment.build(message)
            })
    }
}

extension Slot {
    /// A Google Pay item's slot: its payment in `googlePay`, `outcome` the Apple side's refusal.
    init(googlePay result: Result<GooglePayment, ApplePayError>) {
        switch result {
        case let .success(payment):
            self.init(
                transactionId: payment.messageId,
                outcome: .failure(
                    ApplePayError(
                        .unsupportedVersion, "a Google Pay token: its payment is the result's googlePay",
                        field: "protocolVersion")),
                googlePay: result)
        case let .failure(error):
            self.init(transactionId: nil, outcome: .failure(error), googlePay: result)
        }
    }
}
