// The replay store of one process: claims in memory, bounded in count, expiring after the retention.
import ApplePayDecryption
import Foundation
import Synchronization

/// Claims held in this process: bounded in count, expiring after the retention. When full of claims
/// that have not expired, it refuses (503) rather than forget one and let a replay through.
final class MemoryReplayStore: ReplayStore {
    private struct State {
        var expiry: [ReplayKey: Int64] = [:]
        /// Claims kept the common retention, in the order made: also in order of expiry.
        var queue: [(key: ReplayKey, expires: Int64)] = []
        var head = 0
        /// Claims kept longer (a Google Pay message that expires later), by expiry.
        var longer = ExpiryHeap()
    }

    let capacity: Int
    let retention: Int64
    let clock: ReplayClock
    private let state = Mutex(State())
    var kind: String { "memory" }
    var isPrepared: Bool { true }

    init(capacity: Int, retention: Int64, clock: ReplayClock = .wall) {
        self.capacity = capacity
        self.retention = retention
        self.clock = clock
    }

    func claim(_ identity: ReplayIdentity, retention keep: Int64) async throws(ReplayStoreUnavailable) -> Bool {
        let now = clock.seconds
        let result: Bool? = state.withLock { state in
            Self.dropExpired(&state, now: now)
            for key in [identity.transactionKey, identity.contentKey] {
                if let expires = state.expiry[key], expires > now { return false }
            }
            guard state.expiry.count + 2 <= capacity else { return nil }
            for key in [identity.transactionKey, identity.contentKey] {
                if keep > retention {
                    state.expiry[key] = now + keep
                    state.longer.push(key, expires: now + keep)
                } else {
                    state.expiry[key] = now + retention
                    state.queue.append((key, now + retention))
                }
            }
            return true
        }
        guard let result else {
            throw ReplayStoreUnavailable(
                description:
                    "the in-memory replay store holds \(capacity) unexpired claims (raise --memory-store-capacity)")
        }
        return result
    }

    private static func dropExpired(_ state: inout State, now: Int64) {
        while state.head < state.queue.count, state.queue[state.head].expires <= now {
            let entry = state.queue[state.head]
            if state.expiry[entry.key] == entry.expires { state.expiry[entry.key] = nil }
            state.head += 1
        }
        while let top = state.longer.top, top.expires <= now {
            if state.expiry[top.key] == top.expires { state.expiry[top.key] = nil }
            state.longer.popTop()
        }
        // Compact once the dead prefix is half the queue, so the queue stays within twice the live claims.
        if state.head > 1024, state.head * 2 > state.queue.count {
            state.queue.removeFirst(state.head)
            state.head = 0
        }
    }

    func ping() async -> Bool { true }

    func prune() async {
        let now = clock.seconds
        state.withLock { Self.dropExpired(&$0, now: now) }
    }

    var count: Int { state.withLock { $0.expiry.count } }
}
