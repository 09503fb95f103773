// Where code loaded into the process (crypto_mb, its runtime, a PKCS#11 module) may come from: a
// file, and every folder above it, that only root or this process's user can change.
#if canImport(Glibc)
    import Glibc
#endif

/// The check a library path passes before dlopen runs its constructors in the process that holds the
/// merchant keys: an absolute path; the file (symbolic links resolved) a regular file; the file and
/// every folder above it owned by root or the effective user and writable by no group or other user
/// (a folder others may write is accepted only with the sticky bit, as /tmp: others can add names
/// there, but not replace this user's; not even so for the library's own folder when asked). The library is then loaded by its resolved path, so a link
/// changed after the check changes nothing.
package enum TrustedLibraryPath {
    /// The resolved path of `path`, or why it is refused. With `privateFolder`, the library's own
    /// folder may not be writable by others even with the sticky bit: a library that loads what lies
    /// beside it (crypto_mb and its runtime) would load a name another user added there.
    package static func resolve(_ path: String, what: String, privateFolder: Bool = false) -> Result<String, Refusal> {
        guard path.hasPrefix("/"), !path.utf8.contains(0) else {
            return .failure(
                Refusal("\(what) \(path) is not an absolute path (a relative one depends on the working directory)"))
        }
        guard let real = realpath(path, nil) else {
            return .failure(Refusal("\(what) \(path) cannot be resolved: \(String(cString: strerror(errno)))"))
        }
        let resolved = String(cString: real)
        free(real)
        var info = stat()
        guard stat(resolved, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
            return .failure(Refusal("\(what) \(path) is not a regular file"))
        }
        if let why = problem(info, folder: false) { return .failure(Refusal("\(what) \(resolved) \(why)")) }
        var folder = resolved
        var ownFolder = true
        while let slash = folder.lastIndex(of: "/") {
            folder = slash == folder.startIndex ? "/" : String(folder[..<slash])
            guard stat(folder, &info) == 0 else {
                return .failure(Refusal("\(what) \(resolved): its folder \(folder) cannot be read"))
            }
            // The first folder met is the library's own.
            let sticky = !(privateFolder && ownFolder)
            ownFolder = false
            if let why = problem(info, folder: true, stickyAccepted: sticky) {
                return .failure(Refusal("\(what) \(resolved): its folder \(folder) \(why)"))
            }
            if folder == "/" { break }
        }
        return .success(resolved)
    }

    private static func problem(_ info: stat, folder: Bool, stickyAccepted: Bool = true) -> String? {
        guard info.st_uid == 0 || info.st_uid == geteuid() else {
            return "belongs to user \(info.st_uid), neither root nor the user running this process (\(geteuid()))"
        }
        let writableByOthers = info.st_mode & 0o022 != 0
        if writableByOthers, !(folder && stickyAccepted && info.st_mode & 0o1000 != 0) {
            return "is writable by other users (mode \(String(info.st_mode & 0o7777, radix: 8)))"
        }
        return nil
    }

    /// Why a path is refused.
    package struct Refusal: Error, Sendable {
        package let message: String
        init(_ message: String) { self.message = message }
    }
}
