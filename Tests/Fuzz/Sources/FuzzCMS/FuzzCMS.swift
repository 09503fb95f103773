// libFuzzer harness for the BER/CMS reader: the SignedData parser over the input, then the
// location of the signer's and issuer's certificates exactly as the chain cache finds them.
@testable import ApplePayDecryption

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzCMSReader(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = UnsafeRawBufferPointer(start: data, count: size)
    _ = CertificateFields.issuerAndSerial(Array(bytes))
    guard let cms = try? CMSSignedData.parse(bytes) else { return 0 }
    // The ranges the parser hands on must lie inside the input: the engine slices with them unchecked.
    for range in [
        cms.certificates, cms.signerIdentifier, cms.signerIssuer, cms.signerSerial, cms.signedAttributes,
        cms.signature, cms.messageDigest,
    ] {
        precondition(range.lowerBound >= 0 && range.upperBound <= size, "CMS range \(range) outside \(size) bytes")
    }
    // One walk (the engine's) and two walks (the plain search) must agree: same ranges, or same error.
    let one = Result { () throws(ApplePayError) in try SignerChainCache.locateChain(cms, in: bytes) }
    let two = Result { () throws(ApplePayError) in try SignerChainCache.locateChainInTwoWalks(cms, in: bytes) }
    switch (one, two) {
    case let (.success(a), .success(b)): precondition(a == b, "one walk \(a), two walks \(b)")
    case let (.failure(a), .failure(b)):
        precondition(
            a.code == b.code && a.message == b.message && a.reason == b.reason, "one walk \(a), two walks \(b)")
    default: preconditionFailure("one walk \(one), two walks \(two)")
    }
    // The signer's certificate and its issuer's, as the chain cache locates them.
    if let (leaf, issuer) = try? SignerChainCache.locateChain(cms, in: bytes) {
        precondition(
            leaf.upperBound <= size && issuer.upperBound <= size && leaf != issuer, "chain ranges out of place")
        precondition(
            cms.certificates.contains(leaf.lowerBound) && cms.certificates.contains(issuer.lowerBound),
            "chain outside the certificates")
    }
    return 0
}
