// libFuzzer harness for the Google Pay token reader: any bytes give a GooglePayToken or an
// ApplePayError (the reader also reads the signedKey and signedMessage documents inside), never a
// crash; the wallet test front ends dispatch on runs too, and a token it reads must have that shape.
import ApplePayDecryption

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzGooglePayToken(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = UnsafeRawBufferPointer(start: data, count: size)
    let shaped = GooglePayToken.hasShape(bytes)
    if (try? GooglePayToken.parse(bytes)) != nil {
        // A token the strict reader accepts is a Google Pay token by the lenient rule too.
        precondition(shaped, "a token GooglePayToken.parse accepts is not of the Google Pay shape")
    }
    return 0
}
