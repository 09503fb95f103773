// The `applepay-service` executable: parses the options, sets up logging, builds the application
// (ApplePayService) and runs it until SIGTERM or SIGINT has drained it.
import ApplePayDecryption
import ApplePayService
import ArgumentParser
import Logging

@main
struct ServiceCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "applepay-service",
        abstract: "Verify and decrypt Apple Pay payment tokens over HTTP (see openapi.yaml).")

    @OptionGroup var options: ServiceOptions

    func run() async throws {
        // First: merchant keys (and PKCS#11 PINs) are about to be in memory.
        CoreDumps.disable(forbidAttach: true)
        let level = Logger.Level(rawValue: options.logLevel) ?? .info
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        var logger = Logger(label: "applepay-service")
        logger.logLevel = level
        do {
            let app = try await buildApplication(options, logger: logger)
            try await app.runService()
        } catch let error as ServiceConfigurationError {
            logger.critical("configuration error", metadata: ["error": "\(error.description)"])
            throw ExitCode(2)
        }
        logger.info("stopped")
    }
}
