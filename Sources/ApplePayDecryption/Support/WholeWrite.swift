// The one loop that writes a whole buffer with write(2): short writes and EINTR handled, so a
// buffer past 2 GiB (one write(2) moves at most 0x7ffff000 bytes on Linux) lands whole.
#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Writes a whole buffer to a file descriptor, however many calls of write(2) that takes.
///
/// Foundation's `Data.write(to:)` of 2 GiB + 1 MiB on Linux was seen to leave a file whose bytes past
/// 2^31 repeat its beginning; every whole-buffer write of the package goes through this loop instead.
public enum WholeWrite {
    /// The write function: write(2), or a stand-in that writes less, to prove the loop.
    public typealias Writer = (_ fd: Int32, _ bytes: UnsafeRawPointer, _ count: Int) -> Int

    /// Why a write stopped: the `errno` of the failing call (0 when a call wrote nothing).
    public struct Failure: Error, Sendable, CustomStringConvertible {
        /// The `errno` of the failing call, or 0 when a call returned 0 bytes.
        public let errno: Int32
        /// The system's text for `errno`.
        public var description: String { errno == 0 ? "no progress" : String(cString: strerror(errno)) }
    }

    /// Writes every byte of `bytes` to `fd`: calls `writer` again after a short write or EINTR.
    public static func write(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, using writer: Writer = systemWrite)
        throws(Failure)
    {
        guard let base = bytes.baseAddress else { return }
        var offset = 0
        while offset < bytes.count {
            let n = writer(fd, base + offset, bytes.count - offset)
            if n < 0 {
                let code = errnoValue()
                if code == EINTR { continue }
                throw Failure(errno: code)
            }
            guard n > 0 else { throw Failure(errno: 0) }
            offset += n
        }
    }

    /// Creates (or truncates) the file at `path` with `mode` (before the umask) and writes `bytes`
    /// into it through `write(_:_:using:)`.
    public static func file(atPath path: String, _ bytes: UnsafeRawBufferPointer, mode: mode_t = 0o644) throws(Failure)
    {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode)
        guard fd >= 0 else { throw Failure(errno: errnoValue()) }
        do { try write(fd, bytes) } catch {
            close(fd)
            throw error
        }
        guard close(fd) == 0 else { throw Failure(errno: errnoValue()) }
    }

    /// write(2) itself.
    public static func systemWrite(_ fd: Int32, _ bytes: UnsafeRawPointer, _ count: Int) -> Int {
        #if canImport(Glibc)
            Glibc.write(fd, bytes, count)
        #else
            Darwin.write(fd, bytes, count)
        #endif
    }

    private static func errnoValue() -> Int32 {
        #if canImport(Glibc)
            Glibc.errno
        #else
            Darwin.errno
        #endif
    }
}
