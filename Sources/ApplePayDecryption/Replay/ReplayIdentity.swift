// What a verified token claims against replays, and how the pipeline derives it from the token.
package import ApplePayCrypto

/// What a verified token claims against replays: its normalised transactionId and the content digest
/// Apple signed. A token is a replay when either was already claimed. Re-framing the unframed fields
/// (moving bytes between transactionId and applicationData) changes the transactionId but not the
/// signed digest; re-writing the transactionId's case changes neither.
public struct ReplayIdentity: Sendable, Hashable {
    /// SHA-256 over a domain label and the decoded transactionId bytes (first 16 bytes).
    public let transactionKey: ReplayKey
    /// The signed `messageDigest`, SHA-256 of `key ‖ data ‖ transactionId ‖ applicationData` (first 16 bytes).
    public let contentKey: ReplayKey

    /// An identity from its two keys (as a replay store gives them back).
    public init(transactionKey: ReplayKey, contentKey: ReplayKey) {
        self.transactionKey = transactionKey
        self.contentKey = contentKey
    }

    /// With a one-off SHA-256 context (tests, fuzzing); the pipeline passes its lane's.
    static func of(transactionId: UnsafeRawBufferPointer, signedDigest: UnsafeRawBufferPointer) -> ReplayIdentity {
        of(transactionId: transactionId, signedDigest: signedDigest, hasher: DigestContext())
    }

    /// The transaction key of a decoded transactionId alone: what a merge checks a shard's journal
    /// record against, from the transactionId its result line shows.
    package static func transactionKey(ofDecoded transactionId: UnsafeRawBufferPointer) -> ReplayKey {
        withUnsafeBytes(of: (UInt64(0), UInt64(0))) {
            of(transactionId: transactionId, signedDigest: $0).transactionKey
        }
    }

    /// `hasher` is a lane's reusable SHA-256 context.
    package static func of(
        transactionId: UnsafeRawBufferPointer, signedDigest: UnsafeRawBufferPointer, hasher: DigestContext
    ) -> ReplayIdentity {
        hasher.start()
        hasher.update(
            UnsafeRawBufferPointer(
                start: ReplayKey.transactionLabel.utf8Start, count: ReplayKey.transactionLabel.utf8CodeUnitCount))
        hasher.update(transactionId)
        var digest = (UInt64(0), UInt64(0), UInt64(0), UInt64(0))
        withUnsafeMutableBytes(of: &digest) { hasher.finish(into: $0.baseAddress!.assumingMemoryBound(to: UInt8.self)) }
        let transaction = withUnsafeBytes(of: digest) { ReplayKey(UnsafeRawBufferPointer(rebasing: $0[0..<16]))! }
        return ReplayIdentity(
            transactionKey: transaction,
            contentKey: ReplayKey(UnsafeRawBufferPointer(rebasing: signedDigest.prefix(16)))!)
    }
}
