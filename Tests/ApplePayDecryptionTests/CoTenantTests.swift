// A second Unix user sharing the output directory: its checkpoint, lock and part files are never
// trusted; resume, merge and the lock hold against it (issue 35, items 1, 2 and 9).
import ApplePayDecryption
import Foundation
import Testing

@testable import applepay_decrypt

/// A second Unix user, `applepay-cotenant`, made once with useradd; its commands run through setpriv.
/// Available when this process can create it and switch to it (root: CI runs as root).
enum CoTenant {
    static let name = "applepay-cotenant"

    static let ids: (uid: uid_t, gid: gid_t)? = {
        guard geteuid() == 0 else { return nil }
        if getpwnam(name) == nil {
            _ = try? runTool(
                "/usr/sbin/useradd", ["--system", "--no-create-home", "--shell", "/usr/sbin/nologin", name])
        }
        guard let entry = getpwnam(name) else { return nil }
        return (entry.pointee.pw_uid, entry.pointee.pw_gid)
    }()

    static var available: Bool { ids != nil }

    static func runTool(_ tool: String, _ arguments: [String]) throws -> Int32 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: tool)
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        return process.terminationStatus
    }

    /// A process running `script` (sh -c) as the co-tenant, started and not waited for.
    static func start(_ script: String) throws -> Process {
        let ids = ids!
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
        process.arguments = [
            "--reuid=\(ids.uid)", "--regid=\(ids.gid)", "--clear-groups", "--", "/bin/sh", "-c", script,
        ]
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        return process
    }

    /// Runs `script` as the co-tenant; true when it succeeded.
    @discardableResult
    static func run(_ script: String) throws -> Bool {
        let process = try start(script)
        process.waitUntilExit()
        return process.terminationStatus == 0
    }

    /// The co-tenant puts `bytes` at `path` (a file it owns, mode `mode`), replacing whatever was there
    /// by a rename, as any user who can write the directory can.
    static func replace(_ path: String, with bytes: [UInt8], mode: Int = 0o600) throws {
        let staged = path + ".staged-\(UUID().uuidString)"
        try Data(bytes).write(to: URL(fileURLWithPath: staged))
        chmod(staged, 0o644)
        defer { unlink(staged) }
        let placed = try run(
            "cat '\(staged)' > '\(path).new' && chmod \(String(mode, radix: 8)) '\(path).new' && mv -f '\(path).new' '\(path)'"
        )
        #expect(placed, "the co-tenant could not write \(path)")
        var info = stat()
        #expect(lstat(path, &info) == 0 && info.st_uid == ids!.uid)
    }
}

/// A scratch directory every user can write (mode 0777, no sticky bit): an output directory shared
/// with a co-tenant.
func sharedScratchDirectory() -> ScratchDirectory {
    let dir = ScratchDirectory()
    chmod(dir.url.path, 0o777)
    return dir
}

@Suite("A co-tenant of the output directory", .serialized, .enabled(if: CoTenant.available))
struct CoTenantTests {
    @Test("a checkpoint another user wrote is refused on --resume: it cannot make the run forget a claim (item 1)")
    func coTenantsCheckpointIsRefused() throws {
        let dir = sharedScratchDirectory()
        let out = dir.url.appendingPathComponent("r.jsonl").path
        let stdin = RunIntegrityTests.stdinLines(900)
        let reference = dir.url.appendingPathComponent("reference.jsonl").path
        #expect(try RunIntegrityTests.batch(["-"], out: reference, stdin: stdin).status == 0)
        try RunIntegrityTests.interruptedRun(["-"], out: out, stdin: stdin)
        let genuine = ShardBench.contents(out + ".checkpoint")

        // From public facts only: the journal said to be empty, so every claim before the kill is forgotten.
        var image = try CheckpointImage.load(out + ".checkpoint")
        image.claimsBytes = 0
        image.claimsDigest = InputDigest().hex
        // Sealed as the checkpoint was before OUT.runkey (a plain SHA-256), then with a key of its own.
        try CoTenant.replace(out + ".checkpoint", with: Array(try image.sealed(keyFile: nil)))
        let plain = try RunIntegrityTests.batch(["-"], out: out, stdin: stdin, ["--resume"])
        #expect(plain.status == 2, "\(plain.stderr)")
        #expect(plain.stderr.contains("belongs to user \(CoTenant.ids!.uid)"), "\(plain.stderr)")
        #expect(!FileManager.default.fileExists(atPath: out))

        let ownKey = ShardBench.contents(out + ".runkey")
        let theirKey = [UInt8](repeating: 0x42, count: 32)
        try CoTenant.replace(out + ".runkey", with: theirKey)
        var keyed = image
        keyed.checksum = ""
        try CoTenant.replace(out + ".checkpoint", with: Array(try keyed.sealed(keyFile: out + ".runkey")))
        let withKey = try RunIntegrityTests.batch(["-"], out: out, stdin: stdin, ["--resume"])
        #expect(withKey.status == 2, "\(withKey.stderr)")
        #expect(withKey.stderr.contains("belongs to user \(CoTenant.ids!.uid)"), "\(withKey.stderr)")
        #expect(!FileManager.default.fileExists(atPath: out))

        // The run's own checkpoint and key, put back by the run's user: the resume completes, every token once.
        for (file, bytes) in [(out + ".checkpoint", genuine), (out + ".runkey", ownKey)] {
            unlink(file)
            try bytes.write(to: URL(fileURLWithPath: file))
            chmod(file, 0o600)
        }
        let resumed = try RunIntegrityTests.batch(["-"], out: out, stdin: stdin, ["--resume"])
        #expect(resumed.status == 0, "\(resumed.stderr)")
        #expect(try BatchFixture.lines(out) == (try BatchFixture.lines(reference)))
        #expect(!FileManager.default.fileExists(atPath: out + ".runkey"))
    }

    @Test("a lock file another user made and holds does not block the run, and no run leaves OUT.lock behind (item 9)")
    func coTenantsLockDoesNotBlock() throws {
        let dir = sharedScratchDirectory()
        let out = dir.url.appendingPathComponent("r.jsonl").path
        let squatter = try CoTenant.start("exec flock '\(out).lock' sleep 30")
        defer {
            kill(squatter.processIdentifier, SIGKILL)
            squatter.waitUntilExit()
        }
        let deadline = Date().addingTimeInterval(10)
        while !FileManager.default.fileExists(atPath: out + ".lock"), Date() < deadline { usleep(10_000) }
        var info = stat()
        #expect(lstat(out + ".lock", &info) == 0 && info.st_uid == CoTenant.ids!.uid)

        let result = try RunIntegrityTests.batch([BatchFixture.archive], out: out)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(try BatchFixture.lines(out).count == 22)
        #expect(!FileManager.default.fileExists(atPath: out + ".lock"), "the run left OUT.lock behind")
    }

    @Test("a FIFO or a symbolic link another user put under OUT.lock's name neither hangs nor blocks the run")
    func coTenantsFIFOOrLinkDoesNotBlock() throws {
        for plant in ["mkfifo", "ln -s /etc/hostname"] {
            let dir = sharedScratchDirectory()
            let out = dir.url.appendingPathComponent("r.jsonl").path
            #expect(try CoTenant.run("\(plant) '\(out).lock'"), "the co-tenant could not \(plant)")
            let result = try RunIntegrityTests.batch([BatchFixture.archive], out: out)
            #expect(result.status == 0, "\(plant): \(result.stderr)")
            #expect(try BatchFixture.lines(out).count == 22)
        }
    }

    @Test("a part re-sealed with replaced replay keys by whoever could write it is refused by the merge (item 2)")
    func resealedPartIsRefused() throws {
        let bench = ShardBench()
        chmod(bench.dir.url.path, 0o777)
        let archive = bench.write("rich.jsonl", bench.richArchive())
        let parts = try bench.shards([archive], 4)
        let reference = bench.path("reference.jsonl")
        try bench.batch([archive], out: reference)

        // Part 2's claims get random keys: the replays of part 1's payments would become second payments.
        let part = parts[1]
        var claims = Array(ShardBench.contents(part + ".claims"))
        var random = SplitMix(state: 35)
        for start in stride(from: 0, to: claims.count, by: ReplayRecord.size)
        where !ReplayRecord(claims[start..<start + ReplayRecord.size])!.isReplay {
            for i in start..<start + 32 { claims[i] = UInt8.random(in: 0...255, using: &random) }
        }
        var manifest = try JSONDecoder().decode(PartManifest.self, from: ShardBench.contents(part + ".manifest"))
        manifest.claimsDigest = PartManifest.digest(claims)
        manifest.checksum = ""
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // The co-tenant seals with a key of its own (the current format) or a plain SHA-256 (the format
        // before OUT.runkey); the operator then copies the parts as the user who merges, as the merge's
        // message about a foreign part advises.
        let theirKey = [UInt8](repeating: 0x17, count: 32)
        let unsealed = Array(try encoder.encode(manifest))
        var digest = InputDigest()
        digest.update(unsealed)
        for seal in [RunKeySeal.mac(key: theirKey, unsealed), digest.hex] {
            var sealed = manifest
            sealed.checksum = seal
            try CoTenant.replace(part + ".claims", with: claims)
            try CoTenant.replace(part + ".runkey", with: theirKey)
            try CoTenant.replace(part + ".manifest", with: Array(try encoder.encode(sealed)) + [0x0A])
            let copied = try parts.map { original in
                let copy = bench.path("copied-" + URL(fileURLWithPath: original).lastPathComponent)
                for suffix in ["", ".claims", ".manifest", ".runkey"] {
                    unlink(copy + suffix)
                    try ShardBench.contents(original + suffix).write(to: URL(fileURLWithPath: copy + suffix))
                    chmod(copy + suffix, 0o600)
                }
                return copy
            }
            let merged = try bench.merge(copied, out: bench.path("merged.jsonl"))
            #expect(merged.status == 2, "\(merged.stderr)")
            #expect(merged.stderr.contains("copied-part2.jsonl"), "\(merged.stderr)")
            #expect(!FileManager.default.fileExists(atPath: bench.path("merged.jsonl")))
        }
    }
}
