// Shared test set-up: a client of the test gateway with the test merchant identity.
@testable import ApplePayMerchantAPI
import Foundation

func makeTestClient(
    _ gateway: TestGateway, identity: MerchantTLSIdentity? = nil, withoutCertificate: Bool = false,
    domains: [String] = ["shop.example.com"], trustRoot: String = "ca.pem",
    environment: GatewayEnvironment = .production, timeout: Duration = .seconds(10)
) throws -> MerchantAPIClient {
    let pki = TestPKI.shared
    let loaded: MerchantTLSIdentity? =
        try withoutCertificate
        ? nil
        : (identity ?? MerchantTLSIdentity.pem(certificatePath: pki.path("client.pem"), keyPath: pki.path("client.key")))
    return try MerchantAPIClient(
        merchantIdentifier: "merchant.com.example.test", optionalIdentity: loaded, domains: domains,
        gateway: try .insecureTestingOnly(
            baseURL: gateway.baseURL + "/paymentservices", trustRootPEM: pki.bytes(trustRoot), environment: environment),
        timeout: timeout)
}

let sessionPath = "/paymentservices/paymentSession"
