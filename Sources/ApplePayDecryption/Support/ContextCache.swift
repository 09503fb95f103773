// Per-owner state that a lane's steps keep from token to token (OpenSSL contexts, PKCS#11 sessions, scalars).

/// Per-owner OpenSSL contexts (or other per-owner state), created on first use and kept (at most
/// `limit`; when full, all are dropped and rebuilt on demand). The entries hold their owners
/// strongly, so identity comparison stays valid.
struct ContextCache<Owner: AnyObject, Context> {
    private var entries: [(Owner, Context)] = []
    private static var limit: Int { 16 }

    init() { entries.reserveCapacity(Self.limit) }

    mutating func context(for owner: Owner, make: () -> Context?) -> Context? {
        if let hit = entries.first(where: { $0.0 === owner }) { return hit.1 }
        guard let context = make() else { return nil }
        if entries.count >= Self.limit { entries.removeAll(keepingCapacity: true) }
        entries.append((owner, context))
        return context
    }
}
