import ApplePayDecryption
import Foundation

/// What a payment service answers for one Apple Pay token.
enum Authorization: Equatable {
    case approve(cardPrefix: String)
    case decline(code: String)
}

/// Loads the merchant's payment processing certificate and key once, then decrypts tokens.
struct PaymentDesk {
    let decryptor: PaymentTokenDecryptor

    init(certificateFile: URL, privateKeyFile: URL, trustAnchor: TrustAnchor = .appleRootCAG3) throws {
        let merchant = try MerchantIdentity(certificateFile: certificateFile, privateKeyFile: privateKeyFile)
        decryptor = try PaymentTokenDecryptor(merchants: [merchant], trustAnchor: trustAnchor)  // 300 s window
    }

    /// Typed throws: `decrypt` throws only `ApplePayError`, so `error` needs no cast.
    func authorize(_ token: Data, at reference: ReferenceTime = .now) -> Authorization {
        do throws(ApplePayError) {
            let payment = try decryptor.decrypt(token, at: reference)  // any wrapping, Data or [UInt8]
            print(payment)  // safe to log: PAN masked, no cryptogram, EMV data or expiry
            switch payment.credential {
            case let .threeDSecure(cryptogram, eci): _ = (cryptogram, eci)  // to your card network
            case let .emv(emvData, encryptedPIN): _ = (emvData, encryptedPIN)
            case .other: return .decline(code: "unsupportedPaymentData")
            }
            return .approve(cardPrefix: String(payment.applicationPrimaryAccountNumber.prefix(6)))
        } catch {
            return .decline(code: error.code.rawValue)  // the stable code: map it to a decline reason
        }
    }

    /// Untyped: a `do` block with other throwing calls catches `any Error`; cast to `ApplePayError`.
    func authorize(tokenFile: URL, at reference: ReferenceTime = .now) -> Authorization {
        do {
            let token = try Data(contentsOf: tokenFile)
            let payment = try decryptor.decrypt(token, at: reference)
            return .approve(cardPrefix: String(payment.applicationPrimaryAccountNumber.prefix(6)))
        } catch let error as ApplePayError {
            return .decline(code: error.code.rawValue)
        } catch {
            return .decline(code: "unreadableToken")
        }
    }
}
