// libFuzzer target for the JSON parser (SpinetSupport/JSON.swift) and the
// synth preset file reader (SpinetSynth/PresetBank.swift, Preset.swift):
// what `--presets FILE` reads.
//
// Built by scripts/fuzz.sh against the SpinetSupport and SpinetSynth modules
// (compiled under -sanitize=fuzzer,address with -enable-testing).
//
// The input is the file's text (bytes that are not UTF-8 are read as U+FFFD,
// as a file read into a String is). Each input checks what the readers
// promise, and a failed promise is a crash:
// - a JSON syntax error names a line and column inside the text;
// - a JSON value written out again (strings with `jsonQuoted`, numbers as
//   Swift prints them) reads back as the same value;
// - a preset error is one message starting with the file's name;
// - a bank read from the file holds valid presets with unique names and
//   program numbers, and its own JSON (`jsonString`) reads back as the same bank.

import SpinetSupport
@testable import SpinetSynth

@_cdecl("LLVMFuzzerTestOneInput")
public func presetFileFuzzInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)

    do {
        let value = try JSONParser.parse(text)
        let written = jsonText(value)
        do {
            let again = try JSONParser.parse(written)
            check(again == value, "a JSON value changed when written and read again: \(written.prefix(200))")
        } catch {
            check(false, "written JSON does not read back (\(error.description)): \(written.prefix(200))")
        }
    } catch {
        let lines = text.utf8.reduce(1) { $0 + ($1 == UInt8(ascii: "\n") ? 1 : 0) }
        check(error.line >= 1 && error.line <= lines && error.column >= 1, "JSON error outside the text (\(lines) lines): \(error.description)")
        check(!error.reason.isEmpty, "a JSON error without a reason")
    }

    let bank: PresetBank
    do {
        bank = try PresetBank(json: text, source: "fuzz.json")
    } catch {
        check(error.description.utf8.starts(with: "fuzz.json: ".utf8), "a preset error not naming the file: \(error.description.prefix(200))")
        return 0
    }
    check(Set(bank.presets.map(\.name)).count == bank.presets.count, "two presets with one name")
    check(Set(bank.presets.map(\.program)).count == bank.presets.count, "two presets with one program")
    for p in bank.presets {
        do { try p.validate(source: "check") } catch { check(false, "an invalid preset in a bank: \(error.description)") }
        check(bank.preset(named: p.name) == p && bank.preset(program: p.program) == p, "preset \(p.name) not found by name and program")
    }
    do {
        let again = try PresetBank(json: bank.jsonString(), source: "again.json")
        check(again == bank, "the bank changed when written and read again")
    } catch {
        check(false, "the bank's own JSON does not read back: \(error.description)")
    }
    return 0
}

/// JSON text for a value: what a person might write, every value exactly.
func jsonText(_ value: JSONValue) -> String {
    switch value {
    case .object(let members): return "{" + members.map { jsonQuoted($0.key) + ":" + jsonText($0.value) }.joined(separator: ",") + "}"
    case .array(let items): return "[" + items.map(jsonText).joined(separator: ", ") + "]"
    case .string(let s): return jsonQuoted(s)
    case .number(let d): return "\(d)"
    case .bool(let b): return b ? "true" : "false"
    case .null: return "null"
    }
}

// (Messages are compared as UTF-8: a name that starts with a combining mark
// joins the space before it into one Character, and hasPrefix would miss.)
func check(_ condition: Bool, _ message: @autoclosure () -> String) {
    if !condition { fatalError(message()) }
}
