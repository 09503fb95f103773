// Resuming a result file: its checkpoint read and trusted, the partial file and the journal checked against it,
// and a run that had already completed finished.
import ApplePayDecryption
import Foundation

extension ResultFile {
    /// The first `claimsBytes` bytes of OUT.claims (whole ledger records); the rest, written after
    /// the checkpoint, is cut off.
    static func readClaims(fd: Int32, checkpoint: Checkpoint, claimsPath: String) throws -> [UInt8] {
        var info = stat()
        guard checkpoint.claimsBytes >= 0, checkpoint.claimsBytes % ReplayLedger.recordSize == 0, fstat(fd, &info) == 0,
            Int(info.st_size) >= checkpoint.claimsBytes
        else {
            throw CLIError(
                "\(claimsPath) does not match its checkpoint; remove the partial files and the checkpoint and run again without --resume"
            )
        }
        var claims = [UInt8](repeating: 0, count: checkpoint.claimsBytes)
        var offset = 0
        while offset < claims.count {
            let n = claims.withUnsafeMutableBytes {
                pread(fd, $0.baseAddress! + offset, $0.count - offset, off_t(offset))
            }
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { throw CLIError("cannot read \(claimsPath): \(String(cString: strerror(errno)))") }
            offset += n
        }
        guard ftruncate(fd, off_t(claims.count)) == 0, lseek(fd, off_t(claims.count), SEEK_SET) == off_t(claims.count)
        else {
            throw CLIError("cannot prepare \(claimsPath): \(String(cString: strerror(errno)))")
        }
        return claims
    }

    /// Why a checkpoint is not accepted.
    enum CheckpointInvalid: Error {
        case unreadable, checksum
        /// The checkpoint or the run key is not a private file of this user, so it cannot vouch.
        case untrusted(String)
    }

    /// nil when there is no checkpoint; refuses a symlink or a file too large to be one. A checkpoint
    /// must be a private file of this user (owner, mode 0600, one link) sealed with the run's key.
    static func readCheckpoint(_ path: String, keyPath: String) throws -> Result<Checkpoint, CheckpointInvalid>? {
        let fd = Glibc.open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        if fd < 0 {
            if errno == ENOENT { return nil }
            throw CLIError(
                "cannot read \(path): \(String(cString: strerror(errno))) (a checkpoint must be a regular file)")
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
            throw CLIError("\(path) is not a regular file")
        }
        if let why = PrivateFile.problem(info) { return .failure(.untrusted("\(path) \(why)")) }
        guard let read = try? BoundedRead.read(fd, limit: 1 << 20), !read.oversized else {
            return .failure(.unreadable)
        }
        let key: RunKey
        switch RunKey.read(keyPath) {
        case let .success(found): key = found
        case let .failure(untrusted): return .failure(.untrusted(untrusted.message))
        }
        do { return .success(try Checkpoint.unseal(Data(read.bytes), key: key)) } catch {
            return .failure(error == .checksum ? .checksum : .unreadable)
        }
    }

    /// Opens an existing partial file without following a symlink, and only if this user owns it,
    /// it is a regular file with a single link and mode 0600: what this command would have created.
    static func openOwnPartial(_ partialPath: String) throws -> Int32 {
        let fd = Glibc.open(partialPath, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else {
            throw CLIError(
                "cannot open \(partialPath) to resume: \(String(cString: strerror(errno))); run again without --resume")
        }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_uid == geteuid(),
            info.st_mode & 0o7777 == 0o600, info.st_nlink == 1
        else {
            close(fd)
            throw CLIError(
                "\(partialPath) is not a private regular file of this user (mode 0600, one link), so this run did not "
                    + "write it; remove it and \(partialPath.dropLast(8)).checkpoint and run again without --resume")
        }
        return fd
    }

    /// The first `bytes` bytes of the partial file must be exactly `next - first` whole lines.
    static func checkConsistency(fd: Int32, checkpoint: Checkpoint, partialPath: String) throws {
        let refuse = CLIError(
            "\(partialPath) does not match its checkpoint (the first \(checkpoint.bytes) bytes must be "
                + "\(checkpoint.next - checkpoint.first) whole lines); remove it and the checkpoint and run again without --resume"
        )
        var info = stat()
        let delivered = max(0, checkpoint.next - checkpoint.first)
        guard checkpoint.bytes >= 0, checkpoint.next >= 0, delivered > 0 || checkpoint.bytes == 0,
            fstat(fd, &info) == 0,
            Int(info.st_size) >= checkpoint.bytes
        else { throw refuse }
        var chunk = [UInt8](repeating: 0, count: 1 << 20)
        var offset = 0, lines = 0, last: UInt8 = 0x0A
        while offset < checkpoint.bytes {
            let n = chunk.withUnsafeMutableBytes {
                pread(fd, $0.baseAddress!, min($0.count, checkpoint.bytes - offset), off_t(offset))
            }
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { throw refuse }
            chunk.withUnsafeBytes { raw in
                var p = raw.baseAddress!
                let end = raw.baseAddress! + n
                while p < end, let found = memchr(p, 0x0A, end - p) {
                    lines += 1
                    p = UnsafeRawPointer(found) + 1
                }
            }
            last = chunk[n - 1]
            offset += n
        }
        guard last == 0x0A, lines == delivered else { throw refuse }
    }

    /// A run whose checkpoint says complete: it crashed after sealing its output, before or
    /// after the rename. Finish the rename if needed; never redo the work.
    static func completeEarlierRun(
        _ checkpoint: Checkpoint, path: String, partialPath: String, checkpointPath: String
    ) throws -> Opening {
        var info = stat()
        if lstat(partialPath, &info) == 0 {
            let fd = try openOwnPartial(partialPath)
            defer { close(fd) }
            try checkConsistency(fd: fd, checkpoint: checkpoint, partialPath: partialPath)
            guard fstat(fd, &info) == 0, Int(info.st_size) == checkpoint.bytes else {
                throw CLIError(
                    "\(partialPath) is longer than its completed checkpoint says; remove it and the checkpoint and run again without --resume"
                )
            }
            guard rename(partialPath, path) == 0 else {
                throw CLIError("cannot rename \(partialPath) to \(path): \(String(cString: strerror(errno)))")
            }
        } else {
            guard lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG, Int(info.st_size) == checkpoint.bytes
            else {
                throw CLIError(
                    "\(checkpointPath) says the run completed, but \(path) is missing or not the size it recorded; run again without --resume"
                )
            }
        }
        try syncDirectory(of: path)
        if !checkpoint.sharded { try removeIfPresent(RunFiles.claims(of: path)) }
        guard unlink(checkpointPath) == 0 else {
            throw CLIError("cannot remove \(checkpointPath): \(String(cString: strerror(errno)))")
        }
        // A shard's key seals its manifest (the merge checks it); an unsharded run's is done with.
        if !checkpoint.sharded { try removeIfPresent(RunKey.path(of: path)) }
        return .alreadyComplete(lines: checkpoint.next - checkpoint.first)
    }
}
