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
    /// The front door's outcome, kept for ap_result_line (nil for a result that is ABI misuse).
    let outcome: WalletOutcome?

    init(code: Int32, message: String, field: String?, transactionId: String?, outcome: WalletOutcome?) {
        self.code = code
        self.outcome = outcome
        self.message = strdup(message)
        self.field = field.map { strdup($0) }
        self.transactionId = transactionId.map { strdup($0) }
        if let payment = outcome?.payment {
            let out = SensitiveBuffer(capacity: payment.plaintextCount + 1)
            payment.writeResultJSON(into: out)
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

    /// The result of one token, whichever the wallet. A rejected token's transactionId is the one the
    /// outcome carries only when `keepingRejectedId` (a batch's, as its line shows it); ap_decrypt's
    /// rejected tokens get none, since an unverified id is whatever its sender wrote.
    convenience init(_ outcome: WalletOutcome, keepingRejectedId: Bool = true) {
        switch outcome.result {
        case let .success(payment):
            self.init(
                code: ABICode.ok, message: "", field: nil,
                transactionId: outcome.transactionId ?? payment.transactionId,
                outcome: outcome)
        case let .failure(error):
            self.init(
                code: ABICode.of(error.code), message: error.message, field: error.field,
                transactionId: keepingRejectedId ? outcome.transactionId : nil, outcome: outcome)
        }
    }

    /// The wallet of the token (ap_result_wallet).
    var wallet: Wallet? { outcome?.wallet }

    /// The keys of a token that verified and decrypted, also when a batch judged it a replay.
    var replayIdentity: ReplayIdentity? { outcome?.replayIdentity }

    static func invalidArgument(_ message: String) -> ResultBox {
        ResultBox(code: ABICode.invalidArgument, message: message, field: nil, transactionId: nil, outcome: nil)
    }

    deinit {
        free(message)
        free(field)
        free(transactionId)
    }
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
    let bytes = UnsafeRawBufferPointer(start: token, count: count)
    let made = ResultBox(box.wallets.decrypt(bytes, at: box.referenceTime(reference)), keepingRejectedId: false)
    result.pointee = results.open(made)
    return made.code
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
        wallets: box.wallets, lanes: lanes == 0 ? ProcessInfo.processInfo.activeProcessorCount : Int(lanes),
        reference: box.referenceTime(reference), windowSize: 512, backend: box.multiBuffer)
    do {
        try engine.run(&source, ledger: ReplayLedger()) { item in
            guard item.index < count else { return }
            let made: ResultBox
            if inputs.usable(item.index) == nil {
                made = .invalidArgument("token \(item.index): NULL pointer, zero length or over AP_MAX_TOKEN_LENGTH")
            } else {
                made = ResultBox(item.outcome)
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

@c(ap_result_wallet)
public func ap_result_wallet(_ result: OpaquePointer?) -> Int32 {
    guard let box = results.object(result) else { return ABICode.invalidHandle }
    return box.wallet.map(ABIWallet.of) ?? ABIWallet.none
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
