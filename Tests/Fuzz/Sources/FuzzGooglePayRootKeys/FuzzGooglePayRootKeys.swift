// libFuzzer harness for Google's root keys document (`--google-root-keys`, fetched over HTTPS by the
// service): any bytes give a GooglePayRootKeys or a ConfigurationError, never a crash; a document
// read has at most maximumKeyCount keys, each a P-256 key.
import ApplePayDecryption

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzGooglePayRootKeys(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard let keys = try? GooglePayRootKeys(json: UnsafeRawBufferPointer(start: data, count: size)) else { return 0 }
    precondition(!keys.keys.isEmpty && keys.keys.count <= GooglePayRootKeys.maximumKeyCount)
    precondition(keys.fingerprint.utf8.count == 64)
    return 0
}
