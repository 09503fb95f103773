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
            {"token": ...}, the paymentData JSON base64-encoded, or the envelope {"paymentToken": TOKEN, \
            "paymentRequest": {...}} that the service and batch take (its request is checked as --payment-request's). Use - for stdin. At most --max-item-bytes \
            are read (default 1 MiB); a larger input is rejected as malformedToken (exit 1) after reading one \
            byte past the limit.

            On success stdout is the decrypted payment data as one JSON object, fields and values unchanged (exit 0). \
            A rejected token prints {"error": CODE, "message": ..., "field": PATH or null} and, where OpenSSL gave one, \
            "reason" (exit 1). Codes: malformedToken, \
            unsupportedVersion, invalidSignature, untrustedCertificateChain, signingTimeOutOfRange, \
            unknownMerchantKey, decryptionFailed, invalidPayload, paymentRequestMismatch.

            With --payment-request FILE (the ApplePayPaymentRequest JSON the merchant gave the payment sheet), \
            the decrypted token must also be the payment that request asked for (applicationData, currency, \
            amount, capabilities, networks, multi-merchant contexts); a token that is not gets \
            paymentRequestMismatch with the request member as field. A request that breaks the schema is a \
            usage error (exit 2) naming the member.

            A Google Pay token (told apart by its shape: a top-level protocolVersion or signedMessage member, and no data or header) is verified with \
            --google-root-keys for one of the --google-recipient-id values and decrypted with the \
            --google-merchant-key keys; its codes add intermediateKeyExpired and messageExpired. Without those \
            keys it is unknownMerchantKey. A payment request binds Apple Pay tokens: a Google Pay token with one \
            (--payment-request, or an envelope) is paymentRequestMismatch.

            A Samsung Pay token (a compact JWE: bare, the app's paymentCredential with 3DS.data, or the web \
            checkout's envelope) is decrypted with the --samsung-key whose kid it names; its utc must lie within \
            --window of --now (messageExpired), a payment request binds its amount and currency_code, and a \
            padding failure and a tag failure are the same decryptionFailed. Nothing in such a token is signed: \
            the result never says it came from Samsung.

            Example:
              applepay-decrypt decrypt token.json \\
                --merchant cert=merchant_cert.pem,key=merchant_key.pem
              applepay-decrypt decrypt google-token.json --google-root-keys keys.json \\
                --google-recipient-id merchant:12345678901234567890 --google-merchant-key google-key.pem
              applepay-decrypt decrypt samsung-token.json --samsung-key samsung-key.pem \\
                --now 2026-01-01T00:00:00.000Z
            """
    )

    @Argument(help: ArgumentHelp("The token file, or - for stdin.", valueName: "TOKEN_FILE"))
    var tokenFile: String

    @OptionGroup var engine: EngineOptions

    @Option(
        name: .customLong("payment-request"),
        help: ArgumentHelp("Check the token against this ApplePayPaymentRequest JSON file.", valueName: "FILE"))
    var paymentRequestFile: String?

    @OptionGroup(title: "Google Pay") var googlePay: GooglePayOptions

    @OptionGroup(title: "Samsung Pay") var samsungPay: SamsungPayOptions

    func validate() throws { try engine.requireKeys(google: googlePay, samsung: samsungPay) }

    func run() throws {
        // Another wallet's keys only: Apple Pay tokens meet an engine without merchants (unknownMerchantKey
        // once they verify; junk keeps its own code).
        let wallets = WalletDecryptor(
            applePay: try engine.makeDecryptor(allowingNoMerchants: true), googlePay: try googlePay.makeDecryptor(),
            samsungPay: try samsungPay.makeDecryptor(window: engine.window))
        let request = try readPaymentRequest()
        let limit = ItemLimit(bytes: engine.maxItemBytes)
        let input = try readToken(limit: limit)
        // The front door: a token of either wallet (told apart by shape), or a {"paymentToken",
        // "paymentRequest"} envelope; with --payment-request the token must be that request's payment.
        let outcome: WalletOutcome
        if input.oversized {
            outcome = WalletOutcome(refusing: ApplePayError(.malformedToken, limit.message, field: "$"))
        } else if let request {
            outcome = wallets.decrypt(input.bytes, at: engine.referenceTime, expecting: request)
        } else {
            outcome = wallets.decrypt(input.bytes, at: engine.referenceTime)
        }
        // Straight from the wiped plaintext into a wiped buffer, then to stdout: no String of card data.
        let out = SensitiveBuffer()
        outcome.write(.payment, into: out)
        out.append(byte: 0x0A)
        defer { out.removeAll() }
        try out.withUnsafeBytes { bytes throws(CLIError) in try Output.stdout(raw: bytes) }
        if outcome.error != nil { throw ExitCode(1) }
    }

    /// The --payment-request file, validated (a usage error names the member that breaks the schema).
    private func readPaymentRequest() throws -> PaymentRequest? {
        guard let path = paymentRequestFile else { return nil }
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            throw CLIError("cannot read the payment request file \(path): \(String(cString: strerror(errno)))")
        }
        defer { close(fd) }
        let input: BoundedRead
        do { input = try BoundedRead.read(fd, limit: PaymentRequest.maxJSONLength) } catch {
            throw CLIError("cannot read the payment request file \(path): \(error.text)")
        }
        guard !input.oversized else {
            throw CLIError("the payment request file \(path) is larger than \(PaymentRequest.maxJSONLength) bytes")
        }
        do throws(PaymentRequest.ValidationError) {
            return try PaymentRequest(json: input.bytes)
        } catch {
            throw CLIError(
                "the payment request in \(path) is not a valid ApplePayPaymentRequest: \(error.member): \(error.message)"
            )
        }
    }

    /// The token file or stdin, read through the item limit (never more than limit + 1 bytes).
    private func readToken(limit: ItemLimit) throws -> BoundedRead {
        let fd: Int32
        if tokenFile == "-" {
            guard !StandardStreams.stdinWasClosed else {
                throw CLIError("TOKEN_FILE - reads stdin, but stdin is closed")
            }
            fd = 0
        } else {
            fd = open(tokenFile, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else {
                throw CLIError("cannot read the token file \(tokenFile): \(String(cString: strerror(errno)))")
            }
        }
        defer { if fd != 0 { close(fd) } }
        do {
            return try BoundedRead.read(fd, limit: limit.bytes)
        } catch {
            throw CLIError("cannot read the token from \(tokenFile == "-" ? "stdin" : tokenFile): \(error.text)")
        }
    }
}
