// The multi-buffer backend (crypto_mb, eight P-256 ECDH or ECDSA verifications at once): OpenSSL's
// verdicts on Wycheproof, byte-identical batch output with it on and off, hostile items inside groups
// of eight, and every way of falling back (no library, no IFMA, a failing self-test) saying why.
@testable import ApplePayDecryption
import ApplePayCrypto
import ApplePayTestSupport
import Foundation
import Testing

enum MultiBufferEnvironment {
    /// crypto_mb ready in this process (APPLEPAY_CRYPTO_MB or the loader's path, IFMA, self-test).
    static var ready: Bool { CryptoMB.shared.library != nil }
    /// The library at least loads here (the self-test path can be exercised).
    static var path: String? {
        ProcessInfo.processInfo.environment["APPLEPAY_CRYPTO_MB"].flatMap { $0.isEmpty ? nil : $0 }
    }
    static var cpuHasIFMA: Bool {
        ((try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8)) ?? "").contains(" avx512ifma")
    }
    static var loads: Bool {
        if case .loaded = CryptoMBLibrary.load(path: path) { return true }
        return false
    }
}

@Suite("Multi-buffer P-256 (crypto_mb)")
struct MultiBufferTests {
    // MARK: everywhere

    @Test("off never loads crypto_mb; a missing library makes auto fall back and on fail, naming crypto_mb and why")
    func missingLibrary() throws {
        #expect(try !MultiBufferBackend.resolve(.off).isActive)
        let missing = "/nonexistent/libcrypto_mb.so.13"
        let auto = try MultiBufferBackend.probing(.auto, path: missing, failSelfTest: false)
        #expect(!auto.isActive)
        #expect(auto.description.hasPrefix("OpenSSL (crypto_mb unavailable: library missing"))
        #expect(throws: ConfigurationError.self) {
            try MultiBufferBackend.probing(.on, path: missing, failSelfTest: false)
        }
        do {
            _ = try MultiBufferBackend.probing(.on, path: missing, failSelfTest: false)
        } catch {
            #expect(error.code == .cryptoUnavailable)
            #expect(error.message.contains("crypto_mb") && error.message.contains("library missing"))
        }
    }

    @Test(
        "where the CPU has IFMA and APPLEPAY_CRYPTO_MB is set, crypto_mb is ready (the IFMA tests are not silently skipped)"
    )
    func readyWhereExpected() {
        guard MultiBufferEnvironment.path != nil, MultiBufferEnvironment.cpuHasIFMA else { return }
        if case let .unavailable(why) = CryptoMB.shared { Issue.record("crypto_mb should be ready here: \(why)") }
    }

    @Test(
        "without IFMA, loading says so (and auto falls back) instead of running crypto_mb",
        .enabled(if: MultiBufferEnvironment.path != nil && !MultiBufferEnvironment.cpuHasIFMA))
    func noIFMA() throws {
        guard case let .unavailable(why) = CryptoMBLibrary.load(path: MultiBufferEnvironment.path) else {
            Issue.record("crypto_mb claims to run on a CPU without avx512ifma")
            return
        }
        #expect(why.contains("IFMA"))
        #expect(throws: ConfigurationError.self) { try MultiBufferBackend.resolve(.on) }
        #expect(try !MultiBufferBackend.resolve(.auto).isActive)
    }

    @Test(
        "a failing self-test falls back: auto runs OpenSSL and says so, on refuses",
        .enabled(if: MultiBufferEnvironment.loads))
    func failingSelfTest() throws {
        let auto = try MultiBufferBackend.probing(.auto, path: MultiBufferEnvironment.path, failSelfTest: true)
        #expect(!auto.isActive)
        #expect(auto.reason.contains("self-test failed"), "\(auto.reason)")
        #expect(throws: ConfigurationError.self) {
            try MultiBufferBackend.probing(.on, path: MultiBufferEnvironment.path, failSelfTest: true)
        }
        // The same library with an honest self-test is used.
        #expect(try MultiBufferBackend.probing(.auto, path: MultiBufferEnvironment.path, failSelfTest: false).isActive)
    }

    // MARK: where crypto_mb runs

    @Test(
        "Wycheproof ECDH P-256 (ecpoint): eight at a time, crypto_mb gives OpenSSL's verdict and secret for every vector",
        .enabled(if: MultiBufferEnvironment.ready), SharedVectors.wycheproof)
    func wycheproofECDH() throws {
        let library = try #require(CryptoMB.shared.library)
        let url = SharedVectors.wycheproofFolder.appendingPathComponent("ecdh_secp256r1_ecpoint_test.json")
        let root = try JSONValue.parse(Data(contentsOf: url).bytes)
        var vectors: [(id: String, point: [UInt8], key: [UInt8], shared: [UInt8], result: String)] = []
        guard case let .array(groups)? = root["testGroups"] else { Issue.record("no testGroups"); return }
        for group in groups {
            guard case let .array(tests)? = group["tests"] else { continue }
            for test in tests {
                vectors.append(
                    (
                        test["tcId"]!.description, Hex.decode(test["public"]!.stringValue!)!,
                        Hex.decode(test["private"]!.stringValue!)!,
                        Hex.decode(test["shared"]!.stringValue!)!, test["result"]!.stringValue!
                    ))
            }
        }
        #expect(vectors.count == 355)
        let agreement = P256MultiBufferAgreement(library: library)
        let openssl = P256PointAgreement()
        let outputs = UnsafeMutablePointer<UInt8>.allocate(capacity: 32 * 8)
        defer { outputs.deallocate() }
        var agreedByBoth = 0
        for start in stride(from: 0, to: vectors.count, by: 8) {
            let group = Array(vectors[start..<min(start + 8, vectors.count)])
            var expected: [[UInt8]?] = []
            outputs.initialize(repeating: 0, count: 32 * 8)
            for (k, v) in group.enumerated() {
                // OpenSSL alone: the engine's reference.
                var secret = [UInt8](repeating: 0, count: 32)
                let scalar = try #require(v.key.withUnsafeBytes { P256PrivateScalar.fromBigEndian($0) })
                let accepted =
                    v.point.withUnsafeBytes { openssl.setPeer($0) }
                    && secret.withUnsafeMutableBytes { openssl.sharedSecret(scalar, into: $0) }
                expected.append(accepted ? secret : nil)
                // The multi-buffer path: OpenSSL's decoder is the gate, crypto_mb the arithmetic.
                if v.point.withUnsafeBytes({ openssl.setPeer($0) }) {
                    let mbScalar = try #require(P256MultiBufferScalar.fromBigEndian(v.key))
                    #expect(
                        v.point.withUnsafeBytes {
                            agreement.set(lane: k, scalar: mbScalar, peer: $0, into: outputs + 32 * k)
                        })
                }
            }
            let ok = agreement.run()
            for (k, v) in group.enumerated() {
                let mb: [UInt8]? =
                    ok & (1 << k) != 0 ? Array(UnsafeBufferPointer(start: outputs + 32 * k, count: 32)) : nil
                #expect(mb == expected[k], "tcId \(v.id) (\(v.result))")
                if v.result == "valid" { #expect(mb == v.shared, "tcId \(v.id)") }
                if v.result == "invalid" { #expect(mb == nil, "tcId \(v.id)") }
                if mb != nil { agreedByBoth += 1 }
            }
        }
        #expect(agreedByBoth == 330)
    }

    @Test(
        "a failing verification self-test falls back too: auto runs OpenSSL and names the verify call, on refuses",
        .enabled(if: MultiBufferEnvironment.loads))
    func failingVerificationSelfTest() throws {
        let auto = try MultiBufferBackend.probing(
            .auto, path: MultiBufferEnvironment.path, failSelfTest: false, failVerificationSelfTest: true)
        #expect(!auto.isActive)
        #expect(
            auto.reason.contains("self-test failed") && auto.reason.contains("mbx_nistp256_ecdsa_verify_mb8"),
            "\(auto.reason)")
        #expect(throws: ConfigurationError.self) {
            try MultiBufferBackend.probing(
                .on, path: MultiBufferEnvironment.path, failSelfTest: false, failVerificationSelfTest: true)
        }
    }

    @Test(
        "Wycheproof ECDSA P-256/SHA-256: eight at a time, the multi-buffer verdict (crypto_mb, a refused lane re-checked by the engine) is OpenSSL's for every vector, and crypto_mb never accepts what OpenSSL refuses",
        .enabled(if: MultiBufferEnvironment.ready), SharedVectors.wycheproof)
    func wycheproofECDSA() throws {
        let library = try #require(CryptoMB.shared.library)
        let verification = try #require(
            P256MultiBufferVerification(library: library), "crypto_mb without mbx_nistp256_ecdsa_verify_mb8")
        let vectors = try WycheproofECDSAVector.load()
        #expect(vectors.count == 484)
        var refusedByRules = 0, verifiedByCryptoMB = 0, recheckedByEngine = 0, acceptedOnRecheck: [String] = []
        for start in stride(from: 0, to: vectors.count, by: 8) {
            let group = Array(vectors[start..<min(start + 8, vectors.count)])
            var set: UInt8 = 0
            var probes: [FixedKeyVerificationProbe] = []
            for (k, v) in group.enumerated() {
                probes.append(try #require(FixedKeyVerificationProbe(publicKey: v.key), "tcId \(v.id): key refused"))
                let key = try #require(v.key.withUnsafeBytes { P256MultiBufferPublicKey(uncompressedPoint: $0) })
                if v.signature.withUnsafeBytes({ s in
                    v.digest.withUnsafeBytes { verification.set(lane: k, signature: s, digest: $0, key: key) }
                }) {
                    set |= 1 << UInt8(k)
                }
            }
            let ok = verification.run()
            #expect(ok & ~set == 0, "a lane not set was reported verified")
            for (k, v) in group.enumerated() {
                let openSSL = probes[k].verifyEVP(digest: v.digest, signature: v.signature)
                let engine = probes[k].verifyFixedKey(digest: v.digest, signature: v.signature)
                let byCryptoMB = ok & (1 << UInt8(k)) != 0
                // The rule the batch lanes apply to their own verification (the table lanes since; this
                // call is the benchmark's floor): a lane the engine's rules refuse fails; one verified
                // passes; one refused gets the engine's verdict.
                let verdict = set & (1 << UInt8(k)) == 0 ? false : (byCryptoMB || engine)
                #expect(verdict == openSSL, "tcId \(v.id) (\(v.result)): multi-buffer \(verdict), OpenSSL \(openSSL)")
                #expect(!byCryptoMB || openSSL, "tcId \(v.id): crypto_mb accepted a signature OpenSSL refuses")
                #expect(verdict == (v.result == "valid"), "tcId \(v.id) (\(v.result))")
                if set & (1 << UInt8(k)) == 0 {
                    refusedByRules += 1
                } else if byCryptoMB {
                    verifiedByCryptoMB += 1
                } else {
                    recheckedByEngine += 1
                }
                if set & (1 << UInt8(k)) != 0, !byCryptoMB, engine { acceptedOnRecheck.append(v.id) }
            }
        }
        #expect(verifiedByCryptoMB + refusedByRules + recheckedByEngine == 484)
        // Every valid signature verifies in crypto_mb itself (the digest reduced below n first): the
        // re-check is a safety net, not a path valid tokens take.
        #expect(
            verifiedByCryptoMB == 174 && acceptedOnRecheck.isEmpty, "crypto_mb refused valid tcIds \(acceptedOnRecheck)"
        )
        print(
            "Wycheproof ECDSA through crypto_mb: \(verifiedByCryptoMB) verified by crypto_mb, \(recheckedByEngine) refused by crypto_mb (re-checked: \(acceptedOnRecheck.count) accepted), \(refusedByRules) refused by the DER/range rules"
        )
    }

    @Test(
        "a broken signature in lane 3 of eight is refused there, and only there; a partial group is padded",
        .enabled(if: MultiBufferEnvironment.ready))
    func brokenSignatureInsideAGroup() throws {
        let library = try #require(CryptoMB.shared.library)
        let verification = try #require(P256MultiBufferVerification(library: library))
        let signer = P256SigningProbe()
        let key = try #require(signer.publicKey.withUnsafeBytes { P256MultiBufferPublicKey(uncompressedPoint: $0) })
        var lanes: [(signature: [UInt8], digest: [UInt8])] = (0..<8).map { k in
            let digest = SHA256.hash(Array("lane \(k)".utf8))
            return (signer.sign(digest: digest), digest)
        }
        lanes[3].signature[lanes[3].signature.count - 1] ^= 0x01  // s changed, still DER and in range
        for (k, lane) in lanes.enumerated() {
            #expect(
                lane.signature.withUnsafeBytes { s in
                    lane.digest.withUnsafeBytes { verification.set(lane: k, signature: s, digest: $0, key: key) }
                })
        }
        #expect(verification.run() == 0b1111_0111)
        // Lanes 1, 3 and 6 only: the padding lanes' verdicts are not reported.
        for k in [1, 3, 6] {
            #expect(
                lanes[k].signature.withUnsafeBytes { s in
                    lanes[k].digest.withUnsafeBytes { verification.set(lane: k, signature: s, digest: $0, key: key) }
                })
        }
        #expect(verification.run() == 0b0100_0010)
        // Nothing set: nothing run, nothing reported.
        #expect(verification.run() == 0)
    }

    @Test(
        "on and off give identical results when a group of eight holds a broken signature: that token fails as the engine fails it, its neighbours decrypt",
        .enabled(if: MultiBufferEnvironment.ready), arguments: [3, 0, 7])
    func brokenSignatureInsideABatchGroup(position: Int) throws {
        let f = Fixtures.shared
        var tokens = (0..<16).map { _ in f.mint().bytes }
        // The last byte of s (the CMS ends with the signature and three end-of-contents pairs): the
        // signature stays strict DER with s in range, so crypto_mb's lane is the one that refuses it.
        tokens[position] = bytes(tamperBase64(f.mint().paymentData, path: ["signature"]) { $0[$0.count - 7] ^= 0x01 })
        tokens[8 + position] = bytes(
            tamperBase64(f.mint().paymentData, path: ["signature"]) { $0[$0.count - 40] ^= 0x01 })
        let decryptor = Fixtures.shared.decryptor()
        func run(_ mode: MultiBufferMode) throws -> [String] {
            var source = ArrayTokenSource(tokens)
            var lines: [String] = []
            try BatchDecryptor(
                decryptor: decryptor, lanes: 1, reference: .at(signingInstant), windowSize: 512, multiBuffer: mode
            )
            .run(&source, deliver: { lines.append(Self.describeFully($0)) })
            return lines
        }
        let on = try run(.on), off = try run(.off)
        #expect(on == off)
        for (i, line) in on.enumerated() {
            let code = line.split(separator: " ")[2]
            #expect(code == (i % 8 == position ? "invalidSignature" : "ok"), "\(line)")
        }
    }

    /// A token for each hostile case, interleaved with good ones so that every group of eight holds some.
    static func hostileArchive(count: Int) -> [[UInt8]] {
        let f = Fixtures.shared
        let good = (0..<8).map { _ in f.mint().bytes }
        let gcmFailure = f.mint { $0.corruptTagBeforeSigning = true }.bytes
        let offCurve = f.mint { $0.ephemeralPointOffCurve = true }.bytes
        let leadingZero = f.mint { $0.requireLeadingZeroSharedSecret = true }.bytes
        let brokenSignature = bytes(
            tamperBase64(f.mint().paymentData, path: ["signature"]) { $0[$0.count - 40] ^= 0x01 })
        let rsa = f.mint(for: f.rsaMerchant).bytes
        let stale = f.mint { $0.signingTime = signingInstant.addingTimeInterval(-86_400) }.bytes
        let hostile = [
            gcmFailure, offCurve, brokenSignature, rsa, stale, leadingZero, Array("{\"version\":\"EC_v1\"}".utf8),
            Array("not json".utf8),
        ]
        var tokens: [[UInt8]] = []
        var i = 0
        while tokens.count < count {
            // Fresh good tokens keep most groups full; a hostile item lands at a different lane each time.
            tokens.append(
                i % 5 == 2 ? hostile[(i / 5) % hostile.count] : (i % 7 == 3 ? good[i % good.count] : f.mint().bytes))
            i += 1
        }
        return tokens
    }

    static func describeFully(_ result: BatchResult) -> String {
        switch result.outcome.result {
        case let .success(payment): return "\(result.index) \(result.transactionId ?? "-") ok \(payment.json)"
        case let .failure(error):
            return
                "\(result.index) \(result.transactionId ?? "-") \(error.code.rawValue) \(error.message) \(error.field ?? "") \(error.reason ?? "")"
        }
    }

    @Test(
        "on and off give identical results, item for item, with hostile items (GCM failure, off-curve key, broken signature, replay, RSA, stale, unparsable) inside groups of eight",
        .enabled(if: MultiBufferEnvironment.ready), arguments: [(1, 512), (2, 13), (2, 8), (1, 3)])
    func onEqualsOff(lanes: Int, window: Int) throws {
        let tokens = Self.hostileArchive(count: 200)
        let decryptor = Fixtures.shared.decryptor()
        func run(_ mode: MultiBufferMode) throws -> [String] {
            var source = ArrayTokenSource(tokens)
            var lines: [String] = []
            let batch = try BatchDecryptor(
                decryptor: decryptor, lanes: lanes, reference: .at(signingInstant), windowSize: window,
                multiBuffer: mode)
            #expect(batch.multiBuffer.isActive == (mode == .on))
            try batch.run(&source, deliver: { lines.append(Self.describeFully($0)) })
            return lines
        }
        let on = try run(.on), off = try run(.off)
        #expect(on.count == tokens.count)
        #expect(on == off)
        let codes = Set(off.map { $0.split(separator: " ")[2] })
        for code in [
            "ok", "decryptionFailed", "invalidSignature", "replayedTransaction", "signingTimeOutOfRange",
            "malformedToken",
        ] {
            #expect(codes.contains(Substring(code)), "\(code) missing from the archive")
        }
    }

    @Test(
        "each shared Apple vector gives the same result through the batch engine on and off",
        .enabled(if: MultiBufferEnvironment.ready), SharedVectors.apple,
        arguments: AppleVector.all)
    func appleVectorsOnEqualsOff(_ vector: AppleVector) throws {
        let meta = try vector.meta()
        let key = try Data(contentsOf: URL(fileURLWithPath: vector.path(meta.keyFile))).bytes
        let identity =
            try meta.certFile.map {
                try MerchantIdentity(
                    certificate: Data(contentsOf: URL(fileURLWithPath: vector.path($0))).bytes, privateKey: key)
            }
            ?? MerchantIdentity(merchantIdentifier: meta.merchantIdentifier, privateKey: key)
        let decryptor = try PaymentTokenDecryptor(merchants: [identity])
        let token = try Data(contentsOf: URL(fileURLWithPath: vector.path("token.json"))).bytes
        let signingTime = try #require(try? Date(meta.signingTime, strategy: .iso8601))
        func run(_ mode: MultiBufferMode) throws -> [String] {
            // The token three times: a partial group with a replay in it.
            var source = ArrayTokenSource([token, token, token])
            var lines: [String] = []
            try BatchDecryptor(decryptor: decryptor, lanes: 1, reference: .at(signingTime), multiBuffer: mode)
                .run(&source, deliver: { lines.append(Self.describeFully($0)) })
            return lines
        }
        let on = try run(.on)
        #expect(on == (try run(.off)))
        #expect(on[0].split(separator: " ")[2] == Substring(meta.expect))
    }
}

@Suite("Multi-buffer P-256 through the CLI")
struct MultiBufferCLITests {
    static let missing = ["APPLEPAY_CRYPTO_MB": "/nonexistent/libcrypto_mb.so.13"]

    @Test(
        "--multibuffer on without crypto_mb fails before reading input (exit 2), naming crypto_mb and the reason; auto says why it fell back"
    )
    func onFailsAutoFallsBack() throws {
        let dir = ScratchDirectory()
        let out = dir.url.appendingPathComponent("on.jsonl").path
        let on = try runCLI(
            ["batch", "/nonexistent-input.jsonl", "--out", out, "--multibuffer", "on"] + BatchFixture.options,
            environment: Self.missing)
        #expect(on.status == 2)
        #expect(on.stderr.contains("crypto_mb") && on.stderr.contains("library missing"), "\(on.stderr)")
        #expect(!on.stderr.contains("nonexistent-input"), "the input was looked at before the backend was checked")
        #expect(!FileManager.default.fileExists(atPath: out))
        let autoOut = dir.url.appendingPathComponent("auto.jsonl").path
        let auto = try runCLI(
            ["batch", BatchFixture.archive, "--out", autoOut] + BatchFixture.options, environment: Self.missing)
        #expect(auto.status == 0)
        #expect(auto.stderr.contains("P-256 on OpenSSL (crypto_mb unavailable: library missing"), "\(auto.stderr)")
        let off = try runCLI(
            ["batch", BatchFixture.archive, "--out", autoOut + ".off", "--multibuffer", "off"] + BatchFixture.options)
        #expect(off.stderr.contains("P-256 on OpenSSL (multibuffer off)"), "\(off.stderr)")
        #expect(try BatchFixture.lines(autoOut) == BatchFixture.lines(autoOut + ".off"))
    }

    @Test(
        "a failing self-test: auto falls back and says so, on exits 2 naming the self-test",
        .enabled(if: MultiBufferEnvironment.loads))
    func failingSelfTest() throws {
        let dir = ScratchDirectory()
        let environment = ["APPLEPAY_CRYPTO_MB_TESTING_ONLY_FAIL_SELF_TEST": "1"]
        let out = dir.url.appendingPathComponent("auto.jsonl").path
        let auto = try runCLI(
            ["batch", BatchFixture.archive, "--out", out] + BatchFixture.options, environment: environment)
        #expect(auto.status == 0)
        #expect(auto.stderr.contains("P-256 on OpenSSL (crypto_mb unavailable: self-test failed"), "\(auto.stderr)")
        let on = try runCLI(
            ["batch", BatchFixture.archive, "--out", out + ".on", "--multibuffer", "on"] + BatchFixture.options,
            environment: environment)
        #expect(on.status == 2)
        #expect(on.stderr.contains("crypto_mb") && on.stderr.contains("self-test failed"), "\(on.stderr)")
    }

    @Test(
        "--multibuffer on gives off's output byte for byte: Vectors/archive.jsonl and a 10,000-token archive with hostile items in groups of eight",
        .enabled(if: MultiBufferEnvironment.ready))
    func onEqualsOffBytes() throws {
        let dir = ScratchDirectory()
        // The factory's test PKI: its merchants and root as files for the CLI.
        let f = Fixtures.shared
        let tokens = MultiBufferTests.hostileArchive(count: 10_000)
        let archive = dir.write("hostile.jsonl", tokens.flatMap { $0 + [0x0A] })
        let ec = f.ecMerchant, rsa = f.rsaMerchant
        let options = [
            "--merchant",
            "cert=\(dir.write("ec.cert.pem", ec.certificatePEM)),key=\(dir.write("ec.key.pem", ec.privateKeyPEM))",
            "--merchant",
            "cert=\(dir.write("rsa.cert.pem", rsa.certificatePEM)),key=\(dir.write("rsa.key.pem", rsa.privateKeyPEM))",
            "--trust-root", dir.write("root.pem", f.pki.rootPEM), "--now", "2026-03-01T12:00:30Z", "--quiet",
        ]
        // Vectors/ on two lanes, the big archive on one (a debug build takes about a minute per run of it).
        for (input, extra, lanes) in [(BatchFixture.archive, BatchFixture.options, "2"), (archive, options, "1")] {
            do {
                let on = dir.url.appendingPathComponent("on.jsonl").path,
                    off = dir.url.appendingPathComponent("off.jsonl").path
                try? FileManager.default.removeItem(atPath: on)
                try? FileManager.default.removeItem(atPath: off)
                let a = try runCLI(["batch", input, "--out", on, "--multibuffer", "on", "--lanes", lanes] + extra)
                let b = try runCLI(["batch", input, "--out", off, "--multibuffer", "off", "--lanes", lanes] + extra)
                #expect(a.status == 0 && b.status == 0, "\(a.stderr) \(b.stderr)")
                #expect(a.stderr.contains("P-256 on crypto_mb ("), "\(a.stderr)")
                let onBytes = try Data(contentsOf: URL(fileURLWithPath: on)),
                    offBytes = try Data(contentsOf: URL(fileURLWithPath: off))
                #expect(onBytes == offBytes, "\(input), \(lanes) lanes")
                #expect(onBytes.count > 0)
            }
        }
    }
}
