// One part of a sharded batch run as `merge` reads it: PART (result lines), PART.claims (replay
// records) and PART.manifest, checked against each other and against the other parts before use.
import ApplePayDecryption
import Foundation

final class ShardPart {
    let path: String
    let manifest: PartManifest
    var claimsPath: String { RunFiles.claims(of: path) }
    var range: Range<Int> { manifest.first..<manifest.first + manifest.count }

    private init(path: String, manifest: PartManifest) {
        self.path = path
        self.manifest = manifest
    }

    /// Reads every part's manifest and checks, before anything is written, that the parts are the N
    /// slices of one run over the same inputs, each whole, and that their files are the ones the
    /// manifests describe. Returns them in input order.
    static func open(_ paths: [String]) throws -> [ShardPart] {
        let parts = try paths.map { path in
            let manifest = try PartManifest.read(part: path)
            // A manifest's numbers are checked before any arithmetic on them: a forged one is refused, never a trap.
            guard (1...BatchCommand.maxShards).contains(manifest.shards),
                (1...manifest.shards).contains(manifest.shard), manifest.total >= 0,
                manifest.count >= 0, manifest.first >= 0, manifest.count <= manifest.total,
                manifest.first <= manifest.total - manifest.count
            else {
                throw CLIError(
                    "part \(path): its manifest describes an impossible slice (shard \(manifest.shard)/\(manifest.shards), "
                        + "items \(manifest.first) + \(manifest.count) of \(manifest.total))")
            }
            let part = ShardPart(path: path, manifest: manifest)
            try part.checkFiles()
            return part
        }
        let first = parts[0]
        for part in parts.dropFirst() {
            let (a, b) = (first.manifest, part.manifest)
            if a.run != b.run {
                let inputsA = (try? JSONValue.parse(a.run))?["inputs"],
                    inputsB = (try? JSONValue.parse(b.run))?["inputs"]
                if inputsA != inputsB {
                    throw CLIError(
                        "part \(part.path) read different inputs than part \(first.path) (their sizes, modification times or "
                            + "listings differ): the inputs changed between the shards' runs, or the parts are of different runs; "
                            + "run every shard again over the same inputs")
                }
                throw CLIError(
                    "part \(part.path) belongs to a different run than part \(first.path) (other options or keys)")
            }
            guard a.shards == b.shards, a.total == b.total else {
                throw CLIError(
                    "part \(part.path) is shard \(b.shard)/\(b.shards) of \(b.total) items, part \(first.path) shard "
                        + "\(a.shard)/\(a.shards) of \(a.total): they are not parts of one run")
            }
        }
        let shards = first.manifest.shards, total = first.manifest.total
        for part in parts {
            let m = part.manifest
            let expected =
                BatchCommand.sliceBound(total, m.shard - 1, shards)..<BatchCommand.sliceBound(total, m.shard, shards)
            guard (1...shards).contains(m.shard), part.range == expected else {
                throw CLIError(
                    "part \(part.path) says it holds items \(part.range) as shard \(m.shard)/\(shards), but that shard of "
                        + "\(total) items is \(expected): its manifest is not a batch run's")
            }
        }
        // In input order (any order on the command line); every item in exactly one part.
        let ordered = parts.sorted {
            ($0.range.lowerBound, $0.range.upperBound, $0.manifest.shard) < (
                $1.range.lowerBound, $1.range.upperBound, $1.manifest.shard
            )
        }
        var next = 0
        var previous: ShardPart?
        for part in ordered {
            if let previous, previous.manifest.shard == part.manifest.shard {
                throw CLIError(
                    "overlap: parts \(previous.path) and \(part.path) both hold shard \(part.manifest.shard)/\(shards) "
                        + "(items \(part.range)); give each shard once")
            }
            if part.range.lowerBound > next {
                throw CLIError(
                    "gap: no part holds items \(next)..<\(part.range.lowerBound) (before part \(part.path)); "
                        + "\(missing(next, shards: shards, total: total)) is missing")
            }
            if part.range.lowerBound < next, let previous {
                throw CLIError(
                    "overlap: parts \(previous.path) and \(part.path) both hold items \(part.range.lowerBound)..<\(next)"
                )
            }
            if let previous, previous.manifest.consumedThrough != part.manifest.consumedBefore {
                throw CLIError(
                    "part \(part.path) read other bytes before its slice than part \(previous.path) read through its "
                        + "slice: the inputs changed between the shards' runs; run every shard again")
            }
            next = part.range.upperBound
            previous = part
        }
        if next < total || ordered.count < shards {
            let from = ordered.count < shards ? firstMissing(ordered, shards: shards, total: total) : next
            throw CLIError(
                "missing shard: \(missing(from, shards: shards, total: total)) (items from \(from) on) is in none of the "
                    + "\(parts.count) parts given; a merge needs all \(shards)")
        }
        return ordered
    }

    /// The shard that holds item `index` (or, for an empty shard, the first missing one).
    private static func missing(_ index: Int, shards: Int, total: Int) -> String {
        let k = (1...shards).first { BatchCommand.sliceBound(total, $0, shards) > index } ?? shards
        return "shard \(k)/\(shards)"
    }

    private static func firstMissing(_ parts: [ShardPart], shards: Int, total: Int) -> Int {
        let present = Set(parts.map(\.manifest.shard))
        let k = (1...shards).first { !present.contains($0) }!
        return BatchCommand.sliceBound(total, k - 1, shards)
    }

    /// PART and PART.claims are private regular files of the recorded lengths; the journal's digest
    /// is the recorded one (the lines' digest is checked as they stream).
    private func checkFiles() throws {
        for file in [path, claimsPath] {
            var info = stat()
            guard lstat(file, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
                throw CLIError("part \(path): \(file) is missing or not a regular file")
            }
            try Self.checkOwnership(info, of: file, part: path)
            let recorded = file == path ? manifest.linesBytes : manifest.claimsBytes
            guard Int(info.st_size) == recorded else {
                throw CLIError(
                    "part \(path): \(file) is \(info.st_size) bytes, its manifest recorded \(recorded): it changed after the shard wrote it"
                )
            }
        }
        guard manifest.claimsBytes % ReplayRecord.size == 0 else {
            throw CLIError("part \(path): \(claimsPath) is not whole records")
        }
        let fd = try Self.openPrivate(claimsPath, part: path)
        defer { close(fd) }
        var digest = InputDigest()
        var chunk = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress!, $0.count) }
            if n < 0, errno == EINTR { continue }
            guard n >= 0 else {
                throw CLIError("part \(path): cannot read \(claimsPath): \(String(cString: strerror(errno)))")
            }
            if n == 0 { break }
            chunk.withUnsafeBytes { digest.update(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
        }
        guard digest.hex == manifest.claimsDigest else {
            throw CLIError(
                "part \(path): \(claimsPath) is not the journal its manifest recorded (it was changed after the shard wrote it); "
                    + "run that shard again")
        }
    }

    /// A part's seal is a checksum, not a signature: it catches damage and mix-ups, not a writer who
    /// re-seals. So the merge trusts only part files that no one but the user running it can have
    /// written: owned by that user, writable by no group and no other user (the shard wrote them 0600).
    static func checkOwnership(_ info: stat, of file: String, part: String) throws {
        guard info.st_uid == geteuid() else {
            throw CLIError(
                "part \(part): \(file) belongs to user \(info.st_uid), not to the user running the merge (\(geteuid())); "
                    + "a part is trusted only when no one else can have written it: copy the parts as the user who merges them"
            )
        }
        guard info.st_mode & 0o022 == 0 else {
            throw CLIError(
                "part \(part): \(file) is writable by other users (mode \(String(info.st_mode & 0o7777, radix: 8))); "
                    + "a part is trusted only when no one else can have written it: chmod 600 it, or run that shard again"
            )
        }
    }

    /// Refuses a RESULTS path that is one of the parts' files (or a file beside RESULTS that the merge
    /// writes, e.g. RESULTS.partial): the merge would overwrite an input it is still reading.
    static func checkDistinct(out: String, from parts: [ShardPart]) throws {
        var inputs: [(dev: UInt64, ino: UInt64, path: String)] = []
        for part in parts {
            for file in [part.path, part.claimsPath, PartManifest.path(of: part.path), RunKey.path(of: part.path)] {
                var info = stat()
                if stat(file, &info) == 0 { inputs.append((UInt64(info.st_dev), UInt64(info.st_ino), file)) }
            }
        }
        for written in RunFiles.written(by: out) {
            var info = stat()
            guard stat(written, &info) == 0 else { continue }
            if let input = inputs.first(where: { $0.dev == UInt64(info.st_dev) && $0.ino == UInt64(info.st_ino) }) {
                throw CLIError(
                    "--out \(out): the merge would write \(written), which is the part file \(input.path); give RESULTS a path of its own"
                )
            }
        }
    }

    static func openPrivate(_ file: String, part: String) throws -> Int32 {
        let fd = Glibc.open(file, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { throw CLIError("part \(part): cannot open \(file): \(String(cString: strerror(errno)))") }
        // Checked again on the descriptor that is read: a file swapped in after checkFiles' lstat is refused too.
        var info = stat()
        do {
            guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
                throw CLIError("part \(part): \(file) is not a regular file")
            }
            try checkOwnership(info, of: file, part: part)
        } catch {
            close(fd)
            throw error
        }
        return fd
    }

    /// The journal's records in file order, read a block at a time.
    func records() throws -> RecordStream { RecordStream(fd: try Self.openPrivate(claimsPath, part: path), part: path) }

    /// Calls `body` with each line of PART (its newline included), from a buffer wiped after use;
    /// then checks the lines' SHA-256 against the manifest.
    func forEachLine(_ body: (UnsafeRawBufferPointer) throws -> Void) throws {
        let fd = try Self.openPrivate(path, part: path)
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        defer { SensitiveBytes.wipe(&buffer) }
        var digest = InputDigest()
        var start = 0, end = 0
        while true {
            try buffer.withUnsafeBytes { raw in
                let base = raw.baseAddress!
                while start < end, let found = memchr(base + start, 0x0A, end - start) {
                    let stop = UnsafeRawPointer(found) - base + 1
                    try body(UnsafeRawBufferPointer(rebasing: raw[start..<stop]))
                    start = stop
                }
            }
            if start > 0 {
                buffer.withUnsafeMutableBytes { raw in
                    _ = memmove(raw.baseAddress!, raw.baseAddress! + start, end - start)
                }
                end -= start
                start = 0
            }
            if end == buffer.count {
                // A line longer than the buffer (a large --max-item-bytes): grow, wiping the old copy.
                var bigger = [UInt8](repeating: 0, count: buffer.count * 2)
                bigger.withUnsafeMutableBytes { out in
                    buffer.withUnsafeBytes { out.baseAddress!.copyMemory(from: $0.baseAddress!, byteCount: end) }
                }
                SensitiveBytes.wipe(&buffer)
                buffer = bigger
            }
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress! + end, $0.count - end) }
            if n < 0, errno == EINTR { continue }
            guard n >= 0 else { throw CLIError("part \(path): cannot read it: \(String(cString: strerror(errno)))") }
            if n == 0 { break }
            buffer.withUnsafeBytes { digest.update(UnsafeRawBufferPointer(rebasing: $0[end..<end + n])) }
            end += n
        }
        guard end == 0 else {
            throw CLIError("part \(path): its last line has no newline (the file was cut or edited)")
        }
        guard digest.hex == manifest.linesDigest else {
            throw CLIError(
                "part \(path): its lines are not the ones its manifest recorded (the file was edited after the shard wrote it)"
            )
        }
    }
}

/// PART.claims as a stream of `ReplayRecord`s.
final class RecordStream {
    private let fd: Int32
    private let part: String
    private var block = [UInt8](repeating: 0, count: ReplayRecord.size * 1024)
    private var start = 0, end = 0
    /// SHA-256 and length of the bytes read so far: the journal is checked against its manifest as it
    /// is used, not only when the part is opened (it could be replaced in between).
    private var digest = InputDigest()
    private var bytesRead = 0

    init(fd: Int32, part: String) {
        self.fd = fd
        self.part = part
    }

    deinit { close(fd) }

    func next() throws -> ReplayRecord? {
        if start == end {
            start = 0
            end = 0
            while end < block.count {
                let n = block.withUnsafeMutableBytes { read(fd, $0.baseAddress! + end, $0.count - end) }
                if n < 0, errno == EINTR { continue }
                guard n >= 0 else {
                    throw CLIError("part \(part): cannot read its claims: \(String(cString: strerror(errno)))")
                }
                if n == 0 { break }
                end += n
            }
            block.withUnsafeBytes { digest.update(UnsafeRawBufferPointer(rebasing: $0[0..<end])) }
            bytesRead += end
            if end == 0 { return nil }
            guard end % ReplayRecord.size == 0 else {
                throw CLIError("part \(part): \(part).claims is not whole records")
            }
        }
        defer { start += ReplayRecord.size }
        guard let record = ReplayRecord(block[start..<start + ReplayRecord.size]) else {
            throw CLIError("part \(part): \(part).claims holds an impossible record")
        }
        return record
    }

    /// After `next()` returned nil: the records read are exactly the journal the manifest recorded.
    func checkWhole(against manifest: PartManifest) throws {
        guard bytesRead == manifest.claimsBytes, digest.hex == manifest.claimsDigest else {
            throw CLIError(
                "part \(part): \(part).claims is not the journal its manifest recorded (it was changed after the shard wrote it); "
                    + "run that shard again")
        }
    }
}
