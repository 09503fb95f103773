// The binding check for Samsung Pay: a decrypted payment is the one the merchant's payment request asked
// for, in currency and amount. Each contradiction is `paymentRequestMismatch` naming the request member.

extension PaymentRequest {
    /// Checks a decrypted Samsung Pay payment against this request: `currencyCode` is the payment's
    /// `currency_code` and, unless the total is pending, `total.amount` in minor units is its `amount`.
    /// What a Samsung Pay token cannot answer is a mismatch, never a pass: a request with
    /// `applicationData` (the token carries no hash of it) or with `multiTokenContexts` (the token
    /// names no merchant), or one whose `merchantCapabilities` lack `supports3DS` (the payment is a 3-D
    /// Secure cryptogram). `supportedNetworks` is not checked: `card_brand` is not encrypted.
    func check(_ payment: SamsungPayment) throws(ApplePayError) {
        func mismatch(_ field: String, _ message: String) -> ApplePayError {
            ApplePayError(.paymentRequestMismatch, message, field: field)
        }
        guard applicationDataBytes == nil else {
            throw mismatch(
                "applicationData", "the payment request has applicationData, which a Samsung Pay token does not carry")
        }
        // A Samsung Pay payment is a 3-D Secure cryptogram (its 3DS.type "S"): a merchant that takes no
        // 3-D Secure payments did not ask for it. Networks are not checked: card_brand lies outside the
        // ciphertext, where anyone may rewrite it.
        guard merchantCapabilities.contains(.supports3DS) else {
            throw mismatch(
                "merchantCapabilities",
                "a Samsung Pay payment is a 3-D Secure cryptogram; the payment request's merchantCapabilities lack supports3DS"
            )
        }
        guard multiTokenContexts.isEmpty else {
            throw mismatch(
                "multiTokenContexts",
                "the payment request has multiTokenContexts; a Samsung Pay token names no merchant to match them")
        }
        let currency = payment.currencyCode
        guard currency == currencyCode else {
            throw mismatch(
                "currencyCode",
                "the token is in \(Self.shown(currency)); the payment request is in \(currencyCode)")
        }
        guard case let .exact(amount, field) = amountExpectation else { return }
        guard let tokenMinor = Self.canonicalDigits(payment.amount) else {
            throw mismatch(field, "the decrypted payment has no plain amount in minor units")
        }
        switch Self.minorUnits(amount, exponent: self.currency.minorUnitExponent) {
        case let .success(requested):
            guard requested == tokenMinor else {
                throw mismatch(
                    field,
                    "the token is for \(tokenMinor) minor units of \(currencyCode); the payment request asks for \(amount) (\(requested))"
                )
            }
        case let .failure(problem):
            throw mismatch(
                field,
                "the payment request's amount \(amount) \(currencyCode) \(problem.rawValue); the token is for \(tokenMinor) minor units"
            )
        }
    }
}
