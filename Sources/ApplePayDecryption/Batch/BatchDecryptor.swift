// The batch engine: windows of input items decrypted on N Dispatch lanes, each with its own
// OpenSSL contexts and token buffer, results delivered in input order, replays detected.
import Dispatch
#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif
import Synchronization

/// One item's result, delivered in input order.
public struct BatchResult: Sendable {
    /// 0-based position in the whole input (shards and resumed runs keep the global numbering).
    public let index: Int
    /// Where the item was read.
    public let location: BatchLocation
    /// What the front door made of the item, after the run's replay judgement: a replay keeps its
    /// ``WalletOutcome/replayIdentity`` and loses its payment.
    public let outcome: WalletOutcome

    /// A result as the engine delivers it (callers that render lines for results of their own, e.g. the C ABI).
    public init(index: Int, location: BatchLocation, outcome: WalletOutcome) {
        self.index = index
        self.location = location
        self.outcome = outcome
    }

    /// The item's id as its line shows it (``WalletOutcome/transactionId``).
    public var transactionId: String? { outcome.transactionId }
    /// The keys of a token that verified and decrypted, also when this run judged it a replay.
    public var replayIdentity: ReplayIdentity? { outcome.replayIdentity }
    /// The payment, nil for a refusal.
    public var payment: WalletPayment? { outcome.payment }
    /// The verdict: nil for a payment, the error otherwise.
    public var error: ApplePayError? { outcome.error }
}

extension ApplePayError {
    /// An item the batch could not read (over the size limit, a corrupt archive member).
    public static func unreadableItem(_ reason: String) -> ApplePayError {
        ApplePayError(.malformedToken, "the item could not be read: \(reason)", field: "$")
    }
}

/// Decrypts many tokens on several lanes, a window at a time, delivering results in input order and
/// failing replays within the run (see <doc:BatchDecryption>).
public final class BatchDecryptor: Sendable {
    /// The front door every item goes through, whichever its wallet.
    public let wallets: WalletDecryptor
    /// The Apple Pay engine (``WalletDecryptor/applePay``).
    public var decryptor: PaymentTokenDecryptor { wallets.applePay }
    /// Threads that decrypt a window at once, each with its own OpenSSL contexts.
    public let lanes: Int
    /// The reference time for every token of a run.
    public let reference: ReferenceTime
    /// Items per window: the bound on items in flight (and on memory).
    public let windowSize: Int
    /// The P-256 backend of EC_v1 signature checks and key agreement (crypto_mb eight at a time, or
    /// OpenSSL), and why.
    public let multiBuffer: MultiBufferBackend
    /// The Google Pay engine (``WalletDecryptor/googlePay``): nil refuses Google Pay items.
    public var googlePay: GooglePayTokenDecryptor? { wallets.googlePay }

    /// A batch engine over `decryptor`, with `lanes` lanes (at least 1) and windows of `windowSize` items;
    /// multi-buffer `auto` (see ``MultiBufferMode``).
    public convenience init(
        decryptor: PaymentTokenDecryptor, lanes: Int = ProcessInfo.processInfo.activeProcessorCount,
        reference: ReferenceTime = .now, windowSize: Int = 512, googlePay: GooglePayTokenDecryptor? = nil
    ) {
        self.init(
            wallets: WalletDecryptor(applePay: decryptor, googlePay: googlePay), lanes: lanes, reference: reference,
            windowSize: windowSize, backend: .automatic)
    }

    /// The same with the multi-buffer backend chosen by `multiBuffer`.
    /// - Throws: ``ConfigurationError`` (`cryptoUnavailable`) for `.on` when crypto_mb cannot run here.
    public convenience init(
        decryptor: PaymentTokenDecryptor, lanes: Int = ProcessInfo.processInfo.activeProcessorCount,
        reference: ReferenceTime = .now, windowSize: Int = 512, multiBuffer: MultiBufferMode
    ) throws(ConfigurationError) {
        self.init(
            decryptor: decryptor, lanes: lanes, reference: reference, windowSize: windowSize,
            backend: try .resolve(multiBuffer))
    }

    /// The same with a backend already resolved (`MultiBufferBackend.resolve(_:)`), e.g. by a front
    /// end that checks `--multibuffer on` before reading its input.
    public convenience init(
        decryptor: PaymentTokenDecryptor, lanes: Int, reference: ReferenceTime, windowSize: Int,
        backend: MultiBufferBackend, googlePay: GooglePayTokenDecryptor? = nil
    ) {
        self.init(
            wallets: WalletDecryptor(applePay: decryptor, googlePay: googlePay), lanes: lanes, reference: reference,
            windowSize: windowSize, backend: backend)
    }

    /// A batch engine over the front door `wallets`, with `lanes` lanes (at least 1), windows of
    /// `windowSize` items and a multi-buffer backend already resolved (`MultiBufferBackend.resolve(_:)`).
    public init(
        wallets: WalletDecryptor, lanes: Int = ProcessInfo.processInfo.activeProcessorCount,
        reference: ReferenceTime = .now, windowSize: Int = 512, backend: MultiBufferBackend = .automatic
    ) {
        self.wallets = wallets
        self.lanes = max(1, lanes)
        self.reference = reference
        self.windowSize = max(1, windowSize)
        self.multiBuffer = backend
    }

    /// What a run did, for summaries.
    public struct Summary: Sendable {
        /// Items delivered.
        public var processed = 0
        /// Items read past without delivery (before a shard or a resume point).
        public var skipped = 0
        /// Delivered items by outcome: `ok` or an error code.
        public var counts: [String: Int] = [:]
    }

    /// Runs the whole input through the engine.
    ///
    /// Blocks the calling thread while each window is decrypted on the lanes (`concurrentPerform`):
    /// from async code use `run(_:origin:deliver:)` over an `AsyncSequence` instead.
    /// - Parameters:
    ///   - source: where the tokens come from, a window at a time.
    ///   - indices: the part of the input to deliver (a shard, or the rest after a resume). Items before
    ///     it are still verified and decrypted, so that the ones that verify claim their transactionId
    ///     and content digest exactly as in a run over the whole input; items after it are not read.
    ///   - ledger: the claims of earlier items; a resumed run passes the ledger it had persisted.
    ///   - claimedBefore: items below this index are only read past: `ledger` already holds their claims.
    ///   - deliver: called on the calling thread, once per item in `indices`, in input order.
    ///   - windowDone: called after each window, with the index of the next item (the ledger is up to date).
    @discardableResult
    public func run<Source: BatchTokenSource>(
        _ source: inout Source, indices: Range<Int>? = nil, ledger: ReplayLedger = ReplayLedger(),
        claimedBefore: Int = 0,
        deliver: (BatchResult) throws -> Void, windowDone: (Int) throws -> Void = { _ in }
    ) throws -> Summary {
        var state = RunState(engine: self, range: indices ?? 0..<Int.max, ledger: ledger, claimedBefore: claimedBefore)
        var window = BatchWindow()
        while state.base < state.range.upperBound {
            window.removeAll()
            guard try source.fill(&window, capacity: min(windowSize, state.range.upperBound - state.base)) else {
                break
            }
            try process(window, state: &state, deliver: deliver)
            try windowDone(state.base)
        }
        return state.summary
    }

    /// Runs the tokens of an async sequence (one token's bytes per element) through the engine, a
    /// window at a time; `deliver` sees the results in order.
    ///
    /// Each window is decrypted on the lanes off the cooperative pool (on threads of its own, one per
    /// lane), while this task is suspended, not blocked: the pool's threads only read the sequence and
    /// deliver results.
    /// - Parameters:
    ///   - tokens: one token's bytes per element.
    ///   - origin: the ``BatchLocation/origin`` of the results.
    ///   - deliver: called on this task, once per token, in input order.
    /// - Returns: the counts of the run.
    @discardableResult
    public func run<Tokens: AsyncSequence>(_ tokens: Tokens, origin: Int = 0, deliver: (BatchResult) throws -> Void)
        async throws -> Summary
    where Tokens.Element == [UInt8] {
        try await runOwning(tokens, origin: origin, owning: { $0 }, deliver: deliver)
    }

    /// `owning` turns an element into the bytes the window owns: the element itself when it is `[UInt8]`,
    /// one copy otherwise. (A plain closure called here, not an `AsyncSequence.map` closure: that one is
    /// sendable, and capturing the element's generic metatype in it is a Swift 6 concurrency warning.)
    private func runOwning<Tokens: AsyncSequence>(
        _ tokens: Tokens, origin: Int, owning: (Tokens.Element) -> [UInt8], deliver: (BatchResult) throws -> Void
    ) async throws -> Summary {
        var state = RunState(engine: self, range: 0..<Int.max, ledger: ReplayLedger(), claimedBefore: 0)
        var window = BatchWindow()
        var line = 0
        for try await element in tokens {
            line += 1
            window.append(owning: owning(element), at: BatchLocation(origin: origin, line: line))
            if window.count == windowSize || !window.hasRoom {
                await decryptOffPool(window, state: state)
                try deliverWindow(window, state: &state, deliver: deliver)
                window.removeAll()
            }
        }
        if window.count > 0 {
            await decryptOffPool(window, state: state)
            try deliverWindow(window, state: &state, deliver: deliver)
        }
        return state.summary
    }

    /// As `run(_:origin:deliver:)` over `[UInt8]` elements, for an async sequence of any `DataProtocol` elements
    /// (`Data`, `ByteBuffer` views…); each element is copied once into the window, which owns its items.
    @discardableResult
    public func run<Tokens: AsyncSequence>(_ tokens: Tokens, origin: Int = 0, deliver: (BatchResult) throws -> Void)
        async throws -> Summary
    where Tokens.Element: DataProtocol {
        try await runOwning(tokens, origin: origin, owning: { Array($0) }, deliver: deliver)
    }

    /// What persists from window to window of one run.
    private struct RunState {
        let range: Range<Int>
        let claimedBefore: Int
        let workers: [BatchWorker]
        let slots: ResultSlots
        let ledger: ReplayLedger
        var summary = Summary()
        /// Global index of the window's first item.
        var base = 0

        init(engine: BatchDecryptor, range: Range<Int>, ledger: ReplayLedger, claimedBefore: Int) {
            self.range = range
            self.ledger = ledger
            self.claimedBefore = claimedBefore
            workers = (0..<engine.lanes).map { _ in BatchWorker() }
            slots = ResultSlots(capacity: engine.windowSize)
        }
    }

    /// Decrypts one window on the lanes, then, in input order, applies the replay ledger and delivers.
    private func process(_ window: BatchWindow, state: inout RunState, deliver: (BatchResult) throws -> Void) throws {
        decrypt(window, state: state)
        try deliverWindow(window, state: &state, deliver: deliver)
    }

    private func skipBelow(_ window: BatchWindow, _ state: RunState) -> Int {
        min(window.count, max(0, state.claimedBefore - state.base))
    }

    private func decrypt(_ window: BatchWindow, state: RunState) {
        let instant = reference.unixSecondsAndMilliseconds
        process(
            window, slots: state.slots, workers: state.workers, skipBelow: skipBelow(window, state),
            referenceSeconds: instant.seconds, referenceMilliseconds: instant.milliseconds)
    }

    /// `decrypt` on threads of its own, one per lane. Not on a Dispatch global queue: on Linux the
    /// cooperative pool runs on those same width-limited threads, so a window decrypted there (and the
    /// blocking `concurrentPerform` in it) would hold the pool's threads for the whole window. A
    /// thread per lane and window costs some tens of microseconds against a window's tens of
    /// milliseconds.
    private func decryptOffPool(_ window: BatchWindow, state: RunState) async {
        let instant = reference.unixSecondsAndMilliseconds
        let job = WindowJob(
            engine: self, window: window, slots: state.slots, skipBelow: skipBelow(window, state),
            referenceSeconds: instant.seconds, referenceMilliseconds: instant.milliseconds)
        let workers = UncheckedWorkers(
            workers: job.window.count - job.skipBelow < 2 ? [state.workers[0]] : state.workers)
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            let running = Mutex(workers.workers.count)
            let finished = UncheckedContinuation(continuation: done)
            for one in workers.workers {
                let worker = UncheckedWorkers(workers: [one])
                LaneThread.start {
                    job.run(on: worker.workers[0])
                    if running.withLock({ count in
                        count -= 1; return count == 0
                    }) {
                        finished.continuation.resume()
                    }
                }
            }
        }
    }

    /// A continuation handed to the worker threads; only the last one to finish resumes it.
    private struct UncheckedContinuation: @unchecked Sendable {
        // Sendable: resumed exactly once, by the last worker, under the count's lock.
        let continuation: CheckedContinuation<Void, Never>
    }

    /// In input order: applies the replay ledger to the decrypted window and delivers its results.
    private func deliverWindow(_ window: BatchWindow, state: inout RunState, deliver: (BatchResult) throws -> Void)
        throws
    {
        let count = window.count
        let skipBelow = skipBelow(window, state)
        let firstToDeliver = max(0, state.range.lowerBound - state.base)
        // Counted here and added once per window: `counts["ok", default: 0] += 1` hashed a String per item.
        var ok = 0
        defer { if ok > 0 { state.summary.counts["ok", default: 0] += ok } }
        for i in 0..<count {
            let slot = state.slots.take(i)
            let index = state.base + i
            if i < skipBelow {
                state.summary.skipped += 1
                continue
            }
            var outcome = slot.outcome!
            // The one replay judge: only a token that verified and decrypted claims, whichever the
            // wallet (one ledger for all); a replay claims nothing and names its own wallet's field.
            if let claim = outcome.replayIdentity {
                if let first = state.ledger.firstClaim(of: claim) {
                    outcome.refuseAsReplay(claimedBy: first)
                    state.ledger.noteReplay(claim, index: index)
                } else {
                    state.ledger.claim(claim, index: index)
                }
            }
            if i < firstToDeliver {
                state.summary.skipped += 1
                continue
            }
            state.summary.processed += 1
            let result = BatchResult(index: index, location: window.locations[i], outcome: outcome)
            if let error = result.error {
                state.summary.counts[error.code.rawValue, default: 0] += 1
            } else {
                ok += 1
            }
            try deliver(result)
        }
        state.base += count
    }

    /// Decrypts every item of the window on the lanes, except those below `skipBelow`.
    private func process(
        _ window: BatchWindow, slots: ResultSlots, workers: [BatchWorker], skipBelow: Int, referenceSeconds: Int64?,
        referenceMilliseconds: Int64?
    ) {
        let job = WindowJob(
            engine: self, window: window, slots: slots, skipBelow: skipBelow, referenceSeconds: referenceSeconds,
            referenceMilliseconds: referenceMilliseconds)
        job.run(on: workers)
    }

    /// The workers of one run, handed to threads of their own while the run's task is suspended.
    private struct UncheckedWorkers: @unchecked Sendable {
        // Sendable: the suspended task does not touch its workers until the threads have finished with them.
        let workers: [BatchWorker]
    }

    /// One window's work, shared by the lanes: each takes the next unprocessed item.
    private final class WindowJob: @unchecked Sendable {
        // Sendable: the window is only read, each result slot is written by exactly one lane.
        let engine: BatchDecryptor
        let window: BatchWindow
        let slots: ResultSlots
        let referenceSeconds: Int64?
        /// The same instant in milliseconds (Google Pay's expirations), from the same clock reading.
        let referenceMilliseconds: Int64?
        let skipBelow: Int
        let next: Atomic<Int>

        init(
            engine: BatchDecryptor, window: BatchWindow, slots: ResultSlots, skipBelow: Int, referenceSeconds: Int64?,
            referenceMilliseconds: Int64?
        ) {
            self.engine = engine
            self.window = window
            self.slots = slots
            self.referenceSeconds = referenceSeconds
            self.referenceMilliseconds = referenceMilliseconds
            self.skipBelow = skipBelow
            self.next = Atomic(skipBelow)
        }

        /// Every lane takes items until none is left (one lane alone when there is little to share).
        func run(on workers: [BatchWorker]) {
            if workers.count == 1 || window.count - skipBelow < 2 {
                run(on: workers[0])
            } else {
                DispatchQueue.concurrentPerform(iterations: workers.count) { run(on: workers[$0]) }
            }
        }

        func run(on worker: BatchWorker) {
            let lane = worker.lane
            if let library = engine.multiBuffer.library {
                // Groups of eight for the multi-buffer stage (MultiBufferStage.swift).
                let stage = worker.multiBufferStage(library)
                while true {
                    let start = next.add(MultiBufferStage.width, ordering: .relaxed).oldValue
                    guard start < window.count else { return }
                    stage.process(
                        start..<min(start + MultiBufferStage.width, window.count), of: window, engine: engine,
                        referenceSeconds: referenceSeconds, referenceMilliseconds: referenceMilliseconds
                    ) { slots.put($0, $1) }
                }
            }
            while true {
                let i = next.add(1, ordering: .relaxed).oldValue
                guard i < window.count else { return }
                slots.put(
                    i,
                    engine.process(
                        item: i, of: window, lane: lane, referenceSeconds: referenceSeconds,
                        referenceMilliseconds: referenceMilliseconds))
            }
        }
    }

    func process(
        item i: Int, of window: BatchWindow, lane: Lane, referenceSeconds: Int64?, referenceMilliseconds: Int64?
    ) -> Slot {
        // The front door: a token of any wallet, or a {"paymentToken", "paymentRequest"} envelope
        // checked against its request.
        let outcome = window.withBytes(of: i) { bytes -> Slot in
            Slot(
                wallets.decrypt(
                    bytes, referenceSeconds: referenceSeconds, referenceMilliseconds: referenceMilliseconds, lane: lane
                ))
        }
        switch outcome {
        case let slot?:
            return slot
        case nil:
            guard case let .unreadable(reason) = window.items[i] else {
                fatalError("only unreadable items have no bytes")
            }
            return Slot(WalletOutcome(refusing: .unreadableItem(reason)))
        }
    }
}

/// What a lane produced for one item.
struct Slot: @unchecked Sendable {
    // Sendable: written by one lane, read by the delivering thread after the window's barrier.
    var outcome: WalletOutcome?

    init(_ outcome: WalletOutcome?) { self.outcome = outcome }

    static let empty = Slot(nil)
}

/// Per-window result storage; each lane writes distinct indices, the caller reads after the barrier.
final class ResultSlots: @unchecked Sendable {
    private let slots: UnsafeMutableBufferPointer<Slot>

    init(capacity: Int) {
        slots = .allocate(capacity: capacity)
        slots.initialize(repeating: .empty)
    }

    deinit {
        slots.deinitialize()
        slots.deallocate()
    }

    /// Moves `slot` in: a slot is 363 bytes with references inside, and an assignment from a borrowed
    /// value copies it (retaining what it holds) only for the caller to release its own copy.
    func put(_ i: Int, _ slot: consuming Slot) { slots[i] = slot }

    /// Moves the result out, leaving the slot empty (no copy, no retain and release of the payment).
    func take(_ i: Int) -> Slot {
        // Sound: slot `i` is initialized (by `init` or `put`) and is initialized again at once.
        let slot = (slots.baseAddress! + i).move()
        (slots.baseAddress! + i).initialize(to: .empty)
        return slot
    }
}
