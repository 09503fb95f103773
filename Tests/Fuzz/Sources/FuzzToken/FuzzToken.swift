// libFuzzer harness for the public token parser: any bytes give a token or an ApplePayError, never a crash.
import ApplePayDecryption

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzTokenParser(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    _ = try? PaymentToken.parse(Array(UnsafeBufferPointer(start: data, count: size)))
    return 0
}
