// Where batch tokens come from: a window of byte slices that a source keeps alive until it is
// asked for the next window, and the sources for JSONL streams, directories and arrays.
internal import ApplePayCrypto
import Foundation

/// Where an item came from: an origin (a file, an archive member, stdin) and a 1-based line
/// (1 for whole-file items). Origins are numbered by the source that reads them.
public struct BatchLocation: Sendable, Hashable {
    /// Which input the item came from (the front end numbers its inputs).
    public let origin: Int
    /// 1-based line (or entry) of the item within its input.
    public let line: Int
    /// A location from its two parts.
    public init(origin: Int, line: Int) {
        self.origin = origin
        self.line = line
    }
}

/// One window of input items. Slices point into buffers the source owns; they stay valid until
/// the source's next `fill`.
public struct BatchWindow {
    enum Item {
        case slice(UnsafeRawBufferPointer)
        case owned(Int)
        case unreadable(String)
    }

    var items: [Item] = []
    var locations: [BatchLocation] = []
    private(set) var owned: [[UInt8]] = []
    /// Bytes of the items in the window (borrowed and owned): what the window holds in memory.
    public private(set) var byteCount = 0
    /// Sources stop filling once the window holds this many bytes (however small `capacity` is
    /// not), so hostile inputs cannot make a window of 512 items large; one item is always accepted.
    public var byteBudget: Int

    /// The default byte budget of a window: 32 MiB.
    public static let defaultByteBudget = 32 << 20

    /// An empty window that accepts items until `byteBudget` bytes are held.
    public init(byteBudget: Int = BatchWindow.defaultByteBudget) {
        self.byteBudget = max(1, byteBudget)
    }

    /// Number of items in the window.
    public var count: Int { items.count }

    /// Whether a source may add another item: the window is empty or still under its byte budget.
    public var hasRoom: Bool { items.isEmpty || byteCount < byteBudget }

    /// A token that lives in a buffer the source keeps until its next `fill`.
    public mutating func append(borrowing bytes: UnsafeRawBufferPointer, at location: BatchLocation) {
        items.append(.slice(bytes))
        locations.append(location)
        byteCount += bytes.count
    }

    /// A token the window keeps (whole files, archive members).
    public mutating func append(owning bytes: [UInt8], at location: BatchLocation) {
        items.append(.owned(owned.count))
        owned.append(bytes)
        locations.append(location)
        byteCount += bytes.count
    }

    /// An item that could not be read; it becomes a `malformedToken` result.
    public mutating func appendUnreadable(_ reason: String, at location: BatchLocation) {
        items.append(.unreadable(reason))
        locations.append(location)
    }

    mutating func removeAll() {
        items.removeAll(keepingCapacity: true)
        locations.removeAll(keepingCapacity: true)
        owned.removeAll(keepingCapacity: true)
        byteCount = 0
    }

    func withBytes<R>(of index: Int, _ body: (UnsafeRawBufferPointer) -> R) -> R? {
        switch items[index] {
        case let .slice(bytes): return body(bytes)
        case let .owned(slot): return owned[slot].withUnsafeBytes(body)
        case .unreadable: return nil
        }
    }
}

/// Produces input items window by window, in a fixed order.
public protocol BatchTokenSource {
    /// Appends up to `capacity` items to `window` (which arrives empty). Returns false once the
    /// input is exhausted and nothing was appended. Only configuration-level failures throw.
    mutating func fill(_ window: inout BatchWindow, capacity: Int) throws -> Bool
}

/// A running SHA-256 over input bytes (not secrets), so a resumed run can prove it reads what the
/// interrupted run read. Reading the digest leaves the running state as it is.
public struct InputDigest {
    /// Copied on write, so that a copy of the struct keeps its own running state.
    private var context = DigestContext()

    /// A digest of nothing yet.
    public init() {}

    /// Adds bytes.
    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        if !isKnownUniquelyReferenced(&context) { context = context.copy() }
        context.update(bytes)
    }

    /// Adds bytes.
    public mutating func update(_ bytes: [UInt8]) { bytes.withUnsafeBytes { update($0) } }

    /// Adds a string's UTF-8 bytes.
    public mutating func update(_ text: String) { update(Array(text.utf8)) }

    /// The digest of everything so far, as 64 lower-case hex digits.
    public var hex: String { Hex.encode(context.copy().finish()) }
}

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
    private var digestAtLastItem = InputDigest()

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
    public init(fileDescriptor: Int32, origin: Int, closeWhenDone: Bool, chunkSize: Int = 4 << 20,
                maxLineLength: Int = 1 << 20, limitHint: String? = nil) {
        self.fd = fileDescriptor
        self.origin = origin
        self.closeWhenDone = closeWhenDone
        self.maxLineLength = max(1, maxLineLength)
        self.limitHint = limitHint
        self.buffer = .allocate(byteCount: max(1, chunkSize), alignment: 16)
    }

    /// Opens `path` for reading.
    public convenience init(path: String, origin: Int, maxLineLength: Int = 1 << 20, limitHint: String? = nil) throws {
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { throw ConfigurationError(.unreadableInput, "cannot open \(path): \(String(cString: strerror(errno)))") }
        self.init(fileDescriptor: fd, origin: origin, closeWhenDone: true, maxLineLength: maxLineLength, limitHint: limitHint)
    }

    deinit {
        buffer.deallocate()
        if closeWhenDone, fd >= 0 { close(fd) }
    }

    /// SHA-256 of the input bytes through the end of the line of the last item handed out (blank
    /// lines after it excluded), in hex: the same after the same items whatever the read sizes were.
    public var consumedDigest: String { digestAtLastItem.hex }

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
                hash(start..<end)
                start = end
            }
            if eof {
                if skipping {
                    finishOversizedLine(into: &window)
                } else if start < end {
                    hash(start..<end)
                    emit(start..<end, into: &window)
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
                    let bigger = UnsafeMutableRawBufferPointer.allocate(byteCount: min(buffer.count * 2, maxLineLength + 1), alignment: 16)
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

    private func hash(_ range: Range<Int>) {
        guard !range.isEmpty else { return }
        digest.update(UnsafeRawBufferPointer(rebasing: buffer[range]))
    }

    private func consumeLine(through newline: Int, into window: inout BatchWindow) {
        hash(start..<newline + 1)
        if skipping || newline - start > maxLineLength {
            start = newline + 1
            finishOversizedLine(into: &window)
        } else {
            emit(start..<newline, into: &window)
            start = newline + 1
        }
    }

    private func finishOversizedLine(into window: inout BatchWindow) {
        skipping = false
        line += 1
        window.appendUnreadable(Self.oversizedLineReason(limit: maxLineLength, hint: limitHint), at: BatchLocation(origin: origin, line: line))
        digestAtLastItem = digest
    }

    private func emit(_ range: Range<Int>, into window: inout BatchWindow) {
        line += 1
        var lo = range.lowerBound, hi = range.upperBound
        while lo < hi, Self.isSpace(buffer[lo]) { lo += 1 }
        while hi > lo, Self.isSpace(buffer[hi - 1]) { hi -= 1 }
        guard lo < hi else { return }
        window.append(borrowing: UnsafeRawBufferPointer(rebasing: buffer[lo..<hi]), at: BatchLocation(origin: origin, line: line))
        digestAtLastItem = digest
    }

    private static func isSpace(_ c: UInt8) -> Bool { c == 0x20 || c == 0x09 || c == 0x0D }

    /// Why a line longer than `limit` bytes (newline excluded) is one unreadable item; `hint` (how
    /// to raise the limit) follows a semicolon.
    public static func oversizedLineReason(limit: Int, hint: String?) -> String {
        "the line is longer than the limit of \(limit) bytes" + (hint.map { "; \($0)" } ?? "")
    }
}

/// Tokens already in memory, one per element.
public struct ArrayTokenSource: BatchTokenSource {
    private let tokens: [[UInt8]]
    private var next = 0
    private let origin: Int

    /// A source over tokens in memory, one per element; `origin` is their ``BatchLocation/origin``.
    public init(_ tokens: [[UInt8]], origin: Int = 0) {
        self.tokens = tokens
        self.origin = origin
    }

    public mutating func fill(_ window: inout BatchWindow, capacity: Int) throws -> Bool {
        while window.count < capacity, window.hasRoom, next < tokens.count {
            window.append(owning: tokens[next], at: BatchLocation(origin: origin, line: next + 1))
            next += 1
        }
        return window.count > 0
    }
}

/// Several sources one after the other.
public struct ChainedTokenSource: BatchTokenSource {
    private var sources: [any BatchTokenSource]
    private var current = 0

    /// A source that reads each of `sources` to its end, in order.
    public init(_ sources: [any BatchTokenSource]) { self.sources = sources }

    public mutating func fill(_ window: inout BatchWindow, capacity: Int) throws -> Bool {
        while current < sources.count {
            if try sources[current].fill(&window, capacity: capacity) { return true }
            current += 1
        }
        return false
    }
}
