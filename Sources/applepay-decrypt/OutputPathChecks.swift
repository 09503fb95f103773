// The checks of --out made before any work: a path a result file can be, and no input of the run.
import ApplePayDecryption
import Foundation

/// Fails unless `out` can be a regular result file: it is absent or a regular file (not a FIFO,
/// device, directory or symlink), and its directory exists. Checked before any work.
func checkOutputPath(_ out: String) throws {
    var info = stat()
    if lstat(out, &info) == 0 {
        guard info.st_mode & S_IFMT == S_IFREG else {
            throw CLIError(
                "--out \(out) exists and is not a regular file (a directory, FIFO, device or symlink); give the path of a regular file"
            )
        }
    } else if errno != ENOENT {
        throw CLIError("--out \(out): \(String(cString: strerror(errno)))")
    }
    let directory = PathName.directory(of: out)
    guard stat(directory, &info) == 0, info.st_mode & S_IFMT == S_IFDIR else {
        throw CLIError("--out \(out): the directory \(directory) does not exist")
    }
}

/// Fails when the run would write over what it reads: `out`, or a file the run writes or removes
/// beside it (OUT.partial, OUT.claims, OUT.checkpoint, OUT.lock, OUT.runkey), is an input file (the
/// same device and inode, whatever the path says; for `-`, what standard input is), or `out` lies in
/// an input directory, where it would replace one of its items (and OUT.partial and OUT.claims would
/// join the listing). Checked before any work.
func checkOutputIsNoInput(_ out: String, inputs: [String]) throws {
    var folderInfo = stat()
    let folder = PathName.directory(of: out)
    guard stat(folder, &folderInfo) == 0 else { return }
    let sideFiles = RunFiles.written(by: out)
    var written: [(info: stat, path: String)] = []
    for file in sideFiles {
        var info = stat()
        if stat(file, &info) == 0 { written.append((info, file)) }
    }
    for input in inputs {
        var info = stat()
        // Standard input is whatever descriptor 0 is: a file redirected from OUT is OUT.
        guard (input == "-" ? fstat(0, &info) : stat(input, &info)) == 0 else { continue }
        if let file = written.first(where: { $0.info.st_dev == info.st_dev && $0.info.st_ino == info.st_ino }) {
            let name = input == "-" ? "standard input" : input
            throw CLIError(
                file.path == out
                    ? "--out \(out) is the input \(name): the run would overwrite what it reads; give --out a path of its own"
                    : "--out \(out): the run would write or remove \(file.path), which is the input \(name); give --out a path of its own"
            )
        }
        if input != "-", info.st_mode & S_IFMT == S_IFDIR, info.st_dev == folderInfo.st_dev,
            info.st_ino == folderInfo.st_ino
        {
            throw CLIError(
                "--out \(out) lies in the input directory \(input): the run would write among the items it reads; "
                    + "give --out a path outside it")
        }
    }
}
