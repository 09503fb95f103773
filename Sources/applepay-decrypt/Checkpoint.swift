// A batch run's progress, OUT.checkpoint: what --resume reads to write every token exactly once.
import ApplePayDecryption
import Foundation

/// The progress of one run, stored as OUT.checkpoint: canonical JSON (sorted keys) carrying a
/// SHA-256 over its own encoding with `checksum` empty. A new field is one more stored property.
struct Checkpoint: Codable, Equatable, SealedJSON {
    /// 2: the journal's digest (`claimsDigest`) and `sharded`.
    var format = 2
    /// What makes two runs the same run (`RunDescription`), as compact JSON.
    var run: String
    /// The global index of this run's first item (a shard's start).
    var first: Int
    /// The global index of the first item not yet processed (below `first` while a shard verifies
    /// the items before it for the replay ledger).
    var next: Int
    /// The length of the partial file holding the items first..<next, one line each.
    var bytes: Int
    /// The length of OUT.claims: the replay ledger's records for the items before `next`.
    var claimsBytes = 0
    /// SHA-256 (hex) of those `claimsBytes` bytes: a journal zeroed or edited after a kill is refused
    /// on --resume (its length alone would let it through, and a replay be accepted a second time).
    var claimsDigest = InputDigest().hex
    /// A shard's run: OUT.claims is part of its output (the merge reads it) and stays after completion.
    var sharded = false
    /// Per INPUT, the SHA-256 of the bytes behind the items before `next` (nil where not tracked).
    var consumed: [String?]
    /// Set, with `bytes` the final size, just before the partial file is renamed to OUT.
    var complete = false
    var checksum = ""
}
