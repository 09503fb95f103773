// The batch output: OUT.partial created exclusively at mode 0600 and renamed into place when
// complete, OUT.lock so one run owns OUT at a time, OUT.claims journaling the replay ledger, and a
// checksummed checkpoint binding an interrupted run to its inputs so that --resume writes every
// token exactly once and judges replays exactly as an uninterrupted run would.
import ApplePayDecryption
import Foundation

final class ResultFile {
    let path: String
    let partialPath: String
    let checkpointPath: String
    let claimsPath: String
    /// The checkpoint this run resumes from (nil for a fresh run).
    let resumedFrom: Checkpoint?
    /// The global index of the first item still to deliver.
    let resumedAt: Int
    /// Items below this index were processed before the interruption: the restored ledger holds their claims.
    let claimedBefore: Int
    /// The replay ledger's records as the checkpoint left them (empty for a fresh run).
    let restoredClaims: [UInt8]
    private let fd: Int32
    private let claimsFD: Int32
    private var claimsWritten: Int
    /// SHA-256 of OUT.claims as written so far, for the checkpoint.
    private var claimsDigest = InputDigest()
    /// Holds card data between flushes: wiped before reuse and release, and never grown (a
    /// reallocation would free an unwiped copy).
    private var buffer: [UInt8] = []
    private static let bufferCapacity = 1 << 20
    private var written: Int
    private let run: String
    private let first: Int

    /// What opening found: work to do, or a run that had already completed.
    enum Opening {
        case ready(ResultFile)
        case alreadyComplete(lines: Int)
    }

    /// `sharded`: OUT.claims is part of the output (a shard's journal for the merge) and is kept.
    /// `partRun`: a shard's run without its shard (`PartManifest.run`), so that the record of a finished
    /// run of this shard vouches for the part's files when it is run again.
    static func open(
        path: String, run: RunDescription, resume: Bool, range: Range<Int>, sharded: Bool = false,
        partRun: String? = nil
    ) throws
        -> Opening
    {
        let checkpointPath = RunFiles.checkpoint(of: path)
        let partialPath = RunFiles.partial(of: path)
        let claimsPath = RunFiles.claims(of: path)
        let keyPath = RunKey.path(of: path)
        let runText = run.value.description
        let found = try readCheckpoint(checkpointPath, keyPath: keyPath)

        if resume, let found {
            let checkpoint: Checkpoint
            switch found {
            case let .failure(.untrusted(why)):
                throw CLIError(
                    "\(why): nobody but this run's user can have written a checkpoint this run trusts; remove "
                        + "\(checkpointPath), \(partialPath), \(claimsPath) and \(keyPath) and run again without --resume "
                        + "(and keep outputs in a directory only you can write)")
            case .failure(.unreadable):
                throw CLIError(
                    "\(checkpointPath) is not a checkpoint of this version or belongs to a different run; run again without --resume"
                )
            case .failure(.checksum):
                throw CLIError(
                    "\(checkpointPath) was damaged or edited (its checksum does not match); remove \(partialPath) and \(checkpointPath) and run again without --resume"
                )
            case let .success(value):
                checkpoint = value
            }
            guard checkpoint.run == runText, checkpoint.first == range.lowerBound else {
                throw CLIError(
                    "\(checkpointPath) belongs to a different run (inputs, options or keys changed); run again without --resume"
                )
            }
            if checkpoint.complete {
                return try completeEarlierRun(
                    checkpoint, path: path, partialPath: partialPath, checkpointPath: checkpointPath)
            }
            guard case let .success(key) = RunKey.read(keyPath) else {
                throw CLIError("\(keyPath) cannot be read back; run again without --resume")
            }
            let fd = try openOwnPartial(partialPath)
            var claimsFD: Int32 = -1
            let claims: [UInt8]
            do {
                try checkConsistency(fd: fd, checkpoint: checkpoint, partialPath: partialPath)
                guard ftruncate(fd, off_t(checkpoint.bytes)) == 0,
                    lseek(fd, off_t(checkpoint.bytes), SEEK_SET) == off_t(checkpoint.bytes)
                else {
                    throw CLIError("cannot prepare \(partialPath): \(String(cString: strerror(errno)))")
                }
                claimsFD = try openOwnPartial(claimsPath)
                claims = try readClaims(fd: claimsFD, checkpoint: checkpoint, claimsPath: claimsPath)
                var digest = InputDigest()
                digest.update(claims)
                guard digest.hex == checkpoint.claimsDigest else {
                    throw CLIError(
                        "\(claimsPath) is not the journal its checkpoint recorded (its contents changed after the interruption); "
                            + "remove the partial files and the checkpoint and run again without --resume")
                }
            } catch {
                close(fd)
                if claimsFD >= 0 { close(claimsFD) }
                throw error
            }
            return .ready(
                ResultFile(
                    path: path, fd: fd, claimsFD: claimsFD, key: key, run: runText, first: range.lowerBound,
                    resumedFrom: checkpoint,
                    claims: claims, sharded: sharded))
        }

        if resume { Output.stderr("applepay-decrypt: no checkpoint at \(checkpointPath); starting from the beginning") }
        // Only files that this run's own checkpoint vouches for may be replaced, or, for a shard run
        // again after it finished, its part's manifest (sealed with the part's key).
        var vouched = false
        if case let .success(checkpoint)? = found, checkpoint.run == runText { vouched = true }
        let finishedPart = found == nil && partRun != nil ? finishedPartManifest(path, partRun!, range) : nil
        if finishedPart != nil { vouched = true }
        for stale in [partialPath, claimsPath] {
            var info = stat()
            guard lstat(stale, &info) == 0 else { continue }
            guard vouched, PrivateFile.problem(info) == nil else {
                throw CLIError(
                    "\(stale) already exists and no checkpoint of this run vouches for it; if it is left from an "
                        + "interrupted run of this command, add --resume, otherwise remove it (and \(checkpointPath)) and run again"
                )
            }
            guard unlink(stale) == 0 else {
                throw CLIError("cannot remove \(stale): \(String(cString: strerror(errno)))")
            }
        }
        // Only a checkpoint sealed under this user's run key is removed: a file that merely bears the
        // name (another user's, or one given as an input) is left for the operator to judge.
        if case .failure? = found {
            throw CLIError(
                "\(checkpointPath) exists and is not a checkpoint sealed by a run of this user; if it is yours, remove it "
                    + "(and \(partialPath), \(claimsPath)) and run again")
        }
        if found != nil, unlink(checkpointPath) != 0, errno != ENOENT {
            throw CLIError("cannot remove the stale \(checkpointPath): \(String(cString: strerror(errno)))")
        }
        if finishedPart != nil, unlink(PartManifest.path(of: path)) != 0, errno != ENOENT {
            throw CLIError(
                "cannot remove the finished part's \(PartManifest.path(of: path)): \(String(cString: strerror(errno)))")
        }
        try replaceStaleKey(keyPath)
        let key = try RunKey.create(keyPath)
        let fd = try createExclusive(partialPath)
        let claimsFD: Int32
        do { claimsFD = try createExclusive(claimsPath) } catch {
            close(fd)
            throw error
        }
        return .ready(
            ResultFile(
                path: path, fd: fd, claimsFD: claimsFD, key: key, run: runText, first: range.lowerBound,
                resumedFrom: nil, claims: [], sharded: sharded))
    }

    /// A key left by a run that ended between removing its checkpoint and its key holds nothing of
    /// value: a private file of this user there is replaced. Anything else is refused, named.
    private static func replaceStaleKey(_ keyPath: String) throws {
        var info = stat()
        guard lstat(keyPath, &info) == 0 else { return }
        if let why = PrivateFile.problem(info) {
            throw CLIError(
                "\(keyPath) already exists and \(why), so this run did not make it; remove it and run again "
                    + "(and keep outputs in a directory only you can write)")
        }
        guard unlink(keyPath) == 0 || errno == ENOENT else {
            throw CLIError("cannot remove \(keyPath): \(String(cString: strerror(errno)))")
        }
    }

    /// The manifest of a finished run of this very shard at `path`, if one is there and its files are
    /// this user's private ones: it vouches for PART.claims, so the shard can simply be run again.
    private static func finishedPartManifest(_ path: String, _ partRun: String, _ range: Range<Int>) -> PartManifest? {
        guard let manifest = try? PartManifest.read(part: path), manifest.run == partRun,
            manifest.first == range.lowerBound, manifest.count == range.count
        else { return nil }
        var info = stat()
        guard lstat(RunFiles.claims(of: path), &info) == 0, PrivateFile.problem(info) == nil,
            Int(info.st_size) == manifest.claimsBytes
        else { return nil }
        return manifest
    }

    /// A new private file: never an existing one, never through a symlink, mode exactly 0600.
    private static func createExclusive(_ path: String) throws -> Int32 {
        let fd = Glibc.open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw CLIError(
                errno == EEXIST
                    ? "\(path) appeared while this run was starting; remove it and run again"
                    : "cannot create \(path): \(String(cString: strerror(errno)))")
        }
        // The umask may have narrowed the mode; results hold card data, so make it exactly 0600.
        guard fchmod(fd, 0o600) == 0 else {
            close(fd)
            throw CLIError("cannot set the mode of \(path): \(String(cString: strerror(errno)))")
        }
        return fd
    }

    /// A shard's run keeps OUT.claims.
    let sharded: Bool

    /// Seals the checkpoint and a shard's manifest (`RunKey`).
    let key: RunKey
    var keyPath: String { RunKey.path(of: path) }

    private init(
        path: String, fd: Int32, claimsFD: Int32, key: RunKey, run: String, first: Int, resumedFrom: Checkpoint?,
        claims: [UInt8], sharded: Bool
    ) {
        self.key = key
        self.sharded = sharded
        self.path = path
        self.partialPath = RunFiles.partial(of: path)
        self.checkpointPath = RunFiles.checkpoint(of: path)
        self.claimsPath = RunFiles.claims(of: path)
        self.fd = fd
        self.claimsFD = claimsFD
        self.run = run
        self.first = first
        self.resumedFrom = resumedFrom
        self.resumedAt = max(resumedFrom?.next ?? first, first)
        self.claimedBefore = resumedFrom?.next ?? 0
        self.restoredClaims = claims
        self.written = resumedFrom?.bytes ?? 0
        self.claimsWritten = resumedFrom?.claimsBytes ?? 0
        buffer.reserveCapacity(Self.bufferCapacity)
        claimsDigest.update(claims)
    }

    deinit {
        SensitiveBytes.wipe(&buffer)
        close(fd)
        close(claimsFD)
    }

    static func removeIfPresent(_ file: String) throws {
        guard unlink(file) == 0 || errno == ENOENT else {
            throw CLIError("cannot remove \(file): \(String(cString: strerror(errno)))")
        }
    }

    static func syncDirectory(of path: String) throws {
        let fd = Glibc.open(PathName.directory(of: path), O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else {
            throw CLIError("cannot open the directory of \(path): \(String(cString: strerror(errno)))")
        }
        defer { close(fd) }
        guard fsync(fd) == 0 else {
            throw CLIError("cannot sync the directory of \(path): \(String(cString: strerror(errno)))")
        }
    }

    /// Appends one result line, its newline included (`BatchResult.writeLine`).
    func append(line: UnsafeRawBufferPointer) throws {
        if buffer.count + line.count > Self.bufferCapacity { try flush() }
        if line.count > Self.bufferCapacity {
            // Larger than the buffer: straight to the file rather than growing it.
            try writeAll(line)
            written += line.count
            return
        }
        buffer.append(contentsOf: line)
    }

    private func writeAll(_ raw: UnsafeRawBufferPointer, to target: Int32? = nil, name: String? = nil) throws {
        do { try WholeWrite.write(target ?? fd, raw) } catch {
            throw CLIError("cannot write \(name ?? partialPath): \(error)")
        }
    }

    /// Writes the buffered lines, then wipes them. A failed write (disk full) ends the run: the
    /// checkpoint still describes the file as it was, so --resume can continue once there is room.
    private func flush() throws {
        defer {
            SensitiveBytes.wipe(&buffer)
            buffer.removeAll(keepingCapacity: true)
        }
        try buffer.withUnsafeBytes { try writeAll($0) }
        written += buffer.count
    }

    /// Everything before `next` is in the partial file and its claims in the journal: make both
    /// durable, then record them.
    func checkpoint(next: Int, consumed: [String?], claims: [UInt8]) throws {
        try flush()
        try claims.withUnsafeBytes { try writeAll($0, to: claimsFD, name: claimsPath) }
        claimsWritten += claims.count
        claimsDigest.update(claims)
        guard fsync(fd) == 0 else { throw CLIError("cannot sync \(partialPath): \(String(cString: strerror(errno)))") }
        guard fsync(claimsFD) == 0 else {
            throw CLIError("cannot sync \(claimsPath): \(String(cString: strerror(errno)))")
        }
        var checkpoint = Checkpoint(run: run, first: first, next: next, bytes: written, consumed: consumed)
        checkpoint.claimsBytes = claimsWritten
        checkpoint.claimsDigest = claimsDigest.hex
        checkpoint.sharded = sharded
        try store(checkpoint)
    }

    private func store(_ checkpoint: Checkpoint) throws {
        try Self.storeAtomically(checkpoint.sealed(with: key), at: checkpointPath)
    }

    /// What a shard's run seals beside its output: the lines' and the journal's lengths and digests.
    struct SealedOutput {
        let linesBytes: Int
        let linesDigest: String
        let claimsBytes: Int
        let claimsDigest: String
    }

    /// Flushes and syncs, seals the checkpoint as complete, renames the partial file into place
    /// and removes the checkpoint. A crash anywhere here leaves something --resume completes.
    /// A shard's run first hands `beforeSealing` the digests of its lines and journal (to write its
    /// manifest), and keeps OUT.claims.
    func finish(next: Int, consumed: [String?], beforeSealing: ((SealedOutput) throws -> Void)? = nil) throws {
        try flush()
        guard fsync(fd) == 0 else { throw CLIError("cannot sync \(partialPath): \(String(cString: strerror(errno)))") }
        // The name OUT.partial must still be this run's open file: renaming whatever it names now
        // would publish another run's (or another user's) file as OUT.
        var mine = stat(), named = stat()
        guard fstat(fd, &mine) == 0, lstat(partialPath, &named) == 0, mine.st_dev == named.st_dev,
            mine.st_ino == named.st_ino
        else {
            throw CLIError(
                "\(partialPath) is no longer the file this run wrote (it was removed or replaced during the run); "
                    + "\(path) is left as it was")
        }
        if let beforeSealing {
            try beforeSealing(
                SealedOutput(
                    linesBytes: written, linesDigest: try digestOfLines(), claimsBytes: claimsWritten,
                    claimsDigest: claimsDigest.hex))
        }
        var checkpoint = Checkpoint(
            run: run, first: first, next: next, bytes: written, consumed: consumed, complete: true)
        checkpoint.claimsBytes = claimsWritten
        checkpoint.claimsDigest = claimsDigest.hex
        checkpoint.sharded = sharded
        try store(checkpoint)
        guard rename(partialPath, path) == 0 else {
            throw CLIError("cannot rename \(partialPath) to \(path): \(String(cString: strerror(errno)))")
        }
        try Self.syncDirectory(of: path)
        if !sharded { try Self.removeIfPresent(claimsPath) }
        guard unlink(checkpointPath) == 0 else {
            throw CLIError("cannot remove \(checkpointPath): \(String(cString: strerror(errno)))")
        }
        if !sharded { try Self.removeIfPresent(keyPath) }
    }

    /// SHA-256 of the partial file as written, read back once (a shard's lines are a fraction of the run).
    private func digestOfLines() throws -> String {
        var digest = InputDigest()
        var chunk = [UInt8](repeating: 0, count: 1 << 20)
        defer { SensitiveBytes.wipe(&chunk) }
        var offset = 0
        while offset < written {
            let n = chunk.withUnsafeMutableBytes {
                pread(fd, $0.baseAddress!, min($0.count, written - offset), off_t(offset))
            }
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { throw CLIError("cannot read back \(partialPath): \(String(cString: strerror(errno)))") }
            chunk.withUnsafeBytes { digest.update(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
            offset += n
        }
        return digest.hex
    }

    /// Removes what this run wrote (partial file, journal, checkpoint): a merge that refuses its
    /// parts half-way leaves no output behind.
    func abandon() {
        SensitiveBytes.wipe(&buffer)
        buffer.removeAll(keepingCapacity: true)
        unlink(partialPath)
        unlink(claimsPath)
        unlink(checkpointPath)
        unlink(keyPath)
    }
}
