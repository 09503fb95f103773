// Batch items that carry their payment request: a {paymentToken, paymentRequest} envelope is decrypted, then checked.
import Foundation

extension BatchDecryptor {
    /// Whether `"paymentToken"` (quotes included) occurs in `bytes`: memchr to each quote, then a compare.
    static func mentionsPaymentToken(_ bytes: UnsafeRawBufferPointer) -> Bool {
        let marker: StaticString = "\"paymentToken\""
        let n = marker.utf8CodeUnitCount
        guard let base = bytes.baseAddress, bytes.count >= n else { return false }
        var i = 0
        while i + n <= bytes.count, let hit = memchr(base + i, 0x22, bytes.count - n + 1 - i) {
            let at = UnsafeRawPointer(hit) - base
            if memcmp(base + at, marker.utf8Start, n) == 0 { return true }
            i = at + 1
        }
        return false
    }

    /// A batch item of the form `{"paymentToken": <token>, "paymentRequest": {…}}`: the token is
    /// decrypted and checked against the request. Nil when the item is not such an envelope (then it
    /// is an ordinary token). A request that breaks the schema fails the item as `malformedToken`
    /// naming `paymentRequest.<member>`, before any decryption; a mismatched token fails as
    /// `paymentRequestMismatch`. Either way the item is a failure, so it claims nothing in the ledger.
    func boundItem(_ bytes: UnsafeRawBufferPointer, lane: Lane, referenceSeconds: Int64?) -> Slot? {
        // A cheap filter first: an ordinary token line never names this member.
        guard Self.mentionsPaymentToken(bytes) else { return nil }
        var start = 0
        if bytes.count >= 3, bytes[0] == 0xEF, bytes[1] == 0xBB, bytes[2] == 0xBF { start = 3 }
        let scan = JSONScan(bytes)
        guard let root = try? scan.document(start..<bytes.count), bytes[root] == UInt8(ascii: "{") else { return nil }
        var token: JSONMember?, request: JSONMember?, other: String?
        _ = try? scan.object(at: root, depth: 0, checkingDuplicates: false) { m in
            if scan.content(m.name, escaped: m.nameEscaped, equals: "paymentToken") { token = m }
            else if scan.content(m.name, escaped: m.nameEscaped, equals: "paymentRequest") { request = m }
            else if other == nil { other = String(decoding: scan.decoded(m.name, escaped: m.nameEscaped).prefix(64), as: UTF8.self) }
        }
        guard let token else { return nil }
        func failed(_ error: ApplePayError) -> Slot { Slot(transactionId: nil, outcome: .failure(error)) }
        if let other {
            return failed(ApplePayError(.malformedToken, "a payment-request envelope has only paymentToken and paymentRequest, not \"\(PaymentRequest.shown(other))\"",
                                        field: other))
        }
        guard let request else {
            return failed(ApplePayError(.malformedToken, "a payment-request envelope needs a paymentRequest", field: "paymentRequest"))
        }
        let paymentRequest: PaymentRequest
        do throws(PaymentRequest.ValidationError) {
            paymentRequest = try PaymentRequest(json: UnsafeRawBufferPointer(rebasing: bytes[request.value..<request.valueEnd]))
        } catch {
            let field = error.member == "$" ? "paymentRequest" : "paymentRequest.\(error.member)"
            return failed(ApplePayError(.malformedToken, "the paymentRequest is not a valid ApplePayPaymentRequest: \(error.message)", field: field))
        }
        let tokenBytes = UnsafeRawBufferPointer(rebasing: bytes[token.value..<token.valueEnd])
        do throws(ApplePayError) {
            return try decryptor.withParsedToken(tokenBytes, lane: lane) { view -> Slot in
                let outcome = Result { () throws(ApplePayError) -> DecryptedPayment in
                    let payment = try decryptor.decrypt(view, referenceSeconds: referenceSeconds, lane: lane)
                    var evidence = BindingEvidence(view: view, merchant: try? decryptor.selectMerchant(view))
                    evidence.paymentMethod = PaymentMethodFields.read(tokenBytes)
                    try paymentRequest.check(payment, evidence)
                    return payment
                }
                return Slot(transactionId: view.transactionIdString, outcome: outcome)
            }
        } catch {
            return failed(error)
        }
    }
}
