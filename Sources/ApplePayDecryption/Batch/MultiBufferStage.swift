// The batch lanes' multi-buffer stage: up to eight items taken at once, each verified exactly as the
// engine does, their EC_v1 key agreements run in one crypto_mb call, each finished on its own.
internal import ApplePayCrypto

/// One batch lane's state for groups of eight: a sub-lane (token buffer, contexts) per item of the
/// group, the crypto_mb agreement, and the merchants' scalars in crypto_mb's format. Owned by one
/// lane, so by one thread at a time.
final class MultiBufferStage {
    /// Items per group: crypto_mb's mb8 functions take eight operations.
    static let width = 8

    private let lanes: [Lane]
    private let agreement: P256MultiBufferAgreement
    /// Z for each item, written by crypto_mb and wiped as soon as the KDF has read it.
    private let secrets: [SensitiveBytes]
    /// nil-valued merchants (keys that do not export their scalar, e.g. in an HSM) keep the OpenSSL path.
    private var scalars = ContextCache<MerchantIdentity, MerchantScalar>()
    /// Lanes whose secret crypto_mb computed in this group's call.
    private var agreed: UInt8 = 0

    private struct MerchantScalar { let scalar: P256MultiBufferScalar? }

    init(library: CryptoMBLibrary) {
        lanes = (0..<P256MultiBufferAgreement.width).map { _ in Lane() }
        agreement = P256MultiBufferAgreement(library: library)
        secrets = (0..<P256MultiBufferAgreement.width).map { _ in SensitiveBytes(capacity: 32) }
    }

    /// One group's input and where its results go.
    private struct Group {
        let engine: BatchDecryptor
        let window: BatchWindow
        let items: Range<Int>
        let referenceSeconds: Int64?
        let put: (Int, Slot) -> Void
    }

    /// Decrypts items `items` (at most eight) of `window`, handing each item's slot to `put`.
    func process(_ items: Range<Int>, of window: BatchWindow, engine: BatchDecryptor, referenceSeconds: Int64?,
                 put: (Int, Slot) -> Void) {
        precondition(items.count <= P256MultiBufferAgreement.width)
        agreed = 0
        withoutActuallyEscaping(put) { put in
            descend(0, Group(engine: engine, window: window, items: items, referenceSeconds: referenceSeconds, put: put))
        }
        // Lanes crypto_mb refused, or whose item failed after agreement, may still hold a secret.
        for secret in secrets { PaymentTokenDecryptor.wipe(secret) }
    }

    /// Item `k` of the group is parsed and checked up to key agreement, then the next items (each
    /// token's view stays valid while its frame is on the stack); after the last one, one crypto_mb
    /// call; then, on the way back, each item finishes on its own.
    private func descend(_ k: Int, _ group: Group) {
        guard k < group.items.count else {
            agreed = agreement.run()
            return
        }
        let i = group.items.lowerBound + k
        let lane = lanes[k]
        let engine = group.engine
        let read: Void? = group.window.withBytes(of: i) { bytes in
            if let bound = engine.boundItem(bytes, lane: lane, referenceSeconds: group.referenceSeconds) {
                group.put(i, bound)
                descend(k + 1, group)
                return
            }
            do throws(ApplePayError) {
                try engine.decryptor.withParsedToken(bytes, lane: lane) { view in
                    group.put(i, decrypt(view, k, lane: lane, group))
                }
            } catch {
                // The token did not parse: the body never ran.
                group.put(i, Slot(transactionId: nil, outcome: .failure(error)))
                descend(k + 1, group)
            }
        }
        if read == nil {
            group.put(i, engine.process(item: i, of: group.window, lane: lane, referenceSeconds: group.referenceSeconds))
            descend(k + 1, group)
        }
    }

    /// What an item has after the checks before key agreement.
    private enum Pending {
        /// Decided without crypto_mb (RSA_v1, or any failure): the engine's own outcome.
        case finished(DecryptedPayment)
        /// Checks passed; the key comes from crypto_mb's lane `k` (or OpenSSL if crypto_mb refused it).
        case agreeing(CMSSignedData, signingTime: Int64, MerchantIdentity, partyV: [UInt8])
        /// Checks passed; the key comes from OpenSSL (a merchant whose scalar does not export).
        case openSSL(CMSSignedData, signingTime: Int64, MerchantIdentity)
    }

    private func decrypt(_ view: TokenView, _ k: Int, lane: Lane, _ group: Group) -> Slot {
        let decryptor = group.engine.decryptor
        let pending = Result { () throws(ApplePayError) -> Pending in try prepare(view, k, lane: lane, decryptor, group.referenceSeconds) }
        descend(k + 1, group)
        let outcome = Result { () throws(ApplePayError) -> DecryptedPayment in
            OpenSSLErrors.clear()
            defer { OpenSSLErrors.clear() }
            switch try pending.get() {
            case let .finished(payment):
                return payment
            case let .agreeing(cms, signingTime, merchant, partyV):
                let key: SensitiveBytes
                if agreed & (1 << k) != 0 {
                    let secret = secrets[k]
                    secret.count = 32
                    key = AppleKDF.derive(sharedSecret: secret, partyV: partyV, digest: lane.digests.context, into: lane.keyAgreement.derivedKey)
                    PaymentTokenDecryptor.wipe(secret)
                } else {
                    // crypto_mb refused a point OpenSSL accepted: OpenSSL's verdict stands.
                    key = try decryptor.agreeKey(view, merchant: merchant, lane: lane)
                }
                return try finish(view, cms: cms, signingTime: signingTime, key: key, lane: lane, decryptor)
            case let .openSSL(cms, signingTime, merchant):
                let key = try decryptor.agreeKey(view, merchant: merchant, lane: lane)
                return try finish(view, cms: cms, signingTime: signingTime, key: key, lane: lane, decryptor)
            }
        }
        let transactionId = (try? outcome.get())?.transactionId ?? view.transactionIdString
        return Slot(transactionId: transactionId, outcome: outcome)
    }

    /// The engine's steps 1–5 in its order, and the same checks of the ephemeral key (OpenSSL decodes
    /// it: off-curve points, infinity and coordinates ≥ p are refused here, before crypto_mb sees them).
    private func prepare(_ view: TokenView, _ k: Int, lane: Lane, _ decryptor: PaymentTokenDecryptor,
                         _ referenceSeconds: Int64?) throws(ApplePayError) -> Pending {
        guard view.fields.version == .ecV1 else {
            return .finished(try decryptor.decrypt(view, referenceSeconds: referenceSeconds, lane: lane))
        }
        OpenSSLErrors.clear()
        defer { OpenSSLErrors.clear() }
        let (cms, signer) = try decryptor.resolveSigner(view[view.fields.signature])
        try decryptor.checkSignature(view, cms: cms, signer: signer, lane: lane)
        let signingTime = try decryptor.checkSigningTime(cms, signer: signer, referenceSeconds: referenceSeconds)
        let merchant = try decryptor.selectMerchant(view)
        guard merchant.keyKind == .ec, let partyV = merchant.partyV,
              let scalar = scalars.context(for: merchant, make: { MerchantScalar(scalar: merchant.key.software.flatMap(P256MultiBufferScalar.of)) })?.scalar
        else {
            // Wrong key kind, no partyV, or a scalar that stays in its key store: the engine's own path
            // (and its errors).
            return .openSSL(cms, signingTime: signingTime, merchant)
        }
        let point = view[view.fields.ephemeralPoint]
        guard lane.keyAgreement.importEphemeral(point) else {
            throw ApplePayError(.decryptionFailed, "the ephemeral public key is not a point on P-256", field: "header.ephemeralPublicKey",
                                reason: OpenSSLErrors.drain())
        }
        guard agreement.set(lane: k, scalar: scalar, peer: point, into: secrets[k].pointer) else {
            return .openSSL(cms, signingTime: signingTime, merchant)
        }
        return .agreeing(cms, signingTime: signingTime, merchant, partyV: partyV)
    }

    /// GCM and the payment, as the engine finishes a token; the key is wiped either way.
    private func finish(_ view: TokenView, cms: CMSSignedData, signingTime: Int64, key: SensitiveBytes, lane: Lane,
                        _ decryptor: PaymentTokenDecryptor) throws(ApplePayError) -> DecryptedPayment {
        defer { PaymentTokenDecryptor.wipe(key) }
        let plaintext = try decryptor.openData(view, key: key, lane: lane)
        return try DecryptedPayment.build(plaintext: plaintext, version: view.fields.version, decodedTransactionId: view[view.fields.transactionId],
                                          signingTime: signingTime, replayIdentity: decryptor.replayIdentity(view, cms: cms, lane: lane))
    }
}
