// Why JSONValue.parse refused its input: the byte offset and what is wrong there.

/// Why ``JSONValue/parse(_:)-(UnsafeRawBufferPointer)`` rejected its input.
public struct JSONSyntaxError: Error, Sendable, CustomStringConvertible {
    /// Byte offset of the problem.
    public let offset: Int
    /// What is wrong there.
    public let message: String
    /// `invalid JSON at byte N: message`.
    public var description: String { "invalid JSON at byte \(offset): \(message)" }
}
