// `applepay-merchant domains register|list|remove`: the merchant's Apple Pay on the Web domains.
import ApplePayMerchantAPI
import ArgumentParser
import Foundation

struct DomainsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "domains",
        abstract: "Register, list or remove the merchant's Apple Pay on the Web domains.",
        subcommands: [Register.self, List.self, Remove.self]
    )

    struct Register: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "register",
            abstract: "Register domains (registerMerchant); prints the gateway's answer as JSON.",
            discussion: """
                Each domain must already serve Apple's domain association file at \
                /.well-known/apple-developer-merchantid-domain-association. Domains are ASCII DNS names \
                (internationalised names in their xn-- form).
                """)
        @OptionGroup var gateway: GatewayOptions
        @Argument(help: ArgumentHelp("The domains to register.", valueName: "domain"))
        var domains: [String]

        func run() async throws {
            let answer = try await withClient(try gateway.makeClient()) {
                try await $0.registerMerchant(domainNames: domains)
            }
            Output.stdout(try encodeJSON(answer))
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "list", abstract: "List the registered domains (listMerchantDomains) as JSON.")
        @OptionGroup var gateway: GatewayOptions

        func run() async throws {
            let answer = try await withClient(try gateway.makeClient()) { try await $0.listMerchantDomains() }
            Output.stdout(try encodeJSON(answer))
        }
    }

    struct Remove: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "remove", abstract: "Remove a registered domain (removeMerchantDomain).",
            discussion: "A domain that is not registered is a gatewayError with httpStatus 404 (exit 1).")
        @OptionGroup var gateway: GatewayOptions
        @Argument(help: ArgumentHelp("The domain to remove.", valueName: "domain"))
        var domain: String

        func run() async throws {
            try await withClient(try gateway.makeClient()) { try await $0.removeMerchantDomain(domain) }
            Output.stdout(Output.json(["removed": domain]))
        }
    }
}

private func encodeJSON(_ value: some Encodable) throws -> String {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
    return String(decoding: try encoder.encode(value), as: UTF8.self)
}
