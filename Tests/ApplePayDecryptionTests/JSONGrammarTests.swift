// One JSON grammar: JSONValue.parse is the token reader's JSONScan with a tree built over it, so the
// same bytes are accepted or refused whichever reader looks at them.
import ApplePayDecryption
import Testing

@Suite("JSON: one grammar for tokens, payloads, payment requests and JSONValue")
struct JSONGrammarTests {
    @Test("a duplicate member is refused, naming it and its path, at any depth")
    func duplicates() {
        for text in [#"{"a":1,"a":2}"#, #"{"x":{"b":true,"b":false}}"#, #"[{"k":"v","\u006b":"w"}]"#] {
            #expect(throws: JSONSyntaxError.self) { try JSONValue.parse(text) }
        }
        do {
            _ = try JSONValue.parse(#"{"x":{"b":true,"b":false}}"#)
        } catch {
            #expect(error.message.contains("\"b\"") && error.message.contains("x.b"), "\(error)")
        }
    }

    @Test("nesting is bounded at 32 levels, as for tokens")
    func depth() throws {
        let deep = String(repeating: "[", count: 33) + String(repeating: "]", count: 33)
        let fine = String(repeating: "[", count: 32) + String(repeating: "]", count: 32)
        #expect(throws: JSONSyntaxError.self) { try JSONValue.parse(deep) }
        _ = try JSONValue.parse(fine)
    }

    @Test("the tree keeps member order, numbers as written, and decodes escapes and surrogate pairs")
    func tree() throws {
        let value = try JSONValue.parse(
            " {\"z\":1.50e2,\"a\":[true,false,null,\"\\u00e9\\ud83d\\ude00\\/\"],\"m\":{}} \n")
        #expect(value.objectMembers?.map(\.0) == ["z", "a", "m"])
        #expect(value["z"] == .number("1.50e2"))
        #expect(value.description == #"{"z":1.50e2,"a":[true,false,null,"é😀/"],"m":{}}"#)
        for bad in ["", "{", "[1,]", "01", "\"\\x\"", "{\"a\" 1}", "1 2", "\u{FEFF}{}", "nul"] {
            #expect(throws: JSONSyntaxError.self, "\(bad)") { try JSONValue.parse(bad) }
        }
    }
}
