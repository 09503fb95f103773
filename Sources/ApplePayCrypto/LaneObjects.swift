// The BIGNUMs and EC_POINTs a lane's P-256 workspace allocates once and reuses for every token (the
// fixed-key verifier, the point agreement, the multi-buffer verification): owned, wiped when released.
internal import CShims

/// One BIGNUM owned by a lane's workspace, allocated once; released with BN_clear_free, which wipes
/// its whole allocation.
final class LaneBignum {
    let ref: OpaquePointer
    init() {
        guard let bn = BN_new() else { fatalError("OpenSSL could not allocate a BIGNUM") }
        ref = bn
    }
    deinit { BN_clear_free(ref) }
}

/// One EC_POINT on P-256 owned by a lane's workspace; released with EC_POINT_clear_free.
final class LanePoint {
    let ref: OpaquePointer
    init() {
        guard let point = EC_POINT_new(P256Group.shared.ref) else {
            fatalError("OpenSSL could not allocate an EC_POINT")
        }
        ref = point
    }
    deinit { EC_POINT_clear_free(ref) }
}
