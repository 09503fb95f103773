// A zip archive as a token source: its `.json` and `.jsonl` members, inflated as a stream.
import ApplePayDecryption
import Foundation

/// The `.json` (one token each) and `.jsonl` (one token per line) members of a zip archive, in
/// archive order, inflated as a stream: memory stays bounded whatever the compression ratio. A
/// `.json` member is held up to the item limit; a `.jsonl` member is split into lines on the fly,
/// each line through the item limit. A member that fails to inflate or whose CRC-32 does not match
/// is one unreadable item (for a `.jsonl` member, after the lines that came before the fault).
final class ZipSource: InputReader {
    private let path: String
    private let names: OriginNames
    private let limit: ItemLimit
    private var inflater: ZipInflater?
    private var finished = false
    private var membersBegun = 0

    // The member being read.
    private var origin = 0
    private var memberPath = ""
    private var isLines = false
    private var line = 0
    private var partial: [UInt8] = []
    private var skippingLine = false
    /// The `.jsonl` chunk being split, followed by a NUL; `offset` is the next byte to look at.
    private var chunk: [UInt8] = [0]
    private var offset = 0

    init(path: String, names: OriginNames, limit: ItemLimit) {
        self.path = path
        self.names = names
        self.limit = limit
    }

    deinit { inflater?.cancel() }

    /// Zips are bound by size and modification time only (see `BatchInputs.facts`).
    var checkpointDigest: String? { nil }

    func fill(_ window: inout BatchWindow, capacity: Int) throws -> Bool {
        guard !finished else { return false }
        let inflater = self.inflater ?? ZipInflater(path: path, limit: limit.bytes)
        self.inflater = inflater
        while window.count < capacity, window.hasRoom {
            if offset < chunk.count - 1 {
                splitLines(into: &window, capacity: capacity)
                continue
            }
            switch inflater.next() {
            case let .begin(path, lines):
                membersBegun += 1
                origin = names.add("\(self.path)!\(path)")
                memberPath = path
                isLines = lines
                line = 0
                partial.removeAll(keepingCapacity: true)
                skippingLine = false
            case let .chunk(bytes):
                if isLines {
                    chunk = bytes
                    chunk.append(0)
                    offset = 0
                } else if !skippingLine {
                    partial.append(contentsOf: bytes)
                    if partial.count > limit.bytes {
                        // Enough: ask the inflater to drop the rest of this member.
                        skippingLine = true
                        partial = []
                        inflater.skipMember(membersBegun - 1)
                    }
                }
            case let .end(fault):
                if let fault {
                    window.appendUnreadable(
                        "corrupt zip member \(memberPath): \(fault)", at: BatchLocation(origin: origin, line: line + 1))
                } else if isLines {
                    if skippingLine || !partial.isEmpty { finishLine(into: &window) }
                } else if skippingLine {
                    window.appendUnreadable(limit.message, at: BatchLocation(origin: origin, line: 1))
                } else {
                    window.append(owning: partial, at: BatchLocation(origin: origin, line: 1))
                }
                partial = []
                skippingLine = false
            case .oversizedMember:
                skippingLine = true
            case let .done(openError):
                finished = true
                self.inflater = nil
                if let openError {
                    // The whole archive is one unreadable item.
                    window.appendUnreadable(openError, at: BatchLocation(origin: names.add(path), line: 1))
                }
                return window.count > 0
            }
        }
        return window.count > 0
    }

    /// Hands out the complete lines of the current chunk, keeping an unfinished one in `partial`.
    private func splitLines(into window: inout BatchWindow, capacity: Int) {
        chunk.withUnsafeBytes { whole in
            let raw = UnsafeRawBufferPointer(rebasing: whole.dropLast())  // the NUL terminator
            let base = raw.baseAddress!
            while offset < raw.count, window.count < capacity, window.hasRoom {
                if partial.isEmpty, !skippingLine, raw[offset] == 0x0A {
                    // A run of empty lines (a newline bomb) is skipped at C speed: `chunk` ends in a NUL.
                    let run = strspn(base.assumingMemoryBound(to: CChar.self) + offset, "\n")
                    line += run
                    offset += run
                    continue
                }
                guard let found = memchr(base + offset, 0x0A, raw.count - offset) else {
                    take(UnsafeRawBufferPointer(rebasing: raw[offset...]))
                    offset = raw.count
                    return
                }
                let newline = UnsafeRawPointer(found) - base
                take(UnsafeRawBufferPointer(rebasing: raw[offset..<newline]))
                offset = newline + 1
                finishLine(into: &window)
            }
        }
    }

    private func take(_ bytes: UnsafeRawBufferPointer) {
        guard !skippingLine, !bytes.isEmpty else { return }
        if partial.count + bytes.count > limit.bytes {
            skippingLine = true
            partial = []
        } else {
            partial.append(contentsOf: bytes)
        }
    }

    private func finishLine(into window: inout BatchWindow) {
        line += 1
        defer {
            partial.removeAll(keepingCapacity: true)
            skippingLine = false
        }
        if skippingLine {
            window.appendUnreadable(limit.message, at: BatchLocation(origin: origin, line: line))
            return
        }
        guard let first = partial.firstIndex(where: { !Self.isSpace($0) }) else { return }
        let last = partial.lastIndex(where: { !Self.isSpace($0) })!
        window.append(owning: Array(partial[first...last]), at: BatchLocation(origin: origin, line: line))
    }

    private static func isSpace(_ c: UInt8) -> Bool { c == 0x20 || c == 0x09 || c == 0x0D }
}
