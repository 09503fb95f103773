// A reference time that is a whole millisecond is that millisecond, however the Double of its Date rounds:
// Google Pay keys and messages expire to the millisecond, so one off would refuse a good token at T - 1.
import ApplePayDecryption
import Foundation
import Testing

@Suite("Reference time in milliseconds")
struct ReferenceMillisecondsTests {
    /// 200,000 consecutive milliseconds of 2039-07-06 (after 2^31 s, where a Date's Double has one bit less
    /// for the fraction), where Double(ms) / 1000 * 1000 rounds under ms for about a quarter of them; between
    /// 2020 and 2030 it happens not to.
    static let milliseconds: ClosedRange<Int64> = 2_193_528_200_000...2_193_528_399_999

    @Test("a Date made from a whole number of milliseconds gives back exactly that number, for every one of 200,000")
    func wholeMillisecondsRoundTrip() {
        // The naive floor is off by one for some of these (so this test can fail).
        let naiveMisses = Self.milliseconds.filter { ms in
            Int64((Date(timeIntervalSince1970: Double(ms) / 1000).timeIntervalSince1970 * 1000).rounded(.down)) != ms
        }.count
        #expect(naiveMisses > 0)
        let misses = Self.milliseconds.filter { ms in
            ReferenceTime.at(Date(timeIntervalSince1970: Double(ms) / 1000)).unixMilliseconds != ms
        }
        #expect(misses.count == 0, "first misses: \(Array(misses.prefix(5)))")
    }

    @Test("a reference between two milliseconds is rounded down, as Tink's clock: ...00.1225 s is 122 ms")
    func betweenMillisecondsRoundsDown() {
        #expect(ReferenceTime.at(Date(timeIntervalSince1970: 1.1225)).unixMilliseconds == 1_122)
        #expect(ReferenceTime.at(Date(timeIntervalSince1970: 1_764_547_200.1229)).unixMilliseconds == 1_764_547_200_122)
        #expect(ReferenceTime.signingTime.unixMilliseconds == nil)
    }
}
