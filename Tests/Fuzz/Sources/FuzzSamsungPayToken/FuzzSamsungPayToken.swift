// libFuzzer harness for the Samsung Pay token reader (the app's envelope, the web checkout's wrapper,
// the bare compact JWE and its protected header) and the front door's shape dispatch: any bytes give a
// SamsungPayToken or an ApplePayError, never a crash; a token the reader accepts has Samsung Pay's shape
// and is dispatched to Samsung Pay.
import ApplePayDecryption

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzSamsungPayToken(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = UnsafeRawBufferPointer(start: data, count: size)
    let wallet = Wallet.of(bytes)
    let shaped = SamsungPayToken.hasShape(bytes)
    if (try? SamsungPayToken.parse(bytes)) != nil {
        precondition(shaped, "a token SamsungPayToken.parse accepts is not of the Samsung Pay shape")
        precondition(wallet == .samsungPay, "a Samsung Pay token the reader accepts is dispatched to \(wallet)")
    }
    return 0
}
