// ap_decrypt, ap_decrypt_batch and ap_result: engine outcomes turned into results C can read, the
// payment JSON written from the wiped plaintext into a wiped buffer, never through a Swift String.
import ApplePayDecryption
#if canImport(FoundationEssentials)
    import FoundationEssentials
    import Glibc  // strdup, free: Foundation re-exports them, FoundationEssentials does not
#else
    import Foundation
#endif

final class ResultBox: @unchecked Sendable {
    // Sendable: every field is set in init and only read (by C) until the box is released.
    let code: Int32
    let message: UnsafeMutablePointer<CChar>
    let field: UnsafeMutablePointer<CChar>?
    let transactionId: UnsafeMutablePointer<CChar>?
    /// Holds the payment JSON; its deinit wipes the whole capacity before freeing it.
    let payment: SensitiveBuffer?
    /// `payment`'s storage. It stays put: nothing appends to the buffer after init, and the buffer
    /// lives exactly as long as this box.
    let paymentBytes: UnsafePointer<UInt8>?
    let paymentLength: Int
    /// The engine's outcome, kept for ap_result_line (nil for a result that is ABI misuse).
    let outcome: Result<DecryptedPayment, ApplePayError>?
    /// A Google Pay token's outcome (its line is written from this); nil for an Apple Pay token.
    let googlePay: Result<GooglePayment, ApplePayError>?
    let transactionIdText: String?
    /// The keys of a token that verified and decrypted, also when a batch judged it a replay.
    let replayIdentity: ReplayIdentity?

    init(
        code: Int32, message: String, field: String?, transactionId: String?, payment: DecryptedPayment?,
        outcome: Result<DecryptedPayment, ApplePayError>? = nil, replayIdentity: ReplayIdentity? = nil,
        googlePay: Result<GooglePayment, ApplePayError>? = nil
    ) {
        self.code = code
        self.outcome = outcome
        self.googlePay = googlePay
        self.transactionIdText = transactionId
        self.replayIdentity = replayIdentity
        self.message = strdup(message)
        self.field = field.map { strdup($0) }
        self.transactionId = transactionId.map { strdup($0) }
        if let payment {
            let out = SensitiveBuffer(capacity: payment.plaintext.count + 1)
            payment.writeJSON(into: out)
            paymentLength = out.count
            out.append(byte: 0)
            self.payment = out
            paymentBytes = out.withUnsafeBytes { $0.baseAddress?.assumingMemoryBound(to: UInt8.self) }
        } else if case let .success(google)? = googlePay {
            let out = SensitiveBuffer(capacity: google.message.plaintext.count + 1)
            google.writeJSON(into: out)
            paymentLength = out.count
            out.append(byte: 0)
            self.payment = out
            paymentBytes = out.withUnsafeBytes { $0.baseAddress?.assumingMemoryBound(to: UInt8.self) }
        } else {
            self.payment = nil
            paymentBytes = nil
            paymentLength = 0
        }
    }

    /// A Google Pay token's result: its transactionId is the message's messageId. `outcome` says
    /// "not an Apple Pay payment" for a Google Pay payment (BatchResult's rule), so nothing that reads
    /// it alone takes one for the other.
    convenience init(
        googlePay result: Result<GooglePayment, ApplePayError>, transactionId: String?,
        outcome: Result<DecryptedPayment, ApplePayError>? = nil, replayIdentity: ReplayIdentity? = nil
    ) {
        switch result {
        case let .success(payment):
            self.init(
                code: ABICode.ok, message: "", field: nil, transactionId: transactionId ?? payment.messageId,
                payment: nil,
                outcome: outcome ?? .failure(Self.notApplePay), replayIdentity: payment.replayIdentity,
                googlePay: result)
        case let .failure(error):
            self.init(
                code: ABICode.of(error.code), message: error.message, field: error.field, transactionId: transactionId,
                payment: nil, outcome: outcome ?? .failure(error), replayIdentity: replayIdentity, googlePay: result)
        }
    }

    static let notApplePay = ApplePayError(
        .unsupportedVersion, "a Google Pay token: its payment is the result's googlePay", field: "protocolVersion")

    convenience init(
        _ outcome: Result<DecryptedPayment, ApplePayError>, transactionId: String?,
        replayIdentity: ReplayIdentity? = nil
    ) {
        switch outcome {
        case let .success(payment):
            self.init(
                code: ABICode.ok, message: "", field: nil, transactionId: transactionId ?? payment.transactionId,
                payment: payment,
                outcome: outcome, replayIdentity: payment.replayIdentity)
        case let .failure(error):
            self.init(
                code: ABICode.of(error.code), message: error.message, field: error.field, transactionId: transactionId,
                payment: nil,
                outcome: outcome, replayIdentity: replayIdentity)
        }
    }

    static func invalidArgument(_ message: String) -> ResultBox {
        ResultBox(code: ABICode.invalidArgument, message: message, field: nil, transactionId: nil, payment: nil)
    }

    deinit {
        free(message)
        free(field)
        free(transactionId)
    }
}

/// A `reference` argument as the engine's time: a Unix time in seconds, or in milliseconds when the call's
/// flags say so (AP_REFERENCE_MILLISECONDS); the two sentinels are the same in either unit.
func referenceTime(_ reference: Int64, milliseconds: Bool = false) -> ReferenceTime {
    switch reference {
    case Int64.min: .now
    case Int64.min + 1: .signingTime
    default:
        milliseconds ? .at(dateOfMilliseconds(reference)) : .at(Date(timeIntervalSince1970: TimeInterval(reference)))
    }
}

/// The Date of a Unix time in milliseconds that the engine reads back as the same millisecond (it takes
/// floor(seconds * 1000)): a Double of seconds can fall just below ...27.316 and read as ...27.315.
func dateOfMilliseconds(_ milliseconds: Int64) -> Date {
    var date = Date(timeIntervalSince1970: TimeInterval(milliseconds) / 1000)
    while (date.timeIntervalSince1970 * 1000).rounded(.down) < TimeInterval(milliseconds) {
        date = Date(timeIntervalSinceReferenceDate: date.timeIntervalSinceReferenceDate.nextUp)
    }
    return date
}

let maxTokenLength = 1 << 20
let maxBatchCount = 1 << 24
let maxLanes: UInt32 = 256

@c(ap_decrypt)
public func ap_decrypt(
    _ decryptor: OpaquePointer?, _ token: UnsafePointer<UInt8>?, _ length: UInt, _ reference: Int64,
    _ result: UnsafeMutablePointer<OpaquePointer?>?
) -> Int32 {
    guard let result else { return ABICode.invalidArgument }
    result.pointee = nil
    guard let box = decryptors.object(decryptor) else { return ABICode.invalidHandle }
    guard let token, let count = checkedLength(token, length, limit: maxTokenLength) else {
        return ABICode.invalidArgument
    }
    // A token only, as applepay.h says (ap_decrypt_expecting is the bound form): read in place, and a
    // rejected token gets no transactionId, since an unverified one is whatever its sender wrote.
    let bytes = UnsafeBufferPointer(start: token, count: count)
    let made: ResultBox
    // The wallets are told apart by shape, as in the CLI: a Google Pay token has protocolVersion and
    // signedMessage.
    if GooglePayToken.hasShape(UnsafeRawBufferPointer(bytes)) {
        made = ResultBox(googlePay: decryptGooglePay(bytes, with: box.googlePay, at: reference), transactionId: nil)
    } else {
        let outcome = Result { () throws(ApplePayError) in
            try box.engine.decrypt(bytes, at: referenceTime(reference))
        }
        made = ResultBox(outcome, transactionId: nil)
    }
    result.pointee = results.open(made)
    return made.code
}

/// A Google Pay token through the configuration's Google Pay engine, or refused as the CLI refuses it
/// when the configuration has none.
func decryptGooglePay(_ bytes: UnsafeBufferPointer<UInt8>, with engine: GooglePayTokenDecryptor?, at reference: Int64)
    -> Result<GooglePayment, ApplePayError>
{
    guard let engine else {
        return .failure(
            ApplePayError(
                .unknownMerchantKey,
                "a Google Pay token, but no Google Pay key is configured (ap_config_set_google_root_keys, ap_config_add_google_recipient_id, ap_config_add_google_merchant_key)"
            ))
    }
    return Result { () throws(ApplePayError) in try engine.decrypt(bytes, at: referenceTime(reference)) }
}

/// Feeds the caller's token array to the batch engine without copying; unusable entries become
/// unreadable items (their results are re-labelled AP_INVALID_ARGUMENT on delivery).
struct CallerTokens: BatchTokenSource {
    let tokens: UnsafePointer<UnsafePointer<UInt8>?>
    let lengths: UnsafePointer<UInt>
    let count: Int
    var next = 0

    func usable(_ i: Int) -> Int? { checkedLength(tokens[i], lengths[i], limit: maxTokenLength) }

    mutating func fill(_ window: inout BatchWindow, capacity: Int) throws -> Bool {
        let start = next
        while next < count, next - start < capacity, window.hasRoom {
            let location = BatchLocation(origin: 0, line: next + 1)
            if let length = usable(next), let base = tokens[next] {
                window.append(borrowing: UnsafeRawBufferPointer(start: base, count: length), at: location)
            } else {
                window.appendUnreadable(
                    "token \(next): NULL pointer, zero length or over AP_MAX_TOKEN_LENGTH", at: location)
            }
            next += 1
        }
        return next > start
    }
}

@c(ap_decrypt_batch)
public func ap_decrypt_batch(
    _ decryptor: OpaquePointer?, _ tokens: UnsafePointer<UnsafePointer<UInt8>?>?, _ lengths: UnsafePointer<UInt>?,
    _ count: UInt, _ reference: Int64, _ lanes: UInt32,
    _ resultsOut: UnsafeMutablePointer<OpaquePointer?>?
) -> Int32 {
    guard let resultsOut, count > 0, count <= UInt(maxBatchCount) else { return ABICode.invalidArgument }
    let count = Int(count)
    resultsOut.initialize(repeating: nil, count: count)
    guard let box = decryptors.object(decryptor) else { return ABICode.invalidHandle }
    guard let tokens, let lengths, lanes <= maxLanes else { return ABICode.invalidArgument }
    let inputs = CallerTokens(tokens: tokens, lengths: lengths, count: count)
    var source = inputs
    let engine = BatchDecryptor(
        decryptor: box.engine,
        lanes: lanes == 0 ? ProcessInfo.processInfo.activeProcessorCount : Int(lanes),
        reference: referenceTime(reference), windowSize: 512, backend: box.multiBuffer, googlePay: box.googlePay)
    do {
        try engine.run(&source, ledger: ReplayLedger()) { item in
            guard item.index < count else { return }
            let made: ResultBox
            if inputs.usable(item.index) == nil {
                made = .invalidArgument("token \(item.index): NULL pointer, zero length or over AP_MAX_TOKEN_LENGTH")
            } else if let googlePay = item.googlePay {
                made = ResultBox(
                    googlePay: googlePay, transactionId: item.transactionId, outcome: item.outcome,
                    replayIdentity: item.replayIdentity)
            } else {
                made = ResultBox(item.outcome, transactionId: item.transactionId, replayIdentity: item.replayIdentity)
            }
            resultsOut[item.index] = results.open(made)
        }
    } catch {
        _ = ap_results_free(resultsOut, UInt(count))
        return ABICode.internalError
    }
    // Every item is delivered exactly once; a gap would be an engine bug, not something to hand to C.
    for i in 0..<count where resultsOut[i] == nil {
        _ = ap_results_free(resultsOut, UInt(count))
        return ABICode.internalError
    }
    return ABICode.ok
}

@c(ap_result_code)
public func ap_result_code(_ result: OpaquePointer?) -> Int32 {
    results.object(result)?.code ?? ABICode.invalidHandle
}

@c(ap_result_message)
public func ap_result_message(_ result: OpaquePointer?) -> UnsafePointer<CChar>? {
    results.object(result).map { UnsafePointer($0.message) }
}

@c(ap_result_field)
public func ap_result_field(_ result: OpaquePointer?) -> UnsafePointer<CChar>? {
    results.object(result)?.field.map { UnsafePointer($0) }
}

@c(ap_result_transaction_id)
public func ap_result_transaction_id(_ result: OpaquePointer?) -> UnsafePointer<CChar>? {
    results.object(result)?.transactionId.map { UnsafePointer($0) }
}

@c(ap_result_payment_json)
public func ap_result_payment_json(_ result: OpaquePointer?, _ length: UnsafeMutablePointer<UInt>?) -> UnsafePointer<
    UInt8
>? {
    let box = results.object(result)
    length?.pointee = UInt(box?.paymentLength ?? 0)
    return box?.paymentBytes
}

@c(ap_result_replay_keys)
public func ap_result_replay_keys(
    _ result: OpaquePointer?, _ transactionKey: UnsafeMutablePointer<UInt8>?,
    _ contentKey: UnsafeMutablePointer<UInt8>?
) -> Int32 {
    guard let box = results.object(result) else { return ABICode.invalidHandle }
    guard let transactionKey, let contentKey else { return ABICode.invalidArgument }
    guard let identity = box.replayIdentity else { return ABICode.noReplayKeys }
    for (i, byte) in identity.transactionKey.bytesArray.enumerated() { transactionKey[i] = byte }
    for (i, byte) in identity.contentKey.bytesArray.enumerated() { contentKey[i] = byte }
    return ABICode.ok
}

@c(ap_result_free)
public func ap_result_free(_ result: OpaquePointer?) -> Int32 {
    results.close(result) == nil ? ABICode.invalidHandle : ABICode.ok
}

@c(ap_results_free)
public func ap_results_free(_ list: UnsafeMutablePointer<OpaquePointer?>?, _ count: UInt) -> Int32 {
    guard let list, count <= UInt(maxBatchCount) else { return ABICode.invalidArgument }
    var code = ABICode.ok
    for i in 0..<Int(count) {
        if let handle = list[i], results.close(handle) == nil { code = ABICode.invalidHandle }
        list[i] = nil
    }
    return code
}
