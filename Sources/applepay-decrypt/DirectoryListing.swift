// The `.json` files of an input directory, in byte order of their names, and a digest of the listing.
import ApplePayDecryption
import Foundation

/// The `.json` files of a directory (not recursive), in byte order of their names, with what
/// identifies them. Names stay bytes: a name that is not valid UTF-8 is still the file's name (a
/// String would replace its bad bytes, and the file then not be found).
struct DirectoryListing {
    let files: [[UInt8]]
    let digest: String

    init(path: String) {
        var files: [[UInt8]] = []
        let fd = Glibc.open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if fd >= 0, let stream = fdopendir(fd) {
            defer { closedir(stream) }
            while let entry = readdir(stream) {
                let name = withUnsafeBytes(of: &entry.pointee.d_name) { raw in
                    Array(raw.prefix(while: { $0 != 0 }))
                }
                if Self.isJSONName(name) { files.append(name) }
            }
        } else if fd >= 0 {
            close(fd)
        }
        files.sort { $0.lexicographicallyPrecedes($1) }
        var digest = InputDigest()
        for name in files {
            var info = stat()
            let found = Self.lstat(directory: path, name: name, &info)
            digest.update(name)
            digest.update(
                found
                    ? "\0\(info.st_mode)\0\(info.st_size)\0\(info.st_mtim.tv_sec).\(info.st_mtim.tv_nsec)\n" : "\0-\n")
        }
        self.files = files
        self.digest = digest.hex
    }

    /// A name ending in .json, in any case.
    static func isJSONName(_ name: [UInt8]) -> Bool {
        name.count >= 5 && name.suffix(5).map { $0 | 0x20 } == Array(".json".utf8)
    }

    /// A name for messages (bytes that are not UTF-8 shown as U+FFFD).
    static func text(_ name: [UInt8]) -> String { String(decoding: name, as: UTF8.self) }

    /// lstat of `name` in `directory`, the name passed as its bytes.
    static func lstat(directory: String, name: [UInt8], _ info: inout stat) -> Bool {
        let dfd = Glibc.open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard dfd >= 0 else { return false }
        defer { close(dfd) }
        return (name + [0]).withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { fstatat(dfd, $0.baseAddress!, &info, AT_SYMLINK_NOFOLLOW) == 0 }
        }
    }
}
