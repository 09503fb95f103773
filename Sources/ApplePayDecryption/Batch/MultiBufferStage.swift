// The batch lanes' multi-buffer stage: up to eight items taken at once, checked by the engine's rules,
// their EC_v1 (and Google Pay) signature checks run together (u1·G in one crypto_mb call, u2·Q on the
// signer's table) and their key agreements in one crypto_mb call, each item finished on its own.
internal import ApplePayCrypto

/// One batch lane's state for groups of eight: a sub-lane (token buffer, contexts) per item of the
/// group, the group's verification and agreement, and the merchants' scalars in crypto_mb's format.
/// Owned by one lane, so by one thread at a time.
final class MultiBufferStage {
    /// Items per group: crypto_mb's mb8 functions take eight operations.
    static let width = 8

    // Not private: the Google Pay items' steps (MultiBufferStage+GooglePay.swift) use them too.
    private let lanes: [Lane]
    let agreement: P256MultiBufferAgreement
    /// Nil when the library has no `mbx_nistp256_ecpublic_key_mb8`: signatures keep the engine's verifier.
    let verification: P256MultiBufferTableVerification?
    /// Z for each item, written by crypto_mb and wiped as soon as the KDF has read it.
    let secrets: [SensitiveBytes]
    /// nil-valued merchants (keys that do not export their scalar, e.g. in an HSM) keep the OpenSSL path.
    var scalars = ContextCache<MerchantIdentity, MerchantScalar>()
    /// Lanes whose secret crypto_mb computed in this group's call.
    var agreed: UInt8 = 0
    /// Lanes whose signature the group's verification accepted.
    var verified: UInt8 = 0
    /// Google Pay items whose message signature this stage's group verification accepted, and whose
    /// message opened with the key of the group's agreement: tests read them to see that Google Pay
    /// items take the group's calls (a count, never a verdict).
    var googlePayLanes = (verified: 0, agreed: 0)

    struct MerchantScalar { let scalar: P256MultiBufferScalar? }

    init(library: CryptoMBLibrary) {
        lanes = (0..<P256MultiBufferAgreement.width).map { _ in Lane() }
        agreement = P256MultiBufferAgreement(library: library)
        verification = P256MultiBufferTableVerification(library: library)
        secrets = (0..<P256MultiBufferAgreement.width).map { _ in SensitiveBytes(capacity: 32) }
    }

    /// One group's input and where its results go.
    struct Group {
        let engine: BatchDecryptor
        let window: BatchWindow
        let items: Range<Int>
        let referenceSeconds: Int64?
        /// The same instant in milliseconds (Google Pay's expirations).
        let referenceMilliseconds: Int64?
        let put: (Int, consuming Slot) -> Void
    }

    /// Decrypts items `items` (at most eight) of `window`, handing each item's slot to `put`.
    func process(
        _ items: Range<Int>, of window: BatchWindow, engine: BatchDecryptor, referenceSeconds: Int64?,
        referenceMilliseconds: Int64?, put: (Int, consuming Slot) -> Void
    ) {
        precondition(items.count <= P256MultiBufferAgreement.width)
        agreed = 0
        verified = 0
        withoutActuallyEscaping(put) { put in
            descend(
                0,
                Group(
                    engine: engine, window: window, items: items, referenceSeconds: referenceSeconds,
                    referenceMilliseconds: referenceMilliseconds, put: put))
        }
        // Lanes crypto_mb refused, or whose item failed after agreement, may still hold a secret.
        for secret in secrets { secret.wipe() }
    }

    /// Item `k` of the group is parsed and checked up to key agreement, then the next items (each
    /// token's view stays valid while its frame is on the stack); after the last one, the group's
    /// verification (one crypto_mb fixed-base call) and one crypto_mb ECDH call; then, on the way back,
    /// each item finishes on its own.
    func descend(_ k: Int, _ group: Group) {
        guard k < group.items.count else {
            verified = verification?.run() ?? 0
            agreed = agreement.run()
            return
        }
        let i = group.items.lowerBound + k
        let lane = lanes[k]
        let engine = group.engine
        let read: Void? = group.window.withBytes(of: i) { bytes in
            // The front door's dispatch; this stage only schedules each wallet's steps.
            switch engine.wallets.route(bytes) {
            case let .refused(outcome):
                group.put(i, Slot(outcome))
                descend(k + 1, group)
            case .samsungPay:
                // One RSA private-key operation: nothing for crypto_mb; the front door's own path.
                group.put(
                    i,
                    Slot(
                        engine.wallets.decrypt(
                            bytes, referenceSeconds: group.referenceSeconds,
                            referenceMilliseconds: group.referenceMilliseconds, lane: lane)))
                descend(k + 1, group)
            case let .googlePay(token, googlePay):
                // A Google Pay token joins the group's verification and agreement the same way.
                group.put(i, decryptGooglePay(token, k, lane: lane, googlePay, group))
            case let .applePay(envelope) where envelope.request != nil:
                // An envelope (a token with its payment request) takes the engine's own path.
                let outcome = engine.decryptor.decrypt(envelope, referenceSeconds: group.referenceSeconds, lane: lane)
                group.put(i, Slot(outcome.walletOutcome))
                descend(k + 1, group)
            case let .applePay(envelope):
                do throws(ApplePayError) {
                    try engine.decryptor.withParsedToken(envelope.token, lane: lane) { view in
                        group.put(i, decrypt(view, k, lane: lane, group))
                    }
                } catch {
                    // The token did not parse: the body never ran.
                    group.put(i, Slot(WalletOutcome(refusing: error)))
                    descend(k + 1, group)
                }
            }
        }
        if read == nil {
            group.put(
                i,
                engine.process(
                    item: i, of: group.window, lane: lane, referenceSeconds: group.referenceSeconds,
                    referenceMilliseconds: group.referenceMilliseconds))
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

    /// An item before the group's calls: its signature's verdict, when the group's lane gives it, and
    /// what the engine's later steps gave.
    private struct Prepared {
        /// Set when the signature is in the group's verification lane: the item's own verdict comes
        /// from that lane, and a lane the group refuses is checked again by the engine, whose verdict
        /// (and error) stands.
        var deferredSignature: (CMSSignedData, CachedSigner)?
        /// The steps after the signature, run as if it verified; they count only once it has.
        var rest: Result<Pending, ApplePayError>
    }

    private func decrypt(_ view: TokenView, _ k: Int, lane: Lane, _ group: Group) -> Slot {
        let decryptor = group.engine.decryptor
        let prepared = prepare(view, k, lane: lane, decryptor, group.referenceSeconds)
        descend(k + 1, group)
        let outcome = Result { () throws(ApplePayError) -> DecryptedPayment in
            OpenSSLErrors.clear()
            defer { OpenSSLErrors.clear() }
            if case let (cms, signer)? = prepared.deferredSignature, verified & (1 << k) == 0 {
                // The group did not verify it: the engine's own check decides, with the engine's error;
                // if it accepts what the group refused, the item goes on as the engine's would.
                try decryptor.checkSignature(view, cms: cms, signer: signer, lane: lane)
            }
            switch try prepared.rest.get() {
            case let .finished(payment):
                return payment
            case let .agreeing(cms, signingTime, merchant, partyV):
                let key: SensitiveBytes
                if agreed & (1 << k) != 0 {
                    let secret = secrets[k]
                    secret.adoptWritten(32)
                    key = AppleKDF.derive(
                        sharedSecret: secret, partyV: partyV, digest: lane.digests.context,
                        into: lane.keyAgreement.derivedKey)
                    secret.wipe()
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
        // The payment's text when it decrypted, the view's otherwise (read in place: `try? get()`
        // copied the payment, with a retain and a release, to read one property).
        let transactionId: String
        switch outcome {
        case let .success(payment): transactionId = payment.transactionId
        case .failure: transactionId = view.transactionIdString
        }
        return Slot(
            WalletOutcome(wallet: .applePay, transactionId: transactionId, result: outcome.map { .applePay($0) }))
    }

    /// The engine's steps 1–5 in its order, and the same checks of the ephemeral key (OpenSSL decodes
    /// it: off-curve points, infinity and coordinates ≥ p are refused here, before crypto_mb sees them).
    /// A signature the group verifies is only set in its lane here; the steps after it run at once, as
    /// if it verified (an item whose signature fails gets the signature's error, whatever they gave).
    private func prepare(
        _ view: TokenView, _ k: Int, lane: Lane, _ decryptor: PaymentTokenDecryptor,
        _ referenceSeconds: Int64?
    ) -> Prepared {
        OpenSSLErrors.clear()
        defer { OpenSSLErrors.clear() }
        var deferred: (CMSSignedData, CachedSigner)? = nil
        let rest = Result { () throws(ApplePayError) -> Pending in
            guard view.fields.version == .ecV1 else {
                return .finished(try decryptor.decrypt(view, referenceSeconds: referenceSeconds, lane: lane))
            }
            let (cms, signer) = try decryptor.resolveSigner(view[view.fields.signature])
            if try setSignature(view, k, cms: cms, signer: signer, lane: lane, decryptor) {
                deferred = (cms, signer)
                try decryptor.checkSignedContent(view, cms: cms, signer: signer, lane: lane)
            } else {
                try decryptor.checkSignature(view, cms: cms, signer: signer, lane: lane)
            }
            let signingTime = try decryptor.checkSigningTime(cms, signer: signer, referenceSeconds: referenceSeconds)
            let merchant = try decryptor.selectMerchant(view)
            guard merchant.keyKind == .ec, let partyV = merchant.partyV,
                let scalar = scalars.context(
                    for: merchant,
                    make: { MerchantScalar(scalar: merchant.key.software.flatMap(P256MultiBufferScalar.of)) })?.scalar
            else {
                // Wrong key kind, no partyV, or a scalar that stays in its key store: the engine's own path
                // (and its errors).
                return .openSSL(cms, signingTime: signingTime, merchant)
            }
            let point = view[view.fields.ephemeralPoint]
            guard lane.keyAgreement.importEphemeral(point) else {
                throw ApplePayError(
                    .decryptionFailed, "the ephemeral public key is not a point on P-256",
                    field: "header.ephemeralPublicKey",
                    reason: OpenSSLErrors.drain())
            }
            guard agreement.set(lane: k, scalar: scalar, peer: point, into: secrets[k].deferredWriteTarget) else {
                return .openSSL(cms, signingTime: signingTime, merchant)
            }
            return .agreeing(cms, signingTime: signingTime, merchant, partyV: partyV)
        }
        return Prepared(deferredSignature: deferred, rest: rest)
    }

    /// Puts the token's signature in the group's verification lane `k` when the engine would check it
    /// with a fixed-key table (a P-256 leaf whose chain verified): u1·G then comes from crypto_mb's
    /// fixed-base lanes and u2·Q from the same table. The signature algorithm is checked and the signed
    /// attributes digested as the engine does, the signature read by the engine's DER and range rules.
    /// False when the engine's own check is to run now: another signer, no fixed-base call in this
    /// crypto_mb, or a signature those rules refuse (the engine's check then throws its error).
    private func setSignature(
        _ view: TokenView, _ k: Int, cms: CMSSignedData, signer: CachedSigner, lane: Lane,
        _ decryptor: PaymentTokenDecryptor
    ) throws(ApplePayError) -> Bool {
        guard let verification, signer.isTrusted, let table = signer.fixedKeyTable else { return false }
        try decryptor.checkSignatureAlgorithm(cms, signer: signer)
        let signatureBytes = view[view.fields.signature]
        return lane.digests.withScratch { attributesDigest, _ in
            decryptor.signedAttributesDigest(view, cms: cms, lane: lane, into: attributesDigest.baseAddress!)
            return verification.set(
                lane: k, signature: UnsafeRawBufferPointer(rebasing: signatureBytes[cms.signature]),
                digest: UnsafeRawBufferPointer(attributesDigest), table: table)
        }
    }

    /// GCM and the payment, as the engine finishes a token; the key is wiped either way.
    private func finish(
        _ view: TokenView, cms: CMSSignedData, signingTime: Int64, key: SensitiveBytes, lane: Lane,
        _ decryptor: PaymentTokenDecryptor
    ) throws(ApplePayError) -> DecryptedPayment {
        defer { key.wipe() }
        let plaintext = try decryptor.openData(view, key: key, lane: lane)
        return try DecryptedPayment.build(
            plaintext: plaintext, version: view.fields.version, decodedTransactionId: view[view.fields.transactionId],
            signingTime: signingTime, replayIdentity: decryptor.replayIdentity(view, cms: cms, lane: lane))
    }
}
