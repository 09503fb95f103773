// libFuzzer harness for the BER/CMS reader: the SignedData parser over the input, then the
// location of the signer's and issuer's certificates exactly as the chain cache finds them.
@testable import ApplePayDecryption

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzCMSReader(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = UnsafeRawBufferPointer(start: data, count: size)
    _ = CertificateFields.issuerAndSerial(Array(bytes))
    guard let cms = try? CMSSignedData.parse(bytes) else { return 0 }
    // The ranges the parser hands on must lie inside the input: the engine slices with them unchecked.
    for range in [cms.certificates, cms.signerIdentifier, cms.signerIssuer, cms.signerSerial, cms.signedAttributes,
                  cms.signature, cms.messageDigest] {
        precondition(range.lowerBound >= 0 && range.upperBound <= size, "CMS range \(range) outside \(size) bytes")
    }
    // The signer's certificate and its issuer's, as the chain cache locates them.
    if let (leaf, issuer) = try? SignerChainCache.locateChain(cms, in: bytes) {
        precondition(leaf.upperBound <= size && issuer.upperBound <= size && leaf != issuer, "chain ranges out of place")
        precondition(cms.certificates.contains(leaf.lowerBound) && cms.certificates.contains(issuer.lowerBound), "chain outside the certificates")
    }
    return 0
}
