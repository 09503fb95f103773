// One batch lane's state: the engine's lane and, when crypto_mb runs, the multi-buffer stage made on
// the lane's first group.
internal import ApplePayCrypto

/// What one batch lane owns for a run: a ``Lane`` for the engine's steps and the lane's
/// multi-buffer stage. Used by one thread at a time.
final class BatchWorker: @unchecked Sendable {
    // Sendable only to reach the lane's thread: one thread at a time uses a given instance.
    let lane = Lane()
    private var multiBuffer: MultiBufferStage?

    /// The lane's multi-buffer stage, made on first use (its sub-lanes and crypto_mb buffers).
    func multiBufferStage(_ library: CryptoMBLibrary) -> MultiBufferStage {
        if let multiBuffer { return multiBuffer }
        let stage = MultiBufferStage(library: library)
        multiBuffer = stage
        return stage
    }
}
