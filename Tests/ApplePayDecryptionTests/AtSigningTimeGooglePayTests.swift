// Issue 44, item 5: --at-signing-time checks no Google Pay expiry at all (Google Pay tokens have no signing
// time), and the CLI's help says so.
import ApplePayDecryption
import Foundation
import Testing

@Suite("--at-signing-time and Google Pay")
struct AtSigningTimeGooglePayTests {
    @Test("--at-signing-time's help in decrypt and batch says that no Google Pay expiry is checked under it")
    func atSigningTimeHelp() throws {
        for command in ["decrypt", "batch"] {
            let help = try runCLI([command, "--help"])
            let text = help.stdout.split(whereSeparator: \.isWhitespace).joined(separator: " ")
            #expect(text.contains("no Google Pay expiry is checked at all"), "\(command)")
        }
    }

    @Test("and it is so: an expired Google Pay token verifies under --at-signing-time")
    func expiredTokenVerifies() throws {
        let dir = ScratchDirectory()
        let keys = GooglePayCLIKeys(dir)
        let token = dir.write("expired.json", GooglePayCLIKeys.mint { $0.messageLifetime = -1 }.token)
        let now = try runCLI(["decrypt", token, "--now", "2026-03-01T12:00:30Z"] + keys.options)
        #expect(try JSONValue.parse(now.stdout)["error"]?.stringValue == "messageExpired")
        let archive = try runCLI(["decrypt", token, "--at-signing-time"] + keys.options)
        #expect(archive.status == 0, "\(archive.stdout)\(archive.stderr)")
    }
}
