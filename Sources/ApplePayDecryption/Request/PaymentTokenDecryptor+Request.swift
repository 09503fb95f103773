// The request edge: one body in (a token, or the envelope with its payment request), one outcome out,
// the token parsed exactly once. The batch engine, the service, the CLI and the C ABI all come in here.
#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

extension PaymentTokenDecryptor {
    /// Verifies and decrypts one request body: a token in any accepted form, or the envelope
    /// `{"paymentToken": <token>, "paymentRequest": {…}}` whose optional payment request the decrypted
    /// token must match (as ``decrypt(_:at:expecting:)``).
    ///
    /// The body is read once, in place: the envelope, the token and the wrapper's `paymentMethod` in
    /// one walk. Never throws: a refusal is the outcome's `result`.
    public func decryptRequest(_ body: some DataProtocol, at reference: ReferenceTime = .now) -> DecryptionOutcome {
        let referenceSeconds = reference.unixSeconds
        if let outcome = body.withContiguousStorageIfAvailable({
            decryptRequest(UnsafeRawBufferPointer($0), referenceSeconds: referenceSeconds)
        }) {
            return outcome
        }
        if body.regions.count == 1, let region = body.regions.first {
            return region.withUnsafeBytes { decryptRequest($0, referenceSeconds: referenceSeconds) }
        }
        // Several regions: the reader needs one buffer. Token bytes are sealed, not secret.
        let gathered: [UInt8] = Array(body)
        return gathered.withUnsafeBytes { decryptRequest($0, referenceSeconds: referenceSeconds) }
    }

    /// Verifies and decrypts one token (raw bytes in any accepted form), then checks that it is the
    /// payment `request` asked for: `applicationData`, `currencyCode`, the amount (`total.amount`, or
    /// the token's merchant's `multiTokenContexts` entry), `merchantCapabilities` and, where the token
    /// carries `paymentMethod.network`, `supportedNetworks`.
    /// - Throws: the verification and decryption errors of ``decrypt(_:at:)-(DataProtocol,_)``, then
    ///   ``ApplePayError/Code/paymentRequestMismatch`` with `field` naming the request member.
    public func decrypt(
        _ token: some DataProtocol, at reference: ReferenceTime = .now,
        expecting request: PaymentRequest
    ) throws(ApplePayError) -> DecryptedPayment {
        let referenceSeconds = reference.unixSeconds
        func run(_ raw: UnsafeRawBufferPointer) throws(ApplePayError) -> DecryptedPayment {
            try lanes.withLane { (lane) throws(ApplePayError) in
                try withParsedToken(raw, lane: lane) { (view) throws(ApplePayError) in
                    try decrypt(view, referenceSeconds: referenceSeconds, lane: lane, expecting: request)
                }
            }
        }
        // Read in place, parsed once; only a value of several regions is gathered into one buffer.
        if let payment = try token.withContiguousBytesIfAvailable({ (raw) throws(ApplePayError) in try run(raw) }) {
            return payment
        }
        let gathered: [UInt8] = Array(token)
        return try gathered.withBytes { (raw) throws(ApplePayError) in try run(raw) }
    }

    /// The same over bytes the caller holds (read in place, not retained).
    public func decryptRequest(_ body: UnsafeRawBufferPointer, at reference: ReferenceTime = .now) -> DecryptionOutcome
    {
        decryptRequest(body, referenceSeconds: reference.unixSeconds)
    }

    func decryptRequest(_ body: UnsafeRawBufferPointer, referenceSeconds: Int64?) -> DecryptionOutcome {
        lanes.withLane { lane in decryptRequest(body, referenceSeconds: referenceSeconds, lane: lane) }
    }

    /// On a lane the caller holds (the batch engine's).
    package func decryptRequest(_ body: UnsafeRawBufferPointer, referenceSeconds: Int64?, lane: Lane)
        -> DecryptionOutcome
    {
        let envelope: RequestEnvelope
        do throws(ApplePayError) { envelope = try RequestEnvelope.read(body) } catch {
            return DecryptionOutcome(refusing: error)
        }
        return decrypt(envelope, referenceSeconds: referenceSeconds, lane: lane)
    }

    /// A body already read (the multi-buffer stage reads it to pick its path).
    func decrypt(_ envelope: RequestEnvelope, referenceSeconds: Int64?, lane: Lane) -> DecryptionOutcome {
        do throws(ApplePayError) {
            return try withParsedToken(envelope.token, lane: lane) { view -> DecryptionOutcome in
                let result = Result { () throws(ApplePayError) in
                    try decrypt(view, referenceSeconds: referenceSeconds, lane: lane, expecting: envelope.request)
                }
                // One String per token: the payment's text when it decrypted, the view's otherwise.
                let transactionId = (try? result.get())?.transactionId ?? view.transactionIdString
                return DecryptionOutcome(
                    transactionId: transactionId, merchantLabel: merchant(for: view)?.label, result: result)
            }
        } catch {
            // The token did not parse.
            return DecryptionOutcome(refusing: error)
        }
    }

    /// The whole procedure over a parsed token, then, with a payment request, the binding check. A
    /// token that fails the check is `paymentRequestMismatch` and, being a failure, claims nothing.
    package func decrypt(_ view: TokenView, referenceSeconds: Int64?, lane: Lane, expecting request: PaymentRequest?)
        throws(ApplePayError) -> DecryptedPayment
    {
        let payment = try decrypt(view, referenceSeconds: referenceSeconds, lane: lane)
        if let request {
            try request.check(payment, BindingEvidence(view: view, merchant: merchant(for: view)))
        }
        return payment
    }
}
