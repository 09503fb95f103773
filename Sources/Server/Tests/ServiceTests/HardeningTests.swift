// What an outside review of the running service found (issue 19, part 4), one test per finding: each
// failed on the service as it was before its fix.
import ApplePayDecryption
import ApplePayService
import ApplePayTestSupport
import Foundation
import XCTest

final class HardeningTests: XCTestCase {

    func testARetentionThatCannotCoverTheFreshnessWindowIsRefused() throws {
        for (window, skew) in [("0", "0"), ("300", "0")] {
            XCTAssertThrowsError(try ServiceOptions.parse(["--listen", "127.0.0.1:0"] + Bundled.options + ["--window", window, "--clock-skew", skew])) { error in
                XCTAssertTrue(ServiceOptions.message(for: error).contains("replay"), ServiceOptions.message(for: error))
            }
        }
        XCTAssertNoThrow(try ServiceOptions.parse(["--listen", "127.0.0.1:0"] + Bundled.options + ["--window", "0", "--clock-skew", "1"]))
    }

    func testWithTheShortestRetentionAReplayIsStillRefused() async throws {
        let keys = MintedKeys()
        let merchant = keys.pki.makeMerchant(identifier: "merchant.com.example.retention")
        let arguments = ["--merchant", keys.writeMerchant(merchant, as: "m"), "--trust-root", keys.rootPath, "--window", "1", "--clock-skew", "1"]
        let token = keys.token(for: merchant)
        try await withService(arguments) { service in
            let first = try await service.post("/v1/decrypt", token)
            XCTAssertEqual(first.status, 200, first.text)
            XCTAssertTrue(service.log.text.contains("replay_retention_s=3"), service.log.text)
            for _ in 0..<6 {
                let again = try await service.post("/v1/decrypt", token)
                XCTAssertNotEqual(again.status, 200, "a replay was accepted: \(again.text)")
                try await Task.sleep(for: .milliseconds(500))
            }
        }
    }

    func testAFixedNowJudgesClaimsByTheSameTime() async throws {
        let keys = MintedKeys()
        let merchant = keys.pki.makeMerchant(identifier: "merchant.com.example.fixed")
        let signed = Date(timeIntervalSince1970: 1_767_268_800)  // 2026-01-01T12:00:00Z
        let token = keys.token(for: merchant, signedAt: signed)
        let arguments = ["--merchant", keys.writeMerchant(merchant, as: "m"), "--trust-root", keys.rootPath,
                         "--insecure-testing-fixed-now", "2026-01-01T12:00:00Z", "--window", "1", "--clock-skew", "1"]
        try await withService(arguments) { service in
            let first = try await service.post("/v1/decrypt", token)
            XCTAssertEqual(first.status, 200, first.text)
            // Past the 3 s retention in real time; the token is as fresh as ever at the fixed time.
            try await Task.sleep(for: .milliseconds(4500))
            let again = try await service.post("/v1/decrypt", token)
            XCTAssertEqual(again.code, "replayedTransaction", again.text)
        }
    }
}

/// User plus system CPU seconds of a process so far.
func cpuSeconds(_ pid: Int32) -> Double {
    let stat = (try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)) ?? ""
    guard let close = stat.lastIndex(of: ")") else { return 0 }
    let fields = stat[stat.index(after: close)...].split(separator: " ")
    // Fields 14 and 15 of the whole line (utime, stime) are the 12th and 13th after the command name.
    guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
    return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
}
