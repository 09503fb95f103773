// Verifies a token's certificate chain once per distinct set of certificates and caches the
// outcome: the leaf's public key and the validity windows the signing time is checked against.
internal import CShims
import Synchronization

/// What a verified chain leaves behind for per-token checks.
final class VerifiedSigner: @unchecked Sendable {
    // Sendable: immutable after creation.
    let leafKey: EVPKey
    /// Validity windows (Unix seconds) of leaf, intermediate and root: the signing time must lie in all.
    let validity: [ClosedRange<Int64>]

    init(leafKey: EVPKey, validity: [ClosedRange<Int64>]) {
        self.leafKey = leafKey
        self.validity = validity
    }
}

final class SignerChainCache: Sendable {
    static let leafMarkerOID = "1.2.840.113635.100.6.29"
    static let intermediateMarkerOID = "1.2.840.113635.100.6.2.14"
    private static let capacity = 4096

    private enum Outcome: @unchecked Sendable {
        case trusted(VerifiedSigner)
        case untrusted(ApplePayError)
    }

    /// The bytes a cached outcome was computed from, compared in full on every hit.
    private struct Entry: @unchecked Sendable {
        let signerIdentifier: [UInt8]
        let certificates: [UInt8]
        let outcome: Outcome
    }

    private let anchor: TrustAnchor
    private let store: StoreBox
    /// Buckets by a hash of (signer identifier, certificates); collisions resolved by full comparison.
    private let table = Mutex<(buckets: [Int: [Entry]], count: Int)>(([:], 0))

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

    var cachedChainCount: Int { table.withLock { $0.count } }

    /// The verified signer for the certificates in `cms` (offsets into `bytes`), from the cache or verified now.
    func signer(for cms: CMSSignedData, in bytes: UnsafeRawBufferPointer) throws(ApplePayError) -> VerifiedSigner {
        let sid = UnsafeRawBufferPointer(rebasing: bytes[cms.signerIdentifier])
        let certificates = UnsafeRawBufferPointer(rebasing: bytes[cms.certificates])
        // The bucket key only has to spread chains apart (a hit compares every byte): the signer
        // identifier, the length, and the tail of the certificates (the last one's signature).
        var hasher = Hasher()
        hasher.combine(bytes: sid)
        hasher.combine(certificates.count)
        hasher.combine(bytes: UnsafeRawBufferPointer(rebasing: certificates.suffix(64)))
        let key = hasher.finalize()

        func lookup(_ state: inout (buckets: [Int: [Entry]], count: Int)) -> Outcome? {
            guard let bucket = state.buckets[key] else { return nil }
            for entry in bucket where bytesEqual(entry.signerIdentifier, sid) && bytesEqual(entry.certificates, certificates) {
                return entry.outcome
            }
            return nil
        }
        var outcome: Outcome
        if let cached = table.withLock({ lookup(&$0) }) {
            outcome = cached
        } else {
            // Verified outside the lock; two threads meeting a new chain at once both verify it,
            // and the first to finish is the one kept.
            outcome = verify(cms, in: bytes)
            let entry = Entry(signerIdentifier: Array(sid), certificates: Array(certificates), outcome: outcome)
            outcome = table.withLock { state in
                if let raced = lookup(&state) { return raced }
                if state.count >= Self.capacity { state = ([:], 0) }
                state.buckets[key, default: []].append(entry)
                state.count += 1
                return entry.outcome
            }
        }
        switch outcome {
        case let .trusted(signer): return signer
        case let .untrusted(error): throw error
        }
    }

    private func untrusted(_ message: String, reason: String? = nil) -> Outcome {
        .untrusted(ApplePayError(.untrustedCertificateChain, message, field: "signature", reason: reason))
    }

    private func verify(_ cms: CMSSignedData, in bytes: UnsafeRawBufferPointer) -> Outcome {
        OpenSSLErrors.clear()
        defer { OpenSSLErrors.clear() }
        let reader = BERReader(bytes: bytes)
        let issuer = Array(bytes[cms.signerIssuer])
        let serial = Array(bytes[cms.signerSerial])
        var parsed: [X509Certificate] = []
        var leafIndex: Int? = nil
        var offset = cms.certificates.lowerBound
        while offset < cms.certificates.upperBound {
            guard let element = try? reader.element(at: offset, limit: cms.certificates.upperBound) else {
                return untrusted("the certificates in the signature are malformed")
            }
            offset = element.end
            guard element.tag == 0x30 else { continue }  // other certificate choices are not used by Apple
            let der = reader.encoded(element)
            guard let cert = X509Certificate.parse(der: Array(der)) else { return untrusted("a certificate in the signature cannot be parsed") }
            if leafIndex == nil, let fields = CertificateFields.issuerAndSerial(der), fields.issuer == issuer, fields.serial == serial {
                leafIndex = parsed.count
            }
            parsed.append(cert)
        }
        guard let leafIndex else { return untrusted("the signer's certificate is not in the signature") }
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
        // Time is checked per token against the signing time, by the decryptor.
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
