// What ties the shards of one run together beyond their options: a zip's own bytes, the keys and trust
// anchor behind their paths, one reference time; and inputs that cannot be read twice (pipes, devices),
// which a run must read once and a shard must refuse.
import ApplePayDecryption
import ApplePayTestSupport
import Foundation
import Testing
import ZIPFoundation

@Suite("Shards: the identity of their inputs and keys")
struct ShardInputIdentityTests {
    /// A stored (uncompressed) zip holding `items` as one JSONL member, with a fixed modification time.
    static func writeZip(_ path: String, _ items: [[UInt8]]) throws {
        try? FileManager.default.removeItem(atPath: path)
        let archive = try Archive(url: URL(fileURLWithPath: path), accessMode: .create)
        let jsonl = Data(items.flatMap { $0 + [0x0A] })
        try archive.addEntry(
            with: "tokens.jsonl", type: .file, uncompressedSize: Int64(jsonl.count),
            modificationDate: Date(timeIntervalSince1970: 1_767_225_600), compressionMethod: .none,
            provider: { position, size in jsonl.subdata(in: Int(position)..<Int(position) + size) })
    }

    static func setModificationTime(_ path: String, seconds: Int) {
        var times = [timespec(tv_sec: seconds, tv_nsec: 0), timespec(tv_sec: seconds, tv_nsec: 0)]
        #expect(utimensat(AT_FDCWD, path, &times, 0) == 0)
    }

    @Test(
        "a zip rewritten between two shards' runs (same size and modification time, items reordered) is refused by the merge"
    )
    func rewrittenZipIsRefused() throws {
        // Before the zip's digest was part of the run, nothing was tracked inside a zip: the merge exited 0,
        // lost half the payments and called the other half replays.
        let bench = ShardBench()
        let items = bench.richArchive()
        let archive = bench.path("archive.zip")
        try Self.writeZip(archive, items)
        Self.setModificationTime(archive, seconds: 1_769_904_000)
        let part1 = bench.path("z1.jsonl")
        try bench.batch([archive], out: part1, ["--shard", "1/2"])
        let half = items.count / 2
        try Self.writeZip(archive, Array(items[half...]) + Array(items[..<half]))
        Self.setModificationTime(archive, seconds: 1_769_904_000)
        let part2 = bench.path("z2.jsonl")
        try bench.batch([archive], out: part2, ["--shard", "2/2"])
        let result = try bench.merge([part1, part2], out: bench.path("merged.jsonl"))
        #expect(result.status == 2)
        #expect(result.stderr.contains("read different inputs"), "\(result.stderr)")
    }

    @Test("a key file replaced at the same path between two shards' runs is refused by the merge")
    func replacedKeyIsRefused() throws {
        let bench = ShardBench()
        let archive = bench.write("archive.jsonl", bench.richArchive())
        let part1 = bench.path("k1.jsonl")
        try bench.batch([archive], out: part1, ["--shard", "1/2"])
        // Another merchant's certificate and key at the paths the options name.
        let other = bench.f.pki.makeMerchant(identifier: "merchant.com.example.other")
        _ = bench.dir.write("ec.pem", other.certificatePEM)
        _ = bench.dir.write("ec.key", other.privateKeyPEM)
        let part2 = bench.path("k2.jsonl")
        try bench.batch([archive], out: part2, ["--shard", "2/2"])
        let result = try bench.merge([part1, part2], out: bench.path("merged.jsonl"))
        #expect(result.status == 2)
        #expect(result.stderr.contains("belongs to a different run"), "\(result.stderr)")
    }

    @Test("--shard needs one reference time: without --now or --at-signing-time it is refused before any work")
    func shardNeedsOneReferenceTime() throws {
        let bench = ShardBench()
        let archive = bench.write("archive.jsonl", bench.richArchive())
        var options = bench.options
        let now = try #require(options.firstIndex(of: "--now"))
        options.removeSubrange(now...now + 1)
        let out = bench.path("part.jsonl")
        let result = try runCLI(["batch", archive, "--out", out, "--shard", "1/2"] + options)
        #expect(result.status != 0)
        #expect(result.stderr.contains("--shard needs one reference time"), "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: out))
    }

    @Test("a missing input is refused before the output's files are made (exit 2, no OUT.partial left behind)")
    func missingInputLeavesNoPartial() throws {
        let bench = ShardBench()
        let archive = bench.write("archive.jsonl", bench.richArchive())
        let out = bench.path("out.jsonl")
        let result = try runCLI(["batch", archive, bench.path("missing.jsonl"), "--out", out] + bench.options)
        #expect(result.status == 2)
        #expect(result.stderr.contains("does not exist"), "\(result.stderr)")
        for suffix in ["", ".partial", ".claims", ".checkpoint"] {
            #expect(!FileManager.default.fileExists(atPath: out + suffix), "\(suffix)")
        }
    }

    @Test("a pipe named as a path is read once, whole (it used to be emptied by the count); --shard refuses it")
    func pipeInputIsReadOnce() throws {
        let bench = ShardBench()
        let items = bench.richArchive()
        let bytes: [UInt8] = items.flatMap { $0 + [0x0A] }
        let whole = bench.path("whole.jsonl")
        try bench.batch([bench.write("archive.jsonl", items)], out: whole)
        let out = bench.path("piped.jsonl")
        let result = try runCLI(["batch", "/dev/stdin", "--out", out] + bench.options, stdin: bytes)
        #expect(result.status == 0, "\(result.stderr)")
        let lines = ShardBench.contents(out).split(separator: 0x0A)
        #expect(lines.count == items.count, "\(result.stderr)")
        // Same verdicts as the file; only the source label differs.
        let wholeLines = ShardBench.contents(whole).split(separator: 0x0A)
        let file = bench.path("archive.jsonl")
        let label: (Data) -> String = {
            String(decoding: $0, as: UTF8.self).replacingOccurrences(of: "/dev/stdin:", with: "X:")
        }
        let fileLabel: (Data) -> String = {
            String(decoding: $0, as: UTF8.self).replacingOccurrences(of: "\(file):", with: "X:")
        }
        #expect(lines.map { label(Data($0)) } == wholeLines.map { fileLabel(Data($0)) })
        let sharded = try runCLI(
            ["batch", "/dev/stdin", "--out", bench.path("p.jsonl"), "--shard", "1/2"] + bench.options, stdin: bytes)
        #expect(sharded.status == 2)
        #expect(sharded.stderr.contains("--shard needs inputs it can count ahead"), "\(sharded.stderr)")
    }
}
