// The decryption routes where only a process shows the behaviour: a socket trickled by a slow client,
// and the resident memory of a large streamed batch.
import ApplePayDecryption
import Foundation
import XCTest

final class DecryptAPITests: XCTestCase {
    func testASlowClientGets408WithinTheRequestTimeoutAndIsDisconnected() async throws {
        // The idle timeout alone never fires on a client that sends a byte every 300 ms.
        let service = try ServiceProcess(Bundled.options + ["--request-timeout", "2", "--idle-timeout", "1"])
        let token = try Bundled.token("ec-3dsecure.json")
        let connection = try XCTUnwrap(RawConnection(port: service.port, timeout: 15))
        connection.send(
            Data(
                "POST /v1/decrypt HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: \(token.count)\r\n\r\n"
                    .utf8))
        let trickle = Thread {
            for byte in token.prefix(40) {
                connection.send(Data([byte]))
                usleep(300_000)
            }
        }
        trickle.start()
        let started = Date()
        let response = connection.receiveAll()
        let elapsed = Date().timeIntervalSince(started)
        XCTAssertTrue(response.hasPrefix("HTTP/1.1 408"), response)
        XCTAssertTrue(response.contains("\"requestTimeout\""), response)
        XCTAssertGreaterThan(elapsed, 1.5)
        XCTAssertLessThan(elapsed, 8, "the connection is closed soon after the 408, not held while the client trickles")
        let healthy = try await HTTP.get("\(service.base)/healthz")
        XCTAssertEqual(healthy.status, 200)
    }

    func testBatchMemoryIsBoundedWhateverTheBodySize() async throws {
        let service = try ServiceProcess(Bundled.options)
        let before = service.peakResidentKiB
        // 40 000 lines of 1 KiB junk and one line of 2 MiB: about 42 MB of body.
        var body = Data()
        let junk = Data((String(repeating: "x", count: 1023) + "\n").utf8)
        for _ in 0..<40_000 { body.append(junk) }
        body.append(Data(repeating: UInt8(ascii: "y"), count: 2 << 20))
        body.append(Data("\n".utf8))
        let result = try await HTTP.post(
            "\(service.base)/v1/decrypt/batch", body, headers: ["Content-Type": "application/jsonl"])
        XCTAssertEqual(result.status, 200)
        let lines = result.text.split(separator: "\n")
        XCTAssertEqual(lines.count, 40_001)
        XCTAssertTrue(lines.last!.contains("over the limit"), String(lines.last!))
        let grown = service.peakResidentKiB - before
        XCTAssertLessThan(grown, 40 * 1024, "the service grew by \(grown) KiB for a 42 MB body")
    }
}
