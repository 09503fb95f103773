// Batch input from several sources, read one after the other.

/// Several sources one after the other.
public struct ChainedTokenSource: BatchTokenSource {
    private var sources: [any BatchTokenSource]
    private var current = 0

    /// A source that reads each of `sources` to its end, in order.
    public init(_ sources: [any BatchTokenSource]) { self.sources = sources }

    public mutating func fill(_ window: inout BatchWindow, capacity: Int) throws -> Bool {
        while current < sources.count {
            if try sources[current].fill(&window, capacity: capacity) { return true }
            current += 1
        }
        return false
    }
}
