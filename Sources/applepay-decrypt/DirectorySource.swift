// An input directory as a token source: its `.json` files, one token each.
import ApplePayDecryption
import Foundation

/// The `.json` files of a directory, one token each, each read through the item limit, each opened
/// by its name's bytes relative to the directory.
final class DirectorySource: InputReader {
    private let files: [[UInt8]]
    private var next = 0
    private let names: OriginNames
    private let directory: String
    private let directoryFD: Int32
    private let limit: ItemLimit
    private var digest = InputDigest()

    init(path: String, names: OriginNames, limit: ItemLimit) {
        self.directory = path
        self.names = names
        self.limit = limit
        directoryFD = Glibc.open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        files = DirectoryListing(path: path).files
    }

    deinit { if directoryFD >= 0 { close(directoryFD) } }

    var checkpointDigest: String? { digest.hex }

    func fill(_ window: inout BatchWindow, capacity: Int) throws -> Bool {
        while window.count < capacity, window.hasRoom, next < files.count {
            let name = files[next]
            let path = directory + "/" + DirectoryListing.text(name)
            let location = BatchLocation(origin: names.add(path), line: 1)
            next += 1
            switch Self.read(name, in: directoryFD, shownAs: path, limit: limit) {
            case let .success(bytes):
                digest.update(name)
                digest.update("\0\(bytes.count)\0")
                digest.update(bytes)
                window.append(owning: bytes, at: location)
            case let .failure(reason):
                digest.update(name)
                digest.update("\0unreadable\0")
                window.appendUnreadable(reason.text, at: location)
            }
        }
        return window.count > 0
    }

    /// Opens `name` (its bytes) in the directory `directoryFD`, as `read(_:limit:)` opens a path.
    static func read(_ name: [UInt8], in directoryFD: Int32, shownAs path: String, limit: ItemLimit)
        -> Result<[UInt8], Unreadable>
    {
        let fd = (name + [0]).withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) {
                openat(directoryFD, $0.baseAddress!, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
            }
        }
        return read(fd: fd, path: path, limit: limit)
    }

    struct Unreadable: Error { let text: String }

    /// Opens without following a symlink and without blocking on a FIFO, refuses anything but a
    /// regular file, and reads at most limit + 1 bytes.
    static func read(_ path: String, limit: ItemLimit) -> Result<[UInt8], Unreadable> {
        read(fd: Glibc.open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC), path: path, limit: limit)
    }

    private static func read(fd: Int32, path: String, limit: ItemLimit) -> Result<[UInt8], Unreadable> {
        guard fd >= 0 else {
            return .failure(Unreadable(text: "cannot open \(path): \(String(cString: strerror(errno)))"))
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
            return .failure(Unreadable(text: "\(path) is not a regular file"))
        }
        do {
            let read = try BoundedRead.read(fd, limit: limit.bytes)
            return read.oversized ? .failure(Unreadable(text: limit.message)) : .success(read.bytes)
        } catch {
            return .failure(Unreadable(text: "cannot read \(path): \(error.text)"))
        }
    }
}
