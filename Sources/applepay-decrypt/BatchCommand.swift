// `applepay-decrypt batch`: the main job. Streams archives of tokens through all cores into an
// ordered JSONL result file, resumable after a crash, and shardable across machines (`merge`).
import ApplePayDecryption
import ArgumentParser
import Foundation

struct BatchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "batch",
        abstract: "Verify and decrypt archives of tokens into an ordered JSONL result file.",
        discussion: """
            INPUT is a JSONL file (one token per line, any accepted token form), a directory of .json files (one \
            token each), a .zip archive of either, or - for stdin. Several inputs are read in the order given.

            Each input token gives one output line, in input order, with "index", "source" (file:line), \
            "transactionId", and either "payment" (the decrypted payment data) or "error" (a stable code), \
            "message" and "field". A valid token whose transactionId an earlier item already carried gives \
            replayedTransaction. Bad input never stops the run; only bad configuration does (exit 2, before \
            any work).

            An item may also be {"paymentToken": TOKEN, "paymentRequest": {...}}: the token is checked against \
            that ApplePayPaymentRequest after it decrypts, and one that is not the payment asked for gets \
            paymentRequestMismatch (field: the request member). A request that breaks the schema gives \
            malformedToken with field "paymentRequest.MEMBER". Neither claims the token's transactionId.

            With the --google-* options an archive may mix Google Pay tokens (told apart by shape: \
            a top-level protocolVersion or signedMessage member, and no data or header) with Apple Pay ones: a Google Pay line's "transactionId" is its \
            messageId, and replays are judged across both wallets in one ledger (a Google Pay token claims its \
            messageId and the digest of its signedMessage). Google Pay adds the codes intermediateKeyExpired and \
            messageExpired. With Google Pay keys alone (no --merchant) every Apple Pay token is refused.

            Every item (a JSONL line, a directory file, a zip member) is read through one size limit, \
            --max-item-bytes (default 1 MiB); a larger one becomes one malformedToken line with field "$". \
            Zip archives are inflated as a stream, so memory stays bounded whatever their compression ratio; \
            a corrupt member is one error line. Memory per window is bounded in items and bytes.

            OUT (the --out path) must be a regular file path in an existing directory: a directory, FIFO, \
            device or symlink there is refused before any work. The output goes to OUT.partial, created \
            exclusively with mode 0600 (an existing OUT.partial that no checkpoint of this run vouches for is \
            refused), and is renamed to OUT when complete. OUT.lock lets one run write OUT at a time: \
            a second run is refused (exit 2); it is removed when the run ends. Keep OUT in a directory only \
            you can write: a lock, checkpoint or key there that another user made is never trusted.

            OUT.checkpoint records progress, sealed with OUT.runkey (32 random bytes made with the run, mode \
            0600; HMAC-SHA-256) and bound to the inputs (sizes, modification \
            times, directory listings, and a SHA-256 of the JSONL and stdin bytes consumed). After a crash or \
            kill, the same command with --resume (and the same stdin) finishes the job with every token written \
            exactly once; different inputs, a damaged or edited checkpoint, or a partial file that disagrees \
            with it are refused. A run that had already completed is recognised (exit 0).

            Progress shows a total when it is cheap to know: JSONL lines are counted (not parsed) and \
            directories listed, but a zip archive is counted (inflated one extra time) only for --shard; \
            otherwise progress shows no total.

            --shard K/N (a Kubernetes Indexed Job, a Slurm array): the run counts the items, reads past the \
            ones before its K-th of N contiguous slices without verifying or decrypting them, and processes \
            its slice only. PART (the --out) holds the slice's lines judged for replays within the slice; \
            PART.claims (mode 0600) the replay keys and index of every item of the slice that verified; \
            PART.manifest the inputs it read (sizes, modification times, digests of the bytes before and \
            through its slice) and the slice. `applepay-decrypt merge` turns the N parts into the output of \
            one unsharded run. --resume works per shard. Every shard needs the same --now (or --at-signing-time) \
            and inputs it can read twice (files, directories, zips; not stdin or a pipe). PART and PART.claims \
            hold card data and replay keys: remove them after the merge.

            Example (the bundled test vectors; see the README for the whole command):
              applepay-decrypt batch Vectors/archive.jsonl --out results.jsonl \\
                --merchant cert=EC_CERT,key=EC_KEY --merchant cert=RSA_CERT,key=RSA_KEY \\
                --trust-root Vectors/trust/test-root.pem --now 2026-03-01T12:01:00Z
            """
    )

    @Argument(
        help: ArgumentHelp(
            "JSONL files, directories of .json files, .zip archives, or - for stdin.", valueName: "INPUT"))
    var inputs: [String]

    @Option(
        name: .customLong("out"), help: ArgumentHelp("Where to write the JSONL results.", valueName: "RESULTS.jsonl"))
    var out: String

    @OptionGroup var engine: EngineOptions

    @OptionGroup(title: "Google Pay") var googlePay: GooglePayOptions

    @OptionGroup(title: "Samsung Pay") var samsungPay: SamsungPayOptions

    // Optional, so that --help states the default once, in words: a default value would also be printed
    // as this machine's core count.
    @Option(name: .customLong("lanes"), help: "Concurrent decryption lanes (default: the number of active processors).")
    var requestedLanes: Int?

    var lanes: Int { requestedLanes ?? ProcessInfo.processInfo.activeProcessorCount }

    @Flag(
        name: .customLong("mask-pan"),
        help: "Mask each PAN: at most the first 6 and last 4 digits stay, never more than half.")
    var maskPAN = false

    @Flag(name: .customLong("resume"), help: "Continue an interrupted run of the same command from its checkpoint.")
    var resume = false

    @Option(
        name: .customLong("shard"),
        help: ArgumentHelp(
            "Process only the K-th of N contiguous slices of the input (the items before it are read, not verified); `merge` joins the parts.",
            valueName: "K/N"))
    var shard: String?

    @Flag(name: .customLong("quiet"), help: "No progress bar (the final summary is still printed).")
    var quiet = false

    @Option(
        name: .customLong("multibuffer"),
        help: ArgumentHelp(
            "P-256 signature checks and key agreement eight tokens at a time through Intel's crypto_mb (AVX-512 IFMA): auto uses it when it loads, the CPU has IFMA and its self-test passes; on fails otherwise; off never. crypto_mb is found through APPLEPAY_CRYPTO_MB (the path of libcrypto_mb.so.13) or the loader's path.",
            valueName: "auto|on|off"))
    var multiBuffer: MultiBufferMode = .auto

    func validate() throws {
        try engine.requireKeys(google: googlePay, samsung: samsungPay)
        guard lanes >= 1, lanes <= 512 else { throw ValidationError("--lanes must be between 1 and 512") }
        if let shard {
            guard Self.parseShard(shard) != nil else {
                throw ValidationError("--shard must be K/N with 1 ≤ K ≤ N ≤ 1048576, e.g. 2/8")
            }
        }
        if shard != nil, inputs.contains("-") {
            throw ValidationError("--shard needs the input's size up front: it cannot read stdin")
        }
        // Every shard must judge freshness against the same instant, or the parts are not one run.
        if shard != nil, engine.now == nil, !engine.atSigningTime {
            throw ValidationError(
                "--shard needs one reference time shared by every shard: give each the same --now T, or --at-signing-time"
            )
        }
    }

    /// Where slice `k` of `n` ends in `total` items (`total * k / n` without overflow, for any `0 <= k <= n`,
    /// `n >= 1`, `total >= 0`): shards and the merge compute their ranges with it alone.
    static func sliceBound(_ total: Int, _ k: Int, _ n: Int) -> Int {
        n.dividingFullWidth(total.multipliedFullWidth(by: k)).quotient
    }

    /// The most shards a run may have (the merge walks the shard numbers).
    static let maxShards = 1 << 20

    static func parseShard(_ text: String) -> (k: Int, n: Int)? {
        let parts = text.split(separator: "/")
        guard parts.count == 2, let k = Int(parts[0]), let n = Int(parts[1]), (1...Self.maxShards).contains(n),
            (1...n).contains(k)
        else { return nil }
        return (k, n)
    }

    func run() throws {
        // Before anything is read: `on` without a usable crypto_mb is a configuration error.
        let backend: MultiBufferBackend
        do { backend = try MultiBufferBackend.resolve(multiBuffer) } catch {
            throw CLIError("--multibuffer \(multiBuffer.rawValue): \(error.message)")
        }
        let limit = ItemLimit(bytes: engine.maxItemBytes)
        // Google Pay keys only: Apple Pay tokens meet an engine without merchants (unknownMerchantKey).
        let decryptor = try engine.makeDecryptor(allowingNoMerchants: true)
        let google = try googlePay.makeDecryptor()
        let samsung = try samsungPay.makeDecryptor(window: engine.window)
        // Everything that can refuse the run does so before any work: the output path, the lock,
        // the inputs.
        try checkOutputPath(out)
        try checkOutputIsNoInput(out, inputs: inputs)
        let lock = try RunLock(out: out)
        defer { withExtendedLifetime(lock) {} }
        let kinds = try inputs.map(BatchInputs.kind(of:))  // a missing input is refused before any file is made
        if shard != nil, !kinds.allSatisfy(BatchInputs.isRereadable) {
            throw CLIError(
                "--shard needs inputs it can count ahead and read again: regular files, directories or zip archives, not stdin, a pipe or a device"
            )
        }
        if inputs.contains("-"), StandardStreams.stdinWasClosed {
            throw CLIError("INPUT - reads stdin, but stdin is closed")
        }

        let batch = BatchDecryptor(
            wallets: WalletDecryptor(applePay: decryptor, googlePay: google, samsungPay: samsung), lanes: lanes,
            reference: engine.referenceTime, windowSize: 512, backend: backend)
        let names = OriginNames()

        // The total is needed for shards and for the progress bar; stdin cannot be counted ahead,
        // and a zip archive is counted (inflated once more) only for --shard.
        // An unsharded run reads to the end of its inputs (the count only feeds the progress bar, and is
        // skipped when there is none: it reads every input once more), so items appended while it runs
        // are not dropped.
        let showsProgress = !quiet && isatty(2) == 1
        let total =
            shard != nil || showsProgress ? try BatchInputs.count(inputs, limit: limit, countZips: shard != nil) : nil
        var range = 0..<Int.max
        if let shard, let (k, n) = Self.parseShard(shard), let total {
            range = Self.sliceBound(total, k - 1, n)..<Self.sliceBound(total, k, n)
        }

        let facts = inputs.map(BatchInputs.facts(for:))
        let keys = samsungPay.addingFacts(to: googlePay.addingFacts(to: engine.keyFacts(decryptor), google), samsung)
        let run = RunDescription(inputs: facts, keys: keys, shard: shard, engine: engine, maskPAN: maskPAN)
        // What every part of one sharded run shares (the merge compares it): the run without its shard.
        let unsharded = RunDescription(inputs: facts, keys: keys, shard: nil, engine: engine, maskPAN: maskPAN).value
            .description
        let output: ResultFile
        switch try ResultFile.open(
            path: out, run: run, resume: resume, range: range, sharded: shard != nil,
            partRun: shard != nil ? unsharded : nil)
        {
        case let .alreadyComplete(lines):
            Output.stderr(
                "applepay-decrypt: the run had already completed: \(out) holds its \(lines) results; nothing to do")
            return
        case let .ready(file):
            output = file
        }
        let expected = range.upperBound == Int.max ? total : range.count
        let progress = Progress(total: expected, enabled: showsProgress)
        if output.resumedAt > range.lowerBound {
            let of = expected.map { " of \($0)" } ?? ""
            Output.stderr(
                "applepay-decrypt: resuming at item \(output.resumedAt)\(of) (\(output.resumedAt - range.lowerBound) already done)"
            )
        }
        progress.done = output.resumedAt - range.lowerBound

        let opened = try BatchInputs.open(
            inputs, names: names, limit: limit, stdinClosed: StandardStreams.stdinWasClosed)
        let readers = opened.readers
        var source = ResumeCheck(
            opened.source, readers: readers, resumedFrom: output.resumedFrom, sliceStart: range.lowerBound)
        let atSigningTime = engine.atSigningTime
        let started = Date()
        var next = output.resumedAt
        // Replays are judged as in an uninterrupted run: the claims of the items before the
        // checkpoint come back from OUT.claims. A shard only reads past the items before its slice
        // (the merge judges its items against theirs), so it claims from its first item on.
        let claimedBefore = max(output.claimedBefore, range.lowerBound)
        let ledger = ReplayLedger()
        do { try ledger.restore(records: output.restoredClaims) } catch {
            throw CLIError("\(output.claimsPath): \(error.message)")
        }
        // Result lines hold card data: built straight from the wiped plaintext into a wiped buffer.
        let line = SensitiveBuffer(capacity: 64 << 10)
        let summary = try batch.run(
            &source, indices: output.resumedAt..<range.upperBound, ledger: ledger, claimedBefore: claimedBefore,
            deliver: { result in
                line.removeAll()
                result.writeLine(
                    into: line, source: names.names[result.location.origin], sourceLine: result.location.line,
                    maskingPAN: maskPAN,
                    verifiedAtSigningTime: atSigningTime)
                try line.withUnsafeBytes { try output.append(line: $0) }
                next = result.index + 1
            },
            windowDone: { next in
                // Windows before the checkpoint's position were only read past: nothing new to record.
                guard next > claimedBefore else { return }
                try lock.checkHeld()
                try output.checkpoint(
                    next: next, consumed: readers.map(\.checkpointDigest), claims: ledger.takeNewRecords())
                progress.done = max(0, next - range.lowerBound)
                progress.draw()
            })
        line.removeAll()
        try source.checkReachedCheckpoint()
        try lock.checkHeld()
        if let shard, let (k, n) = Self.parseShard(shard), let total {
            // Fewer items than counted: the inputs changed during this run.
            guard next == range.upperBound, let before = source.consumedBeforeSlice else {
                throw CLIError(
                    "the inputs ended before this shard's slice \(range.lowerBound)..<\(range.upperBound) did: "
                        + "they changed since this run counted \(total) items; run the shard again")
            }
            let through = readers.map(\.checkpointDigest)
            try output.finish(next: next, consumed: through) { sealed in
                let manifest = PartManifest(
                    run: unsharded, shard: k, shards: n, first: range.lowerBound, count: range.count, total: total,
                    consumedBefore: before, consumedThrough: through,
                    linesBytes: sealed.linesBytes, linesDigest: sealed.linesDigest,
                    claimsBytes: sealed.claimsBytes, claimsDigest: sealed.claimsDigest)
                try ResultFile.storeAtomically(manifest.sealed(with: output.key), at: PartManifest.path(of: out))
            }
        } else {
            try output.finish(next: next, consumed: readers.map(\.checkpointDigest))
        }
        progress.clear()

        let elapsed = Date().timeIntervalSince(started)
        let rate = elapsed > 0 ? Double(summary.processed) / elapsed : 0
        let order = ["ok"] + ApplePayError.Code.allCases.map(\.rawValue)
        let counts = order.compactMap { key in summary.counts[key].map { "\(key) \($0)" } }.joined(separator: ", ")
        Output.stderr(
            String(
                format:
                    "applepay-decrypt: %d tokens in %.2f s (%.0f tokens/s, %d lanes, peak memory %d MiB): %@ → %@; P-256 on %@",
                summary.processed, elapsed, rate, batch.lanes, Self.peakMemoryKiB() / 1024,
                counts.isEmpty ? "nothing to do" : counts, out, batch.multiBuffer.description))
    }

    /// Peak resident memory of this process image. VmHWM starts afresh at exec (ru_maxrss does not:
    /// under `swift run` it would include the build tool's own peak).
    static func peakMemoryKiB() -> Int {
        if let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
            let kib = Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "")
        {
            return kib
        }
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return usage.ru_maxrss
    }
}

/// What makes two runs the same run, stored in the checkpoint so --resume cannot mix runs (and in a
/// shard's manifest, so merge cannot): the inputs (size, modification time, a directory's listing, a
/// zip's digest), the options, the keys' specs and what was loaded from them (each merchant's public
/// key hash and label, the trust anchor's fingerprint: a path that now holds another key is another run).
struct RunDescription: Equatable {
    let value: JSONValue

    init(inputs: [JSONValue], keys: JSONValue, shard: String?, engine: EngineOptions, maskPAN: Bool) {
        value = .object([
            ("inputs", .array(inputs)),
            ("shard", shard.map(JSONValue.string) ?? .null),
            ("merchants", .array(engine.merchants.map(JSONValue.string))),
            ("keys", keys),
            ("trustRoot", engine.trustRoot.map(JSONValue.string) ?? .null),
            ("now", engine.now.map(JSONValue.string) ?? .null),
            ("atSigningTime", .bool(engine.atSigningTime)),
            ("window", .number(String(engine.window))),
            ("maxItemBytes", .number(String(engine.maxItemBytes))),
            ("maskPAN", .bool(maskPAN)),
        ])
    }
}

/// Wraps the inputs of a resumed run: it hands out windows that end exactly at the checkpoint's
/// `next`, and there compares what each input consumed with what the checkpoint recorded, so a
/// resume over different bytes (another stdin, an edited file) stops before writing anything.
/// Windows also end exactly at a shard's first item, where it records what each input consumed
/// before the slice (the manifest's `consumedBefore`).
struct ResumeCheck: BatchTokenSource {
    private var inner: ChainedTokenSource
    private let readers: [any InputReader]
    private let resumedFrom: Checkpoint?
    private var handedOut = 0
    private var verified: Bool
    private let sliceStart: Int
    /// Per INPUT, the digest of the bytes behind the items before `sliceStart`, once read past them.
    private(set) var consumedBeforeSlice: [String?]?

    init(_ inner: ChainedTokenSource, readers: [any InputReader], resumedFrom: Checkpoint?, sliceStart: Int = 0) {
        self.inner = inner
        self.readers = readers
        self.resumedFrom = resumedFrom
        self.sliceStart = sliceStart
        verified = resumedFrom == nil
        if sliceStart == 0 { consumedBeforeSlice = readers.map(\.checkpointDigest) }
    }

    mutating func fill(_ window: inout BatchWindow, capacity: Int) throws -> Bool {
        var capacity = capacity
        if !verified, let checkpoint = resumedFrom { capacity = min(capacity, checkpoint.next - handedOut) }
        if consumedBeforeSlice == nil { capacity = min(capacity, sliceStart - handedOut) }
        let more = capacity > 0 ? try inner.fill(&window, capacity: capacity) : false
        handedOut += window.count
        if consumedBeforeSlice == nil, handedOut == sliceStart { consumedBeforeSlice = readers.map(\.checkpointDigest) }
        if !verified, let checkpoint = resumedFrom, handedOut == checkpoint.next {
            guard readers.map(\.checkpointDigest) == checkpoint.consumed else {
                throw CLIError(
                    "the inputs are not the bytes the interrupted run read (a different stdin, or a file changed); "
                        + "run again without --resume")
            }
            verified = true
        }
        return more
    }

    /// A resumed run whose inputs ended before the checkpoint's position read different inputs.
    func checkReachedCheckpoint() throws {
        guard verified else {
            throw CLIError(
                "the inputs end before the checkpoint's position \(resumedFrom?.next ?? 0): they are not what the interrupted run read; "
                    + "run again without --resume")
        }
    }
}

/// The progress bar on stderr (only when stderr is a terminal).
final class Progress {
    let total: Int?
    let enabled: Bool
    var done = 0
    private let started = Date()
    private var lastDraw = Date.distantPast

    init(total: Int?, enabled: Bool) {
        self.total = total
        self.enabled = enabled
    }

    func draw() {
        guard enabled, Date().timeIntervalSince(lastDraw) >= 0.1 else { return }
        lastDraw = Date()
        let elapsed = max(Date().timeIntervalSince(started), 0.001)
        let rate = Double(done) / elapsed
        var text = "\r\u{1B}[K"
        if let total, total > 0 {
            let fraction = min(1, Double(done) / Double(total))
            let filled = Int(fraction * 30)
            let eta = rate > 0 ? Double(total - done) / rate : 0
            text += "[" + String(repeating: "#", count: filled) + String(repeating: ".", count: 30 - filled) + "] "
            text += String(
                format: "%d/%d tokens  %.0f tokens/s  ETA %d:%02d", done, total, rate, Int(eta) / 60, Int(eta) % 60)
        } else {
            text += String(format: "%d tokens  %.0f tokens/s", done, rate)
        }
        Output.write(2, text)
    }

    func clear() {
        if enabled { Output.write(2, "\r\u{1B}[K") }
    }
}

extension MultiBufferMode: ExpressibleByArgument {}
