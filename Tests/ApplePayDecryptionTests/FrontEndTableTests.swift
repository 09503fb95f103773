// The Swift API's column of the table that every front end must agree on (issue 40): Tests/FrontEnds writes
// the case manifest (the shared Apple, Google and Samsung vectors, the bundled Vectors/, `mint-tokens google`'s
// and `mint-tokens samsung`'s rule cases, each group with its keys, trust root and clock), runs this test with APPLEPAY_FRONT_END_MANIFEST
// set, and compares the code and field written to APPLEPAY_FRONT_END_OUT with every other front end's.
// Without the manifest (a plain `swift test`) it is skipped: Tests/FrontEnds/run.sh is its runner in CI.
import ApplePayDecryption
import Foundation
import Testing

@Suite("Front-end table: the Swift API's outcomes")
struct FrontEndTableTests {
    static let manifest = ProcessInfo.processInfo.environment["APPLEPAY_FRONT_END_MANIFEST"]

    @Test("each case of the manifest through the public engine types", .enabled(if: manifest != nil))
    func swiftAPIColumn() throws {
        let manifest = try JSONValue.parse(Array(try Data(contentsOf: URL(fileURLWithPath: Self.manifest!))))
        let outPath = try #require(ProcessInfo.processInfo.environment["APPLEPAY_FRONT_END_OUT"])
        guard case let .array(groups)? = manifest["groups"] else { throw ManifestError.incomplete("groups") }
        var rows: [(String, JSONValue)] = []
        for group in groups {
            let engine = try Engine(group)
            guard case let .array(cases)? = group["cases"] else { throw ManifestError.incomplete("cases") }
            for item in cases {
                guard let id = item["id"]?.stringValue, let file = item["tokenFile"]?.stringValue else {
                    throw ManifestError.incomplete("case id or tokenFile")
                }
                let token = Array(try Data(contentsOf: URL(fileURLWithPath: file)))
                let error = engine.decrypt(token)
                rows.append(
                    (
                        id,
                        .object([
                            ("code", .string(error?.code.rawValue ?? "ok")),
                            ("field", error?.field.map(JSONValue.string) ?? .null),
                        ])
                    ))
            }
        }
        #expect(!rows.isEmpty)
        try Data(JSONValue.object(rows).description.utf8).write(to: URL(fileURLWithPath: outPath))
    }

    enum ManifestError: Error { case incomplete(String) }

    /// One group's front door, made from the manifest's options as an application would make it.
    struct Engine {
        let wallets: WalletDecryptor
        let reference: ReferenceTime

        init(_ group: JSONValue) throws {
            let merchants: [MerchantIdentity]
            if case let .array(specs)? = group["merchants"] {
                merchants = try specs.map { try MerchantSpec($0.stringValue ?? "").load() }
            } else {
                merchants = []
            }
            var anchor = TrustAnchor.appleRootCAG3
            if let root = group["trustRoot"]?.stringValue {
                anchor = try TrustAnchor.insecureTestingOnlyRoot(
                    pem: Array(try Data(contentsOf: URL(fileURLWithPath: root))))
            }
            let apple =
                merchants.isEmpty
                ? try PaymentTokenDecryptor.withoutMerchants(trustAnchor: anchor)
                : try PaymentTokenDecryptor(merchants: merchants, trustAnchor: anchor)
            let google: GooglePayTokenDecryptor?
            if let options = group["google"], case .object = options {
                guard let rootKeys = options["rootKeys"]?.stringValue, case let .array(ids)? = options["recipientIds"],
                    case let .array(keys)? = options["merchantKeys"]
                else { throw ManifestError.incomplete("google") }
                google = try GooglePayTokenDecryptor(
                    merchantKeys: try keys.map { try GooglePayMerchantKey(privateKeyFile: $0.stringValue ?? "") },
                    recipientIds: ids.compactMap(\.stringValue), rootKeys: GooglePayRootKeys(contentsOfFile: rootKeys))
            } else {
                google = nil
            }
            var samsung: SamsungPayTokenDecryptor? = nil
            if case let .array(specs)? = group["samsung"], !specs.isEmpty {
                samsung = try SamsungPayTokenDecryptor(
                    merchantKeys: try specs.map { try SamsungPayMerchantKey(spec: $0.stringValue ?? "") })
            }
            guard case let .number(milliseconds)? = group["nowMilliseconds"], let value = Double(milliseconds) else {
                throw ManifestError.incomplete("nowMilliseconds")
            }
            reference = .at(Date(timeIntervalSince1970: value / 1000))
            wallets = WalletDecryptor(applePay: apple, googlePay: google, samsungPay: samsung)
        }

        /// The token's error, or nil for a payment: through the front door, as every front end goes.
        func decrypt(_ token: [UInt8]) -> ApplePayError? {
            wallets.decrypt(token, at: reference).error
        }
    }
}
