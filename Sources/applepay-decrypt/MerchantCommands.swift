// `merchant-session` and `merchant-domains`: hand over to the separate applepay-merchant tool (NIO stays out of this CLI).
import ArgumentParser
import Foundation

/// The merchant API client is in the server package (Sources/Server) so that this CLI and the engine's
/// test graph never link SwiftNIO or BoringSSL. These subcommands replace this process with that tool,
/// passing every argument through unchanged; its exit status and output are this command's.
enum MerchantToolDispatch {
    static let subcommands = ["merchant-session": "session", "merchant-domains": "domains"]
    static let buildHint =
        "build it with: swift build -c release --package-path Sources/Server --product applepay-merchant "
        + "(then put it beside applepay-decrypt, on PATH, or name it in APPLEPAY_MERCHANT_TOOL)"

    /// Runs before argument parsing, so that `--help` and every option reach the tool untouched.
    static func runIfRequested(_ arguments: [String] = CommandLine.arguments) throws {
        guard arguments.count >= 2, let toolCommand = subcommands[arguments[1]] else { return }
        try exec(toolCommand, Array(arguments.dropFirst(2)))
    }

    static func exec(_ toolCommand: String, _ arguments: [String]) throws -> Never {
        let tool = try locate()
        let argv = [tool, toolCommand] + arguments
        var cArguments = argv.map { strdup($0) } + [nil]
        execv(tool, &cArguments)
        let reason = String(cString: strerror(errno))
        throw CLIError("cannot run the merchant API tool \(tool): \(reason); \(buildHint)")
    }

    /// An absolute path to a regular file this process may execute (a relative path would depend on the
    /// working directory; a directory passes access(X_OK) and then fails in execv).
    static func isExecutableFile(_ path: String) -> Bool {
        var info = stat()
        return path.hasPrefix("/") && stat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFREG
            && access(path, X_OK) == 0
    }

    /// APPLEPAY_MERCHANT_TOOL if set (and then only that), else beside this executable, else on PATH.
    static func locate() throws -> String {
        let environment = ProcessInfo.processInfo.environment
        if let named = environment["APPLEPAY_MERCHANT_TOOL"], !named.isEmpty {
            guard isExecutableFile(named) else {
                throw CLIError(
                    "APPLEPAY_MERCHANT_TOOL=\(named) is not an absolute path to an executable file; \(buildHint)")
            }
            return named
        }
        if let own = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
            let beside = PathName.directory(of: own) + "/applepay-merchant"
            if isExecutableFile(beside) { return beside }
        }
        for directory in (environment["PATH"] ?? "").split(separator: ":") where directory.hasPrefix("/") {
            let candidate = String(directory) + "/applepay-merchant"
            if isExecutableFile(candidate) { return candidate }
        }
        throw CLIError(
            "the merchant API tool applepay-merchant was not found (APPLEPAY_MERCHANT_TOOL, beside applepay-decrypt, PATH); \(buildHint)"
        )
    }
}

/// Listed in the root command's help; the arguments are handed over before parsing (see `MerchantToolDispatch`).
struct MerchantSessionCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "merchant-session",
        abstract:
            "Apple Pay on the Web merchant validation: print Apple's session JSON (runs applepay-merchant session).",
        discussion: """
            applepay-decrypt merchant-session --identity cert=PATH,key=PATH|p12=PATH[,password-env=VAR] \
            --merchant-id ID --domain DOMAIN --display-name NAME [--validation-url URL] [--sandbox]

            Runs the applepay-merchant tool with the same arguments (APPLEPAY_MERCHANT_TOOL, else beside this \
            executable, else PATH); `applepay-decrypt merchant-session --help` shows its full help. \
            If it is missing, \(MerchantToolDispatch.buildHint).
            """)

    @Argument(parsing: .captureForPassthrough) var arguments: [String] = []

    func run() throws { try MerchantToolDispatch.exec("session", arguments) }
}

struct MerchantDomainsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "merchant-domains",
        abstract: "Register, list or remove Apple Pay on the Web merchant domains (runs applepay-merchant domains).",
        discussion: """
            applepay-decrypt merchant-domains register|list|remove --identity SPEC --merchant-id ID [DOMAIN...]

            Runs the applepay-merchant tool with the same arguments; `applepay-decrypt merchant-domains list \
            --help` shows its full help. If it is missing, \(MerchantToolDispatch.buildHint).
            """)

    @Argument(parsing: .captureForPassthrough) var arguments: [String] = []

    func run() throws { try MerchantToolDispatch.exec("domains", arguments) }
}
