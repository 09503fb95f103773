// A reader of one INPUT that can say what it consumed, for the checkpoint.
import ApplePayDecryption
import Foundation

/// A reader of one INPUT that can say what it consumed, for the checkpoint.
protocol InputReader: AnyObject, BatchTokenSource {
    /// SHA-256 (hex) of the bytes behind the items handed out so far, or nil if not tracked.
    var checkpointDigest: String? { get }
}

extension JSONLinesSource: InputReader {
    var checkpointDigest: String? { consumedDigest }
}
