import Foundation
import Testing
import SpinetMIDI
@testable import SpinetSynth
import SpinetSupport
import SpinetTestSupport

@Suite("Presets: factory bank, lookup, JSON files")
struct PresetTests {
    @Test func factoryBankHasTheMusicalAndThePlainPresets() {
        let names = PresetBank.factory.names
        #expect(names == ["organ", "saw-lead", "square-bass", "soft-pad", "pluck", "brass", "sub-bass", "bell",
                          "sine", "saw", "square", "triangle"])
        #expect(PresetBank.factory.preset(program: 8)?.name == "sine")
        #expect(PresetBank.factory.preset(program: 100) == nil)
        #expect(PresetBank.factory.preset(named: "Saw Lead")?.program == 1)
        #expect(PresetBank.factory.preset(named: "SUB_BASS")?.name == "sub-bass")
        #expect(PresetBank.factory.preset(named: "nothing") == nil)
        for p in PresetBank.factory.presets where ["sine", "saw", "square", "triangle"].contains(p.name) {
            #expect(p.mix == 0 && p.vibrato == 0 && p.filterEnvAmount == 0 && p.lfoToCutoff == 0 && p.attack <= 0.005)
            #expect(p.pressure == .none && p.polyPressure == .none)
        }
    }

    /// Every factory preset plays: it sounds, stays finite and below full scale,
    /// and ends after its note-off.
    @Test func everyFactoryPresetPlays() throws {
        let synth = try makeSynth()
        for p in PresetBank.factory.presets {
            let out = render(synth, frames: frames(0.5), events: [
                (0, .programChange(channel: 0, program: UInt8(p.program))),
                (0, .noteOn(channel: 0, key: 48, velocity: 100)),
                (0, .noteOn(channel: 0, key: 55, velocity: 100)),
                (0, .noteOn(channel: 0, key: 64, velocity: 100)),
                (frames(0.3), .controlChange(channel: 0, controller: 123, value: 0)),
            ])
            let peak = out.left.map(abs).max() ?? 0
            #expect(peak > 0.02 && peak < 1, "\(p.name): peak \(peak)")
            #expect(out.left.allSatisfy { $0.isFinite }, "\(p.name)")
            _ = render(synth, frames: frames(3), events: [])
            #expect(synth.activeVoices == 0, "\(p.name) still sounds 3 s after all notes off")
        }
    }

    @Test func bankSelectConstant() {
        #expect(OscillatorSynth.spinetPresetBank == 126)
        #expect(OscillatorSynth.bankSelectsSpinetPresets(msb: 126))
        #expect(!OscillatorSynth.bankSelectsSpinetPresets(msb: 0))
        #expect(!OscillatorSynth.bankSelectsSpinetPresets(msb: 127))
    }

    @Test func setPresetByNameChoosesTheChannelsSound() throws {
        let synth = OscillatorSynth()
        try synth.setPreset("saw", channel: 2)
        try synth.setPreset("Square Bass", channel: 3)
        #expect(synth.presetName(channel: 2) == "saw")
        #expect(synth.presetName(channel: 0) == "organ")
        #expect(throws: PresetError.self) { try synth.setPreset("kazoo", channel: 2) }
        do {
            try synth.setPreset("kazoo", channel: 2)
        } catch {
            #expect(error.description.hasPrefix("unknown synth preset \"kazoo\" (known: organ, saw-lead,"))
        }
        synth.prepare(sampleRate: 48_000, maxFrames: 256, channels: 16)
        #expect(synth.presetName(channel: 3) == "square-bass")
        // It survives a System Reset, and a program change overrides it.
        _ = render(synth, frames: 10, events: [(0, .systemReset)])
        #expect(synth.presetName(channel: 2) == "saw")
        _ = render(synth, frames: 10, events: [(0, .programChange(channel: 2, program: 7))])
        #expect(synth.presetName(channel: 2) == "bell")
    }

    @Test func aPresetFileEditsAndExtendsTheFactoryBank() throws {
        let bank = try PresetBank(json: """
        { "presets": [
            { "name": "saw", "cutoff": 5000 },
            { "name": "lead", "from": "saw-lead", "program": 20, "resonance": 0.6, "wave2": "square" },
            { "name": "blank" }
        ] }
        """)
        #expect(bank.preset(named: "saw")?.cutoff == 5000)
        #expect(bank.preset(named: "saw")?.program == 9)
        let lead = try #require(bank.preset(named: "lead"))
        #expect(lead.program == 20 && lead.resonance == 0.6 && lead.wave2 == .square)
        #expect(lead.glide == PresetBank.factory.preset(named: "saw-lead")?.glide)
        #expect(bank.preset(named: "blank")?.program == 12)     // first free number
        #expect(bank.preset(named: "organ") != nil)
        let empty = try PresetBank(json: #"{ "base": "empty", "presets": [ { "name": "only" } ] }"#)
        #expect(empty.names == ["only"])
    }

    @Test func theFactoryBankRoundTripsThroughJSON() throws {
        let text = PresetBank.factory.jsonString()
        #expect(try PresetBank(json: text) == PresetBank.factory)
    }

    @Test func readsAFileAndReportsAMissingOne() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("spinet-presets-\(UUID().uuidString).json").path
        try #"{ "presets": [ { "name": "x", "attack": 0.5 } ] }"#.write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        #expect(try PresetBank(jsonFile: path).preset(named: "x")?.attack == 0.5)
        #expect(throws: PresetError("/nonexistent/presets.json: no such file")) {
            try PresetBank(jsonFile: "/nonexistent/presets.json")
        }
    }

    /// Every problem is one line naming the file, the preset and the key.
    @Test(arguments: [
        (#"{ "presets": [ { "name": "lead", "cutoff": 50000 } ] }"#,
         #"presets.json: preset "lead": "cutoff" must be between 20 and 20000 Hz (got 50000)"#),
        (#"{ "presets": [ { "name": "lead", "attack": -1 } ] }"#,
         #"presets.json: preset "lead": "attack" must be between 0 and 30 s (got -1)"#),
        (#"{ "presets": [ { "name": "lead", "sustain": "loud" } ] }"#,
         #"presets.json: preset "lead": "sustain" must be between 0 and 1 (got "loud")"#),
        (#"{ "presets": [ { "name": "lead", "cutof": 500 } ] }"#,
         #"presets.json: preset "lead": unknown key "cutof" (did you mean "cutoff"?)"#),
        (#"{ "presets": [ { "name": "lead", "wave": "noise" } ] }"#,
         #"presets.json: preset "lead": "wave" must be one of "sine", "saw", "square", "triangle" (got "noise")"#),
        (#"{ "presets": [ { "name": "lead", "pressure": 3 } ] }"#,
         #"presets.json: preset "lead": "pressure" must be one of "vibrato", "brightness", "none" (got 3)"#),
        (#"{ "presets": [ { "name": "lead", "program": 1 } ] }"#,
         #"presets.json: preset "lead": "program" 1 is already used by preset "saw-lead" (12 is free)"#),
        (#"{ "presets": [ { "name": "lead", "program": 130 } ] }"#,
         #"presets.json: preset "lead": "program" must be between 0 and 127 (got 130)"#),
        (#"{ "presets": [ { "name": "Lead!" } ] }"#,
         #"presets.json: preset 1: name "Lead!" may hold only lower-case letters, digits and "-""#),
        (#"{ "presets": [ { "cutoff": 100 } ] }"#,
         #"presets.json: preset 1 has no "name""#),
        (#"{ "presets": [ { "name": "a", "from": "zzz" } ] }"#,
         #"presets.json: preset "a": "from" names no earlier preset: "zzz" (known: organ, saw-lead, square-bass, soft-pad, pluck, brass, sub-bass, bell, sine, saw, square, triangle)"#),
        (#"{ "presets": [ { "name": "a" }, { "name": "a" } ] }"#,
         #"presets.json: preset "a" is defined twice"#),
        (#"{ "preset": [] }"#,
         #"presets.json: unknown key "preset" (the file has "base" and "presets")"#),
        (#"{ "presets": [ { "name": "lead", "cutoff": 500, } ] }"#,
         #"presets.json: not valid JSON: line 1, column 49: expected a key in double quotes"#),
        ("{ \"presets\": [\n  { \"name\": \"lead\",\n    \"cutoff\": 5 00 } ] }",
         #"presets.json: not valid JSON: line 3, column 17: expected ',' or '}' in an object"#),
        (#"{ "presets": [ { "name": "lead", "name": "x" } ] }"#,
         #"presets.json: not valid JSON: line 1, column 34: duplicate key "name""#),
        (#"[1, 2]"#,
         #"presets.json: the file must hold an object with a "presets" list (got a list)"#),
    ])
    func badValuesGiveAClearOneLineError(json: String, message: String) {
        do {
            _ = try PresetBank(json: json)
            Issue.record("no error for \(json)")
        } catch {
            #expect(error.description == message)
            #expect(!error.description.contains("\n"))
        }
    }

    @Test func presetsBuiltInCodeAreValidatedToo() {
        var p = Preset(name: "x", program: 0)
        p.resonance = 2
        #expect(throws: PresetError(#"presets: preset "x": "resonance" must be between 0 and 1 (got 2)"#)) {
            try PresetBank(presets: [p])
        }
        p.resonance = .nan
        #expect(throws: PresetError.self) { try PresetBank(presets: [p]) }
    }
}

@Suite("PRESETS.md documents every key")
struct PresetDocumentationTests {
    /// Each key's row in PRESETS.md names its range as the code checks it.
    @Test func everyKeyIsDocumentedWithItsRange() throws {
        let file = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Sources/SpinetSynth/PRESETS.md")
        let text = try String(contentsOf: file, encoding: .utf8)
        let rows = text.split(separator: "\n").filter { $0.hasPrefix("| `") }
        for p in Preset.parameters {
            let row = rows.first { $0.hasPrefix("| `\(p.key)` |") }
            let expected = "| \(formatNumber(p.range.lowerBound)) ... \(formatNumber(p.range.upperBound)) |"
                + (p.unit.isEmpty ? "" : " \(p.unit)") + " | "
                + formatNumber(Preset(name: "x", program: 0)[keyPath: p.keyPath]) + " |"
            #expect(row?.contains(expected) == true, "PRESETS.md: \(p.key) should read \(expected)")
        }
        for (key, choices) in Preset.choiceKeys {
            let row = rows.first { $0.hasPrefix("| `\(key)` |") }
            #expect(row?.contains(choices.map { "`\($0)`" }.joined(separator: " ")) == true, "PRESETS.md: \(key)")
        }
        for name in PresetBank.factory.names {
            #expect(text.contains("| `\(name)`"), "PRESETS.md does not list factory preset \(name)")
        }
    }
}
