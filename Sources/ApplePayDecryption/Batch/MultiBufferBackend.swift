// The batch engine's choice of P-256 backend: crypto_mb eight tokens at a time, or OpenSSL one at a
// time, as asked (auto, on, off) and as the machine allows, with the reason in words.
internal import ApplePayCrypto

/// Whether a batch run uses Intel's crypto_mb (AVX-512 IFMA, eight operations at once) for the P-256
/// arithmetic of EC_v1 and Google Pay tokens: the key agreement, and u1·G of the signature check (u2·Q
/// keeps the signer's precomputed table: the leaf's, or the Google Pay intermediate or root key's).
public enum MultiBufferMode: String, Sendable, CaseIterable {
    /// crypto_mb when it loads, the CPU has IFMA and its self-test passes; OpenSSL otherwise.
    case auto
    /// crypto_mb or a ``ConfigurationError`` naming crypto_mb and why it cannot run.
    case on
    /// OpenSSL only.
    case off
}

/// The backend a ``BatchDecryptor`` runs EC_v1 signature checks and key agreement on, and why.
public struct MultiBufferBackend: Sendable, CustomStringConvertible {
    /// True when EC_v1 and Google Pay tokens are verified and agreed eight at a time through crypto_mb.
    public var isActive: Bool { library != nil }
    /// Why this backend: where crypto_mb was loaded from, or why it was not used.
    public let reason: String
    let library: CryptoMBLibrary?

    /// "crypto_mb (…)" or "OpenSSL (…)": what a summary line shows.
    public var description: String { isActive ? "crypto_mb (\(reason))" : "OpenSSL (\(reason))" }

    /// The backend for `mode`: crypto_mb is looked for once per process (`APPLEPAY_CRYPTO_MB`, the path
    /// of libcrypto_mb.so.13, or the loader's path), checked for this CPU and self-tested against OpenSSL.
    /// - Throws: ``ConfigurationError`` with code `cryptoUnavailable` for `.on` when crypto_mb cannot run.
    public static func resolve(_ mode: MultiBufferMode) throws(ConfigurationError) -> MultiBufferBackend {
        if mode == .off { return MultiBufferBackend(reason: "multibuffer off", library: nil) }
        return try resolve(mode, status: CryptoMB.shared)
    }

    static func resolve(_ mode: MultiBufferMode, status: CryptoMB.Status) throws(ConfigurationError)
        -> MultiBufferBackend
    {
        switch (mode, status) {
        case (.off, _):
            return MultiBufferBackend(reason: "multibuffer off", library: nil)
        case let (_, .ready(library)):
            return MultiBufferBackend(reason: "\(library.path), self-test passed", library: library)
        case let (.on, .unavailable(why)):
            throw ConfigurationError(.cryptoUnavailable, "crypto_mb cannot be used: \(why)")
        case let (.auto, .unavailable(why)):
            return MultiBufferBackend(reason: "crypto_mb unavailable: \(why)", library: nil)
        }
    }

    /// As `resolve`, but for a library at `path` probed now (not the process-wide one), optionally with
    /// a deliberately failing self-test: tests of the fallback.
    package static func probing(
        _ mode: MultiBufferMode, path: String?, failSelfTest: Bool,
        failVerificationSelfTest: Bool = false, failFixedBaseSelfTest: Bool = false
    ) throws(ConfigurationError) -> MultiBufferBackend {
        try resolve(
            mode,
            status: CryptoMB.probe(
                path: path, failSelfTest: failSelfTest, failVerificationSelfTest: failVerificationSelfTest,
                failFixedBaseSelfTest: failFixedBaseSelfTest))
    }

    /// `auto`, resolved (it never throws): the batch engine's default.
    public static var automatic: MultiBufferBackend {
        (try? resolve(.auto)) ?? MultiBufferBackend(reason: "multibuffer off", library: nil)
    }
}
