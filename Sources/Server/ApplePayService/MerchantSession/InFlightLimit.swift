// A count of calls under a fixed limit (merchant-session gateway calls).
import Synchronization

/// Counts calls under a fixed limit; a call over it is refused, never queued.
final class InFlightLimit: Sendable {
    let limit: Int
    private let count = Atomic<Int>(0)

    init(_ limit: Int) { self.limit = limit }

    func enter() -> Bool {
        if count.wrappingAdd(1, ordering: .acquiringAndReleasing).newValue <= limit { return true }
        count.wrappingSubtract(1, ordering: .acquiringAndReleasing)
        return false
    }

    func leave() { count.wrappingSubtract(1, ordering: .acquiringAndReleasing) }
}
