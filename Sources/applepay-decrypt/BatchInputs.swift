// Turns the batch command's INPUT arguments (JSONL files, directories of .json files, .zip
// archives, stdin) into one ordered token source, every item read through one size limit.
import ApplePayDecryption
import Foundation
import ZIPFoundation

/// Names of origins (files, archive members, stdin), numbered as results refer to them.
final class OriginNames {
    private(set) var names: [String] = []
    func add(_ name: String) -> Int {
        names.append(name)
        return names.count - 1
    }
    func label(_ location: BatchLocation) -> String { "\(names[location.origin]):\(location.line)" }
}

/// The per-item size limit (JSONL lines, zip members, directory files, `decrypt` input).
struct ItemLimit {
    static let defaultBytes = 1 << 20
    let bytes: Int
    var hint: String { "raise it with --max-item-bytes" }
    var message: String { "the item is larger than the limit of \(bytes) bytes; \(hint)" }
}

/// What reading at most `limit + 1` bytes of a descriptor gave.
struct BoundedRead {
    var bytes: [UInt8]
    var oversized: Bool

    /// Reads until end of file or until more than `limit` bytes arrived, never more than
    /// `limit + 1`: a 100 MB file costs a 1 MiB read, not 100 MB of memory.
    static func read(_ fd: Int32, limit: Int) throws(ReadError) -> BoundedRead {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 << 10)
        while bytes.count <= limit {
            let want = min(chunk.count, limit + 1 - bytes.count)
            let n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress!, want) }
            if n < 0 {
                if errno == EINTR { continue }
                throw ReadError(errno: errno)
            }
            if n == 0 { break }
            bytes.append(contentsOf: chunk[0..<n])
        }
        return BoundedRead(bytes: bytes, oversized: bytes.count > limit)
    }

    struct ReadError: Error {
        let errno: Int32
        var text: String { String(cString: strerror(errno)) }
    }
}

/// A reader of one INPUT that can say what it consumed, for the checkpoint.
protocol InputReader: AnyObject, BatchTokenSource {
    /// SHA-256 (hex) of the bytes behind the items handed out so far, or nil if not tracked.
    var checkpointDigest: String? { get }
}

extension JSONLinesSource: InputReader {
    var checkpointDigest: String? { consumedDigest }
}

/// The chained source plus the readers behind it, so their consumed digests can be read later.
struct InputSet {
    var source: ChainedTokenSource
    let readers: [any InputReader]
    var consumedDigests: [String?] { readers.map(\.checkpointDigest) }
}

enum BatchInputs {
    /// `stream`: a path that is not a regular file or a directory (a FIFO, `/dev/stdin`, a process
    /// substitution, a socket): read once as JSONL like stdin, since reading it ahead (to count its
    /// items) would consume what the run then reads.
    enum Kind { case stdin, directory, zip, lines, stream }

    static func kind(of input: String) throws -> Kind {
        if input == "-" { return .stdin }
        var info = stat()
        guard stat(input, &info) == 0 else {
            throw CLIError("input \(input) does not exist or cannot be read: \(String(cString: strerror(errno)))")
        }
        switch info.st_mode & S_IFMT {
        case S_IFDIR: return .directory
        case S_IFREG: return input.lowercased().hasSuffix(".zip") ? .zip : .lines
        default: return .stream
        }
    }

    /// Whether an input of this kind can be counted ahead and read again (not stdin, a pipe or a device).
    static func isRereadable(_ kind: Kind) -> Bool {
        switch kind {
        case .stdin, .stream: false
        case .directory, .zip, .lines: true
        }
    }

    /// Builds the source for all inputs, in order. Fails (exit 2) only for inputs that cannot be opened.
    static func open(_ inputs: [String], names: OriginNames, limit: ItemLimit, stdinClosed: Bool) throws -> InputSet {
        var readers: [any InputReader] = []
        for input in inputs {
            switch try kind(of: input) {
            case .stdin:
                guard !stdinClosed else { throw CLIError("INPUT - reads stdin, but stdin is closed") }
                readers.append(
                    JSONLinesSource(
                        fileDescriptor: 0, origin: names.add("stdin"), closeWhenDone: false,
                        maxLineLength: limit.bytes, limitHint: limit.hint))
            case .directory:
                readers.append(DirectorySource(path: input, names: names, limit: limit))
            case .zip:
                readers.append(ZipSource(path: input, names: names, limit: limit))
            case .lines, .stream:
                do {
                    readers.append(
                        try JSONLinesSource(
                            path: input, origin: names.add(input), maxLineLength: limit.bytes, limitHint: limit.hint))
                } catch let error as ConfigurationError {
                    throw CLIError(error.message)
                }
            }
        }
        return InputSet(source: ChainedTokenSource(readers), readers: readers)
    }

    /// The number of items, for --shard and the progress bar; nil when it cannot be known up front
    /// (stdin), or for zip archives unless `countZips` (counting one inflates it a second time).
    /// JSONL lines are only split, never parsed; directories are counted from their listing.
    static func count(_ inputs: [String], limit: ItemLimit, countZips: Bool) throws -> Int? {
        var total = 0
        for input in inputs {
            switch try kind(of: input) {
            case .stdin, .stream:
                return nil
            case .directory:
                total += DirectoryListing(path: input).files.count
            case .zip:
                guard countZips else { return nil }
                total += try countItems(ZipSource(path: input, names: OriginNames(), limit: limit))
            case .lines:
                let source: JSONLinesSource
                do {
                    source = try JSONLinesSource(path: input, origin: 0, maxLineLength: limit.bytes, digesting: false)
                } catch let error as ConfigurationError {
                    throw CLIError(error.message)
                }
                total += try countItems(source)
            }
        }
        return total
    }

    private static func countItems<Source: BatchTokenSource>(_ source: Source) throws -> Int {
        var source = source
        var window = BatchWindow()
        var count = 0
        while try source.fill(&window, capacity: 4096) {
            count += window.count
            window = BatchWindow()
        }
        return count
    }

    /// What binds a checkpoint to an input without reading it: size and modification time, and
    /// for a directory a digest of its listing (names, sizes, modification times).
    static func facts(for input: String) -> JSONValue {
        if input == "-" { return .object([("path", .string("-"))]) }
        var info = stat()
        guard stat(input, &info) == 0 else { return .object([("path", .string(input)), ("missing", .bool(true))]) }
        var members: [(String, JSONValue)] = [
            ("path", .string(input)),
            ("size", .number(String(info.st_size))),
            ("modified", .string("\(info.st_mtim.tv_sec).\(info.st_mtim.tv_nsec)")),
        ]
        if info.st_mode & S_IFMT == S_IFDIR {
            members.append(("listing", .string(DirectoryListing(path: input).digest)))
        } else if info.st_mode & S_IFMT == S_IFREG, input.lowercased().hasSuffix(".zip") {
            // What a zip's items consumed is not tracked (members are inflated as streams), so the
            // archive's own bytes identify it: a zip rewritten between two shards' runs with the same
            // size and modification time is then still a different input.
            members.append(("sha256", fileDigest(input).map(JSONValue.string) ?? .null))
        }
        return .object(members)
    }

    /// SHA-256 (hex) of a regular file's bytes, read in 1 MiB chunks; nil if it cannot be read.
    static func fileDigest(_ path: String) -> String? {
        let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var digest = InputDigest()
        var chunk = [UInt8](repeating: 0, count: 1 << 20)
        while true {
            let n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress!, $0.count) }
            if n < 0, errno == EINTR { continue }
            guard n >= 0 else { return nil }
            if n == 0 { return digest.hex }
            chunk.withUnsafeBytes { digest.update(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
        }
    }
}

/// The `.json` files of a directory (not recursive), in byte order of their names, with what
/// identifies them. Names stay bytes: a name that is not valid UTF-8 is still the file's name (a
/// String would replace its bad bytes, and the file then not be found).
struct DirectoryListing {
    let files: [[UInt8]]
    let digest: String

    init(path: String) {
        var files: [[UInt8]] = []
        let fd = Glibc.open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if fd >= 0, let stream = fdopendir(fd) {
            defer { closedir(stream) }
            while let entry = readdir(stream) {
                let name = withUnsafeBytes(of: &entry.pointee.d_name) { raw in
                    Array(raw.prefix(while: { $0 != 0 }))
                }
                if Self.isJSONName(name) { files.append(name) }
            }
        } else if fd >= 0 {
            close(fd)
        }
        files.sort { $0.lexicographicallyPrecedes($1) }
        var digest = InputDigest()
        for name in files {
            var info = stat()
            let found = Self.lstat(directory: path, name: name, &info)
            digest.update(name)
            digest.update(
                found
                    ? "\0\(info.st_mode)\0\(info.st_size)\0\(info.st_mtim.tv_sec).\(info.st_mtim.tv_nsec)\n" : "\0-\n")
        }
        self.files = files
        self.digest = digest.hex
    }

    /// A name ending in .json, in any case.
    static func isJSONName(_ name: [UInt8]) -> Bool {
        name.count >= 5 && name.suffix(5).map { $0 | 0x20 } == Array(".json".utf8)
    }

    /// A name for messages (bytes that are not UTF-8 shown as U+FFFD).
    static func text(_ name: [UInt8]) -> String { String(decoding: name, as: UTF8.self) }

    /// lstat of `name` in `directory`, the name passed as its bytes.
    static func lstat(directory: String, name: [UInt8], _ info: inout stat) -> Bool {
        let dfd = Glibc.open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard dfd >= 0 else { return false }
        defer { close(dfd) }
        return (name + [0]).withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { fstatat(dfd, $0.baseAddress!, &info, AT_SYMLINK_NOFOLLOW) == 0 }
        }
    }
}

/// The `.json` files of a directory, one token each, each read through the item limit, each opened
/// by its name's bytes relative to the directory.
final class DirectorySource: InputReader {
    private let files: [[UInt8]]
    private var next = 0
    private let names: OriginNames
    private let directory: String
    private let directoryFD: Int32
    private let limit: ItemLimit
    private var digest = InputDigest()

    init(path: String, names: OriginNames, limit: ItemLimit) {
        self.directory = path
        self.names = names
        self.limit = limit
        directoryFD = Glibc.open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        files = DirectoryListing(path: path).files
    }

    deinit { if directoryFD >= 0 { close(directoryFD) } }

    var checkpointDigest: String? { digest.hex }

    func fill(_ window: inout BatchWindow, capacity: Int) throws -> Bool {
        while window.count < capacity, window.hasRoom, next < files.count {
            let name = files[next]
            let path = directory + "/" + DirectoryListing.text(name)
            let location = BatchLocation(origin: names.add(path), line: 1)
            next += 1
            switch Self.read(name, in: directoryFD, shownAs: path, limit: limit) {
            case let .success(bytes):
                digest.update(name)
                digest.update("\0\(bytes.count)\0")
                digest.update(bytes)
                window.append(owning: bytes, at: location)
            case let .failure(reason):
                digest.update(name)
                digest.update("\0unreadable\0")
                window.appendUnreadable(reason.text, at: location)
            }
        }
        return window.count > 0
    }

    /// Opens `name` (its bytes) in the directory `directoryFD`, as `read(_:limit:)` opens a path.
    static func read(_ name: [UInt8], in directoryFD: Int32, shownAs path: String, limit: ItemLimit)
        -> Result<[UInt8], Unreadable>
    {
        let fd = (name + [0]).withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) {
                openat(directoryFD, $0.baseAddress!, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
            }
        }
        return read(fd: fd, path: path, limit: limit)
    }

    struct Unreadable: Error { let text: String }

    /// Opens without following a symlink and without blocking on a FIFO, refuses anything but a
    /// regular file, and reads at most limit + 1 bytes.
    static func read(_ path: String, limit: ItemLimit) -> Result<[UInt8], Unreadable> {
        read(fd: Glibc.open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC), path: path, limit: limit)
    }

    private static func read(fd: Int32, path: String, limit: ItemLimit) -> Result<[UInt8], Unreadable> {
        guard fd >= 0 else {
            return .failure(Unreadable(text: "cannot open \(path): \(String(cString: strerror(errno)))"))
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
            return .failure(Unreadable(text: "\(path) is not a regular file"))
        }
        do {
            let read = try BoundedRead.read(fd, limit: limit.bytes)
            return read.oversized ? .failure(Unreadable(text: limit.message)) : .success(read.bytes)
        } catch {
            return .failure(Unreadable(text: "cannot read \(path): \(error.text)"))
        }
    }
}

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
