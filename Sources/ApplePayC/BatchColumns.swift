// ap_decrypt_batch_arrow, ap_batch_result_columns and ap_replay_line: an Arrow binary column of tokens into
// the batch engine by address, its results back as Arrow-shaped columns, every line by the engine's one writer.
import ApplePayDecryption

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

let batchUnjudged: UInt32 = 4

/// The columns of one ap_decrypt_batch_arrow call. Buffers are allocated once, filled in `init` and only
/// read (by C) until the box is released; the lines, which hold card data, are wiped then.
final class BatchColumnsBox: @unchecked Sendable {
    // Sendable: every buffer is written before the box is published in the handle table, then only read.
    let count: Int
    let lines: SensitiveBuffer
    let lineOffsets: UnsafeMutablePointer<Int64>
    let codes: UnsafeMutablePointer<Int32>
    let replayKeys: UnsafeMutablePointer<UInt8>
    let hasReplayKeys: UnsafeMutablePointer<UInt8>
    let transactionIdOffsets: UnsafeMutablePointer<Int64>
    let hasTransactionId: UnsafeMutablePointer<UInt8>
    /// Row i's wallet (ap_wallet; 0 for a row that is ABI misuse): ap_batch_result_wallets.
    let wallets: UnsafeMutablePointer<UInt8>
    private(set) var transactionIds: [UInt8] = []
    /// `lines`' storage, fixed once `init` has written the last line.
    private(set) var lineBytes: UnsafePointer<UInt8>?
    private(set) var transactionIdBytes: UnsafeMutablePointer<UInt8>?

    init(count: Int, expectedLineBytes: Int) {
        self.count = count
        lines = SensitiveBuffer(capacity: expectedLineBytes)
        lineOffsets = .allocate(capacity: count + 1)
        lineOffsets.initialize(repeating: 0, count: count + 1)
        codes = .allocate(capacity: count)
        codes.initialize(repeating: ABICode.internalError, count: count)
        replayKeys = .allocate(capacity: count * 32)
        replayKeys.initialize(repeating: 0, count: count * 32)
        hasReplayKeys = .allocate(capacity: count)
        hasReplayKeys.initialize(repeating: 0, count: count)
        transactionIdOffsets = .allocate(capacity: count + 1)
        transactionIdOffsets.initialize(repeating: 0, count: count + 1)
        hasTransactionId = .allocate(capacity: count)
        hasTransactionId.initialize(repeating: 0, count: count)
        wallets = .allocate(capacity: count)
        wallets.initialize(repeating: 0, count: count)
    }

    /// Row `row`'s columns; rows arrive in order, each once.
    func set(row: Int, code: Int32, identity: ReplayIdentity?, transactionId: String?, wallet: Wallet?) {
        codes[row] = code
        wallets[row] = UInt8(wallet.map(ABIWallet.of) ?? ABIWallet.none)
        if let identity {
            hasReplayKeys[row] = 1
            for (i, byte) in identity.transactionKey.bytesArray.enumerated() { replayKeys[row * 32 + i] = byte }
            for (i, byte) in identity.contentKey.bytesArray.enumerated() { replayKeys[row * 32 + 16 + i] = byte }
        }
        if let transactionId {
            hasTransactionId[row] = 1
            transactionIds.append(contentsOf: transactionId.utf8)
        }
        lineOffsets[row + 1] = Int64(lines.count)
        transactionIdOffsets[row + 1] = Int64(transactionIds.count)
    }

    /// Fixes the buffers' addresses once every row is written.
    func seal() {
        lineBytes = lines.withUnsafeBytes { $0.baseAddress?.assumingMemoryBound(to: UInt8.self) }
        transactionIdBytes = .allocate(capacity: max(1, transactionIds.count))
        transactionIds.withUnsafeBufferPointer { ids in
            if let base = ids.baseAddress { transactionIdBytes?.update(from: base, count: ids.count) }
        }
        transactionIds = []
    }

    deinit {
        lineOffsets.deallocate()
        codes.deallocate()
        replayKeys.deallocate()
        hasReplayKeys.deallocate()
        transactionIdOffsets.deallocate()
        hasTransactionId.deallocate()
        wallets.deallocate()
        transactionIdBytes?.deallocate()
    }
}

/// The C view of a BatchColumnsBox, laid out as applepay.h's ap_batch_columns.
struct BatchColumnsView {
    var count: UInt
    var lineOffsets: UnsafePointer<Int64>?
    var lines: UnsafePointer<UInt8>?
    var codes: UnsafePointer<Int32>?
    var replayKeys: UnsafePointer<UInt8>?
    var hasReplayKeys: UnsafePointer<UInt8>?
    var transactionIdOffsets: UnsafePointer<Int64>?
    var transactionIds: UnsafePointer<UInt8>?
    var hasTransactionId: UnsafePointer<UInt8>?
}

/// Feeds an Arrow binary column (offsets of 4 or 8 bytes, one data buffer) to the batch engine without
/// copying; an empty or too long item becomes an unreadable one (re-labelled AP_INVALID_ARGUMENT).
struct ArrowTokens: BatchTokenSource {
    let offsets: UnsafeRawPointer
    let width: Int
    let data: UnsafePointer<UInt8>
    let count: Int
    var next = 0

    func offset(_ i: Int) -> Int {
        width == 4
            ? Int(offsets.loadUnaligned(fromByteOffset: i * 4, as: Int32.self))
            : Int(offsets.loadUnaligned(fromByteOffset: i * 8, as: Int64.self))
    }

    func usable(_ i: Int) -> Bool {
        let length = offset(i + 1) - offset(i)
        return length > 0 && length <= maxTokenLength
    }

    /// Offsets that start at 0 or more and never decrease: anything else is not an Arrow column.
    func wellFormed() -> Bool {
        var previous = offset(0)
        guard previous >= 0 else { return false }
        for i in 1...count {
            let current = offset(i)
            guard current >= previous else { return false }
            previous = current
        }
        return true
    }

    mutating func fill(_ window: inout BatchWindow, capacity: Int) throws -> Bool {
        let start = next
        while next < count, next - start < capacity, window.hasRoom {
            let location = BatchLocation(origin: 0, line: next + 1)
            if usable(next) {
                let from = offset(next)
                window.append(
                    borrowing: UnsafeRawBufferPointer(start: data + from, count: offset(next + 1) - from), at: location)
            } else {
                window.appendUnreadable("token \(next): empty or over AP_MAX_TOKEN_LENGTH", at: location)
            }
            next += 1
        }
        return next > start
    }
}

@c(ap_decrypt_batch_arrow)
public func ap_decrypt_batch_arrow(
    _ decryptor: OpaquePointer?, _ offsets: UnsafeRawPointer?, _ offsetWidth: UInt32, _ data: UnsafePointer<UInt8>?,
    _ count: UInt, _ firstIndex: UInt64, _ source: UnsafePointer<CChar>?, _ sourceLength: UInt, _ reference: Int64,
    _ lanes: UInt32, _ flags: UInt32, _ resultOut: UnsafeMutablePointer<OpaquePointer?>?
) -> Int32 {
    guard let resultOut else { return ABICode.invalidArgument }
    resultOut.pointee = nil
    guard let box = decryptors.object(decryptor) else { return ABICode.invalidHandle }
    guard let offsets, let data, offsetWidth == 4 || offsetWidth == 8, count > 0, count <= UInt(maxBatchCount),
        lanes <= maxLanes, flags & ~(lineMaskPAN | lineVerifiedAtSigningTime | batchUnjudged) == 0,
        firstIndex <= UInt64(Int.max) - UInt64(count), sourceLength <= UInt(maxTokenLength),
        source != nil || sourceLength == 0
    else { return ABICode.invalidArgument }
    let count = Int(count)
    let inputs = ArrowTokens(offsets: offsets, width: Int(offsetWidth), data: data, count: count)
    guard inputs.wellFormed() else { return ABICode.invalidArgument }
    let label =
        source.map { String(decoding: UnsafeRawBufferPointer(start: $0, count: Int(sourceLength)), as: UTF8.self) }
        ?? ""
    let maskingPAN = flags & lineMaskPAN != 0
    let atSigningTime = flags & lineVerifiedAtSigningTime != 0
    let columns = BatchColumnsBox(count: count, expectedLineBytes: count * 768)
    var source = inputs
    let engine = BatchDecryptor(
        wallets: box.wallets, lanes: lanes == 0 ? ProcessInfo.processInfo.activeProcessorCount : Int(lanes),
        reference: box.referenceTime(reference), windowSize: 512, backend: box.multiBuffer)
    var delivered = 0
    do {
        try engine.run(&source, ledger: flags & batchUnjudged != 0 ? .unjudging() : ReplayLedger()) { item in
            guard item.index == delivered, item.index < count else { return }
            delivered += 1
            guard inputs.usable(item.index) else {
                columns.set(
                    row: item.index, code: ABICode.invalidArgument, identity: nil, transactionId: nil, wallet: nil)
                return
            }
            // Written once, by the engine's writer, straight into the wiped column buffer (either wallet).
            let result = BatchResult(
                index: Int(firstIndex) + item.index, location: item.location, outcome: item.outcome)
            result.writeLine(
                into: columns.lines, source: label, maskingPAN: maskingPAN, verifiedAtSigningTime: atSigningTime)
            let code = result.error.map { ABICode.of($0.code) } ?? ABICode.ok
            columns.set(
                row: item.index, code: code, identity: item.replayIdentity, transactionId: item.transactionId,
                wallet: item.outcome.wallet)
        }
    } catch {
        return ABICode.internalError
    }
    // Every item is delivered exactly once; a gap would be an engine bug, not something to hand to C.
    guard delivered == count else { return ABICode.internalError }
    columns.seal()
    resultOut.pointee = batchResults.open(columns)
    return ABICode.ok
}

@c(ap_batch_result_columns)
public func ap_batch_result_columns(_ result: OpaquePointer?, _ view: UnsafeMutableRawPointer?) -> Int32 {
    guard let box = batchResults.object(result) else { return ABICode.invalidHandle }
    guard let view else { return ABICode.invalidArgument }
    view.storeBytes(
        of: BatchColumnsView(
            count: UInt(box.count), lineOffsets: UnsafePointer(box.lineOffsets), lines: box.lineBytes,
            codes: UnsafePointer(box.codes), replayKeys: UnsafePointer(box.replayKeys),
            hasReplayKeys: UnsafePointer(box.hasReplayKeys),
            transactionIdOffsets: UnsafePointer(box.transactionIdOffsets),
            transactionIds: box.transactionIdBytes.map { UnsafePointer($0) },
            hasTransactionId: UnsafePointer(box.hasTransactionId)),
        as: BatchColumnsView.self)
    return ABICode.ok
}

@c(ap_batch_result_wallets)
public func ap_batch_result_wallets(_ result: OpaquePointer?) -> UnsafePointer<UInt8>? {
    batchResults.object(result).map { UnsafePointer($0.wallets) }
}

@c(ap_batch_result_free)
public func ap_batch_result_free(_ result: OpaquePointer?) -> Int32 {
    batchResults.close(result) == nil ? ABICode.invalidHandle : ABICode.ok
}

@c(ap_replay_line)
public func ap_replay_line(
    _ index: UInt64, _ source: UnsafePointer<CChar>?, _ sourceLength: UInt, _ sourceLine: Int64,
    _ transactionId: UnsafePointer<CChar>?, _ claimedBy: UInt64, _ flags: UInt32,
    _ buffer: UnsafeMutablePointer<UInt8>?, _ capacity: UInt, _ length: UnsafeMutablePointer<UInt>?
) -> Int32 {
    guard let length, flags & ~(lineMaskPAN | lineVerifiedAtSigningTime | lineWalletMask) == 0,
        let wallet = ABIWallet.wallet((flags & lineWalletMask) >> lineWalletShift), index <= UInt64(Int.max),
        claimedBy < index, sourceLine >= -1, sourceLength <= UInt(maxTokenLength), source != nil || sourceLength == 0,
        buffer != nil || capacity == 0
    else { return ABICode.invalidArgument }
    let label =
        source.map { String(decoding: UnsafeRawBufferPointer(start: $0, count: Int(sourceLength)), as: UTF8.self) }
        ?? ""
    let line = BatchResult(
        index: Int(index), location: BatchLocation(origin: 0, line: 0),
        outcome: WalletOutcome(
            wallet: wallet, transactionId: transactionId.map { String(cString: $0) },
            result: .failure(.replayed(claimedBy: Int(claimedBy), wallet: wallet))))
    let out = SensitiveBuffer(capacity: 512)
    line.writeLine(
        into: out, source: label, sourceLine: sourceLine >= 0 ? Int(sourceLine) : nil, maskingPAN: false,
        verifiedAtSigningTime: flags & lineVerifiedAtSigningTime != 0)
    return out.withUnsafeBytes { bytes in
        length.pointee = UInt(bytes.count)
        guard let buffer, capacity >= UInt(bytes.count) else { return ABICode.bufferTooSmall }
        buffer.update(from: bytes.bindMemory(to: UInt8.self).baseAddress!, count: bytes.count)
        return ABICode.ok
    }
}
