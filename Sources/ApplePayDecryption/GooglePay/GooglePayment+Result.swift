// A Google Pay payment as every result shows it (the CLI's output, a batch line, the service's body,
// the bindings'): the message's members after two of the engine's own, the protocolVersion the token
// had and the recipient id its signature verified for, so that a result says how it was protected.

extension GooglePayment {
    /// The names the result adds before the message's own members; a message that has one of them
    /// itself is refused by ``build(_:)`` (a result must not carry a member twice).
    static let resultMembers: [StaticString] = ["protocolVersion", "recipientId"]

    /// Appends the payment object every result shows (the CLI, batch lines, the service, the C ABI):
    /// `{"protocolVersion":…,"recipientId":…,` then the message's members compact (as
    /// ``writeJSON(into:maskingPAN:)`` writes them, PANs masked when `maskingPAN` is set).
    public func writeResultJSON(into out: SensitiveBuffer, maskingPAN: Bool = false) {
        message.plaintext.withUnsafeBytes { raw in
            let scan = JSONScan(raw)
            let open = scan.skipWhitespace(0)
            // build(_:) checked it is an object with members: what follows its `{` starts with one.
            guard open < raw.count, raw[open] == UInt8(ascii: "{") else { return }
            // Written piece by piece, with no String made per payment (the allocation guard counts them).
            out.append("{\"protocolVersion\":\"")
            out.append(protocolVersion.rawValue)
            out.append("\",\"recipientId\":")
            var recipient = recipientId
            let plain = recipient.withUTF8 { bytes -> Bool in
                guard !bytes.contains(where: { $0 < 0x20 || $0 == 0x22 || $0 == 0x5C }) else { return false }
                out.append(byte: 0x22)
                out.append(UnsafeRawBufferPointer(bytes))
                out.append(byte: 0x22)
                return true
            }
            if !plain {
                var escaped = ""
                JSONValue.writeString(recipient, to: &escaped)
                out.append(escaped)
            }
            out.append(byte: UInt8(ascii: ","))
            let shift = open + 1
            let rest = UnsafeRawBufferPointer(rebasing: raw[shift...])
            let masks = Self.panRanges(raw).lazy.map { ($0.range.lowerBound - shift)..<($0.range.upperBound - shift) }
            DecryptedPayment.writeCompactJSON(rest, masking: masks, maskingPAN: maskingPAN, into: out)
        }
    }
}
