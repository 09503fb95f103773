// PART.manifest: what a shard's run (`batch --shard K/N --out PART`) read and wrote, so that
// `merge` can prove its parts are one run's slices of the same bytes, whole and untouched.
import ApplePayDecryption
import Foundation

/// Sealed like the checkpoint (canonical JSON with an HMAC-SHA-256 under the run's key, PART.runkey),
/// written atomically with mode 0600 just before PART is renamed into place.
struct PartManifest: SealedJSON, Equatable {
    static let currentFormat = 1
    var format = currentFormat
    /// The run without its shard (`RunDescription`): inputs (sizes, modification times, directory
    /// listings) and options. Every part of one merge carries the same.
    var run: String
    /// K and N of `--shard K/N`.
    var shard: Int
    var shards: Int
    /// The slice: global indices first..<first+count of `total` items the shard counted.
    var first: Int
    var count: Int
    var total: Int
    /// Per INPUT, SHA-256 of the bytes behind the items before `first` and before `first + count`
    /// (nil where not tracked: zip archives). Part K's `consumedThrough` must equal part K+1's
    /// `consumedBefore`: both cover the same bytes if the input did not change between their runs.
    var consumedBefore: [String?]
    var consumedThrough: [String?]
    /// PART: its length and SHA-256.
    var linesBytes: Int
    var linesDigest: String
    /// PART.claims: every verified item's replay keys and index (`ReplayRecord`), its length and SHA-256.
    var claimsBytes: Int
    var claimsDigest: String
    var checksum = ""

    static func path(of part: String) -> String { part + ".manifest" }

    /// The manifest of `part`, or a message naming it.
    static func read(part: String) throws -> PartManifest {
        let path = Self.path(of: part)
        let fd = Glibc.open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else {
            throw CLIError(
                "part \(part): cannot read its manifest \(path) (\(String(cString: strerror(errno)))); "
                    + "a part is the --out of a completed `batch --shard K/N` run")
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
            throw CLIError("part \(part): \(path) is not a regular file")
        }
        try ShardPart.checkOwnership(info, of: path, part: part)
        guard let read = try? BoundedRead.read(fd, limit: 1 << 20), !read.oversized else {
            throw CLIError("part \(part): \(path) is not a manifest")
        }
        let key: RunKey
        switch RunKey.read(RunKey.path(of: part)) {
        case let .success(found): key = found
        case let .failure(untrusted):
            throw CLIError(
                "part \(part): its key \(untrusted.message); a part's manifest is sealed with the key its shard's run made "
                    + "(PART.runkey, mode 0600): copy it with the part, as the user who merges")
        }
        let manifest: PartManifest
        do {
            manifest = try unseal(Data(read.bytes), key: key)
        } catch .unreadable {
            throw CLIError("part \(part): \(path) is not a part manifest of this version")
        } catch .checksum {
            throw CLIError("part \(part): \(path) was damaged or edited (its checksum does not match)")
        }
        guard manifest.format == currentFormat else {
            throw CLIError("part \(part): \(path) is not a part manifest of this version")
        }
        return manifest
    }
}
