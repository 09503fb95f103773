// Entry point of the applepay-decrypt command: subcommands, and exit codes 0 / 1 / 2.
import ArgumentParser
import Foundation

@main
struct ApplePayDecrypt {
    /// Exit codes are part of the contract: 0 decrypted, 1 token rejected, 2 bad usage or configuration.
    static func main() {
        do {
            var command = try RootCommand.parseAsRoot()
            try command.run()
        } catch let exit as ExitCode {
            Foundation.exit(exit.rawValue)
        } catch let error as CLIError {
            Output.stderr("applepay-decrypt: \(error.message)")
            Foundation.exit(2)
        } catch {
            if RootCommand.exitCode(for: error) == .success {
                RootCommand.exit(withError: error)  // --help, --version
            }
            Output.stderr(RootCommand.fullMessage(for: error))
            Foundation.exit(2)
        }
    }
}

struct RootCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "applepay-decrypt",
        abstract: "Verify and decrypt Apple Pay payment tokens (EC_v1 and RSA_v1).",
        discussion: """
            Every token is verified the way Apple specifies before it is decrypted: Apple's marker OIDs on the \
            leaf and intermediate certificates, the chain to Apple Root CA - G3 at the signing time, the CMS \
            signature and message digest, and the signing time against a freshness window. A rejected token \
            yields exactly one stable error code.

            Exit status: 0 decrypted, 1 token rejected (a JSON error object on stdout), 2 bad usage or \
            unreadable keys (a message on stderr).
            """,
        subcommands: [BatchCommand.self, DecryptCommand.self]
    )
}

/// A configuration or usage problem: exit 2 with a message on stderr.
struct CLIError: Error {
    let message: String
    init(_ message: String) { self.message = message }
}

enum Output {
    static func stderr(_ line: String) {
        FileHandle.standardError.write(Data((line + "\n").utf8))
    }

    static func stdout(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }
}
