// `applepay-merchant session`: merchant validation; prints Apple's opaque session JSON exactly as received.
import ApplePayMerchantAPI
import ArgumentParser
import Foundation

struct SessionCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "session",
        abstract: "Request a merchant session (requestPaymentSession) and print it unchanged.",
        discussion: """
            stdout is the gateway's session JSON byte for byte (no newline added): hand it to the browser's \
            completeMerchantValidation. --validation-url is the URL from the onvalidatemerchant event; it is \
            refused (exit 1, invalidValidationURL, nothing sent) unless it is https on port 443, without \
            userinfo, query, fragment or percent-encoding, its host one of Apple's merchant-validation hosts \
            for the environment, and its path /paymentservices/paymentSession or /paymentservices/startSession. \
            Without it the environment's default gateway is used.

            --display-name: at most 64 characters, counted as Unicode scalars, no control, format (bidi, zero-width) or line-separator characters. \
            --domain is the initiativeContext: the verified merchant domain the page is served from.

            Example:
              applepay-merchant session --identity cert=identity.pem,key=identity.key \\
                --merchant-id merchant.com.example.store --domain shop.example.com \\
                --display-name "Example Store" \\
                --validation-url https://apple-pay-gateway.apple.com/paymentservices/startSession
            """
    )

    @OptionGroup var gateway: GatewayOptions

    @Option(
        name: .customLong("domain"),
        help: ArgumentHelp("The initiativeContext: the merchant domain the payment page is on.", valueName: "domain"))
    var domain: String

    @Option(
        name: .customLong("display-name"),
        help: ArgumentHelp("The store name shown on the payment sheet (at most 64 characters).", valueName: "name"))
    var displayName: String

    @Option(
        name: .customLong("validation-url"),
        help: ArgumentHelp("The validationURL of the browser's onvalidatemerchant event.", valueName: "url"))
    var validationURL: String?

    func run() async throws {
        let client = try gateway.makeClient(domains: [domain])
        let session = try await withClient(client) { client in
            try await client.requestPaymentSession(
                displayName: displayName, initiativeContext: domain, validationURL: validationURL)
        }
        Output.stdout(raw: session.json)
    }
}
