// OUT.lock: one run owns an output path at a time.
import Foundation

/// OUT.lock, held with flock for the whole run: a second run with the same --out is refused.
/// The file is never removed (removing it would let two runs lock two different files).
final class RunLock {
    private let fd: Int32

    init(out: String) throws {
        let path = out + ".lock"
        fd = open(path, O_RDONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw CLIError("cannot open the lock file \(path): \(String(cString: strerror(errno)))") }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
            close(fd)
            throw CLIError("the lock file \(path) is not a regular file")
        }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            let busy = errno == EWOULDBLOCK
            close(fd)
            throw CLIError(
                busy
                    ? "another run is writing \(out) (it holds \(path)); wait for it to finish or use another --out"
                    : "cannot lock \(path): \(String(cString: strerror(errno)))")
        }
    }

    deinit { close(fd) }
}
