// Batch input from JSON Lines: one token per line of a file or stdin, handed out as slices of one reusable buffer.
#if canImport(FoundationEssentials)
    import FoundationEssentials
    import Glibc  // open, read, memchr, errno: Foundation re-exports them, FoundationEssentials does not
#else
    import Foundation
#endif

/// One token per line from a file descriptor (a file or stdin), read in large chunks into one
/// reusable buffer; lines are handed out as slices of it. Blank lines are skipped (but counted).
/// A line longer than `maxLineLength` is one unreadable item, skipped without ever being held whole.
public final class JSONLinesSource: BatchTokenSource {
    private let fd: Int32
    private let closeWhenDone: Bool
    private let origin: Int
    private var buffer: UnsafeMutableRawBufferPointer
    private var start = 0  // first unconsumed byte
    private var end = 0  // end of valid bytes
    private var eof = false
    private var line = 0
    private let maxLineLength: Int
    private let limitHint: String?
    /// Inside a line already known to be too long: its bytes are dropped up to its end.
    private var skipping = false
    private var digest = InputDigest()
    /// The digest through the last item's line, kept only while `digest` has moved past it (blank
    /// lines, the first part of a line longer than the limit); nil when the two are the same. A
    /// snapshot per item would copy the SHA-256 context for every token.
    private var digestAtLastItem: InputDigest? = nil
    /// False for a pass that only counts the items: SHA-256 of every byte is most of its cost.
    private let digesting: Bool

    /// A source reading JSON Lines (one token per line) from an open file descriptor.
    ///
    /// - Parameters:
    ///   - fileDescriptor: read until end of file; closed at the end when `closeWhenDone`.
    ///   - origin: the number results will carry in their `BatchLocation`.
    ///   - closeWhenDone: close `fileDescriptor` once it is read to the end.
    ///   - chunkSize: bytes read per `read` call (the buffer's starting size).
    ///   - maxLineLength: the per-item limit in bytes (newline excluded); the buffer grows past
    ///     `chunkSize` only for a line this long, and never beyond it.
    ///   - limitHint: appended to the oversized-line message (e.g. how to raise the limit).
    ///   - digesting: keep `consumedDigest` (false for a pass that only counts items; its digest stays
    ///     that of no bytes).
    public init(
        fileDescriptor: Int32, origin: Int, closeWhenDone: Bool, chunkSize: Int = 4 << 20,
        maxLineLength: Int = 1 << 20, limitHint: String? = nil, digesting: Bool = true
    ) {
        self.fd = fileDescriptor
        self.digesting = digesting
        self.origin = origin
        self.closeWhenDone = closeWhenDone
        self.maxLineLength = max(1, maxLineLength)
        self.limitHint = limitHint
        self.buffer = .allocate(byteCount: max(1, chunkSize), alignment: 16)
    }

    /// Opens `path` for reading.
    public convenience init(
        path: String, origin: Int, maxLineLength: Int = 1 << 20, limitHint: String? = nil, digesting: Bool = true
    ) throws {
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else {
            throw ConfigurationError(.unreadableInput, "cannot open \(path): \(String(cString: strerror(errno)))")
        }
        self.init(
            fileDescriptor: fd, origin: origin, closeWhenDone: true, maxLineLength: maxLineLength, limitHint: limitHint,
            digesting: digesting)
    }

    deinit {
        buffer.deallocate()
        if closeWhenDone, fd >= 0 { close(fd) }
    }

    /// SHA-256 of the input bytes through the end of the line of the last item handed out (blank
    /// lines after it excluded), in hex: the same after the same items whatever the read sizes were.
    public var consumedDigest: String { (digestAtLastItem ?? digest).hex }

    public func fill(_ window: inout BatchWindow, capacity: Int) throws -> Bool {
        // Everything handed out before is consumed now: keep only the unfinished tail.
        compact()
        while window.count < capacity, window.hasRoom {
            if let newline = findNewline() {
                consumeLine(through: newline, into: &window)
                continue
            }
            if !skipping, end - start > maxLineLength { skipping = true }
            if skipping {
                // Only the end of an oversized line matters: drop what was read of it.
                hashPastLastItem(start..<end)
                start = end
            }
            if eof {
                if skipping {
                    finishOversizedLine(into: &window)
                } else if start < end {
                    takeLine(start..<end, hashing: start..<end, into: &window)
                    start = end
                }
                break
            }
            if end == buffer.count {
                // Moving or growing the buffer invalidates slices: not while some are handed out.
                if window.count > 0 { break }
                if start > 0 {
                    compact()
                } else {
                    let bigger = UnsafeMutableRawBufferPointer.allocate(
                        byteCount: min(buffer.count * 2, maxLineLength + 1), alignment: 16)
                    bigger.baseAddress!.copyMemory(from: buffer.baseAddress!, byteCount: end)
                    buffer.deallocate()
                    buffer = bigger
                }
            }
            let n = read(fd, buffer.baseAddress! + end, buffer.count - end)
            if n < 0 {
                if errno == EINTR { continue }
                throw ConfigurationError(.unreadableInput, "read failed: \(String(cString: strerror(errno)))")
            }
            if n == 0 { eof = true } else { end += n }
        }
        return window.count > 0
    }

    private func compact() {
        guard start > 0 else { return }
        if end > start { buffer.baseAddress!.copyMemory(from: buffer.baseAddress! + start, byteCount: end - start) }
        end -= start
        start = 0
    }

    private func findNewline() -> Int? {
        guard start < end, let p = memchr(buffer.baseAddress! + start, 0x0A, end - start) else { return nil }
        return UnsafeRawPointer(p) - UnsafeRawPointer(buffer.baseAddress!)
    }

    /// Bytes that end an item's line: the digest through them is the consumed digest.
    private func hashItem(_ range: Range<Int>) {
        guard digesting, !range.isEmpty else { return }
        digest.update(UnsafeRawBufferPointer(rebasing: buffer[range]))
        digestAtLastItem = nil
    }

    /// Bytes past the last item that end none (yet): the digest through the last item is kept aside
    /// first (the update copies the shared context once).
    private func hashPastLastItem(_ range: Range<Int>) {
        guard digesting, !range.isEmpty else { return }
        if digestAtLastItem == nil { digestAtLastItem = digest }
        digest.update(UnsafeRawBufferPointer(rebasing: buffer[range]))
    }

    private func consumeLine(through newline: Int, into window: inout BatchWindow) {
        if skipping || newline - start > maxLineLength {
            hashItem(start..<newline + 1)
            start = newline + 1
            finishOversizedLine(into: &window)
        } else {
            takeLine(start..<newline, hashing: start..<newline + 1, into: &window)
            start = newline + 1
        }
    }

    private func finishOversizedLine(into window: inout BatchWindow) {
        skipping = false
        line += 1
        window.appendUnreadable(
            Self.oversizedLineReason(limit: maxLineLength, hint: limitHint),
            at: BatchLocation(origin: origin, line: line))
        digestAtLastItem = nil
    }

    /// A line (without its newline) that is an item unless it is blank; `hashed` is the line with its newline.
    private func takeLine(_ range: Range<Int>, hashing hashed: Range<Int>, into window: inout BatchWindow) {
        line += 1
        var lo = range.lowerBound, hi = range.upperBound
        while lo < hi, Self.isSpace(buffer[lo]) { lo += 1 }
        while hi > lo, Self.isSpace(buffer[hi - 1]) { hi -= 1 }
        guard lo < hi else {
            hashPastLastItem(hashed)
            return
        }
        hashItem(hashed)
        window.append(
            borrowing: UnsafeRawBufferPointer(rebasing: buffer[lo..<hi]), at: BatchLocation(origin: origin, line: line))
    }

    private static func isSpace(_ c: UInt8) -> Bool { c == 0x20 || c == 0x09 || c == 0x0D }

    /// Why a line longer than `limit` bytes (newline excluded) is one unreadable item; `hint` (how
    /// to raise the limit) follows a semicolon.
    package static func oversizedLineReason(limit: Int, hint: String?) -> String {
        "the line is longer than the limit of \(limit) bytes" + (hint.map { "; \($0)" } ?? "")
    }
}
