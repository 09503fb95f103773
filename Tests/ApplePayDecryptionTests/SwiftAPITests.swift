// The Swift API as a new user meets it: the README's and the articles' examples compiled and run, inputs
// of any DataProtocol and from files, errors that read well, payments that are safe to print.
import ApplePayDecryption
import ApplePayTestSupport
import Dispatch
import Foundation
import Synchronization
import Testing

enum ExampleSource {
    static let file = Paths.packageRoot.appendingPathComponent(
        "Tests/ApplePayDecryptionTests/Examples/PaymentDesk.swift")
    static let readme = Paths.packageRoot.appendingPathComponent("README.md")
    static let gettingStarted = Paths.packageRoot.appendingPathComponent(
        "Sources/ApplePayDecryption/ApplePayDecryption.docc/GettingStarted.md")
    /// The README's Swift example: a package of its own, built by `ReadmeExamplePackageTests`.
    static let quickStart = Paths.packageRoot.appendingPathComponent("Tests/Examples/QuickStart")
    static let quickStartFiles = ["Package.swift", "Sources/QuickStart/main.swift"]

    /// Every ```swift block of a Markdown file, without the fences.
    static func swiftBlocks(_ url: URL) throws -> [String] {
        let text = try String(contentsOf: url, encoding: .utf8)
        var blocks: [String] = []
        var current: [Substring]? = nil
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if current == nil, line == "```swift" {
                current = []
            } else if current != nil, line == "```" {
                blocks.append(current!.joined(separator: "\n") + "\n")
                current = nil
            } else if current != nil {
                current!.append(line)
            }
        }
        return blocks
    }
}

@Suite("README example")
struct ReadmeExampleTests {
    @Test("the README's Swift blocks are the QuickStart package's Package.swift and main.swift, verbatim")
    func readmeQuotesTheQuickStartPackage() throws {
        let blocks = try ExampleSource.swiftBlocks(ExampleSource.readme)
        for file in ExampleSource.quickStartFiles {
            let source = try String(
                contentsOf: ExampleSource.quickStart.appendingPathComponent(file), encoding: .utf8)
            #expect(blocks.contains(source), "README.md does not show \(file) as it is")
        }
    }

    @Test("the DocC getting-started article quotes PaymentDesk.swift, verbatim")
    func gettingStartedQuotesTheSource() throws {
        let source = try String(contentsOf: ExampleSource.file, encoding: .utf8)
        #expect(try ExampleSource.swiftBlocks(ExampleSource.gettingStarted).contains(source))
    }

    static func desk(_ kind: String) throws -> (PaymentDesk, BundledVectors) {
        let vectors = try BundledVectors()
        let dir = BundledVectors.directory
        let desk = try PaymentDesk(
            certificateFile: dir.appendingPathComponent("merchants/\(kind).cert.pem"),
            privateKeyFile: dir.appendingPathComponent("merchants/\(kind).key.pem"),
            trustAnchor: .insecureTestingOnlyRoot(pemFile: dir.appendingPathComponent("trust/test-root.pem")))
        return (desk, vectors)
    }

    @Test(
        "the example approves every bundled single token with its card prefix, in both error styles",
        arguments: [
            ("ec", "tokens/ec-3dsecure.json"), ("ec", "tokens/ec-emv-pkpaymenttoken.json"),
            ("ec", "tokens/ec-base64.txt"),
            ("ec", "tokens/ec-merchant-token-applepayjs.json"), ("rsa", "tokens/rsa-3dsecure.json"),
        ])
    func exampleApprovesBundledTokens(kind: String, token: String) throws {
        let (desk, vectors) = try Self.desk(kind)
        let bytes = try vectors.file(token)
        let expected = try vectors.decryptor().decrypt(bytes, at: .at(vectors.now)).applicationPrimaryAccountNumber
            .prefix(6)
        #expect(desk.authorize(Data(bytes), at: .at(vectors.now)) == .approve(cardPrefix: String(expected)))
        #expect(
            desk.authorize(tokenFile: BundledVectors.directory.appendingPathComponent(token), at: .at(vectors.now))
                == .approve(cardPrefix: String(expected)))
    }

    @Test("the example declines with the stable code")
    func exampleDeclinesWithTheCode() throws {
        let (desk, vectors) = try Self.desk("ec")
        let token = try vectors.file("tokens/ec-3dsecure.json")
        #expect(desk.authorize(Data(token)) == .decline(code: "signingTimeOutOfRange"))
        #expect(desk.authorize(Data("{}".utf8)) == .decline(code: "malformedToken"))
        #expect(
            desk.authorize(tokenFile: URL(fileURLWithPath: "/nonexistent/token.json"))
                == .decline(code: "unreadableToken"))
    }
}

@Suite("Printing a payment leaks no card data")
struct PaymentPrintingTests {
    static let pan = "4761120010000492"
    static let cryptogram = "AgAAAAAABk4DWZ4C28yUQAAAAAA="
    static let emvData = "nyYIY2hpcHBlZA=="
    static let pinData = "b2ZmbGluZQ=="
    static let expiry = "291231"
    static let name = "Jane Q Cardholder"

    static func payments() throws -> [DecryptedPayment] {
        let f = Fixtures.shared
        let decryptor = f.decryptor()
        let threeDS = f.mint(
            TestPayload.threeDSecure(pan: pan, expiry: expiry, cryptogram: cryptogram, cardholderName: name))
        let emv = f.mint(TestPayload.emv(pan: pan, expiry: expiry, emvData: emvData, encryptedPINData: pinData))
        return try [threeDS, emv].map { try decryptor.decrypt($0.bytes, at: .at(signingInstant)) }
    }

    static func expectNoCardData(_ text: String, _ what: Comment) {
        for secret in [pan, cryptogram, emvData, pinData, name, "0010000492", "476112001"] {
            #expect(!text.contains(secret), "\(what) shows \(secret): \(text)")
        }
    }

    @Test("print, interpolation, String(reflecting:) and dump show the masked PAN only")
    func printedPaymentIsMasked() throws {
        for payment in try Self.payments() {
            var printed = ""
            print(payment, to: &printed)
            var dumped = ""
            dump(payment, to: &dumped)
            struct Order { let id = 7; let payment: DecryptedPayment }
            let optional: DecryptedPayment? = payment
            let forms: [(String, Comment)] = [
                (printed, "print"), ("\(payment)", "interpolation"),
                (String(describing: payment), "String(describing:)"),
                (String(reflecting: payment), "String(reflecting:)"), (payment.debugDescription, "debugDescription"),
                (dumped, "dump"), ("\([payment])", "an array"), ("\(optional as Any)", "an optional"),
                ("\(Order(payment: payment))", "a struct holding it"),
                (String(reflecting: Order(payment: payment)), "its reflection"),
                ("\(payment.credential)", "the credential"), ("\(payment.plaintext)", "the plaintext buffer"),
            ]
            for (text, what) in forms { Self.expectNoCardData(text, what) }
            var dumpedOrder = ""
            dump(Order(payment: payment), to: &dumpedOrder)
            Self.expectNoCardData(dumpedOrder, "dump of a struct holding it")
            #expect(printed.contains("4761********0492"))
            #expect(dumped.contains("4761********0492"))
            #expect(payment.maskedPrimaryAccountNumber == "4761********0492")
        }
    }

    @Test("the named accessors still give the full values")
    func accessorsGiveFullValues() throws {
        let payments = try Self.payments()
        #expect(payments[0].applicationPrimaryAccountNumber == Self.pan)
        #expect(payments[0].credential == .threeDSecure(onlinePaymentCryptogram: Self.cryptogram, eciIndicator: "7"))
        #expect(payments[1].credential == .emv(emvData: Self.emvData, encryptedPINData: Self.pinData))
    }

    @Test("Encodable gives the JSON the CLI's decrypt prints: every member, with its value and type unchanged")
    func encodableIsTheCLIOutput() throws {
        let vectors = try BundledVectors()
        let decryptor = try vectors.decryptor()
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes, .sortedKeys]
        for token in try #require(vectors.manifest["tokens"]?.objectMembers).map(\.0) {
            let payment = try decryptor.decrypt(vectors.file(token), at: .at(vectors.now))
            let out = SensitiveBuffer()
            payment.writeJSON(into: out)  // what DecryptCommand prints
            let cli = try out.withUnsafeBytes { try JSONValue.parse($0) }
            let encoded = try JSONValue.parse(Array(encoder.encode(payment)))
            // JSONValue's == ignores member order (JSONEncoder's keyed containers do not keep it) but
            // compares numbers' text first: the amount must come out as the same integer.
            #expect(encoded == cli, "\(token)")
            #expect(encoded["transactionAmount"] == cli["transactionAmount"])
            #expect(encoded.objectMembers?.count == cli.objectMembers?.count)
        }
        // Nested in a caller's own Codable type.
        struct Envelope: Encodable { let id: Int; let payment: DecryptedPayment }
        let payment = try decryptor.decrypt(vectors.file("tokens/ec-3dsecure.json"), at: .at(vectors.now))
        let envelope = try JSONValue.parse(Array(encoder.encode(Envelope(id: 1, payment: payment))))
        #expect(envelope["payment"] == payment.json)
    }
}

@Suite("Errors read well")
struct ErrorDescriptionTests {
    @Test("ApplePayError's description and localizedDescription carry code, message and field")
    func applePayErrorDescribesItself() {
        let error = ApplePayError(
            .unknownMerchantKey, "no loaded merchant key has publicKeyHash AAAA", field: "header.publicKeyHash")
        let expected = "unknownMerchantKey: no loaded merchant key has publicKeyHash AAAA [field header.publicKeyHash]"
        #expect(error.description == expected)
        #expect("\(error)" == expected)
        #expect(error.localizedDescription == expected)
        #expect((error as any Error).localizedDescription == expected)
        let withReason = ApplePayError(
            .invalidSignature, "bad", field: "signature", reason: "certificate signature failure")
        #expect(
            withReason.localizedDescription == "invalidSignature: bad [field signature] (certificate signature failure)"
        )
        #expect(withReason.failureReason == "certificate signature failure")
    }

    @Test("ConfigurationError's description and localizedDescription carry code and message")
    func configurationErrorDescribesItself() {
        let error = ConfigurationError(.unreadableKey, "the key is not PEM")
        #expect(error.description == "unreadableKey: the key is not PEM")
        #expect((error as any Error).localizedDescription == "unreadableKey: the key is not PEM")
    }

    @Test("a rejected token's error prints its code and field, and no token bytes")
    func thrownErrorDescribesItself() throws {
        let f = Fixtures.shared
        var token = f.mint().paymentData
        guard case var .object(members) = token else { Issue.record("not an object"); return }
        members[members.firstIndex { $0.0 == "version" }!].1 = .string("EC_v9")
        token = .object(members)
        do throws(ApplePayError) {
            _ = try f.decryptor().decrypt(Array(token.description.utf8), at: .at(signingInstant))
            Issue.record("accepted")
        } catch {
            #expect(error.localizedDescription.hasPrefix("unsupportedVersion: "))
            #expect(error.localizedDescription.contains("[field version]"))
        }
    }
}

/// Bytes split over several regions, as a network stack hands them over.
struct ChunkedBytes: DataProtocol {
    let chunks: [[UInt8]]
    var regions: [[UInt8]] { chunks }
    var startIndex: Int { 0 }
    var endIndex: Int { chunks.reduce(0) { $0 + $1.count } }
    subscript(position: Int) -> UInt8 {
        var i = position
        for chunk in chunks {
            if i < chunk.count { return chunk[i] }
            i -= chunk.count
        }
        preconditionFailure("index out of range")
    }
    init(_ bytes: [UInt8], pieces: Int) {
        let size = Swift.max(1, bytes.count / pieces)
        chunks = stride(from: 0, to: bytes.count, by: size).map { Array(bytes[$0..<Swift.min($0 + size, bytes.count)]) }
    }
}

@Suite("Inputs Swift users have")
struct DataProtocolInputTests {
    static func dispatchData(_ bytes: [UInt8], pieces: Int) -> DispatchData {
        var data = DispatchData.empty
        for chunk in ChunkedBytes(bytes, pieces: pieces).chunks {
            chunk.withUnsafeBytes { data.append(DispatchData(bytes: $0)) }
        }
        return data
    }

    @Test("decrypt accepts Data, [UInt8], ArraySlice, a several-region DispatchData and a custom DataProtocol alike")
    func decryptAcceptsAnyDataProtocol() throws {
        let f = Fixtures.shared
        let decryptor = f.decryptor()
        let token = f.mint().bytes
        let reference = ReferenceTime.at(signingInstant)
        let dispatch = Self.dispatchData(token, pieces: 5)
        #expect(dispatch.regions.count > 1)
        let chunked = ChunkedBytes(token, pieces: 7)
        let padded = [0x20] + token + [0x20]
        let results: [DecryptedPayment] = try [
            decryptor.decrypt(token, at: reference),
            decryptor.decrypt(Data(token), at: reference),
            decryptor.decrypt(padded[1..<padded.count - 1], at: reference),
            decryptor.decrypt(dispatch, at: reference),
            decryptor.decrypt(chunked, at: reference),
            decryptor.decrypt(Data(token)[...], at: reference),
        ]
        for payment in results {
            #expect(payment.applicationPrimaryAccountNumber == "4761120010000492")
            #expect(payment.replayIdentity == results[0].replayIdentity)
        }
        // A bad token is rejected the same way whichever form carries it.
        var bad = token
        bad[bad.count / 2] ^= 0x01
        for form in [
            AnyDataProtocolBox(bad), AnyDataProtocolBox(Self.dispatchData(bad, pieces: 3)),
            AnyDataProtocolBox(ChunkedBytes(bad, pieces: 4)),
        ] {
            #expect(
                rejection { try form.decrypt(with: decryptor, at: reference) }
                    == rejection { try decryptor.decrypt(bad, at: reference) })
        }
    }

    @Test(
        "PaymentToken.parse and the merchant and trust-root initialisers accept Data and multi-region bytes",
        .tags(.pkcs12))
    func parsersAcceptAnyDataProtocol() throws {
        let f = Fixtures.shared
        let minted = f.mint()
        let parsed = try PaymentToken.parse(Self.dispatchData(minted.bytes, pieces: 4))
        #expect(parsed.transactionId == minted.transactionId.lowercased())
        #expect(
            try PaymentToken.parse(Data(minted.bytes)).publicKeyHash == PaymentToken.parse(minted.bytes).publicKeyHash)
        let merchant = f.ecMerchant
        let fromData = try MerchantIdentity(
            certificate: Data(merchant.certificatePEM.utf8), privateKey: Data(merchant.privateKeyPEM.utf8))
        let fromChunks = try MerchantIdentity(
            certificate: ChunkedBytes(merchant.certificateDER, pieces: 3),
            privateKey: Self.dispatchData(merchant.privateKeyDER, pieces: 3))
        let byIdentifier = try MerchantIdentity(
            merchantIdentifier: merchant.identifier, privateKey: Data(merchant.privateKeyPEM.utf8))
        let fromPKCS12 = try MerchantIdentity(pkcs12: Data(merchant.pkcs12(password: "pw")), password: "pw")
        for identity in [fromData, fromChunks, byIdentifier, fromPKCS12] {
            #expect(identity.publicKeyHash == merchant.identity().publicKeyHash)
        }
        let anchor = try TrustAnchor.insecureTestingOnlyRoot(pem: Data(f.pki.rootPEM.utf8))
        let decryptor = try PaymentTokenDecryptor(merchants: [fromChunks], trustAnchor: anchor)
        #expect(
            try decryptor.decrypt(Data(minted.bytes), at: .at(signingInstant)).applicationPrimaryAccountNumber
                == "4761120010000492")
    }
}

/// Calls the generic `decrypt` for any stored DataProtocol value.
struct AnyDataProtocolBox {
    let call: (PaymentTokenDecryptor, ReferenceTime) throws -> DecryptedPayment
    init(_ bytes: some DataProtocol) { call = { try $0.decrypt(bytes, at: $1) } }
    func decrypt(with decryptor: PaymentTokenDecryptor, at reference: ReferenceTime) throws -> DecryptedPayment {
        try call(decryptor, reference)
    }
}

@Suite("Keys from files")
struct KeyFileTests {
    static func temporaryDirectory() throws -> URL {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent(
            "applepay-keyfiles-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        return dir
    }

    @Test(
        "certificate and key files, identifier and key file, and a PKCS#12 file load the same identity", .tags(.pkcs12))
    func fileInitialisersLoad() throws {
        let merchant = Fixtures.shared.ecMerchant
        let dir = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let cert = dir.appendingPathComponent("cert.pem"), key = dir.appendingPathComponent("key.pem"),
            p12 = dir.appendingPathComponent("m.p12")
        try Data(merchant.certificatePEM.utf8).write(to: cert)
        try Data(merchant.privateKeyPEM.utf8).write(to: key)
        try Data(merchant.pkcs12(password: "secret")).write(to: p12)
        let expected = merchant.identity().publicKeyHash
        #expect(try MerchantIdentity(certificateFile: cert, privateKeyFile: key).publicKeyHash == expected)
        #expect(
            try MerchantIdentity(merchantIdentifier: merchant.identifier, privateKeyFile: key).publicKeyHash == expected
        )
        #expect(try MerchantIdentity(pkcs12File: p12, password: "secret").publicKeyHash == expected)
        #expect(
            try TrustAnchor.insecureTestingOnlyRoot(
                pemFile: BundledVectors.directory.appendingPathComponent("trust/test-root.pem")
            )
            .isAppleRootCAG3 == false)
    }

    static func configurationError(_ body: () throws -> Any) -> ConfigurationError? {
        do {
            _ = try body()
            return nil
        } catch let error as ConfigurationError {
            return error
        } catch {
            return nil
        }
    }

    @Test("a missing, unreadable or non-file key file is a ConfigurationError naming the file")
    func missingFilesAreNamed() throws {
        let merchant = Fixtures.shared.ecMerchant
        let dir = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let cert = dir.appendingPathComponent("cert.pem"), missing = dir.appendingPathComponent("missing-key.pem")
        let garbage = dir.appendingPathComponent("garbage-cert.pem")
        try Data(merchant.certificatePEM.utf8).write(to: cert)
        try Data("not a certificate".utf8).write(to: garbage)
        // A FIFO where a key was expected: refused at once, not a start-up (or reload) hung in open().
        let fifo = dir.appendingPathComponent("fifo-key.pem")
        #expect(mkfifo(fifo.path, 0o600) == 0)
        let cases: [(ConfigurationError?, ConfigurationError.Code, String)] = [
            (
                Self.configurationError { try MerchantIdentity(certificateFile: cert, privateKeyFile: fifo) },
                .unreadableInput, fifo.path
            ),
            (
                Self.configurationError { try MerchantIdentity(certificateFile: cert, privateKeyFile: missing) },
                .unreadableInput, missing.path
            ),
            (
                Self.configurationError { try MerchantIdentity(certificateFile: missing, privateKeyFile: cert) },
                .unreadableInput, missing.path
            ),
            (
                Self.configurationError { try MerchantIdentity(certificateFile: cert, privateKeyFile: dir) },
                .unreadableInput, dir.path
            ),
            (
                Self.configurationError {
                    try MerchantIdentity(merchantIdentifier: "merchant.x", privateKeyFile: missing)
                }, .unreadableInput, missing.path
            ),
            (
                Self.configurationError { try MerchantIdentity(pkcs12File: missing, password: "") }, .unreadableInput,
                missing.path
            ),
            (
                Self.configurationError { try TrustAnchor.insecureTestingOnlyRoot(pemFile: missing) }, .unreadableInput,
                missing.path
            ),
            (
                Self.configurationError { try TrustAnchor.insecureTestingOnlyRoot(pemFile: garbage) },
                .unreadableCertificate, garbage.path
            ),
            (
                Self.configurationError {
                    try MerchantIdentity(
                        certificateFile: URL(string: "https://example.invalid/c.pem")!, privateKeyFile: missing)
                },
                .unreadableInput, "https://example.invalid/c.pem"
            ),
        ]
        for (error, code, path) in cases {
            let error = try #require(error)
            #expect(error.code == code)
            #expect(error.description.contains(path), "\(error)")
        }
        let noSuchFile = try #require(
            Self.configurationError { try MerchantIdentity(certificateFile: cert, privateKeyFile: missing) })
        #expect(noSuchFile.localizedDescription.contains("No such file or directory"))
    }
}

@Suite("Async callers")
struct AsyncCallerTests {
    @Test("decrypt called from many tasks at once gives every token its own payment")
    func decryptFromTasks() async throws {
        let f = Fixtures.shared
        let decryptor = f.decryptor()
        let tokens = (0..<16).map { _ in f.mint() }
        let ids = try await withThrowingTaskGroup(of: String.self) { group in
            for token in tokens {
                group.addTask { try decryptor.decrypt(Data(token.bytes), at: .at(signingInstant)).transactionId }
            }
            return try await group.reduce(into: Set<String>()) { $0.insert($1) }
        }
        #expect(ids == Set(tokens.map { $0.transactionId.lowercased() }))
    }

    @Test("the async batch leaves the cooperative pool free while its windows are decrypted")
    func asyncBatchDoesNotBlockThePool() async throws {
        let f = Fixtures.shared
        let engine = BatchDecryptor(decryptor: f.decryptor(), lanes: 2, reference: .at(signingInstant), windowSize: 200)
        let token = f.mint().bytes
        // 1,000 tokens a batch (tens of milliseconds of work even on a fast machine): with 200, a batch
        // could finish inside the probe's 10 ms and the test fail though the pool was free.
        let tokens = [[UInt8]](repeating: token, count: 1000)
        // More batches than the pool has threads: if a window's work ran on a pool thread, the probe
        // below could not run until a batch had finished.
        let batches = ProcessInfo.processInfo.activeProcessorCount + 1
        let finished = FinishedCount()
        let probeSawRunningBatches = try await withThrowingTaskGroup(of: Bool?.self) { group in
            for _ in 0..<batches {
                group.addTask {
                    let stream = AsyncStream<Data> { c in
                        for t in tokens { c.yield(Data(t)) }
                        c.finish()
                    }
                    try await engine.run(stream) { _ in }
                    finished.count.withLock { $0 += 1 }
                    return nil
                }
            }
            group.addTask {
                try await Task.sleep(for: .milliseconds(10))
                return finished.count.withLock { $0 } == 0
            }
            var probe: Bool? = nil
            for try await result in group { if let result { probe = result } }
            return probe
        }
        #expect(probeSawRunningBatches == true)
    }
}

final class FinishedCount: Sendable {
    let count = Mutex(0)
}

@Suite("README example in a fresh package", .tags(.freshPackageBuild))
struct ReadmeExamplePackageTests {
    /// Runs a command with stdout and stderr into one file (no pipe to fill), returning status and output.
    static func run(_ arguments: [String], in directory: URL, log: URL) throws -> (status: Int32, output: String) {
        FileManager.default.createFile(atPath: log.path, contents: nil)
        let handle = try FileHandle(forWritingTo: log)
        defer { try? handle.close() }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments
        process.currentDirectoryURL = directory
        process.standardOutput = handle
        process.standardError = handle
        process.standardInput = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        return (process.terminationStatus, (try? String(contentsOf: log, encoding: .utf8)) ?? "")
    }

    @Test(
        "the README's QuickStart package, beside a checkout named ApplePayDecryption, builds unchanged and decrypts"
    )
    func readmeExampleBuildsInAFreshPackage() throws {
        let scratch = ScratchDirectory()
        let fileManager = FileManager.default
        // The README's layout: the user's package beside a clone named ApplePayDecryption. A path
        // dependency's identity is its folder's name, so the link carries the name whatever this
        // checkout's folder is called (a worktree, a clone named main).
        try fileManager.createSymbolicLink(
            at: scratch.url.appendingPathComponent("ApplePayDecryption"), withDestinationURL: Paths.packageRoot)
        let package = scratch.url.appendingPathComponent("QuickStart")
        for file in ExampleSource.quickStartFiles {
            let target = package.appendingPathComponent(file)
            try fileManager.createDirectory(at: target.deletingLastPathComponent(), withIntermediateDirectories: true)
            try fileManager.copyItem(at: ExampleSource.quickStart.appendingPathComponent(file), to: target)
        }

        let log = scratch.url.appendingPathComponent("build.log")
        let build = try Self.run(["swift", "build", "--product", "QuickStart"], in: package, log: log)
        #expect(build.status == 0, "swift build failed:\n\(build.output.suffix(4000))")
        #expect(!build.output.contains("warning:"), "\(build.output.suffix(4000))")
        guard build.status == 0 else { return }
        let vectors = try BundledVectors()
        let run = try Self.run(
            [".build/debug/QuickStart", BundledVectors.directory.path],
            in: package, log: scratch.url.appendingPathComponent("run.log"))
        let payment = try vectors.decryptor().decrypt(vectors.file("tokens/ec-3dsecure.json"), at: .at(vectors.now))
        #expect(run.status == 0, "\(run.output)")
        #expect(run.output.hasPrefix("ok \(payment)\n"), "\(run.output)")
        // The example logs the payment: masked, so the full PAN is nowhere in what it printed.
        #expect(!run.output.contains(payment.applicationPrimaryAccountNumber))
    }
}
