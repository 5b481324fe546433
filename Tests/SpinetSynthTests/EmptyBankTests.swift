import Testing
import SpinetMIDI
@testable import SpinetSynth
import SpinetTestSupport

/// The documented preset file with no presets (`{"base": "empty", "presets": []}`)
/// used to stop Spinet on a precondition (SIGILL) as soon as a synth was made,
/// even when no channel played it.
@Suite("synth: a bank with no presets")
struct EmptyBankTests {
    @Test func aSynthWithNoPresetsPlaysTheDefaultPreset() throws {
        let bank = try PresetBank(json: #"{"base": "empty", "presets": []}"#)
        #expect(bank.presets.isEmpty)
        let synth = OscillatorSynth(presets: bank, polyphony: 8)
        #expect(synth.presetName(channel: 0) == "default")
        synth.prepare(sampleRate: 48_000, maxFrames: 512, channels: 16)
        // Any program change lands on the one preset; a note sounds.
        let out = render(synth, frames: 4800, events: [(0, .programChange(channel: 0, program: 17)),
                                                       (0, .noteOn(channel: 0, key: 69, velocity: 100))])
        let peak = out.left.map(abs).max() ?? 0
        #expect(peak > 0.01)
        #expect(out.left.allSatisfy { $0.isFinite })
    }

    @Test func aPresetNameTheEmptyBankLacksIsAnErrorNotACrash() throws {
        let bank = try PresetBank(json: #"{"base": "empty", "presets": []}"#)
        let synth = OscillatorSynth(presets: bank)
        #expect(throws: PresetError.self) { try synth.setPreset("bell", channel: 0) }
    }
}
