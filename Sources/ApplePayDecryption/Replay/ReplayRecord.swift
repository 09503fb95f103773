// One record of the replay ledger's journal: a verified token's two replay keys, its index, and
// whether it claimed them or was itself judged a replay (what a shard's merge needs to re-judge it).

/// 40 bytes per verified token: the 16-byte transaction key, the 16-byte content key, and the index
/// as 8 bytes little-endian whose top bit marks a token that was judged a replay (it claimed nothing).
///
/// A resumed run restores only the claims; a merge of shards re-judges every record in global order.
package struct ReplayRecord: Sendable, Equatable {
    /// Bytes per record.
    package static let size = 40
    private static let replayBit: UInt64 = 1 << 63

    /// The keys of the verified token.
    package let identity: ReplayIdentity
    /// The token's 0-based position in the whole input.
    package let index: Int
    /// True when the run that wrote the record judged the token a replay (its keys claim nothing there).
    package let isReplay: Bool

    /// A record of item `index`, which verified and decrypted.
    package init(identity: ReplayIdentity, index: Int, isReplay: Bool) {
        self.identity = identity
        self.index = index
        self.isReplay = isReplay
    }

    /// Reads one record from exactly ``size`` bytes; nil for another length or an impossible index.
    package init?(_ bytes: some Collection<UInt8>) {
        guard bytes.count == Self.size else { return nil }
        let all = Array(bytes)
        var raw: UInt64 = 0
        for k in (0..<8).reversed() { raw = raw << 8 | UInt64(all[32 + k]) }
        let index = raw & ~Self.replayBit
        guard index < UInt64(Int.max) else { return nil }
        identity = ReplayIdentity(transactionKey: ReplayKey(all[0..<16])!, contentKey: ReplayKey(all[16..<32])!)
        self.index = Int(index)
        isReplay = raw & Self.replayBit != 0
    }

    /// Appends the record's 40 bytes.
    package func append(to bytes: inout [UInt8]) {
        bytes.append(contentsOf: identity.transactionKey.bytesArray)
        bytes.append(contentsOf: identity.contentKey.bytesArray)
        let raw = UInt64(index) | (isReplay ? Self.replayBit : 0)
        withUnsafeBytes(of: raw.littleEndian) { bytes.append(contentsOf: $0) }
    }
}
