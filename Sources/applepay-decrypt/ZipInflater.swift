// Inflates one zip archive's members on a thread of its own, a few chunks ahead of the reader.
import ApplePayDecryption
import Foundation
import ZIPFoundation

/// Inflates one archive's members on a thread of its own into a queue of a few chunks, so the
/// reading side can stop between any two lines (ZIPFoundation's extraction runs to the end of a
/// member in one call) while memory stays bounded.
final class ZipInflater: @unchecked Sendable {
    // Sendable: every field is guarded by `condition`; the archive is used by the inflating thread only.
    enum Event {
        case begin(path: String, lines: Bool)
        case chunk([UInt8])
        /// The member's declared size is over the limit: skip it without inflating it.
        case oversizedMember
        case end(fault: String?)
        case done(openError: String?)
    }

    private struct Cancelled: Error {}
    private struct SkipMember: Error {}

    private let condition = NSCondition()
    private var queue: [Event] = []
    private var cancelled = false
    /// Members begun by the inflating thread, and the one the reading side no longer wants.
    private var membersBegun = 0
    private var unwantedMember = -1
    private static let queueLength = 4
    private static let chunkSize = 64 << 10

    init(path: String, limit: Int) {
        let thread = Thread { [self] in inflate(path: path, limit: limit) }
        thread.stackSize = 1 << 20
        thread.start()
    }

    func next() -> Event {
        condition.lock()
        defer { condition.unlock() }
        while queue.isEmpty { condition.wait() }
        condition.broadcast()
        return queue.removeFirst()
    }

    /// The rest of member `number` (0-based, in the order of `.begin` events) is not wanted.
    func skipMember(_ number: Int) {
        condition.lock()
        unwantedMember = number
        condition.unlock()
    }

    func cancel() {
        condition.lock()
        cancelled = true
        queue.removeAll()
        condition.broadcast()
        condition.unlock()
    }

    private func push(_ event: Event) throws {
        condition.lock()
        defer { condition.unlock() }
        while queue.count >= Self.queueLength, !cancelled { condition.wait() }
        if cancelled { throw Cancelled() }
        if case .chunk = event, unwantedMember == membersBegun - 1 { throw SkipMember() }
        if case .begin = event { membersBegun += 1 }
        queue.append(event)
        condition.broadcast()
    }

    private func inflate(path: String, limit: Int) {
        do {
            let archive: Archive
            do {
                archive = try Archive(url: URL(fileURLWithPath: path), accessMode: .read)
            } catch {
                try push(.done(openError: "cannot open zip archive: \(error)"))
                return
            }
            for entry in archive {
                let name = entry.path.lowercased()
                guard entry.type == .file, name.hasSuffix(".json") || name.hasSuffix(".jsonl") else { continue }
                let lines = name.hasSuffix(".jsonl")
                try push(.begin(path: entry.path, lines: lines))
                if !lines, entry.uncompressedSize > UInt64(limit) {
                    try push(.oversizedMember)
                    try push(.end(fault: nil))
                    continue
                }
                var fault: String?
                do {
                    // The consumer form computes the CRC but leaves the comparison to us.
                    let crc = try archive.extract(entry, bufferSize: Self.chunkSize, skipCRC32: false) { data in
                        try self.push(.chunk([UInt8](data)))
                    }
                    if crc != entry.checksum { fault = "CRC-32 mismatch" }
                } catch is Cancelled {
                    return
                } catch is SkipMember {
                    fault = nil
                } catch {
                    fault = "\(error)"
                }
                try push(.end(fault: fault))
            }
            try push(.done(openError: nil))
        } catch {
            // Cancelled: the reading side is gone.
        }
    }
}
