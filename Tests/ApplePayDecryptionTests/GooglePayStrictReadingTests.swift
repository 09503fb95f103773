// Issue 44, item 4: the Google Pay token reader as strict as Tink: no member Google does not write (in the
// token, intermediateSigningKey, signedKey, a sealed signedMessage), and base64 only with its padding.
import ApplePayDecryption
import ApplePayTestSupport
import Foundation
import Testing

/// A token's JSON with `change` applied to its top-level members (re-serialised: signatures over the inner
/// documents break, which the reader never gets to).
private func edited(_ token: [UInt8], _ change: (inout [(String, JSONValue)]) -> Void) throws -> [UInt8] {
    guard case var .object(members) = try JSONValue.parse(token) else { throw CancellationError() }
    change(&members)
    return Array(JSONValue.object(members).description.utf8)
}

/// The same for the document inside string member `name` (signedMessage, signedKey) of `members`.
private func editedDocument(
    _ members: inout [(String, JSONValue)], _ name: String, _ change: (inout [(String, JSONValue)]) -> Void
) {
    guard let index = members.firstIndex(where: { $0.0 == name }), let text = members[index].1.stringValue,
        case var .object(inner)? = try? JSONValue.parse(text)
    else { return }
    change(&inner)
    members[index].1 = .string(JSONValue.object(inner).description)
}

/// The same for `intermediateSigningKey`'s members.
private func editedIntermediate(_ members: inout [(String, JSONValue)], _ change: (inout [(String, JSONValue)]) -> Void)
{
    guard let index = members.firstIndex(where: { $0.0 == "intermediateSigningKey" }),
        case var .object(key) = members[index].1
    else { return }
    change(&key)
    members[index].1 = .object(key)
}

private func parseError(_ token: [UInt8]) -> ApplePayError? {
    do throws(ApplePayError) {
        _ = try GooglePayToken.parse(token)
        return nil
    } catch {
        return error
    }
}

/// `text` without its `=` padding.
private func unpadded(_ value: JSONValue) -> JSONValue {
    .string(String((value.stringValue ?? "").filter { $0 != "=" }))
}

@Suite("Google Pay: the token reader refuses unknown members and unpadded base64")
struct GooglePayStrictReadingTests {
    let bench = GooglePayBench.shared

    @Test("a member Google does not write is malformedToken, at every level Tink checks")
    func unknownMembers() throws {
        let token = bench.factory.mint(bench.options()).token
        #expect(parseError(token) == nil)
        let top = try edited(token) { $0.append(("extra", .string("x"))) }
        #expect(parseError(top)?.code == .malformedToken)
        #expect(parseError(top)?.field == "extra")
        let intermediate = try edited(token) { editedIntermediate(&$0) { $0.append(("note", .null)) } }
        #expect(parseError(intermediate)?.field == "intermediateSigningKey.note")
        let message = try edited(token) { editedDocument(&$0, "signedMessage") { $0.append(("x", .number("1"))) } }
        #expect(parseError(message)?.field == "signedMessage.x")
        let signedKey = try edited(token) {
            editedIntermediate(&$0) { editedDocument(&$0, "signedKey") { $0.append(("keyUse", .string("x"))) } }
        }
        #expect(parseError(signedKey)?.field == "intermediateSigningKey.signedKey.keyUse")
        // An extra top-level member is not signed: the old reader let it through to a payment.
        let engine = try bench.decryptor()
        #expect(try bench.code(top, decryptor: engine)?.code == .malformedToken)
    }

    @Test("base64 without its = padding is malformedToken (Google pads; Tink refuses it)")
    func unpaddedBase64() throws {
        let token = bench.factory.mint(bench.options()).token
        let tag = try edited(token) { members in
            editedDocument(&members, "signedMessage") { inner in
                guard let i = inner.firstIndex(where: { $0.0 == "tag" }) else { return }
                inner[i].1 = unpadded(inner[i].1)
            }
        }
        #expect(parseError(tag)?.code == .malformedToken)
        #expect(parseError(tag)?.field == "signedMessage.tag")
        let keyValue = try edited(token) { members in
            editedIntermediate(&members) { key in
                editedDocument(&key, "signedKey") { inner in
                    guard let k = inner.firstIndex(where: { $0.0 == "keyValue" }) else { return }
                    inner[k].1 = unpadded(inner[k].1)
                }
            }
        }
        #expect(parseError(keyValue)?.field == "intermediateSigningKey.signedKey.keyValue")
        // The top-level signature is not signed itself: a token whose DER signature needs padding, unpadded,
        // verified and decrypted before; now it is malformedToken.
        var options = bench.options()
        var padded: [UInt8]? = nil
        for attempt in 0..<64 where padded == nil {
            options.messageId = "padding-\(attempt)"
            let candidate = bench.factory.mint(options).token
            if case let .object(members) = try JSONValue.parse(candidate),
                members.first(where: { $0.0 == "signature" })?.1.stringValue?.hasSuffix("=") == true
            {
                padded = candidate
            }
        }
        let signature = try edited(try #require(padded)) { members in
            guard let i = members.firstIndex(where: { $0.0 == "signature" }) else { return }
            members[i].1 = unpadded(members[i].1)
        }
        #expect(parseError(signature)?.field == "signature")
        #expect(try bench.code(signature)?.code == .malformedToken)
    }
}
