// The replay verdict as an error: the one wording the batch engine and the merge of shards share.

extension ApplePayError {
    /// The verdict on a verified token whose keys item `firstClaim` claimed first (one wording for
    /// the batch engine and the merge of shards, whose outputs must agree byte for byte).
    public static func replayed(claimedBy firstClaim: Int) -> ApplePayError {
        ApplePayError(
            .replayedTransaction,
            "this token's transactionId or signed contents were already claimed by item \(firstClaim)",
            field: "header.transactionId")
    }
}
