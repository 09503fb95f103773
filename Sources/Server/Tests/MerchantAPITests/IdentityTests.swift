// Loading the merchant identity: PEM, encrypted PEM, PKCS#12 with its password from the environment.
@testable import ApplePayMerchantAPI
import XCTest

final class IdentityTests: XCTestCase {
    let pki = TestPKI.shared

    func testPKCS12IdentityWithPasswordFromTheNamedEnvironmentVariable() async throws {
        let identity = try MerchantTLSIdentity.load(
            spec: "p12=\(pki.path("client.p12")),password-env=MERCHANT_P12_PASSWORD",
            environment: ["MERCHANT_P12_PASSWORD": TestPKI.p12Password])
        let gateway = try await TestGateway { _ in .answer(status: 200, body: GatewayTests.sessionBytes) }
        let client = try makeTestClient(gateway, identity: identity)
        let session = try await client.requestPaymentSession(
            displayName: "Store", initiativeContext: "shop.example.com")
        XCTAssertEqual(session.json, GatewayTests.sessionBytes)
        try await client.shutdown()
        await gateway.stop()
    }

    func testPKCS12WithWrongOrMissingPasswordIsRefused() {
        let spec = "p12=\(pki.path("client.p12")),password-env=MERCHANT_P12_PASSWORD"
        for environment in [["MERCHANT_P12_PASSWORD": "wrong"], [:], ["OTHER": TestPKI.p12Password]] {
            XCTAssertThrowsError(try MerchantTLSIdentity.load(spec: spec, environment: environment)) {
                XCTAssertEqual(($0 as? MerchantAPIError)?.code, .invalidIdentity)
                XCTAssertFalse(String(describing: $0).contains(TestPKI.p12Password))
            }
        }
        XCTAssertThrowsError(
            try MerchantTLSIdentity.load(spec: "p12=\(pki.path("client.p12"))", environment: [:]), "the empty password")
    }

    func testPEMIdentityAndEncryptedKey() throws {
        _ = try MerchantTLSIdentity.load(
            spec: "cert=\(pki.path("client.pem")),key=\(pki.path("client.key"))", environment: [:])
        _ = try MerchantTLSIdentity.load(
            spec: "cert=\(pki.path("client.pem")),key=\(pki.path("client-encrypted.key")),key-password-env=K",
            environment: ["K": TestPKI.keyPassword])
        // Without the password it fails at once (BoringSSL would otherwise prompt on the terminal).
        XCTAssertThrowsError(
            try MerchantTLSIdentity.load(
                spec: "cert=\(pki.path("client.pem")),key=\(pki.path("client-encrypted.key"))", environment: [:]))
    }

    func testKeyThatDoesNotBelongToTheCertificateIsRefused() {
        XCTAssertThrowsError(
            try MerchantTLSIdentity.load(
                spec: "cert=\(pki.path("client.pem")),key=\(pki.path("other.key"))", environment: [:])
        ) {
            XCTAssertEqual(($0 as? MerchantAPIError)?.code, .invalidIdentity)
        }
    }

    /// A FIFO in place of any identity file is refused at once by the engine's secret-file reader; the
    /// certificate and PKCS#12 files went through fopen before and waited for a writer forever.
    func testFIFOInPlaceOfAnIdentityFileIsRefusedAtOnce() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("identity-fifo-\(getpid())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let fifo = directory.appendingPathComponent("fifo").path
        XCTAssertEqual(mkfifo(fifo, 0o600), 0)
        for spec in [
            "p12=\(fifo)", "cert=\(fifo),key=\(pki.path("client.key"))", "cert=\(pki.path("client.pem")),key=\(fifo)",
        ] {
            let start = Date()
            XCTAssertThrowsError(try MerchantTLSIdentity.load(spec: spec, environment: [:]), spec) {
                XCTAssertEqual(($0 as? MerchantAPIError)?.code, .invalidIdentity)
                XCTAssertTrue(String(describing: $0).contains("not a regular file"), "\($0)")
            }
            XCTAssertLessThan(Date().timeIntervalSince(start), 5, spec)
        }
    }

    func testIdentitySpecsAreStrict() {
        for spec in [
            "", "cert=a", "key=b", "cert=a,key=b,p12=c", "p12=c,key-password-env=X", "cert=a,key=b,password-env=X",
            "p12=c,password=secret", "p12=c,p12=d", "p12=", "p12",
        ] {
            XCTAssertThrowsError(try MerchantTLSIdentity.load(spec: spec, environment: [:]), spec) {
                XCTAssertEqual(($0 as? MerchantAPIError)?.code, .invalidIdentity)
            }
        }
    }
}
