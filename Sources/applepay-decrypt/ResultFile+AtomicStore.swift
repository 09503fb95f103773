// Replacing a file atomically: a reader sees the old or the new contents, never a torn file.
import ApplePayDecryption
import Foundation

extension ResultFile {
    /// Writes `data` to a fresh mkstemp file (mode 0600) beside `target`, syncs it and renames it
    /// over `target`, so a reader sees the old or the new contents, never a torn file.
    static func storeAtomically(_ data: Data, at target: String) throws {
        var template = Array(
            (PathName.directory(of: target) + "/." + PathName.lastComponent(of: target) + ".XXXXXX").utf8CString)
        let tfd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard tfd >= 0 else {
            throw CLIError("cannot create a temporary file beside \(target): \(String(cString: strerror(errno)))")
        }
        let temporary = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        do {
            defer { close(tfd) }
            guard fchmod(tfd, 0o600) == 0 else {
                throw CLIError("cannot set the mode of \(temporary): \(String(cString: strerror(errno)))")
            }
            // Its reason as text: a typed-throws closure here crashes Swift 6.3.1's IR generation.
            let failure = data.withUnsafeBytes { raw -> String? in
                do {
                    try WholeWrite.write(tfd, raw)
                    return nil
                } catch { return "\(error)" }
            }
            if let failure { throw CLIError("cannot write \(temporary): \(failure)") }
            guard fsync(tfd) == 0 else {
                throw CLIError("cannot sync \(temporary): \(String(cString: strerror(errno)))")
            }
            guard rename(temporary, target) == 0 else {
                throw CLIError("cannot write \(target): \(String(cString: strerror(errno)))")
            }
        } catch {
            unlink(temporary)
            throw error
        }
    }
}
