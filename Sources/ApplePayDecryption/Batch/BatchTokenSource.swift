// What the batch engine reads its items from, a window at a time.

/// Produces input items window by window, in a fixed order.
public protocol BatchTokenSource {
    /// Appends up to `capacity` items to `window` (which arrives empty). Returns false once the
    /// input is exhausted and nothing was appended. Only configuration-level failures throw.
    mutating func fill(_ window: inout BatchWindow, capacity: Int) throws -> Bool
}
