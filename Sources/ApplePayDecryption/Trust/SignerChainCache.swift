// Resolves a token's signer (its certificate and that certificate's issuer, nothing else) and keeps
// the verdict on their chain, bounded in entries and bytes, so a chain is verified once, not per token.
internal import ApplePayCrypto
import Synchronization

/// What the cache keeps for one signer: its key, to check each token's signature, and the verdict on
/// its chain. Only signers whose key produced a valid signature are ever kept.
package final class CachedSigner: @unchecked Sendable {
    // Sendable: immutable after creation.
    let leafKey: EVPKey
    let keyType: SigningKeyType
    /// Validity windows (Unix seconds) of leaf, intermediate and root when the chain is trusted
    /// (the signing time must lie in all); empty otherwise.
    let validity: [ClosedRange<Int64>]
    /// Why the chain is not trusted; nil when it is.
    let chainError: ApplePayError?
    /// The precomputed table of a P-256 leaf whose chain verified to the anchor (fixed-key
    /// verification); nil for RSA leaves, untrusted chains, or when OpenSSL could not build it (the
    /// EVP verifier is used then).
    let fixedKeyTable: P256SignerTable?

    init(leafKey: EVPKey, keyType: SigningKeyType, verdict: Result<[ClosedRange<Int64>], ApplePayError>) {
        self.leafKey = leafKey
        self.keyType = keyType
        switch verdict {
        case let .success(windows): (validity, chainError) = (windows, nil)
        case let .failure(error): (validity, chainError) = ([], error)
        }
        // Only now, after the chain verified: a table costs ~282 M instructions and ~150 KB, which
        // nobody but the holder of an Apple-issued leaf can make us spend.
        fixedKeyTable = chainError == nil && keyType == .ecP256 ? P256SignerTable.build(for: leafKey) : nil
    }

    var isTrusted: Bool { chainError == nil }
}

final class SignerChainCache: Sendable {
    static let leafMarkerOID = OID.appleLeafMarker
    static let intermediateMarkerOID = OID.appleIntermediateMarker

    /// Apple's chains are a handful (about 1.8 KB each); the limits only matter against hostile input.
    struct Limits: Sendable {
        var entries = 1024
        /// Certificate bytes kept for the full comparison on a hit.
        var bytes = 8 << 20
    }

    /// The result of verifying a chain: a verdict about the certificates (cached), or a failure that
    /// says nothing about them (allocation, an OpenSSL internal error), which is never cached: one
    /// such failure must not reject every token of Apple's current chain until restart.
    enum ChainVerdict {
        case verdict(Result<[ClosedRange<Int64>], ApplePayError>)
        case transient(ApplePayError)
    }

    typealias ChainCheck = @Sendable (_ leaf: X509Certificate, _ issuer: X509Certificate) -> ChainVerdict

    /// The two certificates an outcome was computed from, compared in full on every hit.
    private final class Entry: @unchecked Sendable {
        // Sendable: `wasHit` is only touched under the table's lock; the rest is immutable.
        let key: Int
        let leaf: [UInt8]
        let issuer: [UInt8]
        let signer: CachedSigner
        var wasHit = false
        var byteCount: Int { leaf.count + issuer.count }

        init(key: Int, leaf: [UInt8], issuer: [UInt8], signer: CachedSigner) {
            (self.key, self.leaf, self.issuer, self.signer) = (key, leaf, issuer, signer)
        }
    }

    private struct Table {
        /// By a hash of (leaf, issuer); collisions resolved by full comparison.
        var buckets: [Int: [Entry]] = [:]
        /// Insertion order, oldest first, for eviction.
        var order: [Entry] = []
        var bytes = 0
    }

    private let anchor: TrustAnchor
    private let store: X509Store
    private let limits: Limits
    private let chainCheck: ChainCheck?
    private let table = Mutex(Table())
    private let verifications = Atomic<Int>(0)

    /// `chainCheck` replaces the OpenSSL chain verification (tests of what is and is not cached).
    init(anchor: TrustAnchor, limits: Limits = Limits(), chainCheck: ChainCheck? = nil) {
        self.anchor = anchor
        self.store = X509Store(anchor: anchor.root)
        self.limits = limits
        self.chainCheck = chainCheck
    }

    var cachedChainCount: Int { table.withLock { $0.order.count } }
    /// Certificate bytes held by the cache.
    var storedBytes: Int { table.withLock { $0.bytes } }
    /// Chain verifications run so far (cache misses that got as far as the chain).
    var chainVerifications: Int { verifications.load(ordering: .relaxed) }

    private static func untrusted(_ message: String, reason: String? = nil) -> ApplePayError {
        ApplePayError(.untrustedCertificateChain, message, field: "signature", reason: reason)
    }

    /// The signer for `cms` (offsets into `bytes`): cached, or admitted now. A hit allocates nothing.
    func signer(for cms: CMSSignedData, in bytes: UnsafeRawBufferPointer) throws(ApplePayError) -> CachedSigner {
        let (leafRange, issuerRange) = try Self.locateChain(cms, in: bytes)
        let leaf = UnsafeRawBufferPointer(rebasing: bytes[leafRange])
        let issuer = UnsafeRawBufferPointer(rebasing: bytes[issuerRange])
        // The bucket key only has to spread chains apart (a hit compares every byte): the lengths and
        // the tails (each certificate's own signature).
        var hasher = Hasher()
        hasher.combine(leaf.count)
        hasher.combine(bytes: UnsafeRawBufferPointer(rebasing: leaf.suffix(32)))
        hasher.combine(issuer.count)
        hasher.combine(bytes: UnsafeRawBufferPointer(rebasing: issuer.suffix(32)))
        let key = hasher.finalize()

        func lookup(_ state: inout Table) -> CachedSigner? {
            guard let bucket = state.buckets[key] else { return nil }
            for entry in bucket where bytesEqual(entry.leaf, leaf) && bytesEqual(entry.issuer, issuer) {
                if !entry.wasHit { entry.wasHit = true }
                return entry.signer
            }
            return nil
        }
        if let cached = table.withLock({ lookup(&$0) }) { return cached }

        // Admitted outside the lock; two threads meeting a new chain at once both verify it, and the
        // first to finish is the one kept.
        let signer = try admit(cms, leaf: leaf, issuer: issuer, in: bytes)
        let entry = Entry(key: key, leaf: Array(leaf), issuer: Array(issuer), signer: signer)
        return table.withLock { state in
            if let raced = lookup(&state) { return raced }
            guard entry.byteCount <= limits.bytes else { return signer }
            makeRoom(&state, for: entry)
            state.buckets[key, default: []].append(entry)
            state.order.append(entry)
            state.bytes += entry.byteCount
            return signer
        }
    }

    /// The signer's certificate (matched by the CMS issuerAndSerialNumber) and its issuer's (the first
    /// other certificate whose subject is the signer's issuer). Any other certificate in the unsigned
    /// set is ignored, so extra certificates neither change the cache key nor the chain verified.
    ///
    /// One walk in token order, each certificate's fields read once (two walks read three certificates
    /// for the usual leaf-first pair: about 1 K instructions more per token). The certificates before
    /// the signer's are kept on the stack so that an issuer placed before it is still found; the walk
    /// stops where the two-walk search stopped, so it meets the same malformed elements. More than
    /// `keptBeforeSigner` certificates before the signer's (hostile input only) fall back to two walks.
    static func locateChain(_ cms: CMSSignedData, in bytes: UnsafeRawBufferPointer) throws(ApplePayError) -> (
        Range<Int>, Range<Int>
    ) {
        let reader = BERReader(bytes: bytes)
        let sidIssuer = UnsafeRawBufferPointer(rebasing: bytes[cms.signerIssuer])
        let sidSerial = UnsafeRawBufferPointer(rebasing: bytes[cms.signerSerial])
        func equal(_ range: Range<Int>, _ other: UnsafeRawBufferPointer) -> Bool {
            bytesEqual(UnsafeRawBufferPointer(rebasing: bytes[range]), other)
        }
        var leaf: (range: Range<Int>, issuer: Range<Int>)? = nil
        var issuer: Range<Int>? = nil
        var overflowed = false
        do throws(BERError) {
            try withUnsafeTemporaryAllocation(
                of: (range: Range<Int>, subject: Range<Int>).self, capacity: keptBeforeSigner
            ) { (seen) throws(BERError) in
                var count = 0
                var offset = cms.certificates.lowerBound
                while offset < cms.certificates.upperBound {
                    let element = try reader.element(at: offset, limit: cms.certificates.upperBound)
                    offset = element.end
                    guard let fields = CertificateFields.locate(reader, element) else { continue }
                    if let leaf {
                        if element.encodedRange != leaf.range,
                            equal(fields.subject, UnsafeRawBufferPointer(rebasing: bytes[leaf.issuer]))
                        {
                            issuer = element.encodedRange
                            return
                        }
                    } else if equal(fields.issuer, sidIssuer), equal(fields.serial, sidSerial) {
                        leaf = (element.encodedRange, fields.issuer)
                        guard !overflowed else { return }
                        let wanted = UnsafeRawBufferPointer(rebasing: bytes[fields.issuer])
                        for k in 0..<count where equal(seen[k].subject, wanted) {
                            issuer = seen[k].range
                            return
                        }
                    } else if count < keptBeforeSigner {
                        (seen.baseAddress! + count).initialize(to: (element.encodedRange, fields.subject))
                        count += 1
                    } else {
                        overflowed = true
                    }
                }
            }
        } catch {
            throw malformedCertificates(error)
        }
        if overflowed, leaf != nil { return try locateChainInTwoWalks(cms, in: bytes) }
        guard let leaf else {
            throw untrusted("the signer's certificate (its issuerAndSerialNumber) is not in the signature")
        }
        guard let issuer else { throw untrusted("the certificate that issued the signer's is not in the signature") }
        return (leaf.range, issuer)
    }

    /// Certificates before the signer's that `locateChain` keeps on the stack (Apple sends two in all).
    static let keptBeforeSigner = 8

    private static func malformedCertificates(_ error: BERError) -> ApplePayError {
        ApplePayError(
            .invalidSignature,
            "the signature is not an acceptable CMS SignedData: the certificates field is malformed: \(error.message)",
            field: "signature", reason: "at byte \(error.offset)")
    }

    /// `locateChain` in two walks (the signer's certificate, then its issuer's from the start): what
    /// the one walk does, for any number of certificates.
    static func locateChainInTwoWalks(_ cms: CMSSignedData, in bytes: UnsafeRawBufferPointer) throws(ApplePayError) -> (
        Range<Int>, Range<Int>
    ) {
        let reader = BERReader(bytes: bytes)
        let sidIssuer = UnsafeRawBufferPointer(rebasing: bytes[cms.signerIssuer])
        let sidSerial = UnsafeRawBufferPointer(rebasing: bytes[cms.signerSerial])
        var leaf: (range: Range<Int>, issuer: Range<Int>)? = nil
        var issuer: Range<Int>? = nil
        do throws(BERError) {
            // Pass 1: the signer's certificate; pass 2: its issuer's (token order is not fixed).
            for pass in 0..<2 {
                var offset = cms.certificates.lowerBound
                while offset < cms.certificates.upperBound {
                    let element = try reader.element(at: offset, limit: cms.certificates.upperBound)
                    offset = element.end
                    guard let fields = CertificateFields.locate(reader, element) else { continue }
                    if pass == 0 {
                        if bytesEqual(UnsafeRawBufferPointer(rebasing: bytes[fields.issuer]), sidIssuer),
                            bytesEqual(UnsafeRawBufferPointer(rebasing: bytes[fields.serial]), sidSerial)
                        {
                            leaf = (element.encodedRange, fields.issuer)
                            break
                        }
                    } else if let leaf, element.encodedRange != leaf.range,
                        bytesEqual(
                            UnsafeRawBufferPointer(rebasing: bytes[fields.subject]),
                            UnsafeRawBufferPointer(rebasing: bytes[leaf.issuer]))
                    {
                        issuer = element.encodedRange
                        break
                    }
                }
                if leaf == nil { break }
            }
        } catch {
            throw malformedCertificates(error)
        }
        guard let leaf else {
            throw untrusted("the signer's certificate (its issuerAndSerialNumber) is not in the signature")
        }
        guard let issuer else { throw untrusted("the certificate that issued the signer's is not in the signature") }
        return (leaf.range, issuer)
    }

    /// A cache miss: the signature over the signed attributes is verified with the leaf's key first,
    /// and only then the chain. Nothing fails into the cache before the signature has verified, so
    /// junk cannot fill it and each entry costs its sender a signature by that very certificate.
    private func admit(
        _ cms: CMSSignedData, leaf leafBytes: UnsafeRawBufferPointer, issuer issuerBytes: UnsafeRawBufferPointer,
        in bytes: UnsafeRawBufferPointer
    ) throws(ApplePayError) -> CachedSigner {
        OpenSSLErrors.clear()
        defer { OpenSSLErrors.clear() }
        for (name, der) in [("signing", leafBytes), ("intermediate", issuerBytes)] {
            // A hit compares raw bytes, so one certificate must have one encoding (see BERReader.isDER).
            let reader = BERReader(bytes: der)
            guard let element = try? reader.root(), reader.isDER(element) else {
                throw Self.untrusted("the \(name) certificate is not DER-encoded")
            }
        }
        guard let leaf = X509Certificate.parse(der: Array(leafBytes)) else {
            throw Self.untrusted("the signing certificate cannot be parsed", reason: OpenSSLErrors.drain())
        }
        guard let leafKey = leaf.publicKey() else {
            throw Self.untrusted("the signing certificate's public key cannot be read", reason: OpenSSLErrors.drain())
        }
        let keyType = try Self.signingKeyType(leafKey)
        guard cms.signatureAlgorithm.keyType == keyType else {
            throw ApplePayError(
                .invalidSignature,
                "the signatureAlgorithm (\(cms.signatureAlgorithm)) does not match the signing certificate's \(keyType.rawValue) key",
                field: "signature")
        }
        let attributesDigest = DigestContext()
        attributesDigest.update([0x31])  // the signature covers the DER SET OF, not the [0] IMPLICIT tag
        attributesDigest.update(UnsafeRawBufferPointer(rebasing: bytes[cms.signedAttributes.dropFirst()]))
        let digest = attributesDigest.finish()
        let verified = digest.withUnsafeBytes {
            leafKey.verify(UnsafeRawBufferPointer(rebasing: bytes[cms.signature]), overDigest: $0)
        }
        guard verified else {
            throw ApplePayError(
                .invalidSignature, "the CMS signature does not verify with the signing certificate", field: "signature",
                reason: OpenSSLErrors.drain())
        }
        guard let issuer = X509Certificate.parse(der: Array(issuerBytes)) else {
            throw Self.untrusted("the intermediate certificate cannot be parsed", reason: OpenSSLErrors.drain())
        }
        verifications.add(1, ordering: .relaxed)
        switch (chainCheck ?? verifyChain)(leaf, issuer) {
        case let .transient(error): throw error
        case let .verdict(verdict): return CachedSigner(leafKey: leafKey, keyType: keyType, verdict: verdict)
        }
    }

    /// Apple signs with EC P-256 (EC_v1 tokens) or RSA-2048 (RSA_v1 tokens): anything else is refused
    /// before its signature is even checked. The curve is checked by name, not by its bit count.
    static func signingKeyType(_ key: EVPKey) throws(ApplePayError) -> SigningKeyType {
        switch key.kind {
        case .ec where key.curveName == "prime256v1": return .ecP256
        // RSA is bounded in size and exponent: a self-made leaf with a huge exponent would make every
        // one of its tokens cost some 60 ordinary verifications before its chain is refused.
        case .rsa where (2048...4096).contains(key.bits) && key.rsaPublicExponent == 65537: return .rsa
        default:
            throw untrusted(
                "the signing certificate's key is \(key.describe()); Apple signs with EC P-256 or RSA of 2048 to 4096 bits with exponent 65537"
            )
        }
    }

    /// Evicts until `entry` fits: untrusted verdicts first (anyone can mint them with a key of their
    /// own), then trusted chains never hit since they were cached, then the rest, oldest first within
    /// each class. Trusted entries need certificates Apple issued, in DER (one encoding each), so a
    /// sender can add at most a few per genuine chain (ECDSA (r, n−s) variants of the two
    /// certificate signatures): a flood of its own making never pushes Apple's current chain out.
    private func makeRoom(_ state: inout Table, for entry: Entry) {
        var excessEntries = state.order.count + 1 - limits.entries
        var excessBytes = state.bytes + entry.byteCount - limits.bytes
        guard excessEntries > 0 || excessBytes > 0 else { return }
        var victims = Set<ObjectIdentifier>()
        classes: for evictable in [
            { (e: Entry) in !e.signer.isTrusted }, { (e: Entry) in !e.wasHit }, { (_: Entry) in true },
        ] {
            for candidate in state.order where evictable(candidate) && !victims.contains(ObjectIdentifier(candidate)) {
                victims.insert(ObjectIdentifier(candidate))
                excessEntries -= 1
                excessBytes -= candidate.byteCount
                if excessEntries <= 0 && excessBytes <= 0 { break classes }
            }
        }
        for victim in state.order where victims.contains(ObjectIdentifier(victim)) {
            state.buckets[victim.key]?.removeAll { $0 === victim }
            if state.buckets[victim.key]?.isEmpty == true { state.buckets[victim.key] = nil }
            state.bytes -= victim.byteCount
        }
        state.order.removeAll { victims.contains(ObjectIdentifier($0)) }
    }

    /// X509 verification errors that are not a verdict about the certificates.
    static func isTransient(verifyResult: Int32, error code: Int32) -> Bool {
        X509Store.isTransient(verifyResult: verifyResult, error: code)
    }

    private func verifyChain(leaf: X509Certificate, issuer: X509Certificate) -> ChainVerdict {
        func untrusted(_ message: String, reason: String? = nil) -> ChainVerdict {
            .verdict(.failure(Self.untrusted(message, reason: reason)))
        }
        guard leaf.hasExtension(oid: Self.leafMarkerOID) else {
            return untrusted("the signing certificate lacks Apple's leaf marker OID \(Self.leafMarkerOID)")
        }
        switch store.verify(leaf: leaf, intermediate: issuer) {
        case .verified: break
        case let .transient(what):
            return .transient(
                Self.untrusted("the certificate chain could not be verified: \(what)", reason: OpenSSLErrors.drain()))
        case let .rejected(reason):
            return untrusted("the certificate chain does not lead to the trusted root", reason: reason)
        case .unexpectedShape: return untrusted("the chain is not leaf → intermediate → root")
        }
        guard issuer.hasExtension(oid: Self.intermediateMarkerOID) else {
            return untrusted("the intermediate certificate lacks Apple's marker OID \(Self.intermediateMarkerOID)")
        }
        guard let leafValidity = leaf.validity, let intermediateValidity = issuer.validity,
            let rootValidity = anchor.root.validity
        else {
            return untrusted("a certificate has an unreadable validity period")
        }
        return .verdict(.success([leafValidity, intermediateValidity, rootValidity]))
    }
}
