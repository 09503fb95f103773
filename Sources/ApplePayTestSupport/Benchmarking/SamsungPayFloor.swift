// Samsung Pay's in-process floor: the raw RSA private-key operation alone (RSA_NO_PADDING, blinded, a
// context prepared once) with a factory key, per CPU second of this thread; beside `openssl speed`.
import ApplePayCrypto
import ApplePayDecryption
import Foundation

/// What one Samsung Pay token cannot beat on this machine: the RSA operation it needs, timed alone.
public enum SamsungPayFloor {
    /// CPU seconds this thread has run.
    public static func threadCPUSeconds() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }

    /// A timer of one raw RSA private-key operation with merchant key `index` of `factory` (a context
    /// and a ciphertext prepared once): each `measure()` runs one operation and returns its CPU time, µs.
    public final class RawRSAProbe {
        private let context: PKeyContext?
        private let wrapped: [UInt8]
        private var block: [UInt8]

        /// A probe for merchant key `index` of `factory`.
        public init(_ factory: SamsungPayTestFactory, keyIndex index: Int = 0) {
            let key = factory.merchantKeys[index]
            context = PKeyContext.rawRSADecrypter(key)
            wrapped = SecureRandom.bytes(16).withUnsafeBytes { PKeyContext.pkcs1Encrypter(key)?.encrypt($0) } ?? []
            block = [UInt8](repeating: 0, count: key.size)
        }

        deinit { SecureMemory.wipe(&block) }

        /// One raw operation's CPU time, µs (NaN when OpenSSL could not set it up).
        public func measure() -> Double {
            guard let context, !wrapped.isEmpty else { return .nan }
            let start = threadCPUSeconds()
            _ = wrapped.withUnsafeBytes { input in block.withUnsafeMutableBytes { context.decrypt(input, into: $0) } }
            return (threadCPUSeconds() - start) * 1e6
        }
    }

    /// Raw RSA private-key operations per CPU second of this thread, with merchant key `index` of
    /// `factory`, for about `seconds` of wall-clock time.
    public static func rawRSAPerCPUSecond(_ factory: SamsungPayTestFactory, keyIndex index: Int = 0, seconds: Double)
        -> Double
    {
        let key = factory.merchantKeys[index]
        guard let context = PKeyContext.rawRSADecrypter(key),
            let wrapped = SecureRandom.bytes(16).withUnsafeBytes({ PKeyContext.pkcs1Encrypter(key)?.encrypt($0) })
        else { return .nan }
        var block = [UInt8](repeating: 0, count: key.size)
        defer { SecureMemory.wipe(&block) }
        var done = 0
        let cpuStart = threadCPUSeconds()
        let deadline = Date().addingTimeInterval(seconds)
        repeat {
            for _ in 0..<16 {
                _ = wrapped.withUnsafeBytes { input in block.withUnsafeMutableBytes { context.decrypt(input, into: $0) }
                }
            }
            done += 16
        } while Date() < deadline
        return Double(done) / (threadCPUSeconds() - cpuStart)
    }
}
