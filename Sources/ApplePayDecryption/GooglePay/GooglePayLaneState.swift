// A lane's state for Google Pay tokens: HKDF/HMAC, AES-CTR, the fixed-key verifier and the derived
// keys' wiped buffer, allocated once per lane and reused from token to token.
internal import ApplePayCrypto
#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

final class GooglePayLaneState {
    let mac = HMACSHA256()
    let counterMode = CounterModeCipher()
    let fixedKey = P256FixedKeyVerifier()
    /// ECv2: AES-256 key ‖ HMAC key (32 + 32); ECv1: 16 + 16. Wiped after each token.
    let derivedKeys = SensitiveBytes(capacity: 64)
    /// The signed strings' digests and the computed tag (public values).
    let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 64, alignment: 16)

    deinit { scratch.deallocate() }

    var digestOut: UnsafeMutablePointer<UInt8> { scratch.baseAddress!.assumingMemoryBound(to: UInt8.self) }
    var tagOut: UnsafeMutablePointer<UInt8> { (scratch.baseAddress! + 32).assumingMemoryBound(to: UInt8.self) }
}

extension ReferenceTime {
    /// Milliseconds since the epoch of the reference, or nil for `.signingTime` (no expiry checks).
    /// Clamped as ``unixSeconds`` is; rounded down, as Tink's `clock.millis()` (a reference of
    /// ...00.1225 is 122 ms, so a message expiring at 123 ms is still good). A reference that is a
    /// whole millisecond but not exactly so as a Double (`Date(timeIntervalSince1970: 1764547200.123)`
    /// times 1000 can come out a hair under ...123) is that millisecond: within a microsecond of a whole
    /// millisecond counts as on it, so `--now ...00.123Z` and an ABI reference of ...123 ms are 123, not 122.
    package var unixMilliseconds: Int64? {
        switch self {
        case .signingTime: return nil
        case .now: return Self.clampedMilliseconds(Date().timeIntervalSince1970)
        case let .at(date): return Self.clampedMilliseconds(date.timeIntervalSince1970)
        }
    }

    /// ``unixSeconds`` and ``unixMilliseconds`` from one reading of the clock: a batch window's
    /// reference for both wallets (reading `.now` per Google Pay token was a clock call a token, and
    /// the two wallets of one window could see different instants).
    package var unixSecondsAndMilliseconds: (seconds: Int64?, milliseconds: Int64?) {
        let seconds: Double
        switch self {
        case .signingTime: return (nil, nil)
        case .now: seconds = Date().timeIntervalSince1970
        case let .at(date): seconds = date.timeIntervalSince1970
        }
        return (Self.clamped(seconds), Self.clampedMilliseconds(seconds))
    }

    static func clampedMilliseconds(_ seconds: Double) -> Int64 {
        guard !seconds.isNaN else { return Int64(Self.limit) * 1000 }
        let scaled = min(max(seconds, -Self.limit), Self.limit) * 1000
        let nearest = scaled.rounded()
        return Int64(abs(scaled - nearest) < 0.001 ? nearest : scaled.rounded(.down))
    }
}
