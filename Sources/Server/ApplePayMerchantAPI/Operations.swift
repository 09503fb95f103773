// The request and response bodies of the four merchant API operations, and what each call returns.
import Foundation

/// `PaymentSessionRequest`: what `POST /paymentSession` sends.
struct PaymentSessionBody: Encodable {
    let merchantIdentifier: String
    let displayName: String
    let initiative: String
    let initiativeContext: String
}

/// `MerchantRegistrationRequest`: what `POST /registerMerchant` sends.
struct MerchantRegistrationBody: Encodable {
    let merchantIdentifier: String
    let domainNames: [String]
}

/// The opaque merchant session from `POST /paymentSession`, exactly the bytes the gateway sent: the browser
/// hands them to `completeMerchantValidation`, and Apple's signature inside covers them, so they are never
/// decoded and re-encoded.
public struct MerchantSession: Sendable {
    public let json: [UInt8]
}

/// `MerchantRegistrationResponse`.
public struct MerchantRegistration: Codable, Sendable, Equatable {
    public var status: String?
    public var merchantIdentifier: String?
    public var registeredDomains: [String]?
}

/// `MerchantDomainsResponse`.
public struct MerchantDomains: Codable, Sendable, Equatable {
    public var merchantIdentifier: String?
    public var domainNames: [String]?
}

/// `ErrorResponse`. Apple's gateway sends `statusCode` as a string ("400"); a number is read too.
struct GatewayErrorBody: Decodable {
    let statusCode: String?
    let statusMessage: String?

    enum CodingKeys: String, CodingKey { case statusCode, statusMessage }

    init(from decoder: Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        if let text = try? container.decodeIfPresent(String.self, forKey: .statusCode) {
            statusCode = text
        } else if let number = try? container.decodeIfPresent(Int.self, forKey: .statusCode) {
            statusCode = String(number)
        } else {
            statusCode = nil
        }
        statusMessage = try? container.decodeIfPresent(String.self, forKey: .statusMessage)
    }
}
