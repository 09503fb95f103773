// A verified, decrypted Google Pay message: the plaintext in a wiped buffer, the recipient id it was
// signed for, and what it claims against replays (its messageId and the signed message's digest).
internal import ApplePayCrypto

/// A verified Google Pay message, as sealed: no payment read from it yet (see ``GooglePayment``).
///
/// Its ``description`` shows the protocol version, recipient id and messageId, never the plaintext.
public struct GooglePayMessage: Sendable, CustomStringConvertible {
    /// The token's protocolVersion.
    public let protocolVersion: GooglePayToken.ProtocolVersion
    /// The configured recipient id the message signature verified for.
    public let recipientId: String
    /// The decrypted message (for ECv2SigningOnly, `signedMessage` itself); wiped when the last copy
    /// of this value goes away.
    public let plaintext: SensitiveBytes
    /// `messageId`, when the message is a JSON object that has one.
    public let messageId: String?
    /// `messageExpiration` (ms since the epoch), when the message is a JSON object that has one.
    public let messageExpiration: Int64?
    /// What this token claims against replays: its messageId and the signed message's digest.
    public let replayIdentity: ReplayIdentity

    /// `GooglePayMessage(ECv2, recipientId: …, messageId: …)`.
    public var description: String {
        "GooglePayMessage(\(protocolVersion.rawValue), recipientId: \(recipientId), messageId: \(messageId ?? "none"))"
    }

    /// `messageId` and `messageExpiration` when the plaintext is a JSON object (a duplicate member is
    /// refused, a non-JSON message has neither).
    static func readFields(_ plaintext: SensitiveBytes) throws(ApplePayError) -> (
        messageId: String?, messageExpiration: Int64?
    ) {
        try plaintext.withUnsafeBytes { (raw) throws(ApplePayError) in
            let scan = JSONScan(raw)
            let start = scan.skipWhitespace(0)
            guard start < raw.count, raw[start] == UInt8(ascii: "{") else { return (nil, nil) }
            var id: Range<Int>? = nil
            var expiration: Range<Int>? = nil
            do throws(JSONScanError) {
                let end = try scan.object(at: start, depth: 0, checkingDuplicates: true) { m in
                    if scan.content(m.name, escaped: m.nameEscaped, equals: "messageId") {
                        id = m.value..<m.valueEnd
                    } else if scan.content(m.name, escaped: m.nameEscaped, equals: "messageExpiration") {
                        expiration = m.value..<m.valueEnd
                    }
                }
                guard scan.skipWhitespace(end) == raw.count else {
                    throw JSONScanError(offset: end, message: "trailing characters")
                }
            } catch {
                if let name = error.duplicate {
                    throw ApplePayError(
                        .invalidPayload, "the decrypted message has member \"\(name.prefix(64))\" more than once",
                        field: error.pathText)
                }
                throw ApplePayError(
                    .invalidPayload, "the decrypted message is not JSON", field: error.pathText,
                    reason: error.description)
            }
            func text(_ range: Range<Int>?) -> String? {
                guard let range, raw[range.lowerBound] == 0x22, let s = try? scan.string(at: range.lowerBound) else {
                    return nil
                }
                return String(decoding: scan.decoded(s.content, escaped: s.escaped), as: UTF8.self)
            }
            var milliseconds: Int64? = nil
            if let range = expiration {
                guard let value = text(range).flatMap(GooglePayToken.milliseconds) else {
                    throw ApplePayError(
                        .invalidPayload, "messageExpiration is not a decimal string of milliseconds",
                        field: "messageExpiration")
                }
                milliseconds = value
            }
            if id != nil, text(id) == nil {
                throw ApplePayError(.invalidPayload, "messageId is not a string", field: "messageId")
            }
            return (text(id), milliseconds)
        }
    }

    /// The transaction key of a messageId alone: what a merge checks a shard's journal record of a
    /// Google Pay line against, from the messageId the line shows as its transactionId.
    package static func transactionKey(ofMessageId messageId: String) -> ReplayKey {
        let hasher = DigestContext()
        var transaction = [UInt8](repeating: 0, count: 32)
        hasher.start()
        hasher.update(Array("googlepay-messageId\u{0}".utf8))
        hasher.update(Array(messageId.utf8))
        transaction.withUnsafeMutableBufferPointer { hasher.finish(into: $0.baseAddress!) }
        return ReplayKey(transaction.prefix(16))!
    }

    /// The claim: the messageId (or, without one, the signed message's digest) and the digest of the
    /// signed message, under labels of their own so that no Apple claim can collide with them.
    static func replayIdentity(messageId: String?, signedMessage: [UInt8], hasher: DigestContext) -> ReplayIdentity {
        var content = [UInt8](repeating: 0, count: 32)
        hasher.start()
        hasher.update(Array("googlepay-signedMessage\u{0}".utf8))
        hasher.update(signedMessage)
        content.withUnsafeMutableBufferPointer { hasher.finish(into: $0.baseAddress!) }
        var transaction = [UInt8](repeating: 0, count: 32)
        hasher.start()
        hasher.update(Array("googlepay-messageId\u{0}".utf8))
        hasher.update(messageId.map { Array($0.utf8) } ?? content)
        transaction.withUnsafeMutableBufferPointer { hasher.finish(into: $0.baseAddress!) }
        return ReplayIdentity(
            transactionKey: ReplayKey(transaction.prefix(16))!, contentKey: ReplayKey(content.prefix(16))!)
    }
}
