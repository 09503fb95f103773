// OpenSSL's shared state under threads: one key exported in several forms at once, and keys exported and
// read back while a PKCS#11 module built on OpenSSL (SoftHSM2) is loaded and initialised.
import ApplePayCrypto
import ApplePayDecryption
import ApplePayTestSupport
import Foundation
import Synchronization
import Testing

@Suite("OpenSSL's global state")
struct OpenSSLGlobalStateTests {
    /// Fresh loads: each a copy of the module at a new path, so that dlopen maps it anew and its
    /// constructors and C_Initialize redo their OpenSSL set-up (one path is loaded once per process).
    static let moduleLoads = 8
    static let workers = 3

    /// OpenSSL 3.0's PKCS#8 encoder for EC keys marks the key it encodes "no parameters" for the length of
    /// the export: an export of the same key in its own form (SEC1) on another thread then came out
    /// without its curve, 109 bytes nothing reads back ("unsupported public key type": TestPKI.identity()
    /// crashed a CI run). Exports now work on a copy of the key.
    @Test("one EC key exported at once on several threads, as PKCS#8 and as SEC1, reads back every time")
    func sharedKeyExportsRoundTrip() {
        let merchant = TestPKI().makeMerchant(identifier: "merchant.test.shared")
        let failures = Mutex<[String]>([])
        let group = DispatchGroup()
        for thread in 0..<4 {
            group.enter()
            Thread.detachNewThread {
                defer { group.leave() }
                for round in 0..<400 {
                    // Two threads export PKCS#8, two SEC1 (DER, then PEM), each checking what it wrote.
                    let key =
                        thread % 2 == 0
                        ? Array(merchant.privateKeyPEM.utf8)
                        : round % 2 == 0
                            ? merchant.privateKeyDER : Array(merchant.sec1PrivateKeyPEM.utf8)
                    do {
                        _ = try MerchantIdentity(certificate: merchant.certificateDER, privateKey: key)
                    } catch {
                        failures.withLock {
                            $0.append("thread \(thread), round \(round), \(key.count) bytes: \(error)")
                        }
                    }
                }
            }
        }
        group.wait()
        let seen = failures.withLock { $0 }
        #expect(seen.isEmpty, "\(seen.count) of 1600 exports did not read back; first: \(seen.first ?? "")")
    }

    @Test("keys generated, exported (SEC1 DER and PEM, PKCS#8 PEM, SPKI) and decoded while PKCS#11 modules load")
    func exportsRoundTripDuringModuleLoads() throws {
        _ = try SoftHSMToken.require()  // SOFTHSM2_CONF: the module copies read the test token's configuration
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "applepay-module-loads-\(getpid())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let module = URL(fileURLWithPath: SoftHSMToken.module).resolvingSymlinksInPath()

        let failures = Mutex<[String]>([])
        let rounds = Atomic<Int>(0)
        let loading = Atomic<Bool>(true)
        let group = DispatchGroup()
        for worker in 0..<Self.workers {
            group.enter()
            Thread.detachNewThread {
                defer { group.leave() }
                let pki = TestPKI()
                var round = 0
                // At least a few rounds each, and on until the last module is loaded.
                while round < 4 || loading.load(ordering: .acquiring) {
                    if let failure = Self.roundTrip(pki: pki, name: "merchant.test.w\(worker).r\(round)") {
                        failures.withLock { $0.append("worker \(worker), round \(round): \(failure)") }
                    }
                    round += 1
                }
                rounds.add(round, ordering: .relaxed)
            }
        }
        for load in 0..<Self.moduleLoads {
            let copy = directory.appendingPathComponent("softhsm2-\(load).so")
            try FileManager.default.copyItem(at: module, to: copy)
            do {
                let loaded = try PKCS11Module.load(path: copy.path)
                // A sanity check of the copy, not the test's subject: SoftHSM2's file store can be mid-rewrite
                // (another test's session on the shared token) when a fresh copy reads it, and the copy then
                // lists the token a moment later (one CI run under ASan saw it absent once): look a few times.
                var found = false
                for _ in 0..<20 where !found {
                    found = try loaded.tokens().contains { $0.label == SoftHSMToken.tokenLabel }
                    if !found { usleep(50_000) }
                }
                #expect(found, "module copy \(load) never listed the token \(SoftHSMToken.tokenLabel)")
            } catch {
                Issue.record("load \(load): \(error)")
            }
            try FileManager.default.removeItem(at: copy)
            usleep(useconds_t.random(in: 1_000...20_000))  // the next load lands at another point of a round
        }
        loading.store(false, ordering: .releasing)
        group.wait()

        let seen = failures.withLock { $0 }
        #expect(seen.isEmpty, "\(seen.count) of \(rounds.load(ordering: .relaxed)) rounds failed:\n\(seen.prefix(5))")
    }

    /// One merchant made, exported in every form and loaded back; the failure's text, or nil.
    private static func roundTrip(pki: TestPKI, name: String) -> String? {
        let merchant = pki.makeMerchant(identifier: name)
        guard let spki = merchant.certificate.publicKey()?.subjectPublicKeyInfoDER() else {
            return "the certificate's public key cannot be encoded"
        }
        let expected = SHA256.hash(spki)
        let exports: [(String, [UInt8])] = [
            ("SEC1 DER", merchant.privateKeyDER), ("PKCS#8 PEM", Array(merchant.privateKeyPEM.utf8)),
            ("SEC1 PEM", Array(merchant.sec1PrivateKeyPEM.utf8)),
        ]
        for (form, key) in exports {
            guard !key.isEmpty else { return "\(form): the export is empty" }
            do {
                let identity = try MerchantIdentity(certificate: merchant.certificateDER, privateKey: key)
                guard identity.publicKeyHash == expected else { return "\(form): another public key hash" }
            } catch {
                return "\(form): \(error)"
            }
        }
        return nil
    }
}
