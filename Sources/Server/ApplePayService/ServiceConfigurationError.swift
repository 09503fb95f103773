// A configuration the service refuses to start with; the executable exits 2 with its message.
public struct ServiceConfigurationError: Error, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}
