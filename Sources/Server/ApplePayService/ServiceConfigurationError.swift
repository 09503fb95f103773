// A configuration the service refuses to start with; the executable exits 2 with its message.
struct ServiceConfigurationError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
