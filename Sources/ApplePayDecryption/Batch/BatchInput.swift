// Where batch tokens come from: a window of byte slices that a source keeps alive until it is
// asked for the next window, and the sources for JSONL streams, directories and arrays.
import Foundation

/// Where an item came from: an origin (a file, an archive member, stdin) and a 1-based line
/// (1 for whole-file items). Origins are numbered by the source that reads them.
public struct BatchLocation: Sendable, Hashable {
    public let origin: Int
    public let line: Int
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

    public init() {}

    public var count: Int { items.count }

    /// A token that lives in a buffer the source keeps until its next `fill`.
    public mutating func append(borrowing bytes: UnsafeRawBufferPointer, at location: BatchLocation) {
        items.append(.slice(bytes))
        locations.append(location)
    }

    /// A token the window keeps (whole files, archive members).
    public mutating func append(owning bytes: [UInt8], at location: BatchLocation) {
        items.append(.owned(owned.count))
        owned.append(bytes)
        locations.append(location)
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

/// One token per line from a file descriptor (a file or stdin), read in large chunks into one
/// reusable buffer; lines are handed out as slices of it. Blank lines are skipped (but counted).
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

    /// - Parameters:
    ///   - fileDescriptor: read until end of file; closed at the end when `closeWhenDone`.
    ///   - origin: the number results will carry in their `BatchLocation`.
    public init(fileDescriptor: Int32, origin: Int, closeWhenDone: Bool, chunkSize: Int = 4 << 20, maxLineLength: Int = 64 << 20) {
        self.fd = fileDescriptor
        self.origin = origin
        self.closeWhenDone = closeWhenDone
        self.maxLineLength = maxLineLength
        self.buffer = .allocate(byteCount: chunkSize, alignment: 16)
    }

    /// Opens `path` for reading.
    public convenience init(path: String, origin: Int) throws {
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { throw ConfigurationError("cannot open \(path): \(String(cString: strerror(errno)))") }
        self.init(fileDescriptor: fd, origin: origin, closeWhenDone: true)
    }

    deinit {
        buffer.deallocate()
        if closeWhenDone, fd >= 0 { close(fd) }
    }

    public func fill(_ window: inout BatchWindow, capacity: Int) throws -> Bool {
        // Everything handed out before is consumed now: keep only the unfinished tail.
        if start > 0 {
            if end > start { buffer.baseAddress!.copyMemory(from: buffer.baseAddress! + start, byteCount: end - start) }
            end -= start
            start = 0
        }
        while window.count < capacity {
            if let newline = findNewline() {
                emit(start..<newline, into: &window)
                start = newline + 1
                continue
            }
            if eof {
                if start < end { emit(start..<end, into: &window); start = end }
                break
            }
            if end == buffer.count {
                // Growing moves the bytes: not while slices of them are handed out.
                if window.count > 0 { break }
                guard buffer.count < maxLineLength else {
                    // A line longer than any token can be: report it and skip to its end.
                    line += 1
                    window.appendUnreadable("line is longer than \(maxLineLength) bytes", at: BatchLocation(origin: origin, line: line))
                    skipRestOfLine()
                    continue
                }
                let bigger = UnsafeMutableRawBufferPointer.allocate(byteCount: buffer.count * 2, alignment: 16)
                bigger.baseAddress!.copyMemory(from: buffer.baseAddress!, byteCount: end)
                buffer.deallocate()
                buffer = bigger
            }
            let n = read(fd, buffer.baseAddress! + end, buffer.count - end)
            if n < 0 {
                if errno == EINTR { continue }
                throw ConfigurationError("read failed: \(String(cString: strerror(errno)))")
            }
            if n == 0 { eof = true } else { end += n }
        }
        return window.count > 0
    }

    private func findNewline() -> Int? {
        guard start < end, let p = memchr(buffer.baseAddress! + start, 0x0A, end - start) else { return nil }
        return UnsafeRawPointer(p) - UnsafeRawPointer(buffer.baseAddress!)
    }

    private func emit(_ range: Range<Int>, into window: inout BatchWindow) {
        line += 1
        var lo = range.lowerBound, hi = range.upperBound
        while lo < hi, Self.isSpace(buffer[lo]) { lo += 1 }
        while hi > lo, Self.isSpace(buffer[hi - 1]) { hi -= 1 }
        guard lo < hi else { return }
        window.append(borrowing: UnsafeRawBufferPointer(rebasing: buffer[lo..<hi]), at: BatchLocation(origin: origin, line: line))
    }

    private func skipRestOfLine() {
        while true {
            start = 0
            end = 0
            let n = read(fd, buffer.baseAddress!, buffer.count)
            if n <= 0 { eof = true; return }
            end = n
            if let newline = findNewline() { start = newline + 1; return }
        }
    }

    private static func isSpace(_ c: UInt8) -> Bool { c == 0x20 || c == 0x09 || c == 0x0D }
}

/// Tokens already in memory, one per element.
public struct ArrayTokenSource: BatchTokenSource {
    private let tokens: [[UInt8]]
    private var next = 0
    private let origin: Int

    public init(_ tokens: [[UInt8]], origin: Int = 0) {
        self.tokens = tokens
        self.origin = origin
    }

    public mutating func fill(_ window: inout BatchWindow, capacity: Int) throws -> Bool {
        while window.count < capacity, next < tokens.count {
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

    public init(_ sources: [any BatchTokenSource]) { self.sources = sources }

    public mutating func fill(_ window: inout BatchWindow, capacity: Int) throws -> Bool {
        while current < sources.count {
            if try sources[current].fill(&window, capacity: capacity) { return true }
            current += 1
        }
        return false
    }
}
