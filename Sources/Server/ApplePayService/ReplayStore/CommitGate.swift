// The hand-over between a PostgreSQL claim and its deadline around COMMIT.
import Synchronization

/// Between a claim and its deadline. Before COMMIT, whichever comes first wins: the deadline
/// (`expire`: the claim must roll back) or the claim (`beginCommit`: the deadline now waits up to its
/// grace for the COMMIT's outcome). After the grace, `abandon` lets the deadline answer while the COMMIT
/// is still pending; the claim learns it from `endCommit` and must undo what it committed.
final class CommitGate: Sendable {
    private let state = Atomic<Int>(0)  // 0 working, 1 committing, 2 expired, 3 abandoned, 4 committed

    private func move(_ from: Int, _ to: Int) -> Bool {
        state.compareExchange(expected: from, desired: to, ordering: .sequentiallyConsistent).exchanged
    }

    /// True when the deadline has not passed: the caller may send COMMIT, and the deadline now awaits it.
    func beginCommit() -> Bool { move(0, 1) }
    /// True when the caller was still waiting for its COMMIT's outcome: its result is the answer.
    func endCommit() -> Bool { move(1, 4) }
    /// True when no COMMIT was sent: the deadline may answer now.
    func expire() -> Bool { move(0, 2) }
    /// True when the COMMIT is still pending after the grace: the deadline answers, the claim undoes.
    func abandon() -> Bool { move(1, 3) }
}
