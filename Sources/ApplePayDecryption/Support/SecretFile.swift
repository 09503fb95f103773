// The one reader of secret files: merchant keys, PKCS#12 files, PINs, the trust root and the merchant
// client's TLS key are read straight into one array, lent to a closure and wiped.
#if canImport(FoundationEssentials)
    import FoundationEssentials
    import Glibc  // open, read, memchr, errno: Foundation re-exports them, FoundationEssentials does not
#else
    import Foundation
#endif

/// A file holding a secret (a private key, a PKCS#12 file, a PIN), read straight into one array with
/// no Foundation buffer in between, lent to a closure, and wiped when the closure returns.
public enum SecretFile {
    /// The largest file read: keys, certificates and PKCS#12 files are a few kilobytes.
    public static let maximumSize = 16 << 20

    /// Reads the regular file at `path`, lends its bytes to `body`, then wipes them.
    ///
    /// A FIFO or device in the file's place is refused without blocking (it is opened with
    /// `O_NONBLOCK` and refused by the regular-file check, after which reads block again).
    ///
    /// - Parameters:
    ///   - path: The file's path.
    ///   - what: What the file holds, for errors ("merchant key", "PIN").
    ///   - body: Reads the bytes; they are wiped when it returns. An array it returns or keeps shares
    ///     their storage (Swift arrays are copied on write), so the reader's wipe zeroes a copy and
    ///     the kept array is the caller's to wipe.
    /// - Throws: ``ConfigurationError`` with ``ConfigurationError/Code/unreadableInput`` naming `what`
    ///   and `path` (missing, unreadable, not a regular file, or ``maximumSize`` or larger), or what
    ///   `body` throws.
    public static func withContents<R>(
        atPath path: String, what: String, _ body: ([UInt8]) throws(ConfigurationError) -> R
    ) throws(ConfigurationError) -> R {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)
        guard fd >= 0 else {
            throw ConfigurationError(
                .unreadableInput, "cannot read the \(what) file \(path): \(String(cString: strerror(errno)))")
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_size >= 0,
            info.st_size < maximumSize
        else {
            throw ConfigurationError(
                .unreadableInput, "cannot read the \(what) file \(path): not a regular file under 16 MiB")
        }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
        var bytes = [UInt8](repeating: 0, count: Int(info.st_size))
        defer { SensitiveBytes.wipe(&bytes) }
        var filled = 0
        while filled < bytes.count {
            let n = bytes.withUnsafeMutableBytes { read(fd, $0.baseAddress! + filled, $0.count - filled) }
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { throw ConfigurationError(.unreadableInput, "cannot read the \(what) file \(path)") }
            filled += n
        }
        return try body(bytes)
    }

    /// As ``withContents(atPath:what:_:)``, for a file URL; any other URL is refused.
    static func withContents<R>(of url: URL, what: String, _ body: ([UInt8]) throws(ConfigurationError) -> R)
        throws(ConfigurationError) -> R
    {
        guard url.isFileURL else {
            throw ConfigurationError(.unreadableInput, "the \(what) file \(url) is not a file URL")
        }
        return try withContents(atPath: url.path, what: what, body)
    }
}
