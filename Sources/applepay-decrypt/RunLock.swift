// OUT.lock: one run owns an output path at a time; the lock file is removed when the run ends.
import Foundation

/// OUT.lock, held with flock for the whole run: a second run with the same --out is refused.
///
/// The lock is this user's own file: one that another user made (in a directory others can write) is
/// replaced, so nobody can block a run by holding a lock first. The file is removed when the run ends.
/// Removing it is safe because a run only counts its lock as held when, after flock, the path still
/// names the locked file: a run that opened a lock file just before it was removed retries.
final class RunLock {
    private let fd: Int32
    private let path: String

    init(out: String) throws {
        path = RunFiles.lock(of: out)
        var attempts = 0
        while true {
            attempts += 1
            // O_NONBLOCK: a FIFO planted under the lock's name must not hang the open.
            let fd = Glibc.open(path, O_RDONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0o600)
            guard fd >= 0 else {
                let reason = errno
                var entry = stat()
                if reason == ELOOP, lstat(path, &entry) == 0, entry.st_uid != geteuid(), attempts < 8,
                    unlink(path) == 0
                {
                    continue  // another user's symbolic link under the lock's name: replaced like its file
                }
                throw CLIError("cannot open the lock file \(path): \(String(cString: strerror(reason)))")
            }
            var info = stat()
            guard fstat(fd, &info) == 0 else {
                close(fd)
                throw CLIError("cannot read the lock file \(path): \(String(cString: strerror(errno)))")
            }
            guard info.st_mode & S_IFMT == S_IFREG else {
                close(fd)
                if info.st_uid != geteuid(), attempts < 8, unlink(path) == 0 { continue }  // another user's FIFO
                throw CLIError("the lock file \(path) is not a regular file")
            }
            if info.st_uid != geteuid() {
                // Another user's file: never this user's lock. Replace it (its holder keeps a file that
                // no longer locks anything); a directory that forbids that (sticky) is refused.
                close(fd)
                guard unlink(path) == 0 || errno == ENOENT, attempts < 8 else {
                    throw CLIError(
                        "the lock file \(path) belongs to user \(info.st_uid), not to you, and cannot be replaced: "
                            + "\(String(cString: strerror(errno))); keep outputs in a directory only you can write")
                }
                continue
            }
            guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
                let busy = errno == EWOULDBLOCK
                close(fd)
                throw CLIError(
                    busy
                        ? "another run is writing \(out) (it holds \(path)); wait for it to finish or use another --out"
                        : "cannot lock \(path): \(String(cString: strerror(errno)))")
            }
            var now = stat()
            if stat(path, &now) == 0, now.st_dev == info.st_dev, now.st_ino == info.st_ino {
                self.fd = fd
                return
            }
            // Removed or replaced between open and flock: lock the file the path names now.
            close(fd)
            guard attempts < 8 else { throw CLIError("the lock file \(path) keeps changing; try again") }
        }
    }

    /// Fails the run when the lock path no longer names the file this run locked (another user
    /// removed or replaced it in a directory others can write): a second run may then hold a new
    /// lock on the same OUT, and the two would write each other's files. Checked at each checkpoint
    /// and before finishing.
    func checkHeld() throws {
        var mine = stat(), now = stat()
        guard fstat(fd, &mine) == 0, lstat(path, &now) == 0, mine.st_dev == now.st_dev, mine.st_ino == now.st_ino
        else {
            throw CLIError(
                "the lock file \(path) was removed or replaced during the run: another run may be writing the same "
                    + "output; this run stops (keep outputs in a directory only you can write)")
        }
    }

    /// Removes the lock file (if the path still names it) while holding the lock, then releases it.
    deinit {
        var mine = stat(), now = stat()
        if fstat(fd, &mine) == 0, stat(path, &now) == 0, mine.st_dev == now.st_dev, mine.st_ino == now.st_ino {
            unlink(path)
        }
        close(fd)
    }
}
