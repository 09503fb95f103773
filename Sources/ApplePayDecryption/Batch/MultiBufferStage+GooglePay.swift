// A Google Pay token in a multi-buffer group: checked up to its message signature as the engine
// checks it, the signature in the group's table verification, the ECDH with the first merchant key in
// the group's crypto_mb agreement, then HKDF, the tag, AES-CTR and the payment on its own; whatever
// crypto_mb refuses, and every failure, goes back to the engine's own steps, whose verdict stands.
internal import ApplePayCrypto

extension MultiBufferStage {
    /// How a Google Pay item's message is to be had once the group's calls are done.
    enum GooglePayPending {
        /// ECv2SigningOnly: `signedMessage` itself.
        case clear
        /// Z with the first merchant key from crypto_mb's lane (or the engine, if crypto_mb refused).
        case agreeing(GooglePayToken.SealedMessage)
        /// The engine's own decryption: a first merchant key whose scalar does not export (PKCS#11),
        /// no merchant key, or a point crypto_mb would not take.
        case engine(GooglePayToken.SealedMessage)
    }

    /// A Google Pay item before the group's calls.
    struct PreparedGooglePay {
        /// Set when the message signature is in the group's verification lane, for the first
        /// recipient id; a lane the group refuses is checked again by the engine, whose verdict (and
        /// error) stands.
        var deferredSignature: GooglePayTokenDecryptor.MessageSigningKey?
        /// The recipient id, when the engine checked the signature at once.
        var recipientId: String?
        /// The steps after the signature, run as if it verified; they count only once it has.
        var rest: Result<GooglePayPending, ApplePayError>
    }

    /// Item `k`, a Google Pay token: parsed and prepared, then the next items and the group's calls,
    /// then finished.
    func decryptGooglePay(
        _ bytes: UnsafeRawBufferPointer, _ k: Int, lane: Lane, _ engine: GooglePayTokenDecryptor, _ group: Group
    ) -> Slot {
        let token: GooglePayToken
        do throws(ApplePayError) { token = try GooglePayToken.parse(bytes) } catch {
            descend(k + 1, group)
            return Slot(WalletOutcome(googlePay: .failure(error)))
        }
        let prepared = prepareGooglePay(token, k, lane: lane, engine, now: group.referenceMilliseconds)
        descend(k + 1, group)
        return Slot(
            WalletOutcome(
                googlePay: Result { () throws(ApplePayError) -> WalletPayment in
                    OpenSSLErrors.clear()
                    defer { OpenSSLErrors.clear() }
                    return .googlePay(
                        try GooglePayment.build(
                            finishGooglePay(token, prepared, k, lane: lane, engine, now: group.referenceMilliseconds)))
                }))
    }

    /// The engine's steps in its order up to the message signature (strict reading, the intermediate
    /// key by the cache or a root key, its expiration), the signature set in lane `k` when it can
    /// be, then the ephemeral key decoded by OpenSSL (as the engine decodes it) and set in the
    /// agreement's lane `k`.
    private func prepareGooglePay(
        _ token: GooglePayToken, _ k: Int, lane: Lane, _ engine: GooglePayTokenDecryptor, now: Int64?
    ) -> PreparedGooglePay {
        OpenSSLErrors.clear()
        defer { OpenSSLErrors.clear() }
        var deferred: GooglePayTokenDecryptor.MessageSigningKey? = nil
        var recipientId: String? = nil
        let rest = Result { () throws(ApplePayError) -> GooglePayPending in
            let signingKey = try engine.checkSigningKey(token, now: now, lane: lane)
            if setGooglePaySignature(token, k, signingKey, lane: lane, engine) {
                deferred = signingKey
            } else {
                recipientId = try engine.verifyMessage(token, signingKey, lane: lane)
            }
            guard let sealed = token.sealed else { return .clear }
            guard let first = engine.merchantKeys.first,
                let scalar = scalars.context(
                    for: first.identity,
                    make: { MerchantScalar(scalar: first.identity.key.software.flatMap(P256MultiBufferScalar.of)) }
                )?.scalar
            else { return .engine(sealed) }
            try engine.importEphemeral(sealed, lane: lane)
            let set = sealed.ephemeralPublicKey.withUnsafeBytes {
                agreement.set(lane: k, scalar: scalar, peer: $0, into: secrets[k].deferredWriteTarget)
            }
            return set ? .agreeing(sealed) : .engine(sealed)
        }
        return PreparedGooglePay(deferredSignature: deferred, recipientId: recipientId, rest: rest)
    }

    /// Puts the message signature in the group's verification lane `k`, over the signed string for
    /// the first recipient id, when its key has a table: the intermediate key's (ECv2*), or the first
    /// root key's of those that count (ECv1). A lane that verifies gives the engine's answer (the
    /// engine tries the recipient ids in order, and the root keys in order for each); one that does
    /// not leaves the whole check to the engine. False when the engine's check is to run now: no
    /// table, no fixed-base call in this crypto_mb, or a signature the DER and range rules refuse.
    private func setGooglePaySignature(
        _ token: GooglePayToken, _ k: Int, _ signingKey: GooglePayTokenDecryptor.MessageSigningKey, lane: Lane,
        _ engine: GooglePayTokenDecryptor
    ) -> Bool {
        guard let verification else { return false }
        let table: P256SignerTable?
        switch signingKey {
        case let .intermediate(key): table = key.table
        case let .roots(roots): table = roots.first?.messageTable.table
        }
        guard let table else { return false }
        let digest = engine.messageDigest(token, recipient: 0, lane: lane)
        return token.signature.withUnsafeBytes {
            verification.set(lane: k, signature: $0, digest: digest, table: table)
        }
    }

    /// After the group's calls: the signature's verdict (the group's lane, or the engine's), the
    /// steps after it, then the message as the engine reads it.
    private func finishGooglePay(
        _ token: GooglePayToken, _ prepared: PreparedGooglePay, _ k: Int, lane: Lane,
        _ engine: GooglePayTokenDecryptor, now: Int64?
    ) throws(ApplePayError) -> GooglePayMessage {
        var recipientId = prepared.recipientId
        if let signingKey = prepared.deferredSignature {
            if verified & (1 << k) != 0 {
                recipientId = engine.recipientIds[0]
                googlePayLanes.verified += 1
            } else {
                recipientId = try engine.verifyMessage(token, signingKey, lane: lane)
            }
        }
        let pending = try prepared.rest.get()
        guard let recipientId else { preconditionFailure("a Google Pay item went on without its signature's verdict") }
        let plaintext: SensitiveBytes
        switch pending {
        case .clear:
            plaintext = GooglePayTokenDecryptor.clearMessage(token)
        case let .engine(sealed):
            plaintext = try engine.decryptMessage(token.protocolVersion, sealed, lane: lane)
        case let .agreeing(sealed):
            plaintext = try agreedMessage(token.protocolVersion, sealed, k, lane: lane, engine)
        }
        return try engine.message(token, recipientId: recipientId, plaintext: plaintext, now: now, lane: lane)
    }

    /// HKDF over crypto_mb's Z with the first merchant key, the tag, AES-CTR. When crypto_mb refused
    /// the lane, or the tag does not verify under the first key (key rotation, a bad tag), the
    /// engine's own decryption runs from the start (every merchant key in turn, its errors).
    private func agreedMessage(
        _ version: GooglePayToken.ProtocolVersion, _ sealed: GooglePayToken.SealedMessage, _ k: Int, lane: Lane,
        _ engine: GooglePayTokenDecryptor
    ) throws(ApplePayError) -> SensitiveBytes {
        if agreed & (1 << k) != 0 {
            let symmetricLength = GooglePayTokenDecryptor.symmetricLength(version)
            let secret = secrets[k]
            secret.adoptWritten(32)
            let derived = engine.deriveKeys(
                point: sealed.ephemeralPublicKey, sharedSecret: secret, length: 2 * symmetricLength, lane: lane)
            secret.wipe()
            let keys = lane.googlePay.derivedKeys
            let opened: SensitiveBytes?
            do throws(ApplePayError) {
                opened = derived ? try engine.openSealed(sealed, symmetricLength: symmetricLength, lane: lane) : nil
            } catch {
                keys.wipe()
                throw error
            }
            keys.wipe()
            if let opened {
                googlePayLanes.agreed += 1
                return opened
            }
        }
        return try engine.decryptMessage(version, sealed, lane: lane)
    }
}
