// Every public Google Pay vector in ../shared/vectors/google gives its expected outcome (read from
// the folder's expected.json), with the folder's keys, recipient id and reference time.
import ApplePayDecryption
import Foundation
import Testing

/// One folder of ../shared/vectors/google.
struct GooglePayVector: CustomStringConvertible, Sendable {
    let name: String
    var description: String { name }
    var folder: URL { Paths.googleVectors.appendingPathComponent(name) }

    func json(_ file: String) throws -> JSONValue {
        try JSONValue.parse(Array(try Data(contentsOf: folder.appendingPathComponent(file))))
    }

    var token: Data { get throws { try Data(contentsOf: folder.appendingPathComponent("token.json")) } }

    func decryptor() throws -> GooglePayTokenDecryptor {
        let meta = try json("meta.json")
        guard case let .array(files)? = meta["merchantKeyFiles"], let recipient = meta["recipientId"]?.stringValue,
            let rootFile = meta["rootKeysFile"]?.stringValue
        else { throw VectorError.incomplete(name) }
        let keys = try files.map {
            try GooglePayMerchantKey(privateKeyFile: folder.appendingPathComponent($0.stringValue!).path)
        }
        return try GooglePayTokenDecryptor(
            merchantKeys: keys, recipientIds: [recipient],
            rootKeys: GooglePayRootKeys(contentsOfFile: folder.appendingPathComponent(rootFile).path))
    }

    /// The vector's reference time, to the millisecond.
    var now: ReferenceTime {
        get throws {
            guard case let .number(ms)? = try json("meta.json")["now"], let value = Double(ms) else {
                throw VectorError.incomplete(name)
            }
            return .at(Date(timeIntervalSince1970: value / 1000))
        }
    }

    enum VectorError: Error { case incomplete(String) }

    static let all = [
        "dotnet-ecv2-docs-example", "dotnet-ecv2-gateway-ariane", "tink-ecv1-key-rotation", "tink-ecv1-nonstrict-json",
        "tink-ecv1-recipienttest", "tink-ecv1-sender-testdata-1", "tink-ecv1-sender-testdata-2",
        "tink-ecv1-wrong-merchant-key", "tink-ecv1-wrong-recipient",
    ].map(GooglePayVector.init(name:))
}

@Suite("Google Pay shared vectors", SharedVectors.google)
struct GooglePayVectorTests {
    @Test("the shared Google vectors folder is present and fully covered")
    func folderCovered() throws {
        let present = try FileManager.default.contentsOfDirectory(atPath: Paths.googleVectors.path)
            .filter { !$0.hasSuffix(".md") }.sorted()
        #expect(present == GooglePayVector.all.map(\.name).sorted())
    }

    @Test("each vector gives its expected outcome", arguments: GooglePayVector.all)
    func outcome(_ vector: GooglePayVector) throws {
        let expected = try vector.json("expected.json")
        let outcome = try #require(expected["outcome"]?.stringValue)
        var accepted = [outcome]
        if case let .array(more)? = expected["accept"] { accepted += more.compactMap(\.stringValue) }
        let decryptor = try vector.decryptor()
        let token = try vector.token, now = try vector.now
        do throws(ApplePayError) {
            let message = try decryptor.open(token, at: now)
            #expect(outcome == "ok", "accepted a token expected to give \(outcome)")
            let plaintext = message.plaintext.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
            #expect(plaintext == expected["plaintext"]?.stringValue)
        } catch {
            let name = error.code == .malformedToken ? "malformed" : error.code.rawValue
            #expect(accepted.contains(name), "\(error)")
        }
    }

    @Test("a vector verifies only until its keys expire: ECv2 one millisecond after the intermediate keyExpiration")
    func intermediateExpiry() throws {
        let vector = GooglePayVector(name: "dotnet-ecv2-gateway-ariane")
        let decryptor = try vector.decryptor()
        // keyExpiration 1542394027316 (meta.json's notes).
        let at = { (ms: Double) in ReferenceTime.at(Date(timeIntervalSince1970: ms / 1000)) }
        #expect(throws: Never.self) { try decryptor.open(try vector.token, at: at(1_542_394_027_315)) }
        #expect {
            try decryptor.open(try vector.token, at: at(1_542_394_027_316))
        } throws: { ($0 as? ApplePayError)?.code == .intermediateKeyExpired }
    }
}
