// The lines of a streamed /v1/decrypt/batch body, held one at a time.
import NIOCore

/// Splits a streamed body into lines without holding more than one line (up to the limit): a longer
/// line is skipped to its end and reported as too long. Blank lines are skipped but counted.
struct LineSplitter {
    enum Item: Sendable {
        case line([UInt8], lineNumber: Int)
        case tooLong(lineNumber: Int, length: Int)

        var lineNumber: Int {
            switch self {
            case let .line(_, n), let .tooLong(n, _): return n
            }
        }
    }

    let limit: Int
    private var current: [UInt8] = []
    private var currentLength = 0
    private var lineNumber = 1
    private var ready: [Item] = []
    private var readyHead = 0

    init(limit: Int) { self.limit = limit }

    mutating func feed(_ buffer: ByteBuffer) {
        buffer.withUnsafeReadableBytes { raw in
            var start = 0
            while start < raw.count {
                if let newline = raw[start...].firstIndex(of: 0x0A) {
                    take(UnsafeRawBufferPointer(rebasing: raw[start..<newline]))
                    endLine()
                    start = newline + 1
                } else {
                    take(UnsafeRawBufferPointer(rebasing: raw[start...]))
                    start = raw.count
                }
            }
        }
    }

    private mutating func take(_ bytes: UnsafeRawBufferPointer) {
        currentLength += bytes.count
        if currentLength <= limit { current.append(contentsOf: bytes) } else { current.removeAll() }
    }

    private mutating func endLine() {
        defer {
            current.removeAll(keepingCapacity: true)
            currentLength = 0
            lineNumber += 1
        }
        if currentLength > limit {
            ready.append(.tooLong(lineNumber: lineNumber, length: currentLength))
        } else if current.contains(where: { $0 != 0x20 && $0 != 0x09 && $0 != 0x0D }) {
            ready.append(.line(current, lineNumber: lineNumber))
        }
    }

    mutating func next() -> Item? {
        guard readyHead < ready.count else {
            ready.removeAll(keepingCapacity: true)
            readyHead = 0
            return nil
        }
        defer { readyHead += 1 }
        return ready[readyHead]
    }

    /// The last line when the body did not end with a newline.
    mutating func finish() -> Item? {
        if currentLength > 0 { endLine() }
        return next()
    }
}
