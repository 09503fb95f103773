// Sharded batch runs and `merge`: N real CLI processes over one archive, merged, equal one unsharded
// run byte for byte; every refusal of the merge; inputs that change between shards; the journal's digest.
import ApplePayDecryption
import ApplePayTestSupport
import Foundation
import Testing

@testable import applepay_decrypt

/// A scratch directory with a test PKI's root and merchants on disk and an archive minted by the factory.
final class ShardBench {
    let dir: ScratchDirectory
    let f = Fixtures.shared
    let options: [String]

    init() {
        let dir = ScratchDirectory(), f = Fixtures.shared
        self.dir = dir
        let root = dir.write("root.pem", f.pki.rootPEM)
        let ec =
            "cert=\(dir.write("ec.pem", f.ecMerchant.certificatePEM)),key=\(dir.write("ec.key", f.ecMerchant.privateKeyPEM))"
        let rsa =
            "cert=\(dir.write("rsa.pem", f.rsaMerchant.certificatePEM)),key=\(dir.write("rsa.key", f.rsaMerchant.privateKeyPEM))"
        options = [
            "--merchant", ec, "--merchant", rsa, "--trust-root", root, "--now", "2026-03-01T12:00:30Z", "--quiet",
            "--lanes", "2",
        ]
    }

    func path(_ name: String) -> String { dir.url.appendingPathComponent(name).path }

    func write(_ name: String, _ items: [[UInt8]]) -> String {
        dir.write(name, items.flatMap { $0 + [0x0A] })
    }

    /// Every outcome, replays across every shard boundary of 4 (and within shards, so that their
    /// messages change in the merge), junk tokens carrying genuine transactionIds before the genuine
    /// ones, upper-cased transactionIds, RSA, and payment-request envelopes.
    func richArchive() -> [[UInt8]] {
        let genuine = (0..<8).map { f.mint(TestPayload.threeDSecure(pan: "47611200100\(10_000 + $0)")) }
        let rsa = f.mint(for: f.rsaMerchant)
        func junk(_ m: TestTokenFactory.Minted) -> [UInt8] {
            bytes(tamperBase64(m.paymentData, path: ["signature"]) { $0[$0.count - 5] ^= 1 })
        }
        func upper(_ m: TestTokenFactory.Minted) -> [UInt8] {
            bytes(rewrite(m.paymentData, path: ["header", "transactionId"]) { .string($0.stringValue!.uppercased()) })
        }
        func envelope(_ token: [UInt8], amount: String) -> [UInt8] {
            Array("{\"paymentToken\":".utf8) + token
                + Array(",\"paymentRequest\":\(RequestJSON().total(amount).json.description)}".utf8)
        }
        let forger = TestPKI()
        let forged = TestTokenFactory(pki: forger).mint(
            payload: TestPayload.threeDSecure(), for: forger.makeMerchant(identifier: f.ecMerchant.identifier),
            options: .init(signingTime: signingInstant))
        let stranger = f.pki.makeMerchant(identifier: "merchant.com.example.stranger")
        var invalid = genuine[7].paymentData.description
        let data = invalid.range(of: "\"data\":\"")!
        let at = invalid.index(data.upperBound, offsetBy: 4)
        invalid.replaceSubrange(at...at, with: invalid[at] == "A" ? "B" : "A")
        func text(_ string: String) -> [UInt8] { Array(string.utf8) }
        var items: [[UInt8]] = []
        // shard 1 (0..<10)
        items += [junk(genuine[0]), genuine[1].bytes, upper(genuine[2]), text("not a token"), rsa.bytes]
        items += [text(genuine[3].paymentData.description.replacingOccurrences(of: "\"EC_v1\"", with: "\"EC_v2\""))]
        items += [envelope(genuine[4].bytes, amount: "5.00"), genuine[1].bytes, text(invalid), forged.bytes]
        // shard 2 (10..<20)
        items += [genuine[0].bytes, genuine[1].bytes, genuine[2].bytes]
        items += [
            f.mint { $0.signingTime = signingInstant.addingTimeInterval(-3600) }.bytes, f.mint(for: stranger).bytes,
        ]
        items += [f.mint { $0.corruptTagBeforeSigning = true }.bytes, f.mint(text(#"{"note":"no card"}"#)).bytes]
        items += [envelope(genuine[4].bytes, amount: "10.00"), junk(genuine[5]), upper(genuine[5])]
        // shard 3 (20..<30)
        items += [genuine[5].bytes, genuine[5].bytes, genuine[6].bytes, junk(genuine[6]), rsa.bytes]
        items += [genuine[4].bytes, upper(genuine[1]), genuine[7].bytes, genuine[3].bytes, genuine[0].bytes]
        // shard 4 (30..<41)
        items += [
            genuine[6].bytes, genuine[7].bytes, genuine[7].bytes, upper(genuine[7]), genuine[2].bytes, junk(genuine[2]),
        ]
        items += [
            envelope(genuine[3].bytes, amount: "5.00"), genuine[3].bytes, rsa.bytes, text("{}"), genuine[4].bytes,
        ]
        return items
    }

    @discardableResult
    func batch(_ inputs: [String], out: String, _ extra: [String] = [], expect status: Int32 = 0) throws
        -> ProcessResult
    {
        let result = try runCLI(["batch"] + inputs + ["--out", out] + options + extra)
        #expect(result.status == status, "\(result.stderr)")
        return result
    }

    /// Runs the N shards one after another; returns the parts' paths.
    func shards(_ inputs: [String], _ n: Int, prefix: String = "part", _ extra: [String] = []) throws -> [String] {
        try (1...n).map { k in
            let part = path("\(prefix)\(k).jsonl")
            try batch(inputs, out: part, ["--shard", "\(k)/\(n)"] + extra)
            return part
        }
    }

    func merge(_ parts: [String], out: String) throws -> ProcessResult {
        try runCLI(["merge"] + parts + ["--out", out])
    }

    static func contents(_ path: String) -> Data { (try? Data(contentsOf: URL(fileURLWithPath: path))) ?? Data() }
}

/// The CLI's own manifest (no mirror of its fields), to re-seal one after a test edits a part (so that
/// the merge's own consistency checks, not the seal, are what refuses): sealed here as the shard's own user
/// can, with PART.runkey, independently of the CLI's sealing code.
extension PartManifest {
    static func digest(_ bytes: [UInt8]) -> String {
        var digest = InputDigest()
        digest.update(bytes)
        return digest.hex
    }

    /// Replaces PART.claims with `claims` and re-seals PART.manifest to match.
    static func replaceClaims(of part: String, with claims: [UInt8]) throws {
        try Data(claims).write(to: URL(fileURLWithPath: part + ".claims"))
        try reseal(part) {
            $0.claimsBytes = claims.count
            $0.claimsDigest = digest(claims)
        }
    }

    /// Edits PART.manifest and re-seals it with PART.runkey (as the shard's own user can).
    static func reseal(_ part: String, _ edit: (inout PartManifest) -> Void) throws {
        var manifest = try JSONDecoder().decode(
            PartManifest.self, from: Data(contentsOf: URL(fileURLWithPath: part + ".manifest")))
        edit(&manifest)
        manifest.checksum = ""
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        manifest.checksum = try RunKeySeal.mac(keyFile: part + ".runkey", Array(try encoder.encode(manifest)))
        try (encoder.encode(manifest) + Data("\n".utf8)).write(to: URL(fileURLWithPath: part + ".manifest"))
    }
}

@Suite("Sharded batch runs and merge")
struct ShardMergeTests {
    @Test(
        "4 shards merged equal the unsharded run byte for byte: replays across boundaries, junk, upper-case ids, every code"
    )
    func mergedEqualsUnsharded() throws {
        let bench = ShardBench()
        let archive = bench.write("rich.jsonl", bench.richArchive())
        let whole = bench.path("whole.jsonl")
        try bench.batch([archive], out: whole)
        let expected = ShardBench.contents(whole)
        let codes = Set(
            try BatchFixture.lines(whole).map { line -> String in
                let value = try JSONValue.parse(line)
                return value["error"]?.stringValue ?? "ok"
            })
        #expect(
            codes
                == Set(
                    ["ok"]
                        + ApplePayError.Code.allCases.filter { !ApplePayError.Code.googlePayOnly.contains($0) }.map(
                            \.rawValue)))

        let parts = try bench.shards([archive], 4)
        // The parts alone are not the answer: verdicts change across the boundaries.
        #expect(parts.map(ShardBench.contents).reduce(Data(), +) != expected)
        for file in parts.flatMap({ [$0, $0 + ".claims", $0 + ".manifest"] }) {
            let mode = try FileManager.default.attributesOfItem(atPath: file)[.posixPermissions] as? NSNumber
            #expect(mode?.intValue == 0o600, "\(file)")
        }
        let merged = bench.path("merged.jsonl")
        let result = try bench.merge([parts[2], parts[0], parts[3], parts[1]], out: merged)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(ShardBench.contents(merged) == expected)
        #expect(result.stderr.contains("merged 4 parts, 41 tokens"))
        #expect(!FileManager.default.fileExists(atPath: merged + ".partial"))
        #expect(!FileManager.default.fileExists(atPath: merged + ".claims"))
        #expect(!FileManager.default.fileExists(atPath: merged + ".checkpoint"))
        let mode = try FileManager.default.attributesOfItem(atPath: merged)[.posixPermissions] as? NSNumber
        #expect(mode?.intValue == 0o600)
    }

    @Test("N = 1, N larger than the item count (empty shards), and an empty input merge to the unsharded output")
    func edgeShapes() throws {
        let bench = ShardBench()
        // 5 items: a payment, two rejections, a payment, a replay of the first
        let items = Array(bench.richArchive()[7..<12])
        for (name, archive, n) in [
            ("one", bench.write("five.jsonl", items), 1), ("many", bench.write("five.jsonl", items), 8),
            ("empty", bench.write("empty.jsonl", []), 3),
        ] {
            let whole = bench.path("\(name)-whole.jsonl")
            try bench.batch([archive], out: whole)
            let parts = try bench.shards([archive], n, prefix: "\(name)-part")
            let merged = bench.path("\(name)-merged.jsonl")
            let result = try bench.merge(parts.reversed(), out: merged)
            #expect(result.status == 0, "\(name): \(result.stderr)")
            #expect(ShardBench.contents(merged) == ShardBench.contents(whole), "\(name)")
        }
    }

    @Test("a shard reads past the items before its slice without verifying them")
    func shardDoesOnlyItsSlice() throws {
        let bench = ShardBench()
        let archive = bench.write("rich.jsonl", bench.richArchive())
        let result = try bench.batch([archive], out: bench.path("p4.jsonl"), ["--shard", "4/4"])
        // 11 items delivered; the 30 before are counted as read past, none of them verified.
        #expect(result.stderr.contains("11 tokens in"), "\(result.stderr)")
        let lines = try BatchFixture.lines(bench.path("p4.jsonl"))
        #expect(lines.count == 11)
        #expect(try JSONValue.parse(lines[0])["index"] == .number("30"))
        // Within the shard, the first copy of an earlier shard's token is a payment (the merge judges it).
        #expect(try JSONValue.parse(lines[0])["payment"] != nil)
    }

    @Test(
        "merge refuses a gap, an overlap, a missing shard, foreign parts, other inputs, tampered files; each names the part"
    )
    func refusals() throws {
        let bench = ShardBench()
        let items = bench.richArchive()
        let archive = bench.write("rich.jsonl", items)
        let parts = try bench.shards([archive], 4)
        let out = bench.path("merged.jsonl")
        func refused(
            _ given: [String], _ message: String, naming part: String? = nil,
            sourceLocation: SourceLocation = #_sourceLocation
        ) throws {
            let result = try bench.merge(given, out: out)
            #expect(result.status == 2, "\(message): \(result.stderr)", sourceLocation: sourceLocation)
            #expect(result.stderr.contains(message), "\(result.stderr)", sourceLocation: sourceLocation)
            if let part { #expect(result.stderr.contains(part), "\(result.stderr)", sourceLocation: sourceLocation) }
            #expect(!FileManager.default.fileExists(atPath: out), sourceLocation: sourceLocation)
            #expect(!FileManager.default.fileExists(atPath: out + ".partial"), sourceLocation: sourceLocation)
        }
        try refused([parts[0], parts[2], parts[3]], "gap: no part holds items 10..<20", naming: parts[2])
        try refused([parts[0], parts[1], parts[2]], "missing shard: shard 4/4")
        try refused([parts[1], parts[2], parts[3]], "gap: no part holds items 0..<10")
        try refused(parts + [parts[1]], "overlap", naming: parts[1])
        // A part of another run: other options, or another N, or other inputs.
        let masked = try bench.shards([archive], 4, prefix: "masked", ["--mask-pan"])
        try refused([parts[0], masked[1], parts[2], parts[3]], "belongs to a different run", naming: masked[1])
        let thirds = try bench.shards([archive], 3, prefix: "third")
        try refused([parts[0], thirds[1], parts[2], parts[3]], "are not parts of one run", naming: thirds[1])
        let other = bench.write("other.jsonl", Array(items.reversed()))
        let foreign = try bench.shards([other], 4, prefix: "foreign")
        try refused([parts[0], parts[1], foreign[2], parts[3]], "read different inputs", naming: foreign[2])
        try refused(
            [bench.path("nothing.jsonl")] + parts.dropFirst(), "cannot read its manifest",
            naming: bench.path("nothing.jsonl"))

        // A tampered journal: one byte of one record flipped.
        let claims = Array(ShardBench.contents(parts[2] + ".claims"))
        var flipped = claims
        flipped[3] ^= 1
        try Data(flipped).write(to: URL(fileURLWithPath: parts[2] + ".claims"))
        try refused(parts, "is not the journal its manifest recorded", naming: parts[2])
        // A journal re-sealed into its manifest but not matching the lines: a decrypted item's record dropped.
        try PartManifest.replaceClaims(of: parts[2], with: Array(claims.dropFirst(ReplayRecord.size)))
        try refused(parts, "its journal does not match its lines", naming: parts[2])
        // A shard's replay whose keys nobody claimed: refused rather than guessed at.
        let replayRecord = stride(from: 0, to: claims.count, by: ReplayRecord.size).first {
            ReplayRecord(claims[$0..<$0 + ReplayRecord.size])!.isReplay
        }!
        var orphan = claims
        for i in replayRecord..<replayRecord + 32 { orphan[i] ^= 0x5A }
        try PartManifest.replaceClaims(of: parts[2], with: orphan)
        try refused(parts, "is not keyed by its line's transactionId", naming: parts[2])
        try PartManifest.replaceClaims(of: parts[2], with: claims)
        // Edited lines (same length): caught by the lines' digest, and no RESULTS is left behind.
        var lines = Array(ShardBench.contents(parts[1]))
        let digit = lines.lastIndex(of: UInt8(ascii: "4"))!
        lines[digit] = UInt8(ascii: "5")
        try Data(lines).write(to: URL(fileURLWithPath: parts[1]))
        try refused(parts, "its lines are not the ones its manifest recorded", naming: parts[1])
    }

    @Test("merge reads only parts no one else can have written, and never writes over a part")
    func partsOthersCouldWriteAreRefused() throws {
        let bench = ShardBench()
        let archive = bench.write("rich.jsonl", bench.richArchive())
        let parts = try bench.shards([archive], 4)
        let out = bench.path("merged.jsonl")
        func refused(
            _ message: String, naming file: String, out target: String? = nil,
            sourceLocation: SourceLocation = #_sourceLocation
        ) throws {
            let result = try bench.merge(parts, out: target ?? out)
            #expect(result.status == 2, "\(message): \(result.stderr)", sourceLocation: sourceLocation)
            #expect(
                result.stderr.contains(message) && result.stderr.contains(file), "\(result.stderr)",
                sourceLocation: sourceLocation)
            #expect(!FileManager.default.fileExists(atPath: out), sourceLocation: sourceLocation)
        }
        // The seal is a checksum: a part a group or another user could write is not trusted.
        for file in [parts[1], parts[2] + ".claims", parts[3] + ".manifest"] {
            #expect(chmod(file, 0o620) == 0)
            try refused("is writable by other users (mode 620)", naming: file)
            #expect(chmod(file, 0o600) == 0)
        }
        if geteuid() == 0 {  // only root can give a file away (CI runs as root)
            #expect(chown(parts[0] + ".claims", 65534, 65534) == 0)
            try refused("belongs to user 65534", naming: parts[0] + ".claims")
            #expect(chown(parts[0] + ".claims", 0, 0) == 0)
        }
        // RESULTS may not be one of the parts' files: the part would be overwritten while it is read.
        let before = ShardBench.contents(parts[2])
        try refused("which is the part file", naming: parts[2], out: parts[2])
        #expect(ShardBench.contents(parts[2]) == before)
        // Restored, the same parts merge.
        let merged = try bench.merge(parts, out: out)
        #expect(merged.status == 0, "\(merged.stderr)")
    }

    @Test("impossible shard numbers are refused, never a trap: --shard near Int.max, forged manifest slices")
    func impossibleNumbers() throws {
        let bench = ShardBench()
        let archive = bench.write("small.jsonl", Array(bench.richArchive().prefix(6)))
        let huge = try runCLI(
            ["batch", archive, "--out", bench.path("huge.jsonl"), "--shard", "4611686018427387904/4611686018427387905"]
                + bench.options)
        #expect(huge.status == 2, "\(huge.stderr)")
        #expect(huge.stderr.contains("--shard must be K/N"), "\(huge.stderr)")
        let parts = try bench.shards([archive], 2)
        let edits: [(String, (inout PartManifest) -> Void)] = [
            ("count -5", { $0.count = -5 }),
            (
                "first near Int.max",
                {
                    $0.first = Int.max - 7; $0.count = 100
                }
            ),
            ("shards 0", { $0.shards = 0 }), ("shards -1", { $0.shards = -1 }), ("shard 3 of 2", { $0.shard = 3 }),
        ]
        for (name, edit) in edits {
            let copy = bench.path("forged-\(name.replacingOccurrences(of: " ", with: "-")).jsonl")
            for suffix in ["", ".claims", ".manifest", ".runkey"] {
                try Data(ShardBench.contents(parts[0] + suffix)).write(to: URL(fileURLWithPath: copy + suffix))
                chmod(copy + suffix, 0o600)
            }
            try PartManifest.reseal(copy, edit)
            let result = try bench.merge([copy, parts[1]], out: bench.path("forged-out.jsonl"))
            #expect(result.status == 2, "\(name): \(result.stderr)")
        }
    }

    @Test(
        "a file that grows between two shards' runs is caught by the merge (it used to give overlapping ranges, exit 0)"
    )
    func grownInputIsRefused() throws {
        let bench = ShardBench()
        let items = bench.richArchive()
        let archive = bench.write("grow.jsonl", Array(items[0..<36]))
        let part1 = bench.path("g1.jsonl")
        try bench.batch([archive], out: part1, ["--shard", "1/4"])
        // The archive grows by 5 items; the other shards count 41 and cut their ranges from that.
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: archive))
        try handle.seekToEnd()
        try handle.write(contentsOf: Data(items[36...].flatMap { $0 + [0x0A] }))
        try handle.close()
        var parts = [part1]
        for k in 2...4 {
            let part = bench.path("g\(k).jsonl")
            try bench.batch([archive], out: part, ["--shard", "\(k)/4"])
            parts.append(part)
        }
        let result = try bench.merge(parts, out: bench.path("merged.jsonl"))
        #expect(result.status == 2)
        #expect(result.stderr.contains("read different inputs"), "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: bench.path("merged.jsonl")))
    }

    @Test(
        "a file edited in place between shards, size and modification time restored, is caught by the consumed-bytes chain"
    )
    func editedInputIsRefused() throws {
        let bench = ShardBench()
        var items = bench.richArchive()
        let archive = bench.write("edit.jsonl", items)
        var info = stat()
        #expect(stat(archive, &info) == 0)
        let part1 = bench.path("e1.jsonl")
        try bench.batch([archive], out: part1, ["--shard", "1/4"])
        // Same length, one item swapped for another of the same size inside shard 1's slice.
        items[3] = Array("not a tok3n".utf8)
        _ = bench.write("edit.jsonl", items)
        var times = [info.st_atim, info.st_mtim]
        #expect(utimensat(AT_FDCWD, archive, &times, 0) == 0)
        var parts = [part1]
        for k in 2...4 {
            let part = bench.path("e\(k).jsonl")
            try bench.batch([archive], out: part, ["--shard", "\(k)/4"])
            parts.append(part)
        }
        let result = try bench.merge(parts, out: bench.path("merged.jsonl"))
        #expect(result.status == 2)
        #expect(result.stderr.contains("read other bytes before its slice"), "\(result.stderr)")
        #expect(result.stderr.contains(parts[1]))
    }
}

@Suite("Resume: the journal's content is checkpointed")
struct JournalDigestTests {
    /// 40 distinct tokens repeated: 2,000 lines (4 windows), long enough to be killed mid-way; most lines are replays.
    static func bigArchive(_ bench: ShardBench) -> String {
        let distinct = (0..<40).map {
            String(
                decoding: bench.f.mint(TestPayload.threeDSecure(pan: "4111111111\(100_000 + $0)")).bytes, as: UTF8.self)
        }
        return bench.dir.write("big.jsonl", (0..<2000).map { distinct[$0 % 40] }.joined(separator: "\n") + "\n")
    }

    /// Starts `batch`, waits for its first checkpoint, and kills it with SIGKILL.
    static func killAfterCheckpoint(_ arguments: [String], out: String) throws {
        let process = Process()
        process.executableURL = Paths.cli
        process.arguments = arguments
        process.standardError = FileHandle.nullDevice
        try process.run()
        let deadline = Date().addingTimeInterval(60)
        while !FileManager.default.fileExists(atPath: out + ".checkpoint"), process.isRunning, Date() < deadline {
            usleep(2_000)
        }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        #expect(process.terminationReason == .uncaughtSignal, "the run finished before it could be killed")
    }

    @Test("OUT.claims zeroed after kill -9: --resume refuses (it used to accept replays a second time)")
    func zeroedJournalIsRefused() throws {
        let bench = ShardBench()
        let archive = Self.bigArchive(bench)
        let out = bench.path("resumed.jsonl")
        try Self.killAfterCheckpoint(["batch", archive, "--out", out] + bench.options, out: out)
        let size = try FileManager.default.attributesOfItem(atPath: out + ".claims")[.size] as! NSNumber
        #expect(size.intValue > 0)
        try Data(count: size.intValue).write(to: URL(fileURLWithPath: out + ".claims"))
        let resumed = try runCLI(["batch", archive, "--out", out, "--resume"] + bench.options)
        #expect(resumed.status == 2, "the resumed run accepted a zeroed journal")
        #expect(resumed.stderr.contains("is not the journal its checkpoint recorded"), "\(resumed.stderr)")
        #expect(!FileManager.default.fileExists(atPath: out))
    }

    @Test("a shard killed with SIGKILL and resumed merges to the unsharded output")
    func shardResume() throws {
        let bench = ShardBench()
        let archive = Self.bigArchive(bench)
        let whole = bench.path("whole.jsonl")
        try bench.batch([archive], out: whole)
        let parts = [bench.path("r1.jsonl"), bench.path("r2.jsonl")]
        try bench.batch([archive], out: parts[0], ["--shard", "1/2"])
        try Self.killAfterCheckpoint(
            ["batch", archive, "--out", parts[1], "--shard", "2/2"] + bench.options, out: parts[1])
        #expect(!FileManager.default.fileExists(atPath: parts[1]))
        let resumed = try bench.batch([archive], out: parts[1], ["--shard", "2/2", "--resume"])
        #expect(resumed.stderr.contains("resuming at item"), "\(resumed.stderr)")
        let merged = bench.path("merged.jsonl")
        let result = try bench.merge(parts, out: merged)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(ShardBench.contents(merged) == ShardBench.contents(whole))
    }
}
