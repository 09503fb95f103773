// ap_config_set_reference_unit: whether a call's `reference` counts seconds (the default) or milliseconds.
#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif
import ApplePayDecryption

/// AP_REFERENCE_SECONDS and AP_REFERENCE_MILLISECONDS of applepay.h. Google Pay keys and messages expire to
/// the millisecond, so a caller testing them (or replaying an archive at a recorded instant) needs a
/// reference finer than whole seconds; the sentinels AP_REFERENCE_NOW and AP_REFERENCE_SIGNING_TIME keep
/// their meaning in either unit.
enum ReferenceUnit: UInt32, Sendable {
    case seconds = 0
    case milliseconds = 1

    func referenceTime(_ reference: Int64) -> ReferenceTime {
        switch reference {
        case Int64.min: return .now
        case Int64.min + 1: return .signingTime
        default:
            let seconds = self == .seconds ? TimeInterval(reference) : TimeInterval(reference) / 1000
            return .at(Date(timeIntervalSince1970: seconds))
        }
    }
}

@c(ap_config_set_reference_unit)
public func ap_config_set_reference_unit(_ config: OpaquePointer?, _ unit: UInt32, _ errorOut: UnsafeMutableRawPointer?)
    -> Int32
{
    guard let box = configs.object(config) else {
        return report(ABICode.invalidHandle, "not a live ap_config", to: errorOut)
    }
    guard let unit = ReferenceUnit(rawValue: unit) else {
        return report(
            ABICode.invalidArgument, "the reference unit must be AP_REFERENCE_SECONDS or AP_REFERENCE_MILLISECONDS",
            to: errorOut)
    }
    box.state.withLock { $0.referenceUnit = unit }
    return report(ABICode.ok, "", to: errorOut)
}
