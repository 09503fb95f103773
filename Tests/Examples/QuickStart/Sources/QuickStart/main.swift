// Decrypts one bundled test token (the README's Swift example): swift run QuickStart PATH/TO/Vectors
import ApplePayDecryption
import Foundation

let vectors = URL(fileURLWithPath: CommandLine.arguments[1])
let merchant = try MerchantIdentity(
    certificateFile: vectors.appendingPathComponent("merchants/ec.cert.pem"),
    privateKeyFile: vectors.appendingPathComponent("merchants/ec.key.pem"))
// Tests only: the bundled tokens are signed by a test root. In production omit trustAnchor (Apple Root CA - G3).
let testRoot: [UInt8] = Array(try Data(contentsOf: vectors.appendingPathComponent("trust/test-root.pem")))
let decryptor = try PaymentTokenDecryptor(merchants: [merchant], trustAnchor: .insecureTestingOnlyRoot(pem: testRoot))

let token = try Data(contentsOf: vectors.appendingPathComponent("tokens/ec-3dsecure.json"))
let fresh = Date(timeIntervalSince1970: 1_772_366_460)  // 2026-03-01T12:01:00Z: the test token is fresh then
do throws(ApplePayError) {
    let payment = try decryptor.decrypt(token, at: .at(fresh))
    print("ok", payment)  // safe to log: the PAN masked, no cryptogram
} catch {
    print("declined", error.code.rawValue)  // a stable code: map it to a decline reason
}
