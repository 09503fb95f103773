// JSONValue.parse: the tree built over JSONScan, the one JSON grammar of the engine. The document is
// validated once (depth 32, duplicate members refused, as for tokens, payloads and payment requests),
// then walked without checking anything again.

extension JSONValue {
    /// Parses one JSON value spanning the whole input (surrounding whitespace allowed).
    ///
    /// Strict RFC 8259, the grammar the engine reads tokens with: at most 32 levels of nesting, at most
    /// 256 members in one object, and a member name that appears twice in one object is refused
    /// (parsers disagree on which duplicate wins).
    public static func parse(_ bytes: UnsafeRawBufferPointer) throws(JSONSyntaxError) -> JSONValue {
        let scan = JSONScan(bytes)
        let start: Int
        do throws(JSONScanError) { start = try scan.document(0..<bytes.count) } catch {
            throw JSONSyntaxError(error)
        }
        return scan.tree(at: start)
    }
}

extension JSONSyntaxError {
    init(_ error: JSONScanError) {
        if let name = error.duplicate {
            self.init(
                offset: error.offset,
                message: "member \"\(name.prefix(64))\" appears more than once at \(error.pathText)")
        } else {
            self.init(
                offset: error.offset,
                message: error.path.isEmpty ? error.message : "\(error.message) in \(error.pathText)")
        }
    }
}

extension JSONScan {
    /// The value at `start` of a validated document, as a tree.
    func tree(at start: Int) -> JSONValue {
        switch s[start] {
        case UInt8(ascii: "{"):
            var members: [(String, JSONValue)] = []
            forEachValidatedMember(ofObjectAt: start) { m in
                members.append((text(m.name, escaped: m.nameEscaped), tree(at: m.value)))
            }
            return .object(members)
        case UInt8(ascii: "["):
            var items: [JSONValue] = []
            forEachValidatedElement(ofArrayAt: start) { items.append(tree(at: $0)) }
            return .array(items)
        case 0x22:
            let content = start + 1..<skipValidatedString(start) - 1
            return .string(text(content, escaped: hasEscape(content)))
        case UInt8(ascii: "t"): return .bool(true)
        case UInt8(ascii: "f"): return .bool(false)
        case UInt8(ascii: "n"): return .null
        default:
            return .number(
                String(decoding: UnsafeRawBufferPointer(rebasing: s[start..<skipValidated(start)]), as: UTF8.self))
        }
    }

    private func text(_ content: Range<Int>, escaped: Bool) -> String {
        escaped
            ? String(decoding: decoded(content, escaped: true), as: UTF8.self)
            : String(decoding: UnsafeRawBufferPointer(rebasing: s[content]), as: UTF8.self)
    }

    /// The start of each element of the array at `start` in a validated document, in order.
    func forEachValidatedElement(ofArrayAt start: Int, _ body: (Int) -> Void) {
        var i = skipWhitespace(start + 1)
        guard i < s.count, s[i] != UInt8(ascii: "]") else { return }
        while i < s.count {
            body(i)
            i = skipWhitespace(skipValidated(i))
            guard i < s.count, s[i] == UInt8(ascii: ",") else { return }
            i = skipWhitespace(i + 1)
        }
    }
}
