// A deadline for a call that may never notice its cancellation (a database that stopped answering).
import Synchronization

/// Runs `body`, giving up after `limit` whether or not `body` notices its cancellation, so a database
/// that stopped answering cannot hold a request longer than the store timeout; with a `gate` whose
/// COMMIT was sent before the limit, it waits up to `grace` more for that COMMIT's outcome.
func withDeadline<T: Sendable>(
    _ limit: Duration, gate: CommitGate? = nil, grace: Duration = .zero,
    _ body: @escaping @Sendable () async throws -> T
) async throws -> T {
    let race = DeadlineRace<T>()
    return try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
        race.continuation.withLock { $0 = continuation }
        let work = Task { @Sendable in
            let result: Result<T, any Error>
            do { result = .success(try await body()) } catch { result = .failure(error) }
            race.finish(result)
        }
        let timer = Task { @Sendable in
            try? await Task.sleep(for: limit)
            if let gate, !gate.expire() {
                try? await Task.sleep(for: grace)
                // The claim finished (endCommit) and answered, or it is left to finish and undo: it is
                // not cancelled, so that it learns its COMMIT's outcome.
                if gate.abandon() { race.finish(.failure(DeadlineExceeded()), cancelling: false) }
                return
            }
            race.finish(.failure(DeadlineExceeded()))
        }
        race.tasks.withLock { $0 = [work, timer] }
    }
}

/// Whichever of the work and the timer ends first resumes the caller and cancels the other.
private final class DeadlineRace<T: Sendable>: Sendable {
    let continuation = Mutex<CheckedContinuation<T, any Error>?>(nil)
    let tasks = Mutex<[Task<Void, Never>]>([])

    func finish(_ result: Result<T, any Error>, cancelling: Bool = true) {
        guard let continuation = continuation.withLock({ $0.take() }) else { return }
        continuation.resume(with: result)
        if cancelling { for task in tasks.withLock({ $0 }) { task.cancel() } }
    }
}

/// A replay-store call that passed its deadline.
struct DeadlineExceeded: Error, CustomStringConvertible {
    var description: String { "timed out" }
}
