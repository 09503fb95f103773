// Owns an X509_STORE holding one trust anchor, and verifies leaf → intermediate → anchor chains
// against it (signatures and structure only; the caller checks times against its own clock).
internal import CShims

package final class X509Store: @unchecked Sendable {
    // Sendable: the store is filled once here; verification only reads it (OpenSSL locks internally).
    private let ref: OpaquePointer

    package init(anchor: X509Certificate) {
        guard let store = X509_STORE_new(), X509_STORE_add_cert(store, anchor.ref) == 1 else {
            fatalError("cannot build the trust store")
        }
        ref = store
    }

    deinit { X509_STORE_free(ref) }

    package enum ChainResult {
        /// The chain verified and is exactly leaf → `intermediate` → anchor.
        case verified
        /// OpenSSL built and verified a chain, but not of that shape.
        case unexpectedShape
        /// A verdict about the certificates, with OpenSSL's reason.
        case rejected(reason: String?)
        /// A failure that says nothing about the certificates (allocation, internal error).
        case transient(reason: String)
    }

    /// Verifies `leaf` with `intermediate` as the only untrusted certificate offered, without time checks.
    package func verify(leaf: X509Certificate, intermediate: X509Certificate) -> ChainResult {
        func transient(_ what: String) -> ChainResult { .transient(reason: what) }
        guard let untrustedStack = CShims_sk_X509_new_null() else { return transient("out of memory") }
        defer { CShims_sk_X509_free(untrustedStack) }
        guard CShims_sk_X509_push(untrustedStack, intermediate.ref) > 0 else { return transient("out of memory") }
        guard let ctx = X509_STORE_CTX_new() else { return transient("out of memory") }
        defer { X509_STORE_CTX_free(ctx) }
        guard X509_STORE_CTX_init(ctx, ref, leaf.ref, untrustedStack) == 1 else {
            return transient("cannot start chain verification")
        }
        X509_VERIFY_PARAM_set_flags(X509_STORE_CTX_get0_param(ctx), UInt(X509_V_FLAG_NO_CHECK_TIME))
        let result = X509_verify_cert(ctx)
        guard result == 1 else {
            let code = X509_STORE_CTX_get_error(ctx)
            let reason = X509_verify_cert_error_string(Int(code)).map { String(cString: $0) }
            if Self.isTransient(verifyResult: result, error: code) {
                return .transient(reason: reason ?? "internal error")
            }
            return .rejected(reason: reason)
        }
        guard let chain = X509_STORE_CTX_get0_chain(ctx), CShims_sk_X509_num(chain) == 3,
            let middle = CShims_sk_X509_value(chain, 1), X509_cmp(middle, intermediate.ref) == 0
        else { return .unexpectedShape }
        return .verified
    }

    /// X509 verification errors that are not a verdict about the certificates.
    package static func isTransient(verifyResult: Int32, error code: Int32) -> Bool {
        verifyResult < 0 || code == X509_V_OK || code == X509_V_ERR_OUT_OF_MEM || code == X509_V_ERR_UNSPECIFIED
            || code == X509_V_ERR_STORE_LOOKUP
    }
}
