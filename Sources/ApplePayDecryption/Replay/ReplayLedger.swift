// The claims of one run, held in memory and journaled as fixed-size records.

/// The claims of one run: every verified token's ``ReplayIdentity`` with the index of the item that
/// made it. Used from the thread that runs the batch. New claims can be taken out as fixed-size records
/// (for a journal beside a resumable run's output) and restored from them.
public final class ReplayLedger {
    /// 16-byte transaction key, 16-byte content key, 8-byte little-endian index.
    public static let recordSize = 40

    private var firstClaim: [ReplayKey: Int] = [:]
    /// Journal records not yet taken (claims, and replays noted by `noteReplay`).
    var pending: [UInt8] = []
    /// Claims recorded (made or restored).
    public private(set) var claimCount = 0

    /// Whether this ledger judges replays; see ``unjudging()``.
    public let judges: Bool

    /// An empty ledger.
    public init() { judges = true }

    private init(judges: Bool) { self.judges = judges }

    /// A ledger that records no claim and judges no replay: every verified token keeps its own verdict.
    /// For a caller that judges replays itself over more items than one run sees (Spark's partitions),
    /// from the results' replay identities.
    public static func unjudging() -> ReplayLedger { ReplayLedger(judges: false) }

    /// Index of the item that claimed either key of `identity`, if any.
    public func firstClaim(of identity: ReplayIdentity) -> Int? {
        guard judges else { return nil }
        return firstClaim[identity.transactionKey] ?? firstClaim[identity.contentKey]
    }

    /// Records `identity` as claimed by item `index` (an earlier claim's index is kept).
    public func claim(_ identity: ReplayIdentity, index: Int) {
        guard judges else { return }
        keepFirst(&firstClaim[identity.transactionKey], index)
        keepFirst(&firstClaim[identity.contentKey], index)
        claimCount += 1
        ReplayRecord(identity: identity, index: index, isReplay: false).append(to: &pending)
    }

    /// Sets a key's claim unless it has one. Called on `&firstClaim[key]`, the dictionary's modify
    /// accessor finds the key's bucket once (`x[k] = x[k] ?? i` hashes the key twice).
    private func keepFirst(_ claim: inout Int?, _ index: Int) {
        if claim == nil { claim = index }
    }

    /// The records of the claims made (and the replays noted) since the last call.
    public func takeNewRecords() -> [UInt8] {
        defer { pending.removeAll(keepingCapacity: true) }
        return pending
    }

    /// Adds claims from records written by ``takeNewRecords()``; the bytes must be whole records.
    public func restore(records: [UInt8]) throws(ConfigurationError) {
        guard records.count % Self.recordSize == 0 else {
            throw ConfigurationError(.invalidLedger, "the replay ledger journal is not whole records")
        }
        for offset in stride(from: 0, to: records.count, by: Self.recordSize) {
            guard let record = ReplayRecord(records[offset..<offset + Self.recordSize]) else {
                throw ConfigurationError(.invalidLedger, "the replay ledger journal holds an impossible index")
            }
            // A replay's keys were claimed by nobody new: only claims come back.
            guard !record.isReplay else { continue }
            let (transactionKey, contentKey) = (record.identity.transactionKey, record.identity.contentKey)
            keepFirst(&firstClaim[transactionKey], record.index)
            keepFirst(&firstClaim[contentKey], record.index)
            claimCount += 1
        }
    }
}

extension ReplayLedger {
    /// Journals item `index`, which verified and decrypted but was judged a replay: it claims nothing,
    /// but a merge of shards needs its keys to judge it against the items of earlier shards.
    public func noteReplay(_ identity: ReplayIdentity, index: Int) {
        ReplayRecord(identity: identity, index: index, isReplay: true).append(to: &pending)
    }
}
