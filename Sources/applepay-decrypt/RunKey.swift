// OUT.runkey: 32 random bytes made with a run, private to its user, that seal (HMAC-SHA-256) the
// run's checkpoint (and through it the claims journal) and a shard's manifest.
import ApplePayDecryption
import Foundation

/// A run's sealing key. Whoever can write the output's directory but is not the run's user cannot
/// read it, so cannot seal a checkpoint or manifest that the run accepts: a resume or a merge can
/// not be made to forget a claim by a co-tenant of a shared directory.
final class RunKey {
    static let size = 32
    private var bytes: [UInt8]

    private init(bytes: [UInt8]) { self.bytes = bytes }

    deinit { SensitiveBytes.wipe(&bytes) }

    static func path(of out: String) -> String { RunFiles.runKey(of: out) }

    /// A new key at `path`: created exclusively with mode 0600, never through a symlink, synced.
    static func create(_ path: String) throws -> RunKey {
        // The system generator is getrandom(2) on Linux: cryptographically secure.
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<size).map { _ in UInt8.random(in: 0...255, using: &generator) }
        let fd = Glibc.open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw CLIError(
                errno == EEXIST
                    ? "\(path) appeared while this run was starting; remove it and run again"
                    : "cannot create \(path): \(String(cString: strerror(errno)))")
        }
        defer { close(fd) }
        do {
            guard fchmod(fd, 0o600) == 0 else { throw CLIError("cannot set the mode of \(path)") }
            try bytes.withUnsafeBytes { raw in
                do { try WholeWrite.write(fd, raw) } catch { throw CLIError("cannot write \(path): \(error)") }
            }
            guard fsync(fd) == 0 else { throw CLIError("cannot sync \(path): \(String(cString: strerror(errno)))") }
        } catch {
            unlink(path)
            throw error
        }
        return RunKey(bytes: bytes)
    }

    /// The key at `path`, or why it cannot be trusted: it must be a regular file (not followed through
    /// a symlink) of exactly `size` bytes, owned by this process's effective user, mode 0600, one link.
    static func read(_ path: String) -> Result<RunKey, Untrusted> {
        let fd = Glibc.open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { return .failure(Untrusted("cannot open \(path): \(String(cString: strerror(errno)))")) }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { return .failure(Untrusted("cannot stat \(path)")) }
        if let why = PrivateFile.problem(info) { return .failure(Untrusted("\(path) \(why)")) }
        guard info.st_size == size, var read = try? BoundedRead.read(fd, limit: size), read.bytes.count == size else {
            return .failure(Untrusted("\(path) is not a run key"))
        }
        defer { SensitiveBytes.wipe(&read.bytes) }
        return .success(RunKey(bytes: read.bytes))
    }

    struct Untrusted: Error {
        let message: String
        init(_ message: String) { self.message = message }
    }

    /// HMAC-SHA-256 (RFC 2104) of `message` under the key, as lower-case hex.
    func mac(_ message: [UInt8]) -> String {
        var inner = InputDigest(), outer = InputDigest()
        // The key and both pads derived from it are wiped once hashed.
        var pad = bytes + [UInt8](repeating: 0, count: 64 - bytes.count)
        var innerPad = pad.map { $0 ^ 0x36 }, outerPad = pad.map { $0 ^ 0x5C }
        defer {
            SensitiveBytes.wipe(&pad)
            SensitiveBytes.wipe(&innerPad)
            SensitiveBytes.wipe(&outerPad)
        }
        inner.update(innerPad)
        inner.update(message)
        outer.update(outerPad)
        outer.update(Self.unhex(inner.hex))
        return outer.hex
    }

    private static func unhex(_ text: String) -> [UInt8] {
        var out: [UInt8] = []
        var high: UInt8?
        for c in text.utf8 {
            let v = c <= 0x39 ? c - 0x30 : c - 0x61 + 10
            if let h = high {
                out.append(h << 4 | v)
                high = nil
            } else {
                high = v
            }
        }
        return out
    }
}

/// What a file that only this run's user can have written looks like.
enum PrivateFile {
    /// nil for a regular file owned by the effective user, mode exactly 0600, one link; otherwise why not.
    static func problem(_ info: stat) -> String? {
        guard info.st_mode & S_IFMT == S_IFREG else { return "is not a regular file" }
        guard info.st_uid == geteuid() else {
            return "belongs to user \(info.st_uid), not to the user running this command (\(geteuid()))"
        }
        guard info.st_mode & 0o7777 == 0o600 else {
            return "has mode \(String(info.st_mode & 0o7777, radix: 8)), not 0600"
        }
        guard info.st_nlink == 1 else { return "has \(info.st_nlink) links, not one" }
        return nil
    }
}
