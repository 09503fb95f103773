// The batch engine and the `batch` command: order, replays, lanes, resume after kill -9,
// shards, file mode, inputs of every kind, and flat memory.
import ApplePayDecryption
import ApplePayTestSupport
import Foundation
import Testing
import ZIPFoundation

/// The bundled mixed archive and the options that decrypt it.
struct BatchFixture {
    static let vectors = BundledVectors.directory.path
    static let archive = "\(vectors)/archive.jsonl"
    static let options = [
        "--merchant", "cert=\(vectors)/merchants/ec.cert.pem,key=\(vectors)/merchants/ec.key.pem",
        "--merchant", "cert=\(vectors)/merchants/rsa.cert.pem,key=\(vectors)/merchants/rsa.key.pem",
        "--trust-root", "\(vectors)/trust/test-root.pem", "--now", "2026-03-01T12:01:00Z", "--quiet",
    ]

    static func lines(_ path: String) throws -> [String] {
        try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").map(String.init)
    }

    /// Runs `batch` and returns its output lines.
    static func run(_ inputs: [String], out: String, extra: [String] = []) throws -> (ProcessResult, [String]) {
        let result = try runCLI(["batch"] + inputs + ["--out", out] + options + extra)
        #expect(result.status == 0, "\(result.stderr)")
        return (result, (try? lines(out)) ?? [])
    }
}

@Suite("Batch decryption", .tags(.concurrency))
struct BatchTests {
    @Test("library: ordered results equal single-token decryption for a mixed archive, every code present")
    func orderedEqualsSingle() throws {
        let vectors = try BundledVectors()
        let decryptor = try vectors.decryptor()
        let tokens = try vectors.archiveTokens()
        var source = ArrayTokenSource(tokens)
        var results: [BatchResult] = []
        let batch = BatchDecryptor(decryptor: decryptor, lanes: 2, reference: .at(vectors.now), windowSize: 5)
        try batch.run(&source, deliver: { results.append($0) })
        #expect(results.map(\.index) == Array(0..<tokens.count))
        var codes = Set<String>()
        for (token, result) in zip(tokens, results) {
            let single: Result<DecryptedPayment, ApplePayError> = Result { () throws(ApplePayError) in
                try decryptor.decrypt(token, at: .at(vectors.now))
            }
            switch (result.outcome.result, single) {
            case let (.success(a), .success(b)):
                #expect(a.json == b.json)
                #expect(result.transactionId == b.transactionId)
                codes.insert("ok")
            case let (.failure(a), .failure(b)):
                #expect(a == b)
                codes.insert(a.code.rawValue)
            case let (.failure(a), .success):
                #expect(a.code == .replayedTransaction, "batch rejected what single decryption accepts")
                codes.insert(a.code.rawValue)
            case (.success, .failure):
                Issue.record("batch accepted what single decryption rejects")
            }
        }
        // The archive carries no payment requests and no Google Pay tokens: every code but
        // paymentRequestMismatch and the Google Pay ones.
        #expect(
            codes
                == Set(
                    ["ok"]
                        + ApplePayError.Code.allCases.filter {
                            $0 != .paymentRequestMismatch && !ApplePayError.Code.googlePayOnly.contains($0)
                        }.map(\.rawValue)))
    }

    @Test("a transactionId seen earlier in the run gives replayedTransaction; the first stays decrypted")
    func replays() throws {
        let f = Fixtures.shared
        let token = f.mint().bytes
        let other = f.mint().bytes
        var source = ArrayTokenSource([token, other, token, token])
        var outcomes: [ApplePayError.Code?] = []
        try BatchDecryptor(decryptor: f.decryptor(), lanes: 2, reference: .at(signingInstant)).run(
            &source,
            deliver: { result in
                if case let .failure(error) = result.outcome.result {
                    outcomes.append(error.code)
                } else {
                    outcomes.append(nil)
                }
            })
        #expect(outcomes == [nil, nil, .replayedTransaction, .replayedTransaction])
    }

    @Test("lanes 1 and N give identical output, in order, mode 0600")
    func lanesAgree() throws {
        let dir = ScratchDirectory()
        let one = dir.url.appendingPathComponent("one.jsonl").path
        let four = dir.url.appendingPathComponent("four.jsonl").path
        let (_, a) = try BatchFixture.run([BatchFixture.archive], out: one, extra: ["--lanes", "1"])
        let (result, b) = try BatchFixture.run([BatchFixture.archive], out: four, extra: ["--lanes", "4"])
        #expect(a.count == 22)
        #expect(a == b)
        for (i, line) in a.enumerated() { #expect(try JSONValue.parse(line)["index"] == .number(String(i))) }
        let mode = try FileManager.default.attributesOfItem(atPath: four)[.posixPermissions] as? NSNumber
        #expect(mode?.intValue == 0o600)
        #expect(!FileManager.default.fileExists(atPath: four + ".partial"))
        #expect(!FileManager.default.fileExists(atPath: four + ".checkpoint"))
        #expect(result.stderr.contains("ok 12"))
    }

    @Test("shards 1/3, 2/3, 3/3 merged equal the unsharded output (the archive's replay crosses a shard boundary)")
    func shards() throws {
        let dir = ScratchDirectory()
        let whole = dir.url.appendingPathComponent("whole.jsonl").path
        let (_, expected) = try BatchFixture.run([BatchFixture.archive], out: whole)
        var parts: [String] = []
        for k in 1...3 {
            let part = dir.url.appendingPathComponent("part\(k).jsonl").path
            _ = try BatchFixture.run([BatchFixture.archive], out: part, extra: ["--shard", "\(k)/3"])
            parts.append(part)
        }
        let merged = dir.url.appendingPathComponent("merged.jsonl").path
        let result = try runCLI(["merge"] + parts + ["--out", merged])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(try BatchFixture.lines(merged) == expected)
    }

    @Test("a run killed with SIGKILL, then resumed, writes every token exactly once", .tags(.longCLIRun))
    func killAndResume() throws {
        let dir = ScratchDirectory()
        let f = Fixtures.shared
        // 40 distinct tokens, repeated: 6,000 lines, long enough to be killed mid-way.
        let distinct = (0..<40).map {
            String(decoding: f.mint(TestPayload.threeDSecure(pan: "4111111111\(100_000 + $0)")).bytes, as: UTF8.self)
        }
        let archive = dir.write("big.jsonl", (0..<6000).map { distinct[$0 % 40] }.joined(separator: "\n") + "\n")
        let root = dir.write("root.pem", f.pki.rootPEM)
        let merchant =
            "cert=\(dir.write("m.pem", f.ecMerchant.certificatePEM)),key=\(dir.write("m.key", f.ecMerchant.privateKeyPEM))"
        let common = [
            "--merchant", merchant, "--trust-root", root, "--now", "2026-03-01T12:00:30Z", "--quiet", "--lanes", "2",
        ]

        let reference = dir.url.appendingPathComponent("reference.jsonl").path
        #expect(try runCLI(["batch", archive, "--out", reference] + common).status == 0)

        let out = dir.url.appendingPathComponent("resumed.jsonl").path
        let process = Process()
        process.executableURL = Paths.cli
        process.arguments = ["batch", archive, "--out", out] + common
        process.standardError = FileHandle.nullDevice
        try process.run()
        let deadline = Date().addingTimeInterval(60)
        while !FileManager.default.fileExists(atPath: out + ".checkpoint"), process.isRunning, Date() < deadline {
            usleep(5_000)
        }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        #expect(process.terminationReason == .uncaughtSignal, "the run finished before it could be killed")
        #expect(!FileManager.default.fileExists(atPath: out))
        #expect(FileManager.default.fileExists(atPath: out + ".checkpoint"))
        // The replay ledger's journal: whole records, private. Lines after the first 40 are replays,
        // so the resumed run only judges them right if the claims before the kill come back from it.
        let claims = try FileManager.default.attributesOfItem(atPath: out + ".claims")
        #expect((claims[.posixPermissions] as? NSNumber)?.intValue == 0o600)
        #expect(((claims[.size] as? NSNumber)?.intValue ?? -1) % ReplayLedger.recordSize == 0)

        let resumed = try runCLI(["batch", archive, "--out", out, "--resume"] + common)
        #expect(resumed.status == 0, "\(resumed.stderr)")
        #expect(resumed.stderr.contains("resuming at item"))
        let lines = try BatchFixture.lines(out)
        #expect(lines.count == 6000)
        #expect(lines == (try BatchFixture.lines(reference)))
        #expect(!FileManager.default.fileExists(atPath: out + ".claims"))
        #expect(!FileManager.default.fileExists(atPath: out + ".checkpoint"))
    }

    @Test("--resume refuses a checkpoint from a different run")
    func resumeChecksTheRun() throws {
        let dir = ScratchDirectory()
        let out = dir.url.appendingPathComponent("r.jsonl").path
        // Private files of this user, as a run would have left them: only the run is another.
        chmod(dir.write("r.jsonl.checkpoint", #"{"run":{"inputs":[]},"next":3,"bytes":0}"#), 0o600)
        chmod(dir.write("r.jsonl.partial", ""), 0o600)
        chmod(dir.write("r.jsonl.runkey", [UInt8](repeating: 7, count: 32)), 0o600)
        let result = try runCLI(["batch", BatchFixture.archive, "--out", out, "--resume"] + BatchFixture.options)
        #expect(result.status == 2)
        #expect(result.stderr.contains("different run"))
    }

    @Test("directories, zip archives (with a corrupt member) and stdin are inputs; bad items become error lines")
    func inputKinds() throws {
        let dir = ScratchDirectory()
        let lines = try BatchFixture.lines(BatchFixture.archive)
        let tokens = dir.url.appendingPathComponent("tokens")
        try FileManager.default.createDirectory(at: tokens, withIntermediateDirectories: true)
        for i in 0..<3 {
            try Data(lines[i].utf8).write(to: tokens.appendingPathComponent(String(format: "%02d.json", i)))
        }
        try Data("not json".utf8).write(to: tokens.appendingPathComponent("03.json"))

        let zipPath = dir.url.appendingPathComponent("tokens.zip")
        let archive = try Archive(url: zipPath, accessMode: .create)
        let jsonl = Data((lines[0..<4].joined(separator: "\n") + "\n").utf8)
        try archive.addEntry(
            with: "a/tokens.jsonl", type: .file, uncompressedSize: Int64(jsonl.count), compressionMethod: .deflate,
            provider: { position, size in jsonl.subdata(in: Int(position)..<Int(position) + size) })
        let single = Data(lines[4].utf8)
        try archive.addEntry(
            with: "b/one.json", type: .file, uncompressedSize: Int64(single.count), compressionMethod: .none,
            provider: { position, size in single.subdata(in: Int(position)..<Int(position) + size) })
        // Corrupt the stored member's bytes: its CRC no longer matches.
        var zipBytes = try Data(contentsOf: zipPath)
        let marker = zipBytes.range(of: Data(lines[4].prefix(40).utf8))!
        zipBytes[marker.lowerBound + 20] ^= 0x01
        try zipBytes.write(to: zipPath)

        let out = dir.url.appendingPathComponent("out.jsonl").path
        let result = try runCLI(
            ["batch", tokens.path, zipPath.path, "-", "--out", out] + BatchFixture.options,
            stdin: Array((lines[5] + "\n").utf8))
        #expect(result.status == 0, "\(result.stderr)")
        let output = try BatchFixture.lines(out).map { try JSONValue.parse($0) }
        #expect(output.count == 4 + 4 + 1 + 1)
        #expect(output[0]["source"]?.stringValue?.hasSuffix("tokens/00.json:1") == true)
        #expect(output[3]["error"]?.stringValue == "malformedToken")
        #expect(output[4]["source"]?.stringValue?.hasSuffix("tokens.zip!a/tokens.jsonl:1") == true)
        #expect(output[4]["error"]?.stringValue == "replayedTransaction")  // same token as 00.json
        #expect(output[8]["error"]?.stringValue == "malformedToken")
        #expect(output[8]["message"]?.stringValue?.contains("corrupt zip member") == true)
        #expect(output[9]["source"]?.stringValue == "stdin:1")
        #expect(output[9]["payment"] != nil)
    }

    @Test(
        "--mask-pan hides at least half of the PAN (a 16-digit PAN shows 4 + 4); --at-signing-time says so on every line"
    )
    func maskAndSigningTime() throws {
        let dir = ScratchDirectory()
        let out = dir.url.appendingPathComponent("m.jsonl").path
        let options = BatchFixture.options.filter { $0 != "--now" && $0 != "2026-03-01T12:01:00Z" }
        let result = try runCLI(
            ["batch", BatchFixture.archive, "--out", out, "--mask-pan", "--at-signing-time"] + options)
        #expect(result.status == 0, "\(result.stderr)")
        let lines = try BatchFixture.lines(out).map { try JSONValue.parse($0) }
        #expect(lines[0]["payment"]?["applicationPrimaryAccountNumber"]?.stringValue == "4761********1000")
        #expect(lines.allSatisfy { $0["verifiedAt"]?.stringValue == "signingTime" })
        // Verified at its own signing time, the stale token is no longer out of range.
        #expect(lines[13]["payment"] != nil)
    }

    @Test("bad configuration aborts before any work, exit 2")
    func badConfiguration() throws {
        let dir = ScratchDirectory()
        let out = dir.url.appendingPathComponent("x.jsonl").path
        for extra in [["--shard", "4/3"], ["--lanes", "0"], ["--merchant", "cert=/missing,key=/missing"]] {
            let result = try runCLI(["batch", BatchFixture.archive, "--out", out] + BatchFixture.options + extra)
            #expect(result.status == 2, "\(extra)")
            #expect(!FileManager.default.fileExists(atPath: out + ".partial"))
        }
        #expect(try runCLI(["batch", "/missing.jsonl", "--out", out] + BatchFixture.options).status == 2)
    }

    @Test("memory stays flat: peak RSS for 200k tokens is within a small factor of 20k", .tags(.peakRSS))
    func flatMemory() throws {
        let dir = ScratchDirectory()
        let lines = try BatchFixture.lines(BatchFixture.archive)
        // One real token in ten (the others fail cheaply in the parser), so the run stays short.
        let cheap = lines[10]  // unsupportedVersion
        func archive(_ count: Int) throws -> String {
            let path = dir.url.appendingPathComponent("a\(count).jsonl").path
            #expect(FileManager.default.createFile(atPath: path, contents: nil))
            let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
            var chunk = ""
            for i in 0..<count {
                chunk += (i % 10 == 0 ? lines[i / 10 % 8] : cheap) + "\n"
                if i % 1000 == 999 { handle.write(Data(chunk.utf8)); chunk = "" }
            }
            handle.write(Data(chunk.utf8))
            try handle.close()
            return path
        }
        func peakMiB(_ count: Int) throws -> Int {
            let input = try archive(count)
            let out = dir.url.appendingPathComponent("o\(count).jsonl").path
            let result = try runCLI(["batch", input, "--out", out] + BatchFixture.options)
            #expect(result.status == 0)
            try FileManager.default.removeItem(atPath: input)
            let match = result.stderr.firstRange(of: /peak memory (\d+) MiB/)
            return Int(result.stderr[match!].split(separator: " ")[2])!
        }
        let small = try peakMiB(20_000)
        let large = try peakMiB(200_000)
        #expect(large <= small * 2 + 16, "peak RSS \(large) MiB for 200k tokens vs \(small) MiB for 20k")
    }
}

@Suite("Batch decryption from an async sequence", .tags(.concurrency))
struct AsyncBatchTests {
    @Test("an async sequence of tokens gives the same ordered results as an array")
    func asyncEqualsArray() async throws {
        let vectors = try BundledVectors()
        let tokens = try vectors.archiveTokens()
        let batch = BatchDecryptor(
            decryptor: try vectors.decryptor(), lanes: 2, reference: .at(vectors.now), windowSize: 4)
        var source = ArrayTokenSource(tokens)
        var fromArray: [String] = []
        try batch.run(&source, deliver: { fromArray.append(Self.describe($0)) })
        let stream = AsyncStream<[UInt8]> { continuation in
            for token in tokens { continuation.yield(token) }
            continuation.finish()
        }
        var fromStream: [String] = []
        try await batch.run(stream, deliver: { fromStream.append(Self.describe($0)) })
        #expect(fromStream == fromArray)
        #expect(fromStream.count == tokens.count)
    }

    static func describe(_ result: BatchResult) -> String {
        switch result.outcome.result {
        case let .success(payment):
            return "\(result.index) \(result.location.line) ok \(String(describing: payment.json))"
        case let .failure(error): return "\(result.index) \(result.location.line) \(error.code.rawValue)"
        }
    }
}
