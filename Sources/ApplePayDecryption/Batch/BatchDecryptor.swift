// The batch engine: windows of input items decrypted on N Dispatch lanes, each with its own
// OpenSSL contexts and token buffer, results delivered in input order, replays detected.
import Dispatch
import Foundation
import Synchronization

/// One item's result, delivered in input order.
public struct BatchResult: Sendable {
    /// 0-based position in the whole input (shards and resumed runs keep the global numbering).
    public let index: Int
    public let location: BatchLocation
    /// The token's `header.transactionId`, when the token could be parsed.
    public let transactionId: String?
    public let outcome: Result<DecryptedPayment, ApplePayError>
}

public final class BatchDecryptor: Sendable {
    public let decryptor: PaymentTokenDecryptor
    public let lanes: Int
    public let reference: ReferenceTime
    /// Items per window: the bound on items in flight (and on memory).
    public let windowSize: Int

    public init(decryptor: PaymentTokenDecryptor, lanes: Int = ProcessInfo.processInfo.activeProcessorCount,
                reference: ReferenceTime = .now, windowSize: Int = 512) {
        self.decryptor = decryptor
        self.lanes = max(1, lanes)
        self.reference = reference
        self.windowSize = max(1, windowSize)
    }

    /// What a run did, for summaries.
    public struct Summary: Sendable {
        public var processed = 0
        public var skipped = 0
        public var counts: [String: Int] = [:]
    }

    /// Runs the whole input through the engine.
    /// - Parameters:
    ///   - indices: the part of the input to decrypt (a shard, or the rest after a resume); items
    ///     before it only register their transactionId for replay detection, items after it are not read.
    ///   - deliver: called on the calling thread, once per item in `indices`, in input order.
    ///   - windowDone: called after each window's results were delivered, with the index of the next item.
    @discardableResult
    public func run<Source: BatchTokenSource>(
        _ source: inout Source, indices: Range<Int>? = nil,
        deliver: (BatchResult) throws -> Void, windowDone: (Int) throws -> Void = { _ in }
    ) throws -> Summary {
        var state = RunState(engine: self, range: indices ?? 0..<Int.max)
        var window = BatchWindow()
        while state.base < state.range.upperBound {
            window.removeAll()
            guard try source.fill(&window, capacity: min(windowSize, state.range.upperBound - state.base)) else { break }
            if try process(window, state: &state, deliver: deliver) { try windowDone(state.base) }
        }
        return state.summary
    }

    /// Runs the tokens of an async sequence (one token's bytes per element) through the engine, a
    /// window at a time; `deliver` sees the results in order. Each window is decrypted on the lanes
    /// while this task waits, so call it from a task that may block for that long.
    @discardableResult
    public func run<Tokens: AsyncSequence>(_ tokens: Tokens, origin: Int = 0, deliver: (BatchResult) throws -> Void) async throws -> Summary
    where Tokens.Element == [UInt8] {
        var state = RunState(engine: self, range: 0..<Int.max)
        var window = BatchWindow()
        var line = 0
        for try await token in tokens {
            line += 1
            window.append(owning: token, at: BatchLocation(origin: origin, line: line))
            if window.count == windowSize {
                try process(window, state: &state, deliver: deliver)
                window.removeAll()
            }
        }
        if window.count > 0 { try process(window, state: &state, deliver: deliver) }
        return state.summary
    }

    /// What persists from window to window of one run.
    private struct RunState {
        let range: Range<Int>
        let workers: [LaneContexts]
        let slots: ResultSlots
        var ledger = TransactionLedger()
        var summary = Summary()
        /// Global index of the window's first item.
        var base = 0

        init(engine: BatchDecryptor, range: Range<Int>) {
            self.range = range
            workers = (0..<engine.lanes).map { _ in LaneContexts() }
            slots = ResultSlots(capacity: engine.windowSize)
        }
    }

    /// Decrypts one window on the lanes, then, in input order, applies the replay ledger and
    /// delivers. Returns whether any item of the window was delivered (not only registered).
    @discardableResult
    private func process(_ window: BatchWindow, state: inout RunState, deliver: (BatchResult) throws -> Void) throws -> Bool {
        let count = window.count
        let firstToDeliver = max(0, state.range.lowerBound - state.base)
        process(window, slots: state.slots, workers: state.workers, registerOnlyBelow: firstToDeliver, referenceSeconds: reference.unixSeconds)
        for i in 0..<count {
            let slot = state.slots.take(i)
            let index = state.base + i
            if i < firstToDeliver {
                if let key = slot.key { state.ledger.register(key, index: index) }
                state.summary.skipped += 1
                continue
            }
            var outcome = slot.outcome!
            if let key = slot.key {
                if case .success = outcome, let first = state.ledger.firstIndex(of: key) {
                    outcome = .failure(ApplePayError(.replayedTransaction, "transactionId already seen in this run at index \(first)",
                                                     field: "header.transactionId"))
                }
                state.ledger.register(key, index: index)
            }
            state.summary.processed += 1
            switch outcome {
            case .success: state.summary.counts["ok", default: 0] += 1
            case let .failure(error): state.summary.counts[error.code.rawValue, default: 0] += 1
            }
            try deliver(BatchResult(index: index, location: window.locations[i], transactionId: slot.transactionId, outcome: outcome))
        }
        state.base += count
        return firstToDeliver < count
    }

    /// Decrypts (or, below `registerOnlyBelow`, only parses) every item of the window on the lanes.
    private func process(_ window: BatchWindow, slots: ResultSlots, workers: [LaneContexts], registerOnlyBelow: Int, referenceSeconds: Int64?) {
        let job = WindowJob(engine: self, window: window, slots: slots, registerOnlyBelow: registerOnlyBelow, referenceSeconds: referenceSeconds)
        if workers.count == 1 || window.count < 2 {
            job.run(on: workers[0])
        } else {
            DispatchQueue.concurrentPerform(iterations: workers.count) { job.run(on: workers[$0]) }
        }
    }

    /// One window's work, shared by the lanes: each takes the next unprocessed item.
    private final class WindowJob: @unchecked Sendable {
        // Sendable: the window is only read, each result slot is written by exactly one lane.
        let engine: BatchDecryptor
        let window: BatchWindow
        let slots: ResultSlots
        let registerOnlyBelow: Int
        let referenceSeconds: Int64?
        let next = Atomic<Int>(0)

        init(engine: BatchDecryptor, window: BatchWindow, slots: ResultSlots, registerOnlyBelow: Int, referenceSeconds: Int64?) {
            self.engine = engine
            self.window = window
            self.slots = slots
            self.registerOnlyBelow = registerOnlyBelow
            self.referenceSeconds = referenceSeconds
        }

        func run(on lane: LaneContexts) {
            while true {
                let i = next.add(1, ordering: .relaxed).oldValue
                guard i < window.count else { return }
                slots.put(i, engine.process(item: i, of: window, lane: lane, decrypt: i >= registerOnlyBelow, referenceSeconds: referenceSeconds))
            }
        }
    }

    private func process(item i: Int, of window: BatchWindow, lane: LaneContexts, decrypt: Bool, referenceSeconds: Int64?) -> Slot {
        let parsed = window.withBytes(of: i) { bytes in
            decryptor.withParsedToken(bytes, lane: lane) { view -> Slot in
                let key = TransactionLedger.Key(view[view.fields.transactionId])
                guard decrypt else { return Slot(key: key, transactionId: nil, outcome: nil) }
                let outcome = Result { () throws(ApplePayError) in
                    try decryptor.decrypt(view, referenceSeconds: referenceSeconds, lane: lane)
                }
                return Slot(key: key, transactionId: view.transactionIdString, outcome: outcome)
            }
        }
        switch parsed {
        case let .success(slot)?:
            return slot
        case let .failure(error)?:
            return Slot(key: nil, transactionId: nil, outcome: decrypt ? .failure(error) : nil)
        case nil:
            guard case let .unreadable(reason) = window.items[i] else { fatalError("only unreadable items have no bytes") }
            return Slot(key: nil, transactionId: nil, outcome: .failure(ApplePayError(.malformedToken, "the item could not be read: \(reason)", field: "$")))
        }
    }
}

/// What a lane produced for one item.
struct Slot: @unchecked Sendable {
    // Sendable: written by one lane, read by the delivering thread after the window's barrier.
    var key: TransactionLedger.Key?
    var transactionId: String?
    var outcome: Result<DecryptedPayment, ApplePayError>?

    static let empty = Slot(key: nil, transactionId: nil, outcome: nil)
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

    func put(_ i: Int, _ slot: Slot) { slots[i] = slot }

    func take(_ i: Int) -> Slot {
        let slot = slots[i]
        slots[i] = .empty
        return slot
    }
}

/// Transaction identifiers seen in a run, by a 128-bit digest (not the text) so memory stays small.
struct TransactionLedger {
    struct Key: Hashable, Sendable {
        let high: UInt64
        let low: UInt64

        init(_ transactionId: UnsafeRawBufferPointer) {
            var digest = (UInt64(0), UInt64(0), UInt64(0), UInt64(0))
            withUnsafeMutableBytes(of: &digest) { out in
                var hasher = SHA256.Hasher()
                hasher.update(transactionId)
                hasher.finalize(into: out.baseAddress!.assumingMemoryBound(to: UInt8.self))
            }
            high = digest.0
            low = digest.1
        }
    }

    private var firstSeen: [Key: Int] = [:]

    func firstIndex(of key: Key) -> Int? { firstSeen[key] }

    mutating func register(_ key: Key, index: Int) {
        if firstSeen[key] == nil { firstSeen[key] = index }
    }
}
