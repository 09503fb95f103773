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

    /// Loads OpenSSL's legacy provider (for RC2-40 PKCS#12 files) beside the default one, once, when a
    /// PKCS#12 file is first read. Loading any provider explicitly disables the implicit default, so both
    /// are loaded. Not loaded eagerly: the legacy provider's state is never freed (LeakSanitizer reports
    /// it; .ci/lsan.supp names it for the PKCS#12 tests alone).
    package static let legacyProviderLoaded: Bool = {
        initialised()
        // Adding providers changes OpenSSL's tables: not while another thread decodes.
        return OpenSSLGlobalState.changing {
            let defaultProvider = OSSL_PROVIDER_load(nil, "default")
            let legacyProvider = OSSL_PROVIDER_load(nil, "legacy")
            return defaultProvider != nil && legacyProvider != nil
        }
    }()

    /// OpenSSL's one-time set-up (its configuration, every cipher and digest), done before the first key
    /// or certificate is decoded (`OpenSSLGlobalState.beginDecoding`).
    private static let setUp: Bool = CShims_initOpenSSL() == 1

    /// Makes sure OpenSSL's one-time set-up is done (a one-time check after the first call).
    @inline(__always) package static func initialised() { _ = setUp }
}

/// An OpenSSL operation that failed, with the error queue's reason text.
package struct OpenSSLFailure: Error, Sendable {
    package let reason: String
    package init(_ reason: String? = nil) { self.reason = reason ?? OpenSSLErrors.drain() ?? "unknown error" }
}
