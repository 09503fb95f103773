// The ABI's result codes (applepay.h): the library's stable token codes 1-12, ABI misuse 100+.
import ApplePayDecryption

enum ABICode {
    static let ok: Int32 = 0
    static let invalidArgument: Int32 = 100
    static let invalidHandle: Int32 = 101
    static let invalidConfiguration: Int32 = 102
    static let internalError: Int32 = 103
    static let invalidPaymentRequest: Int32 = 104
    static let bufferTooSmall: Int32 = 105
    static let noReplayKeys: Int32 = 106

    /// The ABI number of each stable code. `ApplePayError.Code` is an extensible struct: a code
    /// added later that this table does not know yet is reported as an internal error, never as OK.
    static let numbers: [ApplePayError.Code: Int32] = [
        .malformedToken: 1, .unsupportedVersion: 2, .invalidSignature: 3, .untrustedCertificateChain: 4,
        .signingTimeOutOfRange: 5, .unknownMerchantKey: 6, .decryptionFailed: 7, .invalidPayload: 8,
        .replayedTransaction: 9, .paymentRequestMismatch: 10, .intermediateKeyExpired: 11, .messageExpired: 12,
    ]

    static func of(_ code: ApplePayError.Code) -> Int32 { numbers[code] ?? internalError }

    // Static C strings: string literals are immortal, so their pointers may be handed to C.
    static func name(_ code: Int32) -> StaticString {
        switch code {
        case 0: "ok"
        case 1: "malformedToken"
        case 2: "unsupportedVersion"
        case 3: "invalidSignature"
        case 4: "untrustedCertificateChain"
        case 5: "signingTimeOutOfRange"
        case 6: "unknownMerchantKey"
        case 7: "decryptionFailed"
        case 8: "invalidPayload"
        case 9: "replayedTransaction"
        case 10: "paymentRequestMismatch"
        case 11: "intermediateKeyExpired"
        case 12: "messageExpired"
        case 100: "invalidArgument"
        case 101: "invalidHandle"
        case 102: "invalidConfiguration"
        case 103: "internalError"
        case 104: "invalidPaymentRequest"
        case 105: "bufferTooSmall"
        case 106: "noReplayKeys"
        default: "unknown"
        }
    }
}

/// The ABI's wallet numbers (applepay.h's ap_wallet): ap_result_wallet's answer, ap_replay_line's
/// AP_LINE_WALLET flag, ap_batch_columns' wallets.
enum ABIWallet {
    static let none: Int32 = 0
    static let applePay: Int32 = 1
    static let googlePay: Int32 = 2
    static let samsungPay: Int32 = 3

    static func of(_ wallet: Wallet) -> Int32 {
        switch wallet {
        case .applePay: applePay
        case .googlePay: googlePay
        case .samsungPay: samsungPay
        }
    }

    /// The wallet a number names; 0 is Apple Pay (the lines of ABI 5, before wallets were named).
    static func wallet(_ number: UInt32) -> Wallet? {
        switch number {
        case 0, UInt32(applePay): .applePay
        case UInt32(googlePay): .googlePay
        case UInt32(samsungPay): .samsungPay
        default: nil
        }
    }
}

@c(ap_code_name)
public func ap_code_name(_ code: Int32) -> UnsafePointer<CChar> {
    UnsafeRawPointer(ABICode.name(code).utf8Start).assumingMemoryBound(to: CChar.self)
}

@c(ap_version)
public func ap_version() -> UInt32 { 6 }

/// Writes an `ap_error` (int32 code, then char[256]) into caller memory, truncated on a UTF-8 boundary.
func report(_ code: Int32, _ message: String, to error: UnsafeMutableRawPointer?) -> Int32 {
    guard let error else { return code }
    error.storeBytes(of: code, toByteOffset: 0, as: Int32.self)
    let text = error.advanced(by: 4).assumingMemoryBound(to: UInt8.self)
    var utf8 = Array(message.utf8.prefix(255))
    if utf8.count == 255, message.utf8.count > 255 {
        while let last = utf8.last, last & 0xC0 == 0x80 { utf8.removeLast() }
        if let last = utf8.last, last >= 0xC0 { utf8.removeLast() }
    }
    for (i, byte) in utf8.enumerated() { text[i] = byte }
    text[utf8.count] = 0
    return code
}
