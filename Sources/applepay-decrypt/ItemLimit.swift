// The per-item size limit every input is read through (--max-item-bytes).
import ApplePayDecryption
import Foundation

/// The per-item size limit (JSONL lines, zip members, directory files, `decrypt` input).
struct ItemLimit {
    static let defaultBytes = 1 << 20
    let bytes: Int
    var hint: String { "raise it with --max-item-bytes" }
    var message: String { "the item is larger than the limit of \(bytes) bytes; \(hint)" }
}
