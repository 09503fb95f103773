// The batch's inputs as one chained source, with the readers behind it.
import ApplePayDecryption
import Foundation

/// The chained source plus the readers behind it, so their consumed digests can be read later.
struct InputSet {
    var source: ChainedTokenSource
    let readers: [any InputReader]
    var consumedDigests: [String?] { readers.map(\.checkpointDigest) }
}
