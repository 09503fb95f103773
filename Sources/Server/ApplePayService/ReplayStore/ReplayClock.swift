// The time replay claims are judged by: the wall clock, or the fixed time that
// --insecure-testing-fixed-now judges freshness by, so that a claim lasts exactly as long as its token
// stays fresh (with a fixed time, forever: a replay is never accepted again while the service runs).
import Foundation

enum ReplayClock: Sendable {
    case wall
    case fixed(Date)

    /// Now, in whole seconds since 1970.
    var seconds: Int64 {
        switch self {
        case .wall: Int64(Date().timeIntervalSince1970)
        case let .fixed(date): Int64(date.timeIntervalSince1970)
        }
    }

    /// The fixed time, or nil for the wall clock (PostgreSQL's `now()` then).
    var fixedDate: Date? {
        if case let .fixed(date) = self { return date }
        return nil
    }
}
