// What an outside attack found in the CLI's paths, messages, directory names, shards and writes
// (issue 35, items 3, 4, 5, 11, 12 and 14): each rule, through the real CLI where it lives there.
import ApplePayDecryption
import Foundation
import Testing

@Suite("Outside attack: paths, messages, names, shards, writes")
struct OutsideAttackTests {
    @Test("a PIN put in a --merchant spec by mistake is never printed back, however it is spelled (item 3)")
    func pinIsNeverEchoed() throws {
        let dir = ScratchDirectory()
        let cert = dir.write("m.pem", Fixtures.shared.ecMerchant.certificatePEM)
        let out = dir.url.appendingPathComponent("r.jsonl").path
        let uris = [
            "pkcs11:object=k?module-path=/m.so&pin-value=424242",
            "pkcs11:object=k?module-path=/m.so&PIN-VALUE=424242",
            "pkcs11:object=k?module-path=/m.so&pin%2Dvalue=424242",
            "pkcs11:object=k?module-path=/m.so&pin-source=424242",
            "pkcs11:object=k?module-path=/m.so&pin-env=424242",
            "pkcs11:object=k;pin=424242?module-path=/m.so",
            "pkcs11:object=k?module-path=/m.so&pin-source=file:424242",
            "pkcs11:object=k?module-path=/m.so&pin-source=File:424242",
        ]
        for uri in uris {
            let spec = "cert=\(cert),pkcs11=\(uri)"
            let result = try runCLI(
                ["batch", BatchFixture.archive, "--out", out, "--merchant", spec]
                    + Array(BatchFixture.options.dropFirst(4)))
            #expect(result.status == 2, "\(uri): \(result.stderr)")
            #expect(!result.stderr.contains("424242"), "\(uri): \(result.stderr)")
            #expect(result.stderr.contains("--merchant"), "\(uri): \(result.stderr)")
        }
        // The redaction itself, as the service and the C ABI print a spec.
        #expect(!MerchantSpec.redacted("cert=/c.pem,pkcs11=\(uris[0])").contains("424242"))
        #expect(MerchantSpec.redacted("cert=/c.pem,key=/k.pem") == "cert=/c.pem,key=/k.pem")
    }

    @Test(
        "a one-character --out (and ./q, a trailing slash's folder) is a file in the working directory, not a crash (item 4)"
    )
    func oneCharacterOut() throws {
        let dir = ScratchDirectory()
        for out in ["q", "./r"] {
            let result = try runCLI(
                ["batch", BatchFixture.archive, "--out", out] + BatchFixture.options, directory: dir.url)
            #expect(result.status == 0, "\(out): \(result.stderr)")
            #expect(try BatchFixture.lines(dir.url.appendingPathComponent(out).path).count == 22)
        }
        let shard = try runCLI(
            ["batch", BatchFixture.archive, "--out", "s", "--shard", "1/1"] + BatchFixture.options, directory: dir.url)
        #expect(shard.status == 0, "\(shard.stderr)")
        let merged = try runCLI(["merge", "s", "--out", "m"], directory: dir.url)
        #expect(merged.status == 0, "\(merged.stderr)")
        #expect(try BatchFixture.lines(dir.url.appendingPathComponent("m").path).count == 22)
    }

    @Test("--out may not be an input file, nor lie in an input directory (item 5)")
    func outIsNeverAnInput() throws {
        let dir = ScratchDirectory()
        let input = dir.write("in.jsonl", Array(try String(contentsOfFile: BatchFixture.archive, encoding: .utf8).utf8))
        let before = ShardBench.contents(input)
        let same = try runCLI(["batch", input, "--out", input] + BatchFixture.options)
        #expect(same.status == 2, "\(same.stderr)")
        #expect(same.stderr.contains("is the input"), "\(same.stderr)")
        #expect(ShardBench.contents(input) == before)
        // Through another name for the same file.
        let link = dir.url.appendingPathComponent("alias.jsonl").path
        #expect(Glibc.link(input, link) == 0)
        let aliased = try runCLI(["batch", input, "--out", link] + BatchFixture.options)
        #expect(aliased.status == 2, "\(aliased.stderr)")
        #expect(ShardBench.contents(input) == before)

        let tokens = dir.url.appendingPathComponent("d")
        try FileManager.default.createDirectory(at: tokens, withIntermediateDirectories: false)
        let item = tokens.appendingPathComponent("a.json").path
        try Data(RunIntegrityTests.archiveLines[0].utf8).write(to: URL(fileURLWithPath: item))
        let inside = try runCLI(["batch", tokens.path, "--out", item] + BatchFixture.options)
        #expect(inside.status == 2, "\(inside.stderr)")
        #expect(inside.stderr.contains("lies in the input directory"), "\(inside.stderr)")
        #expect(try String(contentsOfFile: item, encoding: .utf8) == RunIntegrityTests.archiveLines[0])
    }

    @Test("a token in a file whose name is not valid UTF-8 is read from a directory input (item 11)")
    func nonUTF8NameIsRead() throws {
        let dir = ScratchDirectory()
        let tokens = dir.url.appendingPathComponent("in")
        try FileManager.default.createDirectory(at: tokens, withIntermediateDirectories: false)
        // "bad\xff\xfeutf8.json": created through its bytes.
        let name: [UInt8] = Array("bad".utf8) + [0xFF, 0xFE] + Array("utf8.json".utf8)
        let fd = (Array(tokens.path.utf8) + [UInt8(ascii: "/")] + name + [0]).withUnsafeBufferPointer {
            $0.withMemoryRebound(to: CChar.self) { open($0.baseAddress!, O_WRONLY | O_CREAT | O_EXCL, 0o644) }
        }
        #expect(fd >= 0)
        let token = Array(RunIntegrityTests.archiveLines[0].utf8)
        #expect(token.withUnsafeBytes { write(fd, $0.baseAddress!, $0.count) } == token.count)
        close(fd)
        let out = dir.url.appendingPathComponent("r.jsonl").path
        let result = try runCLI(["batch", tokens.path, "--out", out] + BatchFixture.options)
        #expect(result.status == 0, "\(result.stderr)")
        let lines = try BatchFixture.lines(out)
        #expect(lines.count == 1)
        #expect(lines.first?.contains("\"payment\":") == true, "\(lines)")
    }

    @Test("a finished shard run again (with or without --resume) exits 0, and its parts still merge (item 12)")
    func finishedShardRunsAgain() throws {
        let bench = ShardBench()
        let archive = bench.write("rich.jsonl", bench.richArchive())
        let reference = bench.path("reference.jsonl")
        try bench.batch([archive], out: reference)
        let parts = try bench.shards([archive], 2)
        for extra in [[], ["--resume"]] {
            let again = try runCLI(["batch", archive, "--out", parts[0], "--shard", "1/2"] + bench.options + extra)
            #expect(again.status == 0, "\(extra): \(again.stderr)")
        }
        let merged = try bench.merge(parts, out: bench.path("merged.jsonl"))
        #expect(merged.status == 0, "\(merged.stderr)")
        #expect(ShardBench.contents(bench.path("merged.jsonl")) == ShardBench.contents(reference))
    }
}

@Suite("One write loop for whole buffers (item 14)")
struct WholeWriteTests {
    @Test("short writes and EINTR: every byte lands, in order")
    func shortWritesAndInterruptions() throws {
        let dir = ScratchDirectory()
        let path = dir.url.appendingPathComponent("out").path
        let bytes = (0..<100_003).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        #expect(fd >= 0)
        // A write(2) that moves at most 4,093 bytes a call and fails once with EINTR.
        var calls = 0
        try bytes.withUnsafeBytes { raw in
            try WholeWrite.write(fd, raw) { fd, base, count in
                calls += 1
                if calls == 3 {
                    errno = EINTR
                    return -1
                }
                return write(fd, base, min(count, 4093))
            }
        }
        close(fd)
        #expect(calls > 20)
        #expect(Array(ShardBench.contents(path)) == bytes)
        // A write that fails for real is an error, not a loop.
        let closed = open(path, O_RDONLY)
        close(closed)
        #expect(throws: WholeWrite.Failure.self) { try bytes.withUnsafeBytes { try WholeWrite.write(closed, $0) } }
    }

    @Test("more than 2 GiB written through the loop reads back with the same digest", .tags(.largeFile))
    func moreThanTwoGiB() throws {
        var free = statvfs()
        let dir = ScratchDirectory()
        guard statvfs(dir.url.path, &free) == 0, UInt64(free.f_bavail) * UInt64(free.f_frsize) > 6 << 30 else {
            return  // not enough disk for the file and its margin
        }
        let size = (2 << 30) + (1 << 20)
        let path = dir.url.appendingPathComponent("big").path
        var expected = InputDigest()
        var buffer = [UInt8](repeating: 0, count: size)
        buffer.withUnsafeMutableBytes { raw in
            // Every 8 bytes their own offset: bytes past 2^31 that repeat the beginning would differ.
            let words = raw.bindMemory(to: UInt64.self)
            for i in 0..<words.count { words[i] = UInt64(i) }
        }
        expected.update(buffer)
        try buffer.withUnsafeBytes { try WholeWrite.file(atPath: path, $0, mode: 0o600) }
        buffer = []
        #expect(digest(ofFile: path) == expected.hex)
        var info = stat()
        #expect(stat(path, &info) == 0 && Int(info.st_size) == size)
    }

    /// SHA-256 of a file, read in 1 MiB chunks.
    func digest(ofFile path: String) -> String? {
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var digest = InputDigest()
        var chunk = [UInt8](repeating: 0, count: 1 << 20)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress!, $0.count) }
            guard n > 0 else { return n == 0 ? digest.hex : nil }
            chunk.withUnsafeBytes { digest.update(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
        }
    }
}

/// The attack on issue 35's fixes: the files a batch run writes or removes beside OUT, standard
/// input as OUT, and a result that cannot be written.
@Suite("Outside attack on the fixes: side files, standard input, unwritable results")
struct OutsideAttackOnFixesTests {
    /// The CLI with standard input and output bound to files, as a shell's `<` and `>` do.
    static func runRedirected(_ arguments: [String], stdinFile: String? = nil, stdoutFile: String? = nil) throws -> (
        status: Int32, stderr: String
    ) {
        let process = Process()
        process.executableURL = Paths.cli
        process.arguments = arguments
        if let stdinFile { process.standardInput = FileHandle(forReadingAtPath: stdinFile) }
        if let stdoutFile { process.standardOutput = FileHandle(forWritingAtPath: stdoutFile) }
        let err = Pipe()
        process.standardError = err
        try process.run()
        let text = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: text, as: UTF8.self))
    }

    @Test(
        "an input named like a file the run writes or removes beside OUT (OUT.lock, OUT.checkpoint, …) is refused and kept"
    )
    func sideFileIsNeverAnInput() throws {
        let dir = ScratchDirectory()
        let archive = Array(try String(contentsOfFile: BatchFixture.archive, encoding: .utf8).utf8)
        let out = dir.url.appendingPathComponent("in.jsonl").path
        for suffix in [".lock", ".checkpoint", ".partial", ".claims", ".runkey"] {
            let input = dir.write("in.jsonl" + suffix, archive)
            let result = try runCLI(["batch", input, "--out", out] + BatchFixture.options)
            #expect(result.status == 2, "\(suffix): \(result.stderr)")
            #expect(result.stderr.contains("which is the input"), "\(suffix): \(result.stderr)")
            #expect(ShardBench.contents(input) == Data(archive), "\(suffix)")
            unlink(input)
        }
    }

    @Test("a checkpoint this user's run did not seal is not removed by a fresh run")
    func foreignCheckpointIsKept() throws {
        let dir = ScratchDirectory()
        let out = dir.url.appendingPathComponent("r.jsonl").path
        let planted = dir.write("r.jsonl.checkpoint", Array("not a checkpoint\n".utf8))
        let result = try runCLI(["batch", BatchFixture.archive, "--out", out] + BatchFixture.options)
        #expect(result.status == 2, "\(result.stderr)")
        #expect(ShardBench.contents(planted) == Data("not a checkpoint\n".utf8))
    }

    @Test("--out may not be the file standard input reads")
    func stdinIsNeverTheOutput() throws {
        let dir = ScratchDirectory()
        let archive = Array(try String(contentsOfFile: BatchFixture.archive, encoding: .utf8).utf8)
        let input = dir.write("in.jsonl", archive)
        let result = try Self.runRedirected(["batch", "-", "--out", input] + BatchFixture.options, stdinFile: input)
        #expect(result.status == 2, "\(result.stderr)")
        #expect(result.stderr.contains("standard input"), "\(result.stderr)")
        #expect(ShardBench.contents(input) == Data(archive))
    }

    @Test("decrypt fails when its result cannot be written (/dev/full)")
    func unwritableResultFails() throws {
        let dir = ScratchDirectory()
        let token = dir.write("t.json", Array(RunIntegrityTests.archiveLines[0].utf8))
        let options = Array(BatchFixture.options.dropLast())  // decrypt has no --quiet
        let delivered = try Self.runRedirected(["decrypt", token] + options, stdoutFile: "/dev/null")
        #expect(delivered.status == 0, "\(delivered.stderr)")
        let full = try Self.runRedirected(["decrypt", token] + options, stdoutFile: "/dev/full")
        #expect(full.status != 0)
        #expect(full.stderr.contains("cannot write the result"), "\(full.stderr)")
    }
}

/// A co-tenant who removes OUT.lock, or replaces OUT.partial, while a run writes (issue 35's
/// reviewer, their #1): the run stops rather than publish a file that is not its own.
@Suite("Outside attack on the fixes: the lock and the partial file change during a run")
struct RunFilesChangeTests {
    /// Starts `batch -` on a pipe, waits for OUT.partial, lets `meddle` act, then feeds the archive.
    static func run(out: String, meddle: () throws -> Void) throws -> (status: Int32, stderr: String) {
        let process = Process()
        process.executableURL = Paths.cli
        process.arguments = ["batch", "-", "--out", out] + BatchFixture.options
        let input = Pipe(), err = Pipe()
        process.standardInput = input
        process.standardError = err
        try process.run()
        var waited = 0
        while access(out + ".partial", F_OK) != 0, waited < 3000 {
            usleep(10_000)
            waited += 10
        }
        try meddle()
        input.fileHandleForWriting.write(try Data(contentsOf: URL(fileURLWithPath: BatchFixture.archive)))
        try input.fileHandleForWriting.close()
        let text = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: text, as: UTF8.self))
    }

    @Test("a lock file removed during the run fails the run, and OUT is not written")
    func removedLockFailsTheRun() throws {
        let dir = ScratchDirectory()
        let out = dir.url.appendingPathComponent("r.jsonl").path
        let result = try Self.run(out: out) { #expect(unlink(out + ".lock") == 0) }
        #expect(result.status == 2, "\(result.stderr)")
        #expect(result.stderr.contains("r.jsonl.lock was removed or replaced"), "\(result.stderr)")
        #expect(access(out, F_OK) != 0)
    }

    @Test("an OUT.partial replaced during the run is never renamed to OUT")
    func replacedPartialIsNotPublished() throws {
        let dir = ScratchDirectory()
        let out = dir.url.appendingPathComponent("r.jsonl").path
        let result = try Self.run(out: out) {
            #expect(rename(out + ".partial", out + ".moved") == 0)
            _ = dir.write("r.jsonl.partial", "another run's file\n")
        }
        #expect(result.status == 2, "\(result.stderr)")
        #expect(result.stderr.contains("is no longer the file this run wrote"), "\(result.stderr)")
        #expect(access(out, F_OK) != 0)
        #expect(ShardBench.contents(out + ".partial") == Data("another run's file\n".utf8))
    }
}
