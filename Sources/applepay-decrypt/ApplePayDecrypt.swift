// Entry point of the applepay-decrypt command: subcommands, and exit codes 0 / 1 / 2.
import ApplePayDecryption
import ArgumentParser
import Foundation

@main
struct ApplePayDecrypt {
    /// Exit codes are part of the contract: 0 decrypted, 1 token rejected, 2 bad usage or configuration.
    static func main() {
        ProcessHardening.apply()
        do {
            try MerchantToolDispatch.runIfRequested()
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
        abstract:
            "Verify and decrypt Apple Pay (EC_v1, RSA_v1), Google Pay (ECv1, ECv2, ECv2SigningOnly) and Samsung Pay (RSA1_5 + A128GCM) payment tokens.",
        discussion: """
            Every token is verified the way Apple specifies before it is decrypted: Apple's marker OIDs on the \
            leaf and intermediate certificates, the chain to Apple Root CA - G3 at the signing time, the CMS \
            signature and message digest, and the signing time against a freshness window. A rejected token \
            yields exactly one stable error code. Google Pay tokens are verified as Google specifies (the \
            signatures from Google's root keys, the key and message expirations) before they are decrypted. \
            Samsung Pay tokens carry no signature: they are decrypted with the --samsung-key their kid names \
            (a padding and a tag failure alike decryptionFailed), and their utc must be fresh; nothing says \
            they came from Samsung. One front door tells the wallets apart by shape, and one replay ledger \
            judges them all.

            Exit status: 0 decrypted, 1 token rejected (a JSON error object on stdout), 2 bad usage or \
            unreadable keys (a message on stderr).
            """,
        subcommands: [
            BatchCommand.self, MergeCommand.self, DecryptCommand.self, MerchantSessionCommand.self,
            MerchantDomainsCommand.self, KeysCommand.self,
        ]
    )
}

/// A configuration or usage problem: exit 2 with a message on stderr.
struct CLIError: Error {
    let message: String
    init(_ message: String) { self.message = message }
}

enum Output {
    static func stderr(_ line: String) { write(2, line + "\n") }

    /// Writes bytes to stdout as they are (no Foundation buffer in between). A result that cannot be
    /// written (a full disk, a closed pipe) fails the command: exit 0 would claim it was delivered.
    static func stdout(raw: UnsafeRawBufferPointer) throws(CLIError) {
        do { try WholeWrite.write(1, raw) } catch {
            throw CLIError("cannot write the result to standard output: \(error.description)")
        }
    }

    static func stdout(_ line: String) { write(1, line + "\n") }

    /// Through the package's one write loop (`WholeWrite`); a closed stream loses the text, as before.
    static func write(_ fd: Int32, _ text: String) {
        var text = text
        text.withUTF8 { try? WholeWrite.write(fd, UnsafeRawBufferPointer($0)) }
    }
}

/// What the process does before anything else, because keys and card numbers will be in memory.
enum ProcessHardening {
    static func apply() {
        StandardStreams.secure()
        // No core dumps: they would hold merchant keys and PANs.
        CoreDumps.disable(forbidAttach: false)
        installFatalSignalHandlers()
    }

    /// Swift's runtime backtracer on Linux answers a crash with registers and the memory around
    /// them on stderr, which here may hold key material or card data. SWIFT_BACKTRACE=enable=no
    /// would stop it, but the runtime reads it before `main`, so setting it would mean re-executing
    /// ourselves (a second start-up, and a variable anyone can override). Replacing the runtime's
    /// handlers, first thing in `main`, holds whatever the environment says: one line, then the
    /// default action, so the exit status still reports the signal (and RLIMIT_CORE keeps it dumpless).
    private static func installFatalSignalHandlers() {
        for signal in [SIGSEGV, SIGBUS, SIGILL, SIGTRAP, SIGFPE, SIGABRT, SIGSYS] {
            var action = sigaction()
            action.__sigaction_handler.sa_handler = { signal in
                let message: StaticString =
                    "applepay-decrypt: internal error (fatal signal); stopped without a memory dump\n"
                _ = write(2, message.utf8Start, message.utf8CodeUnitCount)
                Glibc.signal(signal, SIG_DFL)
                raise(signal)
            }
            sigemptyset(&action.sa_mask)
            _ = sigaction(signal, &action, nil)
        }
    }
}

/// Standard input, output and error as the process found them.
enum StandardStreams {
    /// Whether the process started with descriptor 0 closed (`<&-`): reading "-" is then an error.
    nonisolated(unsafe) static var stdinWasClosed = false

    /// Puts /dev/null on any of descriptors 0-2 that is closed, so that no file this process opens
    /// later (the result file, a key) becomes "stdin" or "stdout" by accident.
    static func secure() {
        for fd: Int32 in 0...2 where fcntl(fd, F_GETFD) == -1 && errno == EBADF {
            if fd == 0 { stdinWasClosed = true }
            let opened = open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY)
            if opened >= 0, opened != fd {
                dup2(opened, fd)
                close(opened)
            }
        }
    }
}
