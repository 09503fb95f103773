// Reads and clears OpenSSL's thread-local error queue, turning it into reason text for errors.
internal import CShims

package enum OpenSSLErrors {
    /// Drains the queue; returns the reason strings joined, or nil if the queue was empty.
    package static func drain() -> String? {
        var reasons: [String] = []
        while true {
            var data: UnsafePointer<CChar>? = nil
            var flags: Int32 = 0
            let code = ERR_get_error_all(nil, nil, nil, &data, &flags)
            if code == 0 { break }
            var text = ERR_reason_error_string(code).map { String(cString: $0) } ?? "error \(code)"
            if let data, flags & ERR_TXT_STRING != 0, data.pointee != 0 {
                text += ": " + String(cString: data)
            }
            reasons.append(text)
        }
        return reasons.isEmpty ? nil : reasons.joined(separator: "; ")
    }

    /// Empties the queue. Peeking first: on the usual empty queue that costs about a quarter of
    /// ERR_clear_error, which resets all 16 slots (twice per token; callgrind).
    package static func clear() {
        if ERR_peek_error() != 0 { ERR_clear_error() }
    }

    /// Loads OpenSSL's legacy provider (for RC2-40 PKCS#12 files) beside the default one, once.
    /// Loading any provider explicitly disables the implicit default, so both are loaded.
    ///
    /// Done before the first key or certificate is decoded (`loadProviders()`), never in the middle of
    /// a run: OpenSSL 3.0 flushes its method store when a provider is added, and a decode running on
    /// another thread at that moment can fail ("unsupported public key type"; seen as a flaky test
    /// crash, and possible in a service whose SIGHUP reload reads the first PKCS#12 while tokens, whose
    /// certificates go through the same decoders, are being verified).
    package static let legacyProviderLoaded: Bool = {
        // What a PKCS#11 module built on OpenSSL (SoftHSM2) does at its C_Initialize — the
        // configuration, every cipher and digest, the built-in engines — is done here first, so its
        // later calls change nothing while other threads decode keys and certificates.
        _ = CShims_initOpenSSLFully()
        let defaultProvider = OSSL_PROVIDER_load(nil, "default")
        let legacyProvider = OSSL_PROVIDER_load(nil, "legacy")
        return defaultProvider != nil && legacyProvider != nil
    }()

    /// Makes sure the providers are loaded (a one-time check after the first call).
    @inline(__always) package static func loadProviders() { _ = legacyProviderLoaded }
}

/// An OpenSSL operation that failed, with the error queue's reason text.
package struct OpenSSLFailure: Error, Sendable {
    package let reason: String
    package init(_ reason: String? = nil) { self.reason = reason ?? OpenSSLErrors.drain() ?? "unknown error" }
}
