// libFuzzer harness for the documents inside a Google Pay token, `intermediateSigningKey.signedKey`
// and `signedMessage`: the input (after its first byte) is the document's text, carried as a JSON
// string in an otherwise well-formed token, so that every input reaches the inner reader. The first
// byte chooses where: 0 signedKey (ECv2), 1 signedMessage (ECv1), 2 signedMessage (ECv2),
// 3 signedMessage (ECv2SigningOnly, the message in clear).
import ApplePayDecryption

/// `text` as the contents of a JSON string: `"` and `\` escaped, control bytes as \u00XX, the rest
/// as it is (bytes that are not UTF-8 stay, and the outer reader refuses them).
func jsonStringContents(_ text: UnsafeRawBufferPointer) -> [UInt8] {
    var out: [UInt8] = []
    out.reserveCapacity(text.count + 16)
    let hex = Array("0123456789abcdef".utf8)
    for byte in text {
        switch byte {
        case 0x22, 0x5C: out += [0x5C, byte]
        case 0..<0x20: out += Array("\\u00".utf8) + [hex[Int(byte >> 4)], hex[Int(byte & 15)]]
        default: out.append(byte)
        }
    }
    return out
}

let signature = "MEQCIH6Q4OwQ0jAceFEkGF0JID6sJNXxOEi4r+mA7biRxqBQAiAondqoUpU/bdsrAOpZIsrHQS9nwiiNwOrr24RyPeHA0Q=="
let signedKey =
    #"{\"keyExpiration\":\"1542323393147\",\"keyValue\":\"MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE/1+3HBVSbdv+j7NaArdgMyoSAM43yRydzqdg1TxodSzA96Dj4Mc1EiKroxxunavVIvdxGnJeFViTzFvzFRxyCw\\u003d\\u003d\"}"#
let signedMessage =
    #"{\"tag\":\"jpGz1F1Bcoi/fCNxI9n7Qrsw7i7KHrGtTf3NrRclt+U\\u003d\",\"ephemeralPublicKey\":\"BJatyFvFPPD21l8/uLP46Ta1hsKHndf8Z+tAgk+DEPQgYTkhHy19cF3h/bXs0tWTmZtnNm+vlVrKbRU9K8+7cZs\\u003d\",\"encryptedMessage\":\"mKOoXwi8OavZ\"}"#

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzGooglePaySigned(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard size > 0, let data else { return 0 }
    let document = jsonStringContents(UnsafeRawBufferPointer(start: data + 1, count: size - 1))
    var token: [UInt8]
    switch data[0] % 4 {
    case 0:
        token = Array(
            #"{"protocolVersion":"ECv2","signature":"\#(signature)","intermediateSigningKey":{"signedKey":""#.utf8)
        token += document
        token += Array(#"","signatures":["\#(signature)"]},"signedMessage":"\#(signedMessage)"}"#.utf8)
    case 1:
        token = Array(#"{"protocolVersion":"ECv1","signature":"\#(signature)","signedMessage":""#.utf8)
        token += document
        token += Array(#""}"#.utf8)
    default:
        let version = data[0] % 4 == 2 ? "ECv2" : "ECv2SigningOnly"
        token = Array(
            #"{"protocolVersion":"\#(version)","signature":"\#(signature)","intermediateSigningKey":{"signedKey":"\#(signedKey)","signatures":["\#(signature)"]},"signedMessage":""#
                .utf8)
        token += document
        token += Array(#""}"#.utf8)
    }
    _ = try? GooglePayToken.parse(token)
    return 0
}
