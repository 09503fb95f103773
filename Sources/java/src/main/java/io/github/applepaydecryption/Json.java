// A small reader of the engine's JSON output (the payment objects), for the typed payments: strict
// RFC 8259, objects as ordered maps, numbers kept as their text (an amount is never a double).
package io.github.applepaydecryption;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

final class Json {
    /** A number as written (e.g. "1000" or "12.5"). */
    static final class Number {
        final String text;

        Number(String text) {
            this.text = text;
        }

        @Override
        public String toString() {
            return text;
        }
    }

    private final String text;
    private int at;

    private Json(String text) {
        this.text = text;
    }

    /** Map, List, String, Json.Number, Boolean or null; IllegalArgumentException for anything else. */
    static Object parse(String text) {
        Json reader = new Json(text);
        Object value = reader.value();
        reader.space();
        if (reader.at != text.length()) throw reader.error("trailing text");
        return value;
    }

    private IllegalArgumentException error(String what) {
        return new IllegalArgumentException("JSON: " + what + " at offset " + at);
    }

    private void space() {
        while (at < text.length() && " \t\r\n".indexOf(text.charAt(at)) >= 0) at++;
    }

    private Object value() {
        space();
        if (at >= text.length()) throw error("unexpected end");
        char c = text.charAt(at);
        switch (c) {
            case '{':
                return object();
            case '[':
                return array();
            case '"':
                return string();
            case 't':
                return literal("true", Boolean.TRUE);
            case 'f':
                return literal("false", Boolean.FALSE);
            case 'n':
                return literal("null", null);
            default:
                if (c == '-' || (c >= '0' && c <= '9')) return number();
                throw error("unexpected '" + c + "'");
        }
    }

    private Object literal(String word, Object value) {
        if (!text.startsWith(word, at)) throw error("bad literal");
        at += word.length();
        return value;
    }

    private Map<String, Object> object() {
        Map<String, Object> members = new LinkedHashMap<>();
        at++;
        space();
        if (at < text.length() && text.charAt(at) == '}') {
            at++;
            return Collections.unmodifiableMap(members);
        }
        while (true) {
            space();
            if (at >= text.length() || text.charAt(at) != '"') throw error("expected a member name");
            String name = string();
            space();
            expect(':');
            members.put(name, value());
            space();
            if (at < text.length() && text.charAt(at) == ',') {
                at++;
                continue;
            }
            expect('}');
            return Collections.unmodifiableMap(members);
        }
    }

    private List<Object> array() {
        List<Object> items = new ArrayList<>();
        at++;
        space();
        if (at < text.length() && text.charAt(at) == ']') {
            at++;
            return Collections.unmodifiableList(items);
        }
        while (true) {
            items.add(value());
            space();
            if (at < text.length() && text.charAt(at) == ',') {
                at++;
                continue;
            }
            expect(']');
            return Collections.unmodifiableList(items);
        }
    }

    private void expect(char c) {
        if (at >= text.length() || text.charAt(at) != c) throw error("expected '" + c + "'");
        at++;
    }

    private String string() {
        at++;
        StringBuilder out = new StringBuilder();
        while (true) {
            if (at >= text.length()) throw error("unterminated string");
            char c = text.charAt(at++);
            if (c == '"') return out.toString();
            if (c < 0x20) throw error("control character in a string");
            if (c != '\\') {
                out.append(c);
                continue;
            }
            if (at >= text.length()) throw error("unterminated escape");
            char e = text.charAt(at++);
            switch (e) {
                case '"': out.append('"'); break;
                case '\\': out.append('\\'); break;
                case '/': out.append('/'); break;
                case 'b': out.append('\b'); break;
                case 'f': out.append('\f'); break;
                case 'n': out.append('\n'); break;
                case 'r': out.append('\r'); break;
                case 't': out.append('\t'); break;
                case 'u':
                    if (at + 4 > text.length()) throw error("short \\u escape");
                    try {
                        out.append((char) Integer.parseInt(text.substring(at, at + 4), 16));
                    } catch (NumberFormatException x) {
                        throw error("bad \\u escape");
                    }
                    at += 4;
                    break;
                default:
                    throw error("bad escape");
            }
        }
    }

    private Number number() {
        int start = at;
        if (text.charAt(at) == '-') at++;
        int digits = at;
        while (at < text.length() && Character.isDigit(text.charAt(at))) at++;
        if (at == digits) throw error("bad number");
        if (at < text.length() && text.charAt(at) == '.') {
            at++;
            int fraction = at;
            while (at < text.length() && Character.isDigit(text.charAt(at))) at++;
            if (at == fraction) throw error("bad number");
        }
        if (at < text.length() && (text.charAt(at) == 'e' || text.charAt(at) == 'E')) {
            at++;
            if (at < text.length() && (text.charAt(at) == '+' || text.charAt(at) == '-')) at++;
            int exponent = at;
            while (at < text.length() && Character.isDigit(text.charAt(at))) at++;
            if (at == exponent) throw error("bad number");
        }
        return new Number(text.substring(start, at));
    }

    /** The member's value as text: a string as it is, a number as written; null when absent or null. */
    static String text(Map<String, Object> object, String... names) {
        if (object == null) return null;
        for (String name : names) {
            Object value = object.get(name);
            if (value instanceof String || value instanceof Number || value instanceof Boolean) {
                return value.toString();
            }
        }
        return null;
    }

    @SuppressWarnings("unchecked")
    static Map<String, Object> object(Map<String, Object> object, String name) {
        Object value = object == null ? null : object.get(name);
        return value instanceof Map ? (Map<String, Object>) value : null;
    }

    /** Appends s as a JSON string (quotes, backslashes and control characters escaped). */
    static void writeString(String s, StringBuilder out) {
        out.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '"' || c == '\\') {
                out.append('\\').append(c);
            } else if (c < 0x20) {
                out.append(String.format("\\u%04x", (int) c));
            } else {
                out.append(c);
            }
        }
        out.append('"');
    }
}
