// The tags that choose .ci/run's sanitizer subsets, so that renaming a test cannot drop it from its subset.
import Testing

extension Tag {
    /// Loads PKCS#12 through OpenSSL's legacy provider, whose leak ASan recognises only on a full stack:
    /// these run apart, with the slow unwinder.
    @Tag static var pkcs12: Self
    /// Decrypts on several threads at once: the ThreadSanitizer subset.
    @Tag static var concurrency: Self
    /// Measures peak RSS: skipped under both sanitizers, whose shadow memory is what it would measure.
    @Tag static var peakRSS: Self
    /// Runs the CLI over thousands of tokens, three times: seconds plain, minutes under ThreadSanitizer
    /// (293 s on 2 cores), so skipped there; the plain and AddressSanitizer runs keep it.
    @Tag static var longCLIRun: Self
    /// Builds the library once more in a fresh package: skipped under AddressSanitizer (the plain run covers it).
    @Tag static var freshPackageBuild: Self
    /// Writes and reads back a file over 2 GiB (a 2 GiB buffer in memory): skipped under AddressSanitizer,
    /// whose shadow memory would triple it; the plain run covers it.
    @Tag static var largeFile: Self
}
