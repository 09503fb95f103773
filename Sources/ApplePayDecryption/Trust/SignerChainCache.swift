// Verifies a token's certificate chain once per distinct set of certificates and caches the
// outcome: the leaf's public key and the validity windows the signing time is checked against.
internal import CShims
import Synchronization

/// What a verified chain leaves behind for per-token checks.
struct VerifiedSigner: @unchecked Sendable {
    // Sendable: EVPKey is immutable after creation.
    let leafKey: EVPKey
    /// Validity windows (Unix seconds) of leaf, intermediate and root: the signing time must lie in all.
    let validity: [ClosedRange<Int64>]
}

final class SignerChainCache: Sendable {
    static let leafMarkerOID = "1.2.840.113635.100.6.29"
    static let intermediateMarkerOID = "1.2.840.113635.100.6.2.14"
    private static let capacity = 4096

    private enum Entry: @unchecked Sendable {
        case trusted(VerifiedSigner)
        case untrusted(ApplePayError)
    }

    private struct Key: Hashable {
        let issuer: [UInt8]
        let serial: [UInt8]
        let certificates: [[UInt8]]
    }

    private let anchor: TrustAnchor
    private let store: StoreBox
    private let entries = Mutex<[Key: Entry]>([:])

    /// Owns the X509_STORE holding the single trust anchor.
    private final class StoreBox: @unchecked Sendable {
        // Sendable: the store is filled once here; verification only reads it (OpenSSL locks internally).
        let ref: OpaquePointer
        init(anchor: TrustAnchor) {
            guard let store = X509_STORE_new(), X509_STORE_add_cert(store, anchor.root.ref) == 1 else {
                fatalError("cannot build the trust store")
            }
            ref = store
        }
        deinit { X509_STORE_free(ref) }
    }

    init(anchor: TrustAnchor) {
        self.anchor = anchor
        self.store = StoreBox(anchor: anchor)
    }

    var cachedChainCount: Int { entries.withLock { $0.count } }

    /// The verified signer for this set of certificates, from the cache or verified now.
    func signer(for cms: CMSSignedData) throws(ApplePayError) -> VerifiedSigner {
        let key = Key(issuer: cms.signerIssuer, serial: cms.signerSerial, certificates: cms.certificates)
        let cached = entries.withLock { $0[key] }
        let entry = cached ?? verify(key)
        if cached == nil {
            entries.withLock { table in
                if table.count >= Self.capacity { table.removeAll(keepingCapacity: true) }
                table[key] = entry
            }
        }
        switch entry {
        case let .trusted(signer): return signer
        case let .untrusted(error): throw error
        }
    }

    private func untrusted(_ message: String, reason: String? = nil) -> Entry {
        .untrusted(ApplePayError(.untrustedCertificateChain, message, field: "signature", reason: reason))
    }

    private func verify(_ key: Key) -> Entry {
        OpenSSLErrors.clear()
        defer { OpenSSLErrors.clear() }
        var parsed: [X509Certificate] = []
        for der in key.certificates {
            guard let cert = X509Certificate.parse(der: der) else { return untrusted("a certificate in the signature cannot be parsed") }
            parsed.append(cert)
        }
        guard let leafIndex = key.certificates.firstIndex(where: { der in
            guard let fields = CertificateFields.issuerAndSerial(der) else { return false }
            return fields.issuer == key.issuer && fields.serial == key.serial
        }) else {
            return untrusted("the signer's certificate is not in the signature")
        }
        let leaf = parsed[leafIndex]
        guard leaf.hasExtension(oid: Self.leafMarkerOID) else {
            return untrusted("the signing certificate lacks Apple's leaf marker OID \(Self.leafMarkerOID)")
        }

        guard let untrustedStack = CShims_sk_X509_new_null() else { return untrusted("out of memory") }
        defer { CShims_sk_X509_free(untrustedStack) }
        for (i, cert) in parsed.enumerated() where i != leafIndex { _ = CShims_sk_X509_push(untrustedStack, cert.ref) }

        guard let ctx = X509_STORE_CTX_new() else { return untrusted("out of memory") }
        defer { X509_STORE_CTX_free(ctx) }
        guard X509_STORE_CTX_init(ctx, store.ref, leaf.ref, untrustedStack) == 1 else { return untrusted("cannot start chain verification") }
        // Time is checked per token against the signing time, below and in the decryptor.
        X509_VERIFY_PARAM_set_flags(X509_STORE_CTX_get0_param(ctx), UInt(X509_V_FLAG_NO_CHECK_TIME))
        guard X509_verify_cert(ctx) == 1 else {
            let code = X509_STORE_CTX_get_error(ctx)
            let reason = X509_verify_cert_error_string(Int(code)).map { String(cString: $0) }
            return untrusted("the certificate chain does not lead to the trusted root", reason: reason)
        }
        guard let chain = X509_STORE_CTX_get0_chain(ctx), CShims_sk_X509_num(chain) == 3,
              let intermediateRef = CShims_sk_X509_value(chain, 1), let intermediateDER = X509Certificate.encode(intermediateRef),
              let intermediate = parsed.first(where: { $0.der == intermediateDER })
        else {
            return untrusted("the chain is not leaf → intermediate → root")
        }
        guard intermediate.hasExtension(oid: Self.intermediateMarkerOID) else {
            return untrusted("the intermediate certificate lacks Apple's marker OID \(Self.intermediateMarkerOID)")
        }
        guard let leafValidity = leaf.validity, let intermediateValidity = intermediate.validity, let rootValidity = anchor.root.validity else {
            return untrusted("a certificate has an unreadable validity period")
        }
        guard let leafKey = leaf.publicKey() else { return untrusted("the signing certificate's public key cannot be read") }
        return .trusted(VerifiedSigner(leafKey: leafKey, validity: [leafValidity, intermediateValidity, rootValidity]))
    }
}
