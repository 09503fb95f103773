// Entry point of `applepay-merchant`: Apple Pay on the Web's merchant API from the command line; exit 0 / 1 / 2.
import ApplePayDecryption
import ApplePayMerchantAPI
import ArgumentParser
import Foundation

@main
struct ApplePayMerchant {
    /// 0 success; 1 refused (by our rules or by the gateway) or failed on the way, with a JSON error object
    /// on stdout; 2 bad usage or an unreadable identity, with a message on stderr.
    static func main() async {
        // No core dumps: the merchant identity key is in memory.
        CoreDumps.disable(forbidAttach: true)
        do {
            var command = try RootCommand.parseAsRoot()
            if var command = command as? AsyncParsableCommand {
                try await command.run()
            } else {
                try command.run()
            }
        } catch let exit as ExitCode {
            Foundation.exit(exit.rawValue)
        } catch let error as MerchantAPIError {
            if error.code == .invalidIdentity {
                Output.stderr("applepay-merchant: \(error.message)")
                Foundation.exit(2)
            }
            Output.stderr("applepay-merchant: \(error.message)")
            Output.stdout(errorJSON(error))
            Foundation.exit(1)
        } catch let error as UsageError {
            Output.stderr("applepay-merchant: \(error.message)")
            Foundation.exit(2)
        } catch {
            if RootCommand.exitCode(for: error) == .success {
                RootCommand.exit(withError: error)  // --help
            }
            Output.stderr(RootCommand.fullMessage(for: error))
            Foundation.exit(2)
        }
    }

    static func errorJSON(_ error: MerchantAPIError) -> String {
        var object: [String: Any] = ["error": error.code.rawValue, "message": error.message]
        if let status = error.httpStatus { object["httpStatus"] = status }
        if let code = error.statusCode { object["statusCode"] = code }
        if let message = error.statusMessage { object["statusMessage"] = message }
        return Output.json(object)
    }
}

struct RootCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "applepay-merchant",
        abstract: "Apple Pay on the Web's merchant API: merchant validation sessions and merchant domains.",
        discussion: """
            Every call authenticates to Apple's gateway with the merchant identity certificate (mutual TLS). \
            Requests are checked before any connection is made: a validation URL must be https, port 443, \
            without userinfo, query or fragment, on one of Apple's published merchant-validation hosts for the \
            chosen environment; redirects are never followed.

            Exit status: 0 success; 1 refused or failed (a JSON object {"error", "message", "httpStatus", \
            "statusCode", "statusMessage"} on stdout); 2 bad usage or an unreadable identity (stderr).
            Error codes: invalidValidationURL, invalidRequest, connectionFailed, tlsFailure, timeout, \
            redirectRefused, gatewayError, invalidResponse.
            """,
        subcommands: [SessionCommand.self, DomainsCommand.self]
    )
}

/// A usage problem found after parsing: exit 2.
struct UsageError: Error {
    let message: String
    init(_ message: String) { self.message = message }
}

enum Output {
    static func stderr(_ line: String) {
        FileHandle.standardError.write(Data((line + "\n").utf8))
    }

    static func stdout(_ line: String) {
        stdout(raw: Array((line + "\n").utf8))
    }

    /// Writes bytes to stdout exactly as given.
    static func stdout(raw bytes: [UInt8]) {
        bytes.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let n = write(1, raw.baseAddress! + offset, raw.count - offset)
                if n < 0, errno == EINTR { continue }
                guard n > 0 else { return }
                offset += n
            }
        }
    }

    static func json(_ object: Any) -> String {
        guard
            let data = try? JSONSerialization.data(
                withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])
        else { return "{}" }
        return String(decoding: data, as: UTF8.self)
    }
}
