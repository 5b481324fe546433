/// A parsed JSON value. Objects keep their key order, so error messages and
/// round trips follow the file.
///
/// Spinet reads preset files with this small parser rather than Foundation's
/// so that every problem can be reported as one line with a line and column,
/// duplicate keys are caught, and numbers and booleans never blur into each
/// other (NSNumber bridging would read `true` as 1).
public enum JSONValue: Equatable {
    case object([(key: String, value: JSONValue)])
    case array([JSONValue])
    case string(String)
    case number(Double)
    case bool(Bool)
    case null

    public static func == (a: JSONValue, b: JSONValue) -> Bool {
        switch (a, b) {
        case (.object(let x), .object(let y)):
            return x.count == y.count && zip(x, y).allSatisfy { $0.key == $1.key && $0.value == $1.value }
        case (.array(let x), .array(let y)): return x == y
        case (.string(let x), .string(let y)): return x == y
        case (.number(let x), .number(let y)): return x == y
        case (.bool(let x), .bool(let y)): return x == y
        case (.null, .null): return true
        case (.object, _), (.array, _), (.string, _), (.number, _), (.bool, _), (.null, _): return false
        }
    }

    /// The whole number this value holds, if it is one within `range`: nil
    /// for another type, a fraction, or a number outside the range (1e300
    /// included), so a decoder never traps converting it.
    public func integer(in range: ClosedRange<Int>) -> Int? {
        guard case .number(let d) = self, d == d.rounded(.towardZero),
              d >= Double(range.lowerBound), d <= Double(range.upperBound),
              abs(d) < 0x1p62 else { return nil }
        let n = Int(d)
        return range.contains(n) ? n : nil
    }

    /// A short description of the value for error messages ("got ...").
    public var shortDescription: String {
        switch self {
        case .object: return "an object"
        case .array: return "a list"
        case .string(let s): return "\"\(s.count > 40 ? String(s.prefix(40)) + "..." : s)\""
        case .number(let d): return formatNumber(d)
        case .bool(let b): return b ? "true" : "false"
        case .null: return "null"
        }
    }
}

/// A JSON syntax error with the position where it was found (1-based).
public struct JSONSyntaxError: Error {
    public var line: Int
    public var column: Int
    public var reason: String
    public var description: String { "line \(line), column \(column): \(reason)" }
}

/// Recursive-descent JSON parser (RFC 8259) over UTF-8 bytes, in time
/// linear in its input (duplicate keys are found through a set), to a
/// bounded depth (so deep nesting cannot exhaust the stack). A leading
/// UTF-8 byte order mark is skipped, as RFC 8259 allows.
public struct JSONParser {
    private let bytes: ArraySlice<UInt8>
    private var position: Int
    private var depth = 0

    /// How deep lists and objects may nest (Spinet's own files nest 3 deep).
    public static let maxDepth = 64

    public static func parse(_ text: String) throws(JSONSyntaxError) -> JSONValue {
        var parser = JSONParser(bytes: droppingByteOrderMark(Array(text.utf8)))
        parser.skipWhitespace()
        let value = try parser.parseValue()
        parser.skipWhitespace()
        if parser.position < parser.bytes.endIndex {
            throw parser.error("unexpected text after the end of the document")
        }
        return value
    }

    private init(bytes: ArraySlice<UInt8>) {
        self.bytes = bytes
        position = bytes.startIndex
    }

    private func error(_ reason: String) -> JSONSyntaxError {
        var line = 1, column = 1
        for b in bytes[bytes.startIndex..<min(position, bytes.endIndex)] {
            if b == UInt8(ascii: "\n") { line += 1; column = 1 } else if b & 0xC0 != 0x80 { column += 1 }
        }
        return JSONSyntaxError(line: line, column: column, reason: reason)
    }

    private mutating func skipWhitespace() {
        while position < bytes.endIndex {
            switch bytes[position] {
            case 0x20, 0x09, 0x0A, 0x0D: position += 1
            default: return
            }
        }
    }

    private var current: UInt8? { position < bytes.endIndex ? bytes[position] : nil }

    private mutating func parseValue() throws(JSONSyntaxError) -> JSONValue {
        guard let c = current else { throw error("unexpected end of file (a value was expected)") }
        switch c {
        case UInt8(ascii: "{"): return try parseObject()
        case UInt8(ascii: "["): return try parseArray()
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"): try expectWord("true"); return .bool(true)
        case UInt8(ascii: "f"): try expectWord("false"); return .bool(false)
        case UInt8(ascii: "n"): try expectWord("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try parseNumber())
        default:
            throw error("unexpected character '\(String(decoding: [c], as: UTF8.self))' (a value was expected)")
        }
    }

    private mutating func expectWord(_ word: String) throws(JSONSyntaxError) {
        for b in word.utf8 {
            guard current == b else { throw error("unexpected text (did you mean \(word)?)") }
            position += 1
        }
    }

    private mutating func parseObject() throws(JSONSyntaxError) -> JSONValue {
        depth += 1
        if depth > Self.maxDepth { throw error("nested more than \(Self.maxDepth) deep") }
        defer { depth -= 1 }
        position += 1
        var members: [(key: String, value: JSONValue)] = []
        var keys = Set<String>()
        skipWhitespace()
        if current == UInt8(ascii: "}") { position += 1; return .object(members) }
        while true {
            skipWhitespace()
            guard current == UInt8(ascii: "\"") else { throw error("expected a key in double quotes") }
            let keyStart = position
            let key = try parseString()
            if !keys.insert(key).inserted {
                position = keyStart
                throw error("duplicate key \"\(key)\"")
            }
            skipWhitespace()
            guard current == UInt8(ascii: ":") else { throw error("expected ':' after key \"\(key)\"") }
            position += 1
            skipWhitespace()
            members.append((key, try parseValue()))
            skipWhitespace()
            if current == UInt8(ascii: ",") { position += 1; continue }
            if current == UInt8(ascii: "}") { position += 1; return .object(members) }
            throw error("expected ',' or '}' in an object")
        }
    }

    private mutating func parseArray() throws(JSONSyntaxError) -> JSONValue {
        depth += 1
        if depth > Self.maxDepth { throw error("nested more than \(Self.maxDepth) deep") }
        defer { depth -= 1 }
        position += 1
        var items: [JSONValue] = []
        skipWhitespace()
        if current == UInt8(ascii: "]") { position += 1; return .array(items) }
        while true {
            skipWhitespace()
            items.append(try parseValue())
            skipWhitespace()
            if current == UInt8(ascii: ",") { position += 1; continue }
            if current == UInt8(ascii: "]") { position += 1; return .array(items) }
            throw error("expected ',' or ']' in a list")
        }
    }

    private mutating func parseString() throws(JSONSyntaxError) -> String {
        position += 1
        var out: [UInt8] = []
        while true {
            guard let c = current else { throw error("unterminated string") }
            position += 1
            switch c {
            case UInt8(ascii: "\""):
                return String(decoding: out, as: UTF8.self)
            case UInt8(ascii: "\\"):
                guard let e = current else { throw error("unterminated string") }
                position += 1
                switch e {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(e)
                case UInt8(ascii: "b"): out.append(0x08)
                case UInt8(ascii: "f"): out.append(0x0C)
                case UInt8(ascii: "n"): out.append(0x0A)
                case UInt8(ascii: "r"): out.append(0x0D)
                case UInt8(ascii: "t"): out.append(0x09)
                case UInt8(ascii: "u"):
                    var scalar = try parseHex4()
                    if (0xD800..<0xDC00).contains(scalar) {
                        guard current == UInt8(ascii: "\\") else { throw error("lone surrogate in \\u escape") }
                        position += 1
                        guard current == UInt8(ascii: "u") else { throw error("lone surrogate in \\u escape") }
                        position += 1
                        let low = try parseHex4()
                        guard (0xDC00..<0xE000).contains(low) else { throw error("bad surrogate pair in \\u escape") }
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    }
                    guard let u = Unicode.Scalar(scalar) else { throw error("invalid \\u escape") }
                    out.append(contentsOf: Array(String(Character(u)).utf8))
                default:
                    throw error("invalid escape '\\\(String(decoding: [e], as: UTF8.self))'")
                }
            case 0x00..<0x20:
                throw error("control character in a string (write it as an escape)")
            default:
                out.append(c)
            }
        }
    }

    private mutating func parseHex4() throws(JSONSyntaxError) -> UInt32 {
        var v: UInt32 = 0
        for _ in 0..<4 {
            guard let c = current else { throw error("unterminated \\u escape") }
            let d: UInt32
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): d = UInt32(c - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): d = UInt32(c - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): d = UInt32(c - UInt8(ascii: "A") + 10)
            default: throw error("invalid hex digit in \\u escape")
            }
            v = v << 4 | d
            position += 1
        }
        return v
    }

    private mutating func parseNumber() throws(JSONSyntaxError) -> Double {
        let start = position
        if current == UInt8(ascii: "-") { position += 1 }
        func digits(_ p: inout JSONParser) -> Int {
            var n = 0
            while let c = p.current, c >= UInt8(ascii: "0"), c <= UInt8(ascii: "9") { p.position += 1; n += 1 }
            return n
        }
        if digits(&self) == 0 { throw error("a number needs digits") }
        if current == UInt8(ascii: ".") {
            position += 1
            if digits(&self) == 0 { throw error("a number needs digits after '.'") }
        }
        if current == UInt8(ascii: "e") || current == UInt8(ascii: "E") {
            position += 1
            if current == UInt8(ascii: "+") || current == UInt8(ascii: "-") { position += 1 }
            if digits(&self) == 0 { throw error("a number needs digits in its exponent") }
        }
        let text = String(decoding: bytes[start..<position], as: UTF8.self)
        guard let value = Double(text), value.isFinite else {
            position = start
            throw error("number out of range: \(text)")
        }
        return value
    }
}

/// A number as a person would write it: 50000, 0.005, -12.5.
public func formatNumber(_ x: Double) -> String {
    if x.isFinite && x == x.rounded() && abs(x) < 1e15 { return String(Int64(x)) }
    return String(x)
}

/// Writes a JSON string literal: every control character escaped (C0,
/// DEL, C1, and the line and paragraph separators U+2028/U+2029), so a
/// value stays on its line of a JSON Lines file whatever it holds. Every
/// writer of JSON text (reports, notes, presets, plugin state) uses it.
public func jsonQuoted(_ s: String) -> String {
    var out = "\""
    for u in s.unicodeScalars {
        switch u {
        case "\"": out += "\\\""
        case "\\": out += "\\\\"
        case "\n": out += "\\n"
        case "\t": out += "\\t"
        case "\r": out += "\\r"
        default:
            if isControlCharacter(u) {
                let hex = String(u.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            } else {
                out.unicodeScalars.append(u)
            }
        }
    }
    return out + "\""
}

/// A control character: C0 (below 0x20), DEL, C1 (0x80-0x9F), or the line
/// and paragraph separators (U+2028, U+2029), which some readers take as line breaks.
public func isControlCharacter(_ u: Unicode.Scalar) -> Bool {
    u.value < 0x20 || (0x7F...0x9F).contains(u.value) || u.value == 0x2028 || u.value == 0x2029
}
