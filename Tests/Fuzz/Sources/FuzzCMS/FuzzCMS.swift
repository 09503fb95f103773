// libFuzzer harness for the BER/CMS reader: the SignedData parser over the input, then the
// certificate issuer/serial reader over each certificate it located (and over the input itself).
@testable import ApplePayDecryption

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzCMSReader(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = UnsafeRawBufferPointer(start: data, count: size)
    _ = CertificateFields.issuerAndSerial(bytes)
    guard let cms = try? CMSSignedData.parse(bytes) else { return 0 }
    // The ranges the parser hands on must lie inside the input: the engine slices with them unchecked.
    for range in [cms.certificates, cms.signerIdentifier, cms.signerIssuer, cms.signerSerial, cms.signedAttributes,
                  cms.signature, cms.signatureAlgorithm] + (cms.messageDigest.map { [$0] } ?? []) {
        precondition(range.lowerBound >= 0 && range.upperBound <= size, "CMS range \(range) outside \(size) bytes")
    }
    // Walk the certificate set the way the chain cache does.
    let reader = BERReader(bytes: bytes)
    var offset = cms.certificates.lowerBound
    while offset < cms.certificates.upperBound,
          let element = try? reader.element(at: offset, limit: cms.certificates.upperBound) {
        precondition(element.end > offset, "a certificate element does not advance")
        offset = element.end
        _ = CertificateFields.issuerAndSerial(reader.encoded(element))
    }
    return 0
}
