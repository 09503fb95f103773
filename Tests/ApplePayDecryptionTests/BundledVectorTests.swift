// The committed Vectors/ (made by `swift run mint-tokens vectors`) still give what their manifest says.
import ApplePayDecryption
import Foundation
import Testing

struct BundledVectors {
    static let directory = Paths.packageRoot.appendingPathComponent("Vectors")
    let manifest: JSONValue

    init() throws {
        manifest = try JSONValue.parse(Data(contentsOf: Self.directory.appendingPathComponent("manifest.json")).bytes)
    }

    func file(_ relative: String) throws -> [UInt8] {
        try Data(contentsOf: Self.directory.appendingPathComponent(relative)).bytes
    }

    /// The lines of archive.jsonl, one token each.
    func archiveTokens() throws -> [[UInt8]] {
        try file("archive.jsonl").split(separator: 0x0A).map(Array.init)
    }

    var now: Date { try! Date(manifest["now"]!.stringValue!, strategy: .iso8601) }

    func decryptor() throws -> PaymentTokenDecryptor {
        let merchants = try [
            ("merchants/ec.cert.pem", "merchants/ec.key.pem"), ("merchants/rsa.cert.pem", "merchants/rsa.key.pem"),
        ].map {
            try MerchantIdentity(certificate: file($0.0), privateKey: file($0.1))
        }
        return try PaymentTokenDecryptor(
            merchants: merchants,
            trustAnchor: .insecureTestingOnlyRoot(pem: file(manifest["trustRoot"]!.stringValue!)))
    }
}

@Suite("Bundled Vectors/")
struct BundledVectorTests {
    @Test("each single token in Vectors/tokens decrypts as the manifest says")
    func singleTokens() throws {
        let vectors = try BundledVectors()
        let decryptor = try vectors.decryptor()
        let tokens = try #require(vectors.manifest["tokens"]?.objectMembers)
        #expect(tokens.count >= 6)
        for (path, expect) in tokens {
            let code = rejection { try decryptor.decrypt(vectors.file(path), at: .at(vectors.now)) }
            #expect((code?.rawValue ?? "ok") == expect.stringValue, "\(path)")
        }
    }

    @Test("each archive line, decrypted alone, gives the manifest's code (a replay is only a replay within a run)")
    func archiveLines() throws {
        let vectors = try BundledVectors()
        let decryptor = try vectors.decryptor()
        let lines = try vectors.archiveTokens()
        guard case let .array(expected)? = vectors.manifest["archive"]?["expect"] else {
            Issue.record("manifest has no archive"); return
        }
        #expect(lines.count == expected.count)
        var seen = Set<ApplePayError.Code>()
        for (line, expect) in zip(lines, expected) {
            let code = rejection { try decryptor.decrypt(line, at: .at(vectors.now)) }
            if let code { seen.insert(code) }
            let wanted = expect.stringValue == "replayedTransaction" ? "ok" : expect.stringValue
            #expect((code?.rawValue ?? "ok") == wanted)
        }
        // Every code but replayedTransaction (only a batch sees one), paymentRequestMismatch (the
        // vectors carry no payment request; PaymentRequestBindingTests covers it) and the Google Pay codes.
        #expect(seen.count == ApplePayError.Code.allCases.count - 2 - ApplePayError.Code.googlePayOnly.count)
    }
}
