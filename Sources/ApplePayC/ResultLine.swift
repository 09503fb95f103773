// ap_result_line and ap_result_new_oversized_line: the CLI's batch result line for one result, written by
// the engine's one writer (BatchResult.writeLine) into a wiped buffer and copied to the caller's.
import ApplePayDecryption

let lineMaskPAN: UInt32 = 1
let lineVerifiedAtSigningTime: UInt32 = 2
/// AP_LINE_WALLET(w): bits 8-15 of ap_replay_line's flags name the replayed token's wallet.
let lineWalletShift: UInt32 = 8
let lineWalletMask: UInt32 = 0xFF << lineWalletShift

/// How `applepay-decrypt batch` tells the operator to raise its per-item limit; the CI's line test
/// compares the ABI's oversized line with the CLI's, so the two cannot drift apart unnoticed.
let itemLimitHint = "raise it with --max-item-bytes"

@c(ap_result_line)
public func ap_result_line(
    _ result: OpaquePointer?, _ index: UInt64, _ source: UnsafePointer<CChar>?, _ sourceLength: UInt,
    _ flags: UInt32, _ replayOf: Int64, _ buffer: UnsafeMutablePointer<UInt8>?, _ capacity: UInt,
    _ length: UnsafeMutablePointer<UInt>?
) -> Int32 {
    guard let box = results.object(result) else { return ABICode.invalidHandle }
    guard let length, flags & ~(lineMaskPAN | lineVerifiedAtSigningTime) == 0, index <= UInt64(Int.max), replayOf >= -1,
        sourceLength <= UInt(maxTokenLength), source != nil || sourceLength == 0, buffer != nil || capacity == 0,
        var outcome = box.outcome
    else { return ABICode.invalidArgument }
    if replayOf >= 0 {
        // Only a token that verified and decrypted can be judged a replay of an earlier one.
        guard outcome.replayIdentity != nil, replayOf < Int64(index) else { return ABICode.invalidArgument }
        outcome.refuseAsReplay(claimedBy: Int(replayOf))
    }
    let label =
        source.map { String(decoding: UnsafeRawBufferPointer(start: $0, count: Int(sourceLength)), as: UTF8.self) }
        ?? ""
    let line = BatchResult(index: Int(index), location: BatchLocation(origin: 0, line: 0), outcome: outcome)
    // The line may hold a card number: rendered into a wiped buffer, copied once into the caller's.
    let out = SensitiveBuffer(capacity: 4096)
    line.writeLine(
        into: out, source: label, maskingPAN: flags & lineMaskPAN != 0,
        verifiedAtSigningTime: flags & lineVerifiedAtSigningTime != 0)
    return out.withUnsafeBytes { bytes in
        length.pointee = UInt(bytes.count)
        guard let buffer, capacity >= UInt(bytes.count) else { return ABICode.bufferTooSmall }
        buffer.update(from: bytes.bindMemory(to: UInt8.self).baseAddress!, count: bytes.count)
        return ABICode.ok
    }
}

@c(ap_result_new_oversized_line)
public func ap_result_new_oversized_line(_ maxItemBytes: UInt64, _ result: UnsafeMutablePointer<OpaquePointer?>?)
    -> Int32
{
    guard let result else { return ABICode.invalidArgument }
    result.pointee = nil
    guard maxItemBytes >= 1, maxItemBytes <= 1 << 30 else { return ABICode.invalidArgument }
    let reason = JSONLinesSource.oversizedLineReason(limit: Int(maxItemBytes), hint: itemLimitHint)
    let made = ResultBox(WalletOutcome(refusing: .unreadableItem(reason)))
    result.pointee = results.open(made)
    return made.code
}
