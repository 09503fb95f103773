// Every real Apple vector in ../shared/vectors/apple gives its expected result, through the
// library and through the CLI, verified at its own signing time.
import ApplePayDecryption
import Foundation
import Testing

struct AppleVector: CustomTestStringConvertible, Sendable {
    let name: String
    var testDescription: String { name }
    var directory: URL { Paths.appleVectors.appendingPathComponent(name) }

    struct Meta: Decodable {
        let signingTime: String
        let expect: String
        let merchantIdentifier: String
        let keyFile: String
        let certFile: String?
    }

    func meta() throws -> Meta {
        try JSONDecoder().decode(Meta.self, from: Data(contentsOf: directory.appendingPathComponent("meta.json")))
    }

    func path(_ file: String) -> String { directory.appendingPathComponent(file).path }

    /// Every vector the shared folder documents. Listed here so that a missing folder fails each test
    /// where it is required (SharedVectors).
    static let all = [
        "gala-2015-seatgeek", "gala-2021-spreedly", "gala-2023-token-2021-key", "gala-2023-wrong-key",
        "payu-2018-sandbox",
        "apple-sample-2016-testCA", "basistheory-2023-ec-old", "basistheory-2023-ec-new", "basistheory-2024-rsa",
    ].map(AppleVector.init)
}

@Suite("Apple sample vectors", SharedVectors.apple)
struct AppleVectorTests {
    @Test("the shared vectors folder is present and fully covered")
    func vectorsFolderIsPresent() throws {
        try #require(
            FileManager.default.fileExists(atPath: Paths.appleVectors.path),
            "the Apple vectors are missing at \(Paths.appleVectors.path) and APPLEPAY_REQUIRE_SHARED=1: put ../shared beside the project or set APPLEPAY_SHARED_VECTORS"
        )
        let names = try FileManager.default.contentsOfDirectory(atPath: Paths.appleVectors.path).sorted()
        #expect(names == AppleVector.all.map(\.name).sorted())
    }

    @Test("library: each vector gives its expected result at its signing time", arguments: AppleVector.all)
    func library(_ vector: AppleVector) throws {
        let meta = try vector.meta()
        let key = try Data(contentsOf: URL(fileURLWithPath: vector.path(meta.keyFile))).bytes
        let identity: MerchantIdentity
        if let certFile = meta.certFile {
            identity = try MerchantIdentity(
                certificate: Data(contentsOf: URL(fileURLWithPath: vector.path(certFile))).bytes, privateKey: key)
        } else {
            identity = try MerchantIdentity(merchantIdentifier: meta.merchantIdentifier, privateKey: key)
        }
        let decryptor = try PaymentTokenDecryptor(merchants: [identity])
        let token = try Data(contentsOf: URL(fileURLWithPath: vector.path("token.json")))
        let signingTime = try #require(try? Date(meta.signingTime, strategy: .iso8601))

        if meta.expect == "ok" {
            let payment = try decryptor.decrypt(token, at: .at(signingTime))
            let expected = try JSONValue.parse(
                Data(contentsOf: URL(fileURLWithPath: vector.path("expected.json"))).bytes)
            #expect(payment.json == expected)
            #expect(payment.applicationPrimaryAccountNumber == expected["applicationPrimaryAccountNumber"]?.stringValue)
        } else {
            #expect(rejection { try decryptor.decrypt(token, at: .at(signingTime)) }?.rawValue == meta.expect)
        }
    }

    @Test("CLI: each vector gives its expected output and exit status", arguments: AppleVector.all)
    func cli(_ vector: AppleVector) throws {
        let meta = try vector.meta()
        let merchant =
            meta.certFile.map { "cert=\(vector.path($0)),key=\(vector.path(meta.keyFile))" }
            ?? "id=\(meta.merchantIdentifier),key=\(vector.path(meta.keyFile))"
        let result = try runCLI([
            "decrypt", vector.path("token.json"), "--merchant", merchant, "--now", meta.signingTime,
        ])
        let output = try JSONValue.parse(result.stdout)
        if meta.expect == "ok" {
            #expect(result.status == 0, "stderr: \(result.stderr)")
            let expected = try JSONValue.parse(
                Data(contentsOf: URL(fileURLWithPath: vector.path("expected.json"))).bytes)
            #expect(output == expected)
        } else {
            #expect(result.status == 1)
            #expect(output["error"]?.stringValue == meta.expect)
        }
    }

    @Test("a real token is rejected as stale when checked against the present time")
    func realTokenIsStaleToday() throws {
        let vector = AppleVector(name: "gala-2021-spreedly")
        let identity = try MerchantIdentity(
            certificate: Data(contentsOf: URL(fileURLWithPath: vector.path("merchant_cert.pem"))).bytes,
            privateKey: Data(contentsOf: URL(fileURLWithPath: vector.path("merchant_key.pem"))).bytes)
        let decryptor = try PaymentTokenDecryptor(merchants: [identity])
        let token = try Data(contentsOf: URL(fileURLWithPath: vector.path("token.json")))
        #expect(rejection { try decryptor.decrypt(token, at: .now) } == .signingTimeOutOfRange)
        // Re-processing an archive: verified at its own signing time, no freshness window.
        #expect(try decryptor.decrypt(token, at: .signingTime).applicationPrimaryAccountNumber == "5353756319181169")
    }

    @Test("the rotation pair: old and new keys loaded together both decrypt")
    func keyRotation() throws {
        let identities = try ["basistheory-2023-ec-old", "basistheory-2023-ec-new"].map { name in
            let vector = AppleVector(name: name)
            return try MerchantIdentity(
                certificate: Data(contentsOf: URL(fileURLWithPath: vector.path("merchant_cert.pem"))).bytes,
                privateKey: Data(contentsOf: URL(fileURLWithPath: vector.path("merchant_key.pem"))).bytes)
        }
        let decryptor = try PaymentTokenDecryptor(merchants: identities)
        for name in ["basistheory-2023-ec-old", "basistheory-2023-ec-new"] {
            let vector = AppleVector(name: name)
            let token = try Data(contentsOf: URL(fileURLWithPath: vector.path("token.json")))
            #expect(
                try decryptor.decrypt(token, at: .signingTime).applicationPrimaryAccountNumber == "4784000000380075")
        }
    }
}
