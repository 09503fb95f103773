// `applepay-decrypt merge`: joins the parts of a sharded batch run into exactly the output one
// unsharded run would have written, re-judging replays across parts through one ledger.
import ApplePayDecryption
import ArgumentParser
import Foundation

struct MergeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "merge",
        abstract: "Join the parts of a sharded batch run (batch --shard K/N) into one result file.",
        discussion: """
            PART is the --out of a completed `batch --shard K/N` run; give all N, in any order. Each part is \
            PART (its slice's result lines, judged for replays within the slice), PART.claims (the replay keys \
            and index of every item of the slice that verified) and PART.manifest (the inputs it read and its \
            slice).

            The merge orders the parts by their first item and refuses, naming the part, before writing \
            RESULTS: a gap, an overlap, a missing shard, parts of different runs, parts that read different \
            inputs (a file that grew or changed between the shards' runs), and a part whose lines or journal \
            are not the ones its manifest recorded, or whose journal does not match its lines. It then replays \
            every verified item's keys in input order through one ledger (a token is a replay when its \
            normalised transactionId or signed content digest was claimed by an earlier token that verified, \
            decrypted and was not itself a replay) and writes RESULTS exactly as one unsharded `batch` over the \
            same inputs would have, byte for byte: a payment that an earlier part already claimed becomes a \
            replayedTransaction line (its payment is not written), and each replay names the item that claimed \
            first. A shard's replay can never become a payment (same signed contents mean the same \
            transactionId); a part that claims otherwise is refused.

            Memory is bounded by the ledger (some 40 bytes per verified token), not by the lines. RESULTS is \
            written like batch's output: RESULTS.partial created exclusively with mode 0600, renamed when \
            complete, RESULTS.lock held for the run; a refused merge leaves no RESULTS, and RESULTS may not be \
            one of the parts' files. A part's manifest is sealed (HMAC-SHA-256) with PART.runkey, the key its \
            shard's run made; the merge reads only part files (key included) that the user running it owns and \
            that no group or other user can write, and checks every journal record against its line's \
            transactionId. The parts hold card data and replay keys: remove PART, PART.claims, PART.manifest \
            and PART.runkey once RESULTS is written.

            Example:
              for k in 1 2 3 4; do applepay-decrypt batch archive.jsonl --shard $k/4 --out part$k.jsonl ...; done
              applepay-decrypt merge part*.jsonl --out results.jsonl
            """
    )

    @Argument(
        help: ArgumentHelp("The --out files of the N runs of `batch --shard K/N`, in any order.", valueName: "PART"))
    var parts: [String]

    @Option(
        name: .customLong("out"),
        help: ArgumentHelp("Where to write the merged JSONL results.", valueName: "RESULTS.jsonl"))
    var out: String

    func run() throws {
        try checkOutputPath(out)
        let started = Date()
        let ordered = try ShardPart.open(parts)
        try ShardPart.checkDistinct(out: out, from: ordered)
        let lock = try RunLock(out: out)
        defer { withExtendedLifetime(lock) {} }
        let total = ordered[0].manifest.total

        let run = RunDescription(merging: ordered.map(\.path))
        let output: ResultFile
        switch try ResultFile.open(path: out, run: run, resume: false, range: 0..<total) {
        case .alreadyComplete: throw CLIError("\(out): a completed earlier run was found; nothing to do")
        case let .ready(file): output = file
        }
        var merge = ShardMerge(output: output)
        do {
            // A checkpoint of this merge vouches for RESULTS.partial, so a merge killed half-way can simply be run again.
            try output.checkpoint(next: 0, consumed: [], claims: [])
            for part in ordered { try merge.add(part) }
            try output.finish(next: total, consumed: [])
        } catch {
            output.abandon()
            throw error
        }

        let elapsed = Date().timeIntervalSince(started)
        let order = ["ok"] + ApplePayError.Code.allCases.map(\.rawValue)
        let counts = order.compactMap { key in merge.counts[key].map { "\(key) \($0)" } }.joined(separator: ", ")
        Output.stderr(
            String(
                format:
                    "applepay-decrypt: merged %d parts, %d tokens in %.2f s (%d verdicts changed across parts, peak memory %d MiB): %@ → %@",
                ordered.count, merge.lines, elapsed, merge.changed, BatchCommand.peakMemoryKiB() / 1024,
                counts.isEmpty ? "nothing to do" : counts, out))
    }
}

extension RunDescription {
    /// A merge is bound to its parts (sizes, modification times) and RESULTS' checkpoint says so.
    init(merging parts: [String]) {
        value = .object([("merge", .array(parts.map(BatchInputs.facts(for:))))])
    }
}

/// The merge's state: one replay ledger over all parts, in input order.
struct ShardMerge {
    let output: ResultFile
    let ledger = ReplayLedger()
    private(set) var counts: [String: Int] = [:]
    private(set) var lines = 0
    /// Lines whose verdict or replay message differs from their part's.
    private(set) var changed = 0
    /// A rewritten line: its head, then the engine's own encoding of the verdict.
    private let rewritten = SensitiveBuffer(capacity: 4096)

    init(output: ResultFile) { self.output = output }

    mutating func add(_ part: ShardPart) throws {
        let records = try part.records()
        var pending = try records.next()
        var expected = part.range.lowerBound
        let name = part.path
        func mismatch(_ what: String) -> CLIError {
            CLIError("part \(name): its journal does not match its lines: \(what)")
        }
        try part.forEachLine { line in
            guard let head = ResultLineHead(line) else {
                throw CLIError("part \(name): line \(expected - part.range.lowerBound + 1) is not a batch result line")
            }
            guard head.index == expected else {
                throw CLIError(
                    "part \(name): the line for item \(head.index) stands where item \(expected) belongs (its lines are not its slice's)"
                )
            }
            if let record = pending, record.index < expected {
                throw mismatch("a record for item \(record.index), which has no verified line")
            }
            var record: ReplayRecord?
            // The wallet whose rule keyed the record: a replay names that wallet's field.
            var wallet = Wallet.applePay
            if let next = pending, next.index == expected {
                record = next
                pending = try records.next()
                // The record's transaction key must be the line's transactionId's: a journal whose keys
                // were replaced (random keys re-sealed by whoever could write the part) would otherwise
                // turn a replay across parts into a second payment.
                guard let keyed = head.wallet(keyedBy: next.identity.transactionKey, in: line) else {
                    throw mismatch("the record of item \(expected) is not keyed by its line's transactionId")
                }
                wallet = keyed
            }
            var verdict: String
            switch (head.verdict, record) {
            case (.error(let code), nil) where code != ApplePayError.Code.replayedTransaction.rawValue:
                // Not verified: claims nothing, stays as it is.
                verdict = code
                try output.append(line: line)
            case (.payment, let record?) where !record.isReplay:
                if let first = ledger.firstClaim(of: record.identity) {
                    // An earlier part claimed it: a replay, and its payment goes.
                    try rewrite(head, line, as: .replayed(claimedBy: first, wallet: wallet))
                    verdict = ApplePayError.Code.replayedTransaction.rawValue
                    changed += 1
                } else {
                    ledger.claim(record.identity, index: expected)
                    verdict = "ok"
                    try output.append(line: line)
                }
            case (.error(let code), let record?)
            where record.isReplay && code == ApplePayError.Code.replayedTransaction.rawValue:
                guard let first = ledger.firstClaim(of: record.identity) else {
                    throw CLIError(
                        "part \(name): item \(expected) is a replay within its shard, but no earlier item of the merged run claims "
                            + "its keys; that cannot happen in a batch run, so the merge refuses rather than guess")
                }
                if try rewrite(head, line, as: .replayed(claimedBy: first, wallet: wallet)) { changed += 1 }
                verdict = ApplePayError.Code.replayedTransaction.rawValue
            case (.payment, nil):
                throw mismatch("item \(expected) decrypted, but no record of it")
            case (.error(let code), nil):
                throw mismatch("item \(expected) is a \(code) line without a record")
            case (.payment, _?):
                throw mismatch("item \(expected) decrypted, but its record says it was a replay")
            case (.error(let code), _?):
                throw mismatch(
                    "item \(expected) is a \(code) line, but it has a record of a \((record?.isReplay ?? false) ? "replay" : "claim")"
                )
            }
            counts[verdict, default: 0] += 1
            lines += 1
            expected += 1
            // The ledger's own journal is not needed here: drop it as it grows.
            if lines % 4096 == 0 { _ = ledger.takeNewRecords() }
        }
        if let record = pending { throw mismatch("a record for item \(record.index), past its last line") }
        // The journal was checked when the part was opened, but read again here: it must still be that one.
        try records.checkWhole(against: part.manifest)
        guard expected == part.range.upperBound else {
            throw CLIError(
                "part \(name): it holds \(expected - part.range.lowerBound) lines, its slice \(part.range.count)")
        }
        _ = ledger.takeNewRecords()
    }

    /// Writes the line's head with `error`'s members; true when that differs from the line as it was.
    @discardableResult
    private func rewrite(_ head: ResultLineHead, _ line: UnsafeRawBufferPointer, as error: ApplePayError) throws -> Bool
    {
        var tail = ""
        ResultWriter.appendErrorMembers(error, to: &tail)
        rewritten.removeAll()
        rewritten.append(UnsafeRawBufferPointer(rebasing: line[0..<head.end]))
        rewritten.append(tail)
        return try rewritten.withUnsafeBytes { bytes in
            try output.append(line: bytes)
            return !bytes.elementsEqual(line)
        }
    }
}

extension ResultLineHead {
    /// The wallet whose rule makes `key` the transaction key of the line's transactionId, nil when
    /// neither does: an Apple Pay token's (the decoded hex bytes), tried first since it needs no parse,
    /// a Samsung Pay token's (the hex of the key itself), or a Google Pay token's (its messageId, the JSON
    /// string the line shows). A line without a
    /// transactionId is a Google Pay token without a messageId, whose key derives from the signed
    /// message's full digest, which the line does not show: its record's key is then taken as it is.
    func wallet(keyedBy key: ReplayKey, in line: UnsafeRawBufferPointer) -> Wallet? {
        guard let range = transactionId else { return .googlePay }
        if transactionKey(in: line) == key { return .applePay }
        let text = String(decoding: UnsafeRawBufferPointer(rebasing: line[range]), as: UTF8.self)
        if SamsungPayment.transactionKey(ofTransactionId: text) == key { return .samsungPay }
        let quoted = UnsafeRawBufferPointer(rebasing: line[(range.lowerBound - 1)..<(range.upperBound + 1)])
        guard let messageId = (try? JSONValue.parse(quoted))?.stringValue else { return nil }
        return GooglePayMessage.transactionKey(ofMessageId: messageId) == key ? .googlePay : nil
    }

    /// The replay transaction key of the line's transactionId (lower-case hex of the decoded bytes, as
    /// the engine writes it), or nil when it is null or not hex.
    func transactionKey(in line: UnsafeRawBufferPointer) -> ReplayKey? {
        guard let range = transactionId, range.count % 2 == 0 else { return nil }
        var decoded = [UInt8]()
        decoded.reserveCapacity(range.count / 2)
        func nibble(_ c: UInt8) -> UInt8? {
            switch c {
            case 0x30...0x39: c - 0x30
            case 0x61...0x66: c - 0x61 + 10
            case 0x41...0x46: c - 0x41 + 10
            default: nil
            }
        }
        var i = range.lowerBound
        while i < range.upperBound {
            guard let high = nibble(line[i]), let low = nibble(line[i + 1]) else { return nil }
            decoded.append(high << 4 | low)
            i += 2
        }
        return decoded.withUnsafeBytes { ReplayIdentity.transactionKey(ofDecoded: $0) }
    }
}

/// The start of a batch result line, up to its verdict: `{"index":N,"source":"…","transactionId":…`
/// (and `,"verifiedAt":"signingTime"`), then `,"payment":` or `,"error":"CODE"`. Only the head is
/// read: the payment's card data is copied as bytes, never parsed.
struct ResultLineHead {
    enum Verdict: Equatable {
        case payment
        case error(String)
    }

    let index: Int
    /// Where the transactionId's text lies in the line (inside its quotes), or nil for `null`.
    let transactionId: Range<Int>?
    /// Where `,"payment":` or `,"error":` begins.
    let end: Int
    let verdict: Verdict

    init?(_ line: UnsafeRawBufferPointer) {
        var p = 0
        func literal(_ text: StaticString) -> Bool {
            let n = text.utf8CodeUnitCount
            guard p + n <= line.count, memcmp(line.baseAddress! + p, text.utf8Start, n) == 0 else { return false }
            p += n
            return true
        }
        func string() -> Bool {
            guard p < line.count, line[p] == 0x22 else { return false }
            p += 1
            while p < line.count {
                switch line[p] {
                case 0x5C: p += 2
                case 0x22: p += 1; return true
                default: p += 1
                }
            }
            return false
        }
        guard literal("{\"index\":") else { return nil }
        var index = 0, digits = 0
        while p < line.count, (0x30...0x39).contains(line[p]), digits < 18 {
            index = index * 10 + Int(line[p] - 0x30)
            p += 1
            digits += 1
        }
        guard digits > 0, literal(",\"source\":"), string(), literal(",\"transactionId\":") else { return nil }
        let idStart = p
        guard literal("null") || string() else { return nil }
        transactionId = line[idStart] == 0x22 ? idStart + 1..<p - 1 : nil
        _ = literal(",\"verifiedAt\":\"signingTime\"")
        end = p
        self.index = index
        if literal(",\"payment\":") {
            verdict = .payment
        } else if literal(",\"error\":\"") {
            let start = p
            while p < line.count, line[p] != 0x22 { p += 1 }
            guard p < line.count else { return nil }
            verdict = .error(String(decoding: UnsafeRawBufferPointer(rebasing: line[start..<p]), as: UTF8.self))
        } else {
            return nil
        }
    }
}
