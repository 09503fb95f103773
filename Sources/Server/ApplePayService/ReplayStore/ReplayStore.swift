// Where verified tokens claim their ReplayIdentity: in this process (`memory`) or in PostgreSQL, shared
// by every instance on one database. A store that cannot answer fails the request closed (503).
import ApplePayDecryption

protocol ReplayStore: Sendable {
    /// Claims both keys of `identity` for `retention` seconds. False when either key was already
    /// claimed (a replay); throws `ReplayStoreUnavailable` when the store cannot say.
    func claim(_ identity: ReplayIdentity) async throws(ReplayStoreUnavailable) -> Bool
    /// Whether the store answers (for /readyz).
    func ping() async -> Bool
    /// Drops claims whose retention has passed.
    func prune() async
    /// Whether the store can be pruned yet (PostgreSQL: once its table has been made at start).
    var isPrepared: Bool { get }
    var kind: String { get }
}
