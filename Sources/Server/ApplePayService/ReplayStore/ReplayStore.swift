// Where verified tokens claim their ReplayIdentity: in this process (`memory`) or in PostgreSQL, shared
// by every instance on one database. A store that cannot answer fails the request closed (503).
import ApplePayDecryption

protocol ReplayStore: Sendable {
    /// Claims both keys of `identity` for `retention` seconds (the store's own, or longer for a Google
    /// Pay message that stays valid longer). False when either key was already claimed (a replay);
    /// throws `ReplayStoreUnavailable` when the store cannot say.
    func claim(_ identity: ReplayIdentity, retention: Int64) async throws(ReplayStoreUnavailable) -> Bool
    /// How long a claim is kept, in seconds: 2 × window + clock skew.
    var retention: Int64 { get }
    /// Whether the store answers (for /readyz).
    func ping() async -> Bool
    /// Drops claims whose retention has passed.
    func prune() async
    /// Whether the store can be pruned yet (PostgreSQL: once its table has been made at start).
    var isPrepared: Bool { get }
    var kind: String { get }
}

extension ReplayStore {
    /// Claims both keys of `identity` for the store's retention.
    func claim(_ identity: ReplayIdentity) async throws(ReplayStoreUnavailable) -> Bool {
        try await claim(identity, retention: retention)
    }
}
