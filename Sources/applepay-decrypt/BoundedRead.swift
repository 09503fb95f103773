// Reading a descriptor up to a limit and one byte more, never the whole of an oversized file.
import ApplePayDecryption
import Foundation

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
