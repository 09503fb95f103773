// Batch input from memory: tokens already held as byte arrays, one item each.

/// Tokens already in memory, one per element.
public struct ArrayTokenSource: BatchTokenSource {
    private let tokens: [[UInt8]]
    private var next = 0
    private let origin: Int

    /// A source over tokens in memory, one per element; `origin` is their ``BatchLocation/origin``.
    public init(_ tokens: [[UInt8]], origin: Int = 0) {
        self.tokens = tokens
        self.origin = origin
    }

    public mutating func fill(_ window: inout BatchWindow, capacity: Int) throws -> Bool {
        while window.count < capacity, window.hasRoom, next < tokens.count {
            window.append(owning: tokens[next], at: BatchLocation(origin: origin, line: next + 1))
            next += 1
        }
        return window.count > 0
    }
}
