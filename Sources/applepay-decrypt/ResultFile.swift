// The batch output: a 0600 partial file renamed into place when complete, with a checkpoint
// that lets an interrupted run resume with every token written exactly once.
import ApplePayDecryption
import Foundation

final class ResultFile {
    let path: String
    let partialPath: String
    let checkpointPath: String
    /// The global index of the first item still to process.
    private(set) var resumedAt: Int
    private let fd: Int32
    private var buffer: [UInt8] = []
    private var written: Int
    private let run: RunDescription

    init(path: String, run: RunDescription, resume: Bool, range: Range<Int>) throws {
        self.path = path
        self.partialPath = path + ".partial"
        self.checkpointPath = path + ".checkpoint"
        self.run = run
        var startAt = range.lowerBound
        var keepBytes = 0
        if resume, let data = FileManager.default.contents(atPath: checkpointPath) {
            guard let checkpoint = try? JSONValue.parse([UInt8](data)), checkpoint["run"] == run.value,
                  case let .number(next)? = checkpoint["next"], let nextIndex = Int(next),
                  case let .number(bytes)? = checkpoint["bytes"], let byteCount = Int(bytes)
            else {
                throw CLIError("\(checkpointPath) belongs to a different run (inputs, options or keys changed); run again without --resume")
            }
            let partialSize = (try? FileManager.default.attributesOfItem(atPath: partialPath)[.size] as? NSNumber)?.intValue ?? -1
            guard partialSize >= byteCount else {
                throw CLIError("\(partialPath) is shorter than its checkpoint says; run again without --resume")
            }
            startAt = nextIndex
            keepBytes = byteCount
        } else if resume {
            Output.stderr("applepay-decrypt: no checkpoint at \(checkpointPath); starting from the beginning")
        }
        let flags = O_WRONLY | O_CREAT | (keepBytes == 0 ? O_TRUNC : 0)
        let fd = open(partialPath, flags, 0o600)
        guard fd >= 0 else { throw CLIError("cannot create \(partialPath): \(String(cString: strerror(errno)))") }
        // The umask may have narrowed the mode; results hold card data, so make it exactly 0600.
        fchmod(fd, 0o600)
        guard ftruncate(fd, off_t(keepBytes)) == 0, lseek(fd, off_t(keepBytes), SEEK_SET) >= 0 else {
            close(fd)
            throw CLIError("cannot prepare \(partialPath): \(String(cString: strerror(errno)))")
        }
        self.fd = fd
        self.written = keepBytes
        self.resumedAt = startAt
        buffer.reserveCapacity(1 << 20)
    }

    deinit { close(fd) }

    func append(_ line: String) throws {
        buffer.append(contentsOf: line.utf8)
        buffer.append(0x0A)
        if buffer.count >= 1 << 20 { try flush() }
    }

    /// Writes the buffered lines. A failed write (disk full) ends the run: the checkpoint still
    /// describes the file as it was, so --resume can continue once there is room.
    private func flush() throws {
        try buffer.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let n = write(fd, raw.baseAddress! + offset, raw.count - offset)
                if n < 0 {
                    if errno == EINTR { continue }
                    throw CLIError("cannot write \(partialPath): \(String(cString: strerror(errno)))")
                }
                offset += n
            }
        }
        written += buffer.count
        buffer.removeAll(keepingCapacity: true)
    }

    /// Everything before `next` is in the partial file: record it (atomically, by rename).
    func checkpoint(next: Int) throws {
        try flush()
        let checkpoint = JSONValue.object([
            ("run", run.value), ("next", .number(String(next))), ("bytes", .number(String(written))),
        ])
        let temporary = checkpointPath + ".tmp"
        guard FileManager.default.createFile(atPath: temporary, contents: Data(checkpoint.description.utf8), attributes: [.posixPermissions: 0o600]),
              rename(temporary, checkpointPath) == 0
        else { throw CLIError("cannot write the checkpoint \(checkpointPath)") }
    }

    /// Flushes, syncs, renames the partial file into place and removes the checkpoint.
    func finish() throws {
        try flush()
        fsync(fd)
        guard rename(partialPath, path) == 0 else { throw CLIError("cannot rename \(partialPath) to \(path): \(String(cString: strerror(errno)))") }
        unlink(checkpointPath)
    }
}
