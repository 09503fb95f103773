// `mint-tokens`: the one program that mints factory tokens into a folder, for every script that needs them.
import ArgumentParser

/// `mint-tokens DIRECTORY COUNT [--signed-now]`: a merchant and COUNT distinct tokens (the C ABI's binding
/// tests and benchmark; the service's load runs with `--signed-now`). `mint-tokens vectors [DIRECTORY]`:
/// regenerates the bundled `Vectors/`. `mint-tokens google DIRECTORY COUNT`: Google Pay tokens;
/// `mint-tokens samsung DIRECTORY COUNT`: Samsung Pay tokens.
@main
struct MintTokens: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mint-tokens",
        abstract: "Mint test tokens (insecure test PKI) into a folder.",
        subcommands: [TokenFolder.self, GoogleFolder.self, SamsungFolder.self, MakeVectors.self],
        defaultSubcommand: TokenFolder.self
    )
}
