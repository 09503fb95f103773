// OpenSSL's process-wide tables (algorithms, decoders, providers, engines) and the code that changes them
// in the middle of a run: a PKCS#11 module built on OpenSSL (SoftHSM2) redoes OpenSSL's global set-up in
// its C_Initialize. Decodes, exports and fetches share a lock that loading a module (or a provider) takes
// alone. (The "unsupported public key type" test crash once blamed on this was a shared key's exports
// racing each other: EVPKey.exportingCopy.)
import Glibc

package enum OpenSSLGlobalState {
    // nonisolated(unsafe): a pthread rwlock, which is made for use from any thread; set once here.
    nonisolated(unsafe) private static let lock: UnsafeMutablePointer<pthread_rwlock_t> = {
        let lock = UnsafeMutablePointer<pthread_rwlock_t>.allocate(capacity: 1)
        pthread_rwlock_init(lock, nil)
        return lock
    }()

    /// Before a key or certificate is decoded, a key generated or algorithms fetched: OpenSSL's one-time
    /// set-up done, and no module load running. Pair with `endDecoding()` (`defer`).
    @inline(__always) package static func beginDecoding() {
        OpenSSLErrors.initialised()
        pthread_rwlock_rdlock(lock)
    }

    @inline(__always) package static func endDecoding() { pthread_rwlock_unlock(lock) }

    /// Runs `body` between `beginDecoding()` and `endDecoding()`: for what reads the tables without
    /// decoding, such as an export (its encoders are looked up), a signature (its algorithm is fetched)
    /// or a certificate built. Never nested: glibc's default lock (this one) prefers readers, so a nested
    /// read would not deadlock today, but with a writer-preferring lock a reader that asks again while a
    /// module load waits would wait behind it, and the load behind the first read, forever. So only the
    /// leaves take it (an export, not the function that calls the export), and a module load may wait
    /// for busy readers rather than ever deadlock.
    @inline(__always) package static func reading<R, E: Error>(_ body: () throws(E) -> R) throws(E) -> R {
        beginDecoding()
        defer { endDecoding() }
        return try body()
    }

    /// Runs `body` (a PKCS#11 module's dlopen and C_Initialize) while no decode runs.
    package static func changing<R>(_ body: () -> R) -> R {
        pthread_rwlock_wrlock(lock)
        defer { pthread_rwlock_unlock(lock) }
        return body()
    }
}
