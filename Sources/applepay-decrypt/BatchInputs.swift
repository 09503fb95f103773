// Turns the batch command's INPUT arguments (JSONL files, directories of .json files, .zip
// archives, stdin) into one ordered token source, every item read through one size limit.
import ApplePayDecryption
import Foundation
import ZIPFoundation

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
