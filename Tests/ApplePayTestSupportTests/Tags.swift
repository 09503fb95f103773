// The tags that choose .ci/run's sanitizer subsets (the same names as in ApplePayDecryptionTests/Tags.swift).
import Testing

extension Tag {
    /// Loads PKCS#12 through OpenSSL's legacy provider: run apart under ASan, with the slow unwinder.
    @Tag static var pkcs12: Self
}
