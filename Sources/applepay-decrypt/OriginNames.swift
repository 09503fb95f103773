// The names of the batch's origins (files, archive members, stdin), numbered as results refer to them.
import ApplePayDecryption
import Foundation

/// Names of origins (files, archive members, stdin), numbered as results refer to them.
final class OriginNames {
    private(set) var names: [String] = []
    func add(_ name: String) -> Int {
        names.append(name)
        return names.count - 1
    }
    func label(_ location: BatchLocation) -> String { "\(names[location.origin]):\(location.line)" }
}
