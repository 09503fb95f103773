// Both public Samsung Pay vectors in ../shared/vectors/samsung decrypt to exactly the plaintext their
// expected.json lists, with the folder's key, at meta.json's `now`.
import ApplePayDecryption
import Foundation
import Testing

extension Paths {
    /// ../shared/vectors/samsung beside the project, or $APPLEPAY_SHARED_VECTORS/../samsung.
    static let samsungVectors: URL = appleVectors.deletingLastPathComponent().appendingPathComponent("samsung")
}

/// One folder of ../shared/vectors/samsung.
struct SamsungPayVector: CustomStringConvertible, Sendable {
    let name: String
    var description: String { name }
    var folder: URL { Paths.samsungVectors.appendingPathComponent(name) }

    func json(_ file: String) throws -> JSONValue {
        try JSONValue.parse(Array(try Data(contentsOf: folder.appendingPathComponent(file))))
    }

    var token: Data { get throws { try Data(contentsOf: folder.appendingPathComponent("token.json")) } }

    static let all = ["codec-mastercard", "codec-visa"].map(SamsungPayVector.init(name:))
}

@Suite("Samsung Pay shared vectors", SharedVectors.samsung)
struct SamsungPayVectorTests {
    @Test("the shared Samsung vectors folder is present and fully covered")
    func folderCovered() throws {
        let present = try FileManager.default.contentsOfDirectory(atPath: Paths.samsungVectors.path)
            .filter { !$0.hasSuffix(".md") }.sorted()
        #expect(present == SamsungPayVector.all.map(\.name).sorted())
    }

    @Test(
        "each vector decrypts to exactly its expected plaintext, with the kid its meta lists",
        arguments: SamsungPayVector.all)
    func decryptsToExpectedPlaintext(_ vector: SamsungPayVector) throws {
        let meta = try vector.json("meta.json")
        let expected = try vector.json("expected.json")
        guard case let .array(files)? = meta["keyFiles"], case let .array(kids)? = meta["keyKids"],
            case let .number(now)? = meta["now"], let milliseconds = Double(now),
            let plaintext = expected["plaintext"]?.stringValue, let pan = expected["tokenPAN"]?.stringValue
        else {
            Issue.record("\(vector.name): incomplete meta.json or expected.json")
            return
        }
        let keys = try files.map {
            try SamsungPayMerchantKey(privateKeyFile: vector.folder.appendingPathComponent($0.stringValue!).path)
        }
        #expect(keys.map(\.kid) == kids.compactMap(\.stringValue))
        let decryptor = try SamsungPayTokenDecryptor(merchantKeys: keys)
        let reference = ReferenceTime.at(Date(timeIntervalSince1970: milliseconds / 1000))
        let payment = try decryptor.decrypt(try vector.token, at: reference)
        #expect(payment.plaintext.withUnsafeBytes { Array($0) } == Array(plaintext.utf8))
        #expect(payment.tokenPAN == pan)
        #expect(payment.envelope == .compactJWE)
        #expect(payment.version == nil)
        #expect(SamsungPayToken.hasShape(try vector.token))
        // The vectors' utc is `now` − 60 s: a minute's window takes them, a shorter one does not.
        let strict = try SamsungPayTokenDecryptor(merchantKeys: keys, freshnessWindow: 59)
        #expect(throws: ApplePayError(.messageExpired, "")) { try strict.decrypt(try vector.token, at: reference) }
    }
}
