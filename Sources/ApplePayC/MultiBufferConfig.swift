// ap_config_set_multibuffer: the C ABI's switch for crypto_mb in ap_decrypt_batch (auto, on, off).
import ApplePayDecryption

/// AP_MULTIBUFFER_AUTO, AP_MULTIBUFFER_ON, AP_MULTIBUFFER_OFF of applepay.h.
let multiBufferModes: [UInt32: MultiBufferMode] = [0: .auto, 1: .on, 2: .off]

@c(ap_config_set_multibuffer)
public func ap_config_set_multibuffer(_ config: OpaquePointer?, _ mode: UInt32, _ errorOut: UnsafeMutableRawPointer?)
    -> Int32
{
    guard let box = configs.object(config) else {
        return report(ABICode.invalidHandle, "not a live ap_config", to: errorOut)
    }
    guard let mode = multiBufferModes[mode] else {
        return report(
            ABICode.invalidArgument,
            "the multi-buffer mode must be AP_MULTIBUFFER_AUTO, AP_MULTIBUFFER_ON or AP_MULTIBUFFER_OFF", to: errorOut)
    }
    do throws(ConfigurationError) {
        // Resolved now, so that `on` fails here, before any token, naming crypto_mb and the reason.
        let backend = try MultiBufferBackend.resolve(mode)
        box.state.withLock { $0.multiBuffer = backend }
        return report(ABICode.ok, "", to: errorOut)
    } catch {
        return report(ABICode.invalidConfiguration, error.message, to: errorOut)
    }
}
