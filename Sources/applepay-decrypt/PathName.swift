// A path's folder and last name, split on its bytes (POSIX dirname/basename), never through
// Foundation's path APIs (`deletingLastPathComponent` trapped on a one-character `--out q`).

/// The two halves of a path as the file system reads it: "q" is in ".", "/q" in "/", "a/b/" is "b" in "a".
enum PathName {
    /// The folder holding `path`: "." for a bare name, "/" for a name at the root.
    static func directory(of path: String) -> String {
        var bytes = Array(path.utf8)
        while bytes.count > 1, bytes.last == UInt8(ascii: "/") { bytes.removeLast() }
        guard let slash = bytes.lastIndex(of: UInt8(ascii: "/")) else { return "." }
        var end = slash
        while end > 0, bytes[end - 1] == UInt8(ascii: "/") { end -= 1 }
        return end == 0 ? "/" : String(decoding: bytes[..<end], as: UTF8.self)
    }

    /// The last name in `path` ("b" for "a/b/", "/" for "/").
    static func lastComponent(of path: String) -> String {
        var bytes = Array(path.utf8)
        while bytes.count > 1, bytes.last == UInt8(ascii: "/") { bytes.removeLast() }
        guard bytes.count > 1, let slash = bytes.lastIndex(of: UInt8(ascii: "/")) else {
            return String(decoding: bytes, as: UTF8.self)
        }
        return String(decoding: bytes[(slash + 1)...], as: UTF8.self)
    }
}
