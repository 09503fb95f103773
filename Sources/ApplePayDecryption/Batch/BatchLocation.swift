// Where a batch item was read: its input and its line, carried by every result.

/// Where an item came from: an origin (a file, an archive member, stdin) and a 1-based line
/// (1 for whole-file items). Origins are numbered by the source that reads them.
public struct BatchLocation: Sendable, Hashable {
    /// Which input the item came from (the front end numbers its inputs).
    public let origin: Int
    /// 1-based line (or entry) of the item within its input.
    public let line: Int
    /// A location from its two parts.
    public init(origin: Int, line: Int) {
        self.origin = origin
        self.line = line
    }
}
