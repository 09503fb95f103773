// The decrypted payment: a typed view of Apple's payment data plus the exact JSON it came from.

/// How the card was authenticated: a 3-D Secure cryptogram or EMV data.
public enum PaymentCredential: Sendable, Equatable {
    case threeDSecure(onlinePaymentCryptogram: String, eciIndicator: String?)
    case emv(emvData: String, encryptedPINData: String?)
    /// A `paymentDataType` this library does not model; the raw `paymentData` object.
    case other(type: String?, paymentData: JSONValue?)
}

public struct DecryptedPayment: Sendable {
    public let version: PaymentToken.Version
    public let transactionId: String
    /// Device PAN (DPAN) or merchant token PAN.
    public let applicationPrimaryAccountNumber: String
    /// YYMMDD.
    public let applicationExpirationDate: String?
    /// ISO 4217 numeric code, as a string.
    public let currencyCode: String?
    /// Amount in minor units, exactly as written.
    public let transactionAmount: String?
    public let cardholderName: String?
    public let deviceManufacturerIdentifier: String?
    public let paymentDataType: String?
    public let credential: PaymentCredential
    public let merchantTokenIdentifier: String?
    public let merchantTokenMetadata: JSONValue?
    public let authenticationResponses: JSONValue?
    /// The whole decrypted object, unknown fields included, keys in their original order.
    public let json: JSONValue
    /// The decrypted bytes exactly as Apple sealed them; wiped when the last reference goes away.
    public let plaintext: SensitiveBytes
    /// The signing time from the CMS signature (Unix seconds).
    public let signingTime: Int64

    static func build(plaintext: SensitiveBytes, version: PaymentToken.Version, transactionId: String,
                      signingTime: Int64) throws(ApplePayError) -> DecryptedPayment {
        let json: JSONValue
        do {
            json = try plaintext.withUnsafeBytes { (raw) throws(JSONSyntaxError) -> JSONValue in try JSONValue.parse(raw) }
        } catch {
            throw ApplePayError(.invalidPayload, "the decrypted payment data is not JSON", reason: error.description)
        }
        guard json.objectMembers != nil else { throw ApplePayError(.invalidPayload, "the decrypted payment data is not a JSON object") }
        guard let pan = json["applicationPrimaryAccountNumber"]?.stringValue, !pan.isEmpty else {
            throw ApplePayError(.invalidPayload, "the decrypted payment data has no applicationPrimaryAccountNumber",
                                field: "applicationPrimaryAccountNumber")
        }
        let type = json["paymentDataType"]?.stringValue
        let details = json["paymentData"]
        let credential: PaymentCredential
        if type == "3DSecure", let cryptogram = details?["onlinePaymentCryptogram"]?.stringValue {
            credential = .threeDSecure(onlinePaymentCryptogram: cryptogram, eciIndicator: details?["eciIndicator"]?.stringValue)
        } else if type == "EMV", let emv = details?["emvData"]?.stringValue {
            credential = .emv(emvData: emv, encryptedPINData: details?["encryptedPINData"]?.stringValue)
        } else {
            credential = .other(type: type, paymentData: details)
        }
        var amount: String? = nil
        switch json["transactionAmount"] {
        case let .number(n)?: amount = n
        case let .string(s)?: amount = s
        default: break
        }
        return DecryptedPayment(
            version: version,
            transactionId: transactionId,
            applicationPrimaryAccountNumber: pan,
            applicationExpirationDate: json["applicationExpirationDate"]?.stringValue,
            currencyCode: json["currencyCode"]?.stringValue,
            transactionAmount: amount,
            cardholderName: json["cardholderName"]?.stringValue,
            deviceManufacturerIdentifier: json["deviceManufacturerIdentifier"]?.stringValue,
            paymentDataType: type,
            credential: credential,
            merchantTokenIdentifier: json["merchantTokenIdentifier"]?.stringValue,
            merchantTokenMetadata: json["merchantTokenMetadata"],
            authenticationResponses: json["authenticationResponses"],
            json: json,
            plaintext: plaintext,
            signingTime: signingTime
        )
    }
}
