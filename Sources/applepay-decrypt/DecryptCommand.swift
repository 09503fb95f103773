// `applepay-decrypt decrypt`: one token from a file or stdin, payment JSON or error JSON on stdout.
import ApplePayDecryption
import ArgumentParser
import Foundation

struct DecryptCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "decrypt",
        abstract: "Verify and decrypt one token; print the payment data as JSON.",
        discussion: """
            TOKEN_FILE may hold the bare paymentData, a whole PKPaymentToken, {"paymentData": ...}, an Apple Pay JS \
            {"token": ...}, or the paymentData JSON base64-encoded. Use - for stdin.

            On success stdout is the decrypted payment data as one JSON object, fields and values unchanged (exit 0). \
            A rejected token prints {"error": CODE, "message": ..., "field": ...} (exit 1). Codes: malformedToken, \
            unsupportedVersion, invalidSignature, untrustedCertificateChain, signingTimeOutOfRange, \
            unknownMerchantKey, decryptionFailed, invalidPayload.

            Example:
              applepay-decrypt decrypt token.json \\
                --merchant cert=merchant_cert.pem,key=merchant_key.pem
            """
    )

    @Argument(help: ArgumentHelp("The token file, or - for stdin.", valueName: "TOKEN_FILE"))
    var tokenFile: String

    @OptionGroup var engine: EngineOptions

    func run() throws {
        let decryptor = try engine.makeDecryptor()
        let bytes: [UInt8]
        if tokenFile == "-" {
            bytes = [UInt8](FileHandle.standardInput.readDataToEndOfFile())
        } else {
            bytes = try EngineOptions.read(tokenFile, what: "token")
        }
        do {
            let payment = try decryptor.decrypt(bytes, at: engine.referenceTime)
            Output.stdout(payment.json.description)
        } catch {
            Output.stdout(error.jsonObject.description)
            throw ExitCode(1)
        }
    }
}
