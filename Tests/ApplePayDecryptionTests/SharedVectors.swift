// The shared vectors (../shared/vectors) as test conditions: a test that reads them is skipped, naming the
// folder it lacks, where they are absent (a public clone), and fails there when APPLEPAY_REQUIRE_SHARED=1
// (CI sets it, so CI skips nothing).
import Foundation
import Testing

enum SharedVectors {
    /// APPLEPAY_REQUIRE_SHARED=1: a missing folder fails the tests that need it instead of skipping them.
    static var required: Bool { ProcessInfo.processInfo.environment["APPLEPAY_REQUIRE_SHARED"] == "1" }

    /// ../shared/vectors/wycheproof beside the project, or $APPLEPAY_SHARED_VECTORS/../wycheproof.
    static let wycheproofFolder: URL = Paths.appleVectors.deletingLastPathComponent().appendingPathComponent(
        "wycheproof")

    static func isPresent(_ folder: URL) -> Bool {
        var isDirectory: ObjCBool = false
        return FileManager.default.fileExists(atPath: folder.path, isDirectory: &isDirectory) && isDirectory.boolValue
    }

    /// Whether the tests that read `folder` run: it exists, or its absence is to fail them.
    static func runs(_ folder: URL) -> Bool { required || isPresent(folder) }

    private static func condition(_ folder: URL, _ what: String) -> ConditionTrait {
        .enabled(
            if: runs(folder),
            Comment(
                rawValue:
                    "\(what) missing at \(folder.path) (CONTRIBUTING.md says where they come from; APPLEPAY_REQUIRE_SHARED=1 fails instead)"
            ))
    }

    /// Real Apple Pay sample tokens with their merchant keys (../shared/vectors/apple).
    static let apple = condition(Paths.appleVectors, "the shared Apple sample vectors")
    /// Public Google Pay vectors from Tink and others (../shared/vectors/google).
    static let google = condition(Paths.googleVectors, "the shared Google Pay vectors")
    /// Samsung Pay sample tokens with their merchant keys (../shared/vectors/samsung).
    static let samsung = condition(Paths.samsungVectors, "the shared Samsung Pay vectors")
    /// Project Wycheproof's ECDSA and ECDH P-256 files (../shared/vectors/wycheproof).
    static let wycheproof = condition(wycheproofFolder, "the shared Wycheproof vectors")
}
