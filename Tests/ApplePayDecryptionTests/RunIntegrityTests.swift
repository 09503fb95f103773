// The batch CLI's files and runs under hostile neighbours and faults: exclusive output files, one
// run per output, checkpoints bound to their inputs, one item size limit, bounded zips, no traps.
import ApplePayDecryption
import Foundation
import Testing
import ZIPFoundation

/// The checkpoint format as the CLI writes it (see ResultFile.swift), to edit one as an attacker
/// who can recompute its checksum would.
struct CheckpointImage: Codable {
    var format: Int
    var run: String
    var first: Int
    var next: Int
    var bytes: Int
    var claimsBytes: Int
    var claimsDigest: String
    var sharded: Bool
    var consumed: [String?]
    var complete: Bool
    var checksum: String

    static func load(_ path: String) throws -> CheckpointImage {
        try JSONDecoder().decode(CheckpointImage.self, from: Data(contentsOf: URL(fileURLWithPath: path)))
    }

    /// Sealed as the CLI seals it: with the run's key (an edit by the run's own user, who can read it),
    /// or with a plain SHA-256 (`keyFile` nil: the seal of the checkpoint format before OUT.runkey).
    func sealed(keyFile: String?) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        var copy = self
        copy.checksum = ""
        let canonical = [UInt8](try encoder.encode(copy))
        if let keyFile {
            copy.checksum = try RunKeySeal.mac(keyFile: keyFile, canonical)
        } else {
            var digest = InputDigest()
            digest.update(canonical)
            copy.checksum = digest.hex
        }
        return try encoder.encode(copy)
    }
}

@Suite("Run integrity", .serialized)
struct RunIntegrityTests {
    static let archiveLines = try! BatchFixture.lines(BatchFixture.archive)

    /// `count` JSONL lines, one real token in ten, the others failing cheaply (unsupportedVersion).
    static func stdinLines(_ count: Int, changing changed: Int? = nil) -> [UInt8] {
        var text = ""
        for i in 0..<count {
            var line = i % 10 == 0 ? archiveLines[i / 10 % 8] : archiveLines[10]
            if i == changed { line = archiveLines[9] }
            text += line + "\n"
        }
        return Array(text.utf8)
    }

    static func batch(_ inputs: [String], out: String, stdin: [UInt8]? = nil, _ extra: [String] = []) throws
        -> ProcessResult
    {
        try run(["batch"] + inputs + ["--out", out] + BatchFixture.options + extra, stdin: stdin)
    }

    /// A refused run exits without reading its stdin: the writer must survive EPIPE.
    static let pipeSignalIgnored: Bool = {
        signal(SIGPIPE, SIG_IGN); return true
    }()

    /// Runs the CLI like `runCLI`, feeding stdin from a thread that tolerates a reader gone early.
    static func run(_ arguments: [String], stdin: [UInt8]? = nil) throws -> ProcessResult {
        _ = pipeSignalIgnored
        let process = Process()
        process.executableURL = Paths.cli
        process.arguments = arguments
        let out = Pipe(), err = Pipe(), input = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = input
        try process.run()
        let writer = input.fileHandleForWriting
        let bytes = Data(stdin ?? [])
        let written = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            try? writer.write(contentsOf: bytes)
            try? writer.close()
            written.signal()
        }
        let outData = out.fileHandleForReading.readDataToEndOfFile()
        let errData = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        written.wait()
        return ProcessResult(
            status: process.terminationStatus, stdout: String(decoding: outData, as: UTF8.self),
            stderr: String(decoding: errData, as: UTF8.self))
    }

    /// Starts `batch` reading `stdin` from a pipe that stays open, waits for its first checkpoint,
    /// then kills it with SIGKILL: a run interrupted after some windows, its checkpoint on disk.
    static func interruptedRun(_ inputs: [String], out: String, stdin: [UInt8]) throws {
        let process = Process()
        process.executableURL = Paths.cli
        process.arguments = ["batch"] + inputs + ["--out", out] + BatchFixture.options + ["--lanes", "2"]
        let input = Pipe()
        process.standardInput = input
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        _ = pipeSignalIgnored
        try input.fileHandleForWriting.write(contentsOf: Data(stdin))
        let deadline = Date().addingTimeInterval(30)
        while !FileManager.default.fileExists(atPath: out + ".checkpoint"), process.isRunning, Date() < deadline {
            usleep(5_000)
        }
        usleep(200_000)
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        try input.fileHandleForWriting.close()
        #expect(process.terminationReason == .uncaughtSignal)
        #expect(FileManager.default.fileExists(atPath: out + ".checkpoint"), "no checkpoint before the kill")
        #expect(!FileManager.default.fileExists(atPath: out))
    }

    static func mode(_ path: String) -> Int {
        var info = stat()
        return lstat(path, &info) == 0 ? Int(info.st_mode & 0o7777) : -1
    }

    @Test("OUT.partial is created exclusively at 0600 and never through a symlink or a file someone else made")
    func testPartialFileIsCreatedExclusivelyAndNeverFollowsSymlinks() throws {
        let dir = ScratchDirectory()
        let out = dir.url.appendingPathComponent("r.jsonl").path

        // A world-readable partial file planted beforehand would receive every PAN.
        let planted = dir.write("r.jsonl.partial", "planted\n")
        chmod(planted, 0o644)
        for extra in [[], ["--resume"]] {
            let result = try Self.batch([BatchFixture.archive], out: out, extra)
            #expect(result.status == 2, "\(extra): \(result.stderr)")
            #expect(result.stderr.contains("r.jsonl.partial"))
            #expect(try String(contentsOfFile: planted, encoding: .utf8) == "planted\n")
            #expect(Self.mode(planted) == 0o644)
        }
        try FileManager.default.removeItem(atPath: planted)

        // A symlinked partial file would overwrite the operator's file.
        let victim = dir.write("victim.txt", "precious\n")
        try FileManager.default.createSymbolicLink(atPath: out + ".partial", withDestinationPath: victim)
        for extra in [[], ["--resume"]] {
            let result = try Self.batch([BatchFixture.archive], out: out, extra)
            #expect(result.status == 2, "\(extra): \(result.stderr)")
            #expect(try String(contentsOfFile: victim, encoding: .utf8) == "precious\n")
            #expect(Self.mode(victim) != 0o600)
        }
        try FileManager.default.removeItem(atPath: out + ".partial")

        let result = try Self.batch([BatchFixture.archive], out: out)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(Self.mode(out) == 0o600)
        #expect(try BatchFixture.lines(out).count == 22)
    }

    @Test("one run per output at a time: a second run with the same --out is refused before any work")
    func testOneRunPerOutputAtATime() throws {
        let dir = ScratchDirectory()
        let out = dir.url.appendingPathComponent("r.jsonl").path
        let first = Process()
        first.executableURL = Paths.cli
        first.arguments = ["batch", "-", "--out", out] + BatchFixture.options
        let input = Pipe()
        first.standardInput = input
        first.standardError = FileHandle.nullDevice
        try first.run()
        let deadline = Date().addingTimeInterval(20)
        while !FileManager.default.fileExists(atPath: out + ".partial"), Date() < deadline { usleep(5_000) }

        let second = try Self.batch([BatchFixture.archive], out: out)
        #expect(second.status == 2)
        #expect(second.stderr.contains("another run"), "\(second.stderr)")

        input.fileHandleForWriting.write(Data((Self.archiveLines[0] + "\n").utf8))
        try input.fileHandleForWriting.close()
        first.waitUntilExit()
        #expect(first.terminationStatus == 0)
        #expect(try BatchFixture.lines(out).count == 1)
    }

    @Test("--out must be a regular file path in an existing directory, checked before any work")
    func testOutMustBeARegularFilePath() throws {
        let dir = ScratchDirectory()
        let fifo = dir.url.appendingPathComponent("fifo").path
        #expect(mkfifo(fifo, 0o600) == 0)
        let directory = dir.url.appendingPathComponent("adir").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false)
        let link = dir.url.appendingPathComponent("link").path
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: dir.write("target", "t"))
        let missing = dir.url.appendingPathComponent("no/such/dir/out.jsonl").path
        // Never a real device such as /dev/null here: the old code replaced it with a regular file.
        for out in [fifo, directory, link, missing] {
            let started = Date()
            let result = try Self.batch([BatchFixture.archive], out: out)
            #expect(result.status == 2, "\(out): \(result.stderr)")
            #expect(Date().timeIntervalSince(started) < 10)
            #expect(!FileManager.default.fileExists(atPath: out + ".partial"))
        }
        var info = stat()
        #expect(lstat(fifo, &info) == 0 && info.st_mode & S_IFMT == S_IFIFO)
        #expect(lstat(link, &info) == 0 && info.st_mode & S_IFMT == S_IFLNK)
    }

    @Test("a tampered checkpoint (next raised, bytes lowered) or a partial file that disagrees with it is refused")
    func testTamperedCheckpointIsRefused() throws {
        let dir = ScratchDirectory()
        let out = dir.url.appendingPathComponent("r.jsonl").path
        let stdin = Self.stdinLines(900)
        try Self.interruptedRun(["-"], out: out, stdin: stdin)
        let checkpointPath = out + ".checkpoint"
        let genuine = try Data(contentsOf: URL(fileURLWithPath: checkpointPath))
        let partial = try Data(contentsOf: URL(fileURLWithPath: out + ".partial"))
        let image = try CheckpointImage.load(checkpointPath)
        #expect(image.next > 0 && image.bytes > 0 && !image.complete)

        // Edited by hand: the checksum no longer matches.
        let text = String(decoding: genuine, as: UTF8.self)
        for edited in [
            text.replacingOccurrences(of: "\"next\":\(image.next)", with: "\"next\":\(image.next + 5)"),
            text.replacingOccurrences(of: "\"bytes\":\(image.bytes)", with: "\"bytes\":\(image.bytes - 7)"),
        ] {
            #expect(edited != text)
            try Data(edited.utf8).write(to: URL(fileURLWithPath: checkpointPath))
            let result = try Self.batch(["-"], out: out, stdin: stdin, ["--resume"])
            #expect(result.status == 2)
            #expect(result.stderr.contains("checksum"), "\(result.stderr)")
        }

        // Edited with the checksum recomputed: the partial file does not agree with it.
        var raised = image
        raised.next += 5
        var lowered = image
        lowered.bytes -= 7
        for forged in [raised, lowered] {
            try forged.sealed(keyFile: out + ".runkey").write(to: URL(fileURLWithPath: checkpointPath))
            let result = try Self.batch(["-"], out: out, stdin: stdin, ["--resume"])
            #expect(result.status == 2)
            #expect(result.stderr.contains("does not match its checkpoint"), "\(result.stderr)")
        }

        // The genuine checkpoint over a partial file cut mid-line is refused too.
        try genuine.write(to: URL(fileURLWithPath: checkpointPath))
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: out + ".partial"))
        try handle.truncate(atOffset: UInt64(image.bytes - 3))
        try handle.close()
        let torn = try Self.batch(["-"], out: out, stdin: stdin, ["--resume"])
        #expect(torn.status == 2)
        #expect(!FileManager.default.fileExists(atPath: out))

        // Restored, the same resume completes.
        try partial.write(to: URL(fileURLWithPath: out + ".partial"))
        let resumed = try Self.batch(["-"], out: out, stdin: stdin, ["--resume"])
        #expect(resumed.status == 0, "\(resumed.stderr)")
        #expect(try BatchFixture.lines(out).count == 900)
    }

    @Test("--resume reads stdin again and refuses bytes other than those the interrupted run consumed")
    func testResumeRefusesDifferentStdin() throws {
        let dir = ScratchDirectory()
        let stdin = Self.stdinLines(900)
        let reference = dir.url.appendingPathComponent("reference.jsonl").path
        #expect(try Self.batch(["-"], out: reference, stdin: stdin).status == 0)

        let out = dir.url.appendingPathComponent("r.jsonl").path
        try Self.interruptedRun(["-"], out: out, stdin: stdin)
        let different = try Self.batch(["-"], out: out, stdin: Self.stdinLines(900, changing: 3), ["--resume"])
        #expect(different.status == 2)
        #expect(different.stderr.contains("not the bytes the interrupted run read"), "\(different.stderr)")
        #expect(!FileManager.default.fileExists(atPath: out))
        let shorter = try Self.batch(["-"], out: out, stdin: Array(stdin.prefix(2000)), ["--resume"])
        #expect(shorter.status == 2)

        let same = try Self.batch(["-"], out: out, stdin: stdin, ["--resume"])
        #expect(same.status == 0, "\(same.stderr)")
        #expect(same.stderr.contains("resuming at item"))
        #expect(try BatchFixture.lines(out) == (try BatchFixture.lines(reference)))
    }

    @Test("--resume refuses a directory input edited between the crash and the resume")
    func testResumeRefusesAnEditedDirectory() throws {
        let dir = ScratchDirectory()
        let tokens = dir.url.appendingPathComponent("tokens")
        try FileManager.default.createDirectory(at: tokens, withIntermediateDirectories: true)
        for i in 0..<3 { try Data(Self.archiveLines[i].utf8).write(to: tokens.appendingPathComponent("0\(i).json")) }
        let out = dir.url.appendingPathComponent("r.jsonl").path
        let stdin = Self.stdinLines(900)
        try Self.interruptedRun([tokens.path, "-"], out: out, stdin: stdin)

        try Data(Self.archiveLines[5].utf8).write(to: tokens.appendingPathComponent("01.json"))
        let result = try Self.batch([tokens.path, "-"], out: out, stdin: stdin, ["--resume"])
        #expect(result.status == 2)
        #expect(result.stderr.contains("different run"), "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: out))
    }

    @Test("a completed output whose checkpoint outlived the rename resumes as complete (exit 0), untouched")
    func testCompletedOutputWithAStaleCheckpointIsRecognised() throws {
        let dir = ScratchDirectory()
        let out = dir.url.appendingPathComponent("r.jsonl").path
        let stdin = Self.stdinLines(900)
        try Self.interruptedRun(["-"], out: out, stdin: stdin)
        var image = try CheckpointImage.load(out + ".checkpoint")
        let key = try Data(contentsOf: URL(fileURLWithPath: out + ".runkey"))
        let resumed = try Self.batch(["-"], out: out, stdin: stdin, ["--resume"])
        #expect(resumed.status == 0, "\(resumed.stderr)")
        let complete = try Data(contentsOf: URL(fileURLWithPath: out))
        // The run removes its key last, after the checkpoint: a crash before that leaves both.
        try key.write(to: URL(fileURLWithPath: out + ".runkey"))
        chmod(out + ".runkey", 0o600)

        // What the run records just before its rename, left behind by a crash after it.
        image.complete = true
        image.next = image.first + 900
        image.bytes = complete.count
        try image.sealed(keyFile: out + ".runkey").write(to: URL(fileURLWithPath: out + ".checkpoint"))
        chmod(out + ".checkpoint", 0o600)
        let again = try Self.batch(["-"], out: out, stdin: stdin, ["--resume"])
        #expect(again.status == 0, "\(again.stderr)")
        #expect(again.stderr.contains("already completed"))
        #expect(try Data(contentsOf: URL(fileURLWithPath: out)) == complete)
        #expect(!FileManager.default.fileExists(atPath: out + ".checkpoint"))
        #expect(!FileManager.default.fileExists(atPath: out + ".runkey"))
    }

    @Test("one item size limit: an oversized JSONL line, directory file or decrypt input is one malformedToken")
    func testOversizedItemsAreOneErrorEach() throws {
        let dir = ScratchDirectory()
        let huge = String(repeating: "a", count: 2 << 20)
        let jsonl = dir.write(
            "in.jsonl", [Self.archiveLines[0], huge, Self.archiveLines[1]].joined(separator: "\n") + "\n")
        let tokens = dir.url.appendingPathComponent("tokens")
        try FileManager.default.createDirectory(at: tokens, withIntermediateDirectories: true)
        try Data(Self.archiveLines[2].utf8).write(to: tokens.appendingPathComponent("00.json"))
        try Data(huge.utf8).write(to: tokens.appendingPathComponent("01.json"))
        #expect(mkfifo(tokens.appendingPathComponent("02.json").path, 0o600) == 0)  // would block a plain read
        try Data(Self.archiveLines[3].utf8).write(to: tokens.appendingPathComponent("03.json"))

        let out = dir.url.appendingPathComponent("r.jsonl").path
        let result = try Self.batch([jsonl, tokens.path], out: out)
        #expect(result.status == 0, "\(result.stderr)")
        let lines = try BatchFixture.lines(out).map { try JSONValue.parse($0) }
        #expect(lines.count == 7)
        for i in [1, 4] {
            #expect(lines[i]["error"]?.stringValue == "malformedToken")
            #expect(lines[i]["field"]?.stringValue == "$")
            #expect(lines[i]["message"]?.stringValue?.contains("1048576") == true)
            #expect(lines[i]["message"]?.stringValue?.contains("--max-item-bytes") == true)
        }
        #expect(lines[5]["error"]?.stringValue == "malformedToken")
        #expect(lines[5]["message"]?.stringValue?.contains("not a regular file") == true)
        for i in [0, 2, 3, 6] { #expect(lines[i]["payment"] != nil, "\(i)") }

        // Raised, the limit lets the long line through to the parser.
        let raised = try Self.batch(
            [jsonl], out: dir.url.appendingPathComponent("raised.jsonl").path, ["--max-item-bytes", "4194304"])
        #expect(raised.status == 0)
        #expect(
            try BatchFixture.lines(dir.url.appendingPathComponent("raised.jsonl").path)[1].contains("the limit")
                == false)

        // decrypt: a sparse 100 MB file is rejected after reading just past the limit.
        let big = dir.url.appendingPathComponent("big.json").path
        #expect(FileManager.default.createFile(atPath: big, contents: nil))
        #expect(truncate(big, 100 << 20) == 0)
        let v = BatchFixture.vectors
        let decrypt = try Self.run([
            "decrypt", big, "--merchant", "cert=\(v)/merchants/ec.cert.pem,key=\(v)/merchants/ec.key.pem",
            "--trust-root", "\(v)/trust/test-root.pem",
        ])
        #expect(decrypt.status == 1)
        let rejection = try JSONValue.parse(decrypt.stdout)
        #expect(rejection["error"]?.stringValue == "malformedToken")
        #expect(rejection["message"]?.stringValue?.contains("--max-item-bytes") == true)
    }

    /// A zip whose one member inflates to `size` bytes of `fill`, then a member with a real token.
    static func zipBomb(_ path: URL, member: String, fill: UInt8, size: Int) throws {
        let archive = try Archive(url: path, accessMode: .create)
        let chunk = Data(repeating: fill, count: 1 << 20)
        try archive.addEntry(
            with: member, type: .file, uncompressedSize: Int64(size), compressionMethod: .deflate, bufferSize: 1 << 20,
            provider: { _, count in chunk.prefix(count) })
        let token = Data((Self.archiveLines[0] + "\n").utf8)
        try archive.addEntry(
            with: "z/after.jsonl", type: .file, uncompressedSize: Int64(token.count), compressionMethod: .deflate,
            provider: { position, count in token.subdata(in: Int(position)..<Int(position) + count) })
    }

    @Test("a zip is streamed with bounded memory whatever its compression ratio, and the run goes on")
    func testZipBombIsReadWithBoundedMemory() throws {
        let dir = ScratchDirectory()
        // 40 MB inflated from ~40 KB: far past the window budget and the item limit, yet quick in a debug build.
        let size = 40 << 20
        for (member, fill) in [
            ("a/newlines.jsonl", UInt8(0x0A)), ("a/one-line.jsonl", UInt8(0x61)), ("a/one.json", UInt8(0x20)),
        ] {
            let zip = dir.url.appendingPathComponent("bomb.zip")
            try? FileManager.default.removeItem(at: zip)
            try Self.zipBomb(zip, member: member, fill: fill, size: size)
            let zipSize = try FileManager.default.attributesOfItem(atPath: zip.path)[.size] as? Int ?? .max
            #expect(zipSize <= 1 << 20)
            let out = dir.url.appendingPathComponent("r.jsonl").path
            try? FileManager.default.removeItem(atPath: out)
            let result = try Self.batch([zip.path], out: out)
            #expect(result.status == 0, "\(member): \(result.stderr)")
            let peak = result.stderr.firstMatch(of: /peak memory (\d+) MiB/).map { Int($0.1)! } ?? .max
            // Under AddressSanitizer (.ci/run) the quarantine and shadow memory add a constant couple of
            // hundred MiB; the bomb inflates to gigabytes, so the bound still tells bounded from not.
            let bound = ProcessInfo.processInfo.environment["ASAN_OPTIONS"] == nil ? 80 : 400
            #expect(peak < bound, "\(member): peak \(peak) MiB")
            let lines = try BatchFixture.lines(out).map { try JSONValue.parse($0) }
            #expect(lines.last?["payment"] != nil, "\(member): the member after the bomb was not read")
            if fill != 0x0A {
                #expect(lines.count == 2, "\(member)")
                #expect(lines.first?["message"]?.stringValue?.contains("--max-item-bytes") == true, "\(member)")
            } else {
                #expect(lines.count == 1)
            }
        }
    }

    @Test("closed stdin is a clear error (exit 2), not a crash")
    func testClosedStdinIsAnErrorNotACrash() throws {
        let v = BatchFixture.vectors
        let merchant = [
            "--merchant", "cert=\(v)/merchants/ec.cert.pem,key=\(v)/merchants/ec.key.pem", "--trust-root",
            "\(v)/trust/test-root.pem",
        ]
        let dir = ScratchDirectory()
        for arguments in [
            ["decrypt", "-"] + merchant,
            ["batch", "-", "--out", dir.url.appendingPathComponent("r.jsonl").path] + merchant,
        ] {
            let result = try Self.runWithStdinClosed(arguments)
            #expect(result.status == 2, "\(arguments[0]): \(result.stderr)")
            #expect(result.stderr.contains("stdin is closed"))
            #expect(!result.stderr.contains("crashed"))
        }
    }

    /// Runs the CLI through /bin/sh with descriptor 0 closed.
    static func runWithStdinClosed(_ arguments: [String]) throws -> ProcessResult {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", "exec \"$0\" \"$@\" <&-", Paths.cli.path] + arguments
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let outData = out.fileHandleForReading.readDataToEndOfFile()
        let errData = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return ProcessResult(
            status: process.terminationStatus, stdout: String(decoding: outData, as: UTF8.self),
            stderr: String(decoding: errData, as: UTF8.self))
    }

    @Test("a crash prints one line, no registers or memory, and core dumps are off")
    func testCrashPrintsNoMemoryAndDumpsNoCore() throws {
        let v = BatchFixture.vectors
        let process = Process()
        process.executableURL = Paths.cli
        process.arguments = [
            "decrypt", "-", "--merchant", "cert=\(v)/merchants/ec.cert.pem,key=\(v)/merchants/ec.key.pem",
        ]
        let input = Pipe(), errors = Pipe()
        process.standardInput = input
        process.standardOutput = FileHandle.nullDevice
        process.standardError = errors
        try process.run()
        // Blocked reading stdin once the key is loaded.
        let limitsPath = "/proc/\(process.processIdentifier)/limits"
        var coreLimit = String()
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            let wchan = (try? String(contentsOfFile: "/proc/\(process.processIdentifier)/wchan", encoding: .utf8)) ?? ""
            coreLimit =
                (try? String(contentsOfFile: limitsPath, encoding: .utf8))?.split(separator: "\n").first {
                    $0.hasPrefix("Max core file size")
                }.map(String.init) ?? ""
            if wchan.contains("pipe") { break }
            usleep(20_000)
        }
        #expect(
            coreLimit.split(separator: " ", omittingEmptySubsequences: true).dropFirst(4).prefix(2) == ["0", "0"],
            "\(coreLimit)")
        kill(process.processIdentifier, SIGSEGV)
        process.waitUntilExit()
        try input.fileHandleForWriting.close()
        let stderr = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(process.terminationReason == .uncaughtSignal)
        #expect(stderr.contains("internal error (fatal signal)"), "\(stderr)")
        for leak in ["Registers", "crashed", "rip 0x", "Backtrac"] { #expect(!stderr.contains(leak), "\(leak)") }
    }
}
