import Foundation
import Testing
import SpinetMIDI
import SpinetTestSupport
@testable import SpinetSynth

@Suite("Polyphony: pool, stealing, idle cost, denormals")
struct PolyphonyTests {
    /// The keys of the voices that still count against the polyphony.
    func playingKeys(_ synth: OscillatorSynth) -> Set<UInt8> {
        var keys: Set<UInt8> = []
        for v in 0..<synth.slotCount where synth.voices[v].state == .held || synth.voices[v].state == .released {
            keys.insert(synth.voices[v].key)
        }
        return keys
    }

    @Test func a1024VoicePoolPlays1024NotesAndStealsBeyond() throws {
        let synth = try makeSynth([preset("sine") { $0.release = 1 }], polyphony: 1024)
        var events: [(frame: Int, message: MIDIMessage)] = []
        for i in 0..<1024 { events.append((i % 64, .noteOn(channel: UInt8(i % 16), key: UInt8(i / 16), velocity: 100))) }
        let out = render(synth, frames: 2048, events: events)
        #expect(synth.activeVoices == 1024)
        #expect(synth.playingCount == 1024)
        #expect(out.left.allSatisfy { $0.isFinite })
        _ = render(synth, frames: 64, events: [(0, .noteOn(channel: 0, key: 100, velocity: 100))])
        #expect(synth.playingCount == 1024)
        #expect(synth.activeVoices == 1025, "the stolen voice fades out beside the new one")
        _ = render(synth, frames: frames(0.01))
        #expect(synth.activeVoices == 1024)
    }

    /// Released voices are stolen first (the quietest), then the quietest
    /// held ones, the oldest among equals.
    @Test func stealingTakesReleasedVoicesFirstThenTheQuietestHeld() throws {
        let synth = try makeSynth([preset("sine") { $0.release = 2 }], polyphony: 4)
        _ = render(synth, frames: frames(0.2), events: [
            (0, .noteOn(channel: 0, key: 60, velocity: 100)),
            (0, .noteOn(channel: 0, key: 62, velocity: 30)),       // quietest held
            (0, .noteOn(channel: 0, key: 64, velocity: 100)),
            (0, .noteOn(channel: 0, key: 65, velocity: 100)),
            (frames(0.1), .noteOff(channel: 0, key: 64, velocity: 0)),
        ])
        _ = render(synth, frames: 64, events: [(0, .noteOn(channel: 0, key: 67, velocity: 100))])
        #expect(playingKeys(synth) == [60, 62, 65, 67], "the released voice should go first")
        _ = render(synth, frames: 64, events: [(0, .noteOn(channel: 0, key: 69, velocity: 100))])
        #expect(playingKeys(synth) == [60, 65, 67, 69], "then the quietest held voice")
        _ = render(synth, frames: 64, events: [(0, .noteOn(channel: 0, key: 71, velocity: 100))])
        #expect(playingKeys(synth) == [65, 67, 69, 71], "then the oldest of equals")
    }

    /// Voices that are not sounding cost nothing: a single voice in a
    /// 1024-voice pool renders only its own lane group, and silence renders
    /// no group at all.
    @Test func idleVoicesCostNothing() throws {
        let synth = try makeSynth([preset("sine") { $0.release = 0.01 }], polyphony: 1024)
        _ = render(synth, frames: 1024, events: [(0, .noteOn(channel: 0, key: 60, velocity: 100))])
        let before = synth.renderedGroupBlocks
        _ = render(synth, frames: 1024, block: 256)
        #expect(synth.renderedGroupBlocks - before == 4, "one group per render call")
        _ = render(synth, frames: 1024, events: [(0, .noteOff(channel: 0, key: 60, velocity: 0))])
        let silent = synth.renderedGroupBlocks
        let out = render(synth, frames: 1024)
        #expect(synth.renderedGroupBlocks == silent)
        #expect(out.left.allSatisfy { $0 == 0 })
    }

    /// A held note whose oscillator goes silent (bent from 2.6 kHz to
    /// 42 kHz, above Nyquist) leaves a resonant filter ringing down on zero
    /// input. Its state must reach exactly 0 and never linger in denormals
    /// (which would take the voice to the slow path of the FPU), and neither
    /// may any other value of the voice.
    @Test func decayedStateDoesNotStayDenormal() throws {
        let synth = try makeSynth([preset("saw") { $0.resonance = 0.9; $0.cutoff = 300 }], mpe: .lower)
        _ = render(synth, frames: frames(0.2), events: [(0, .noteOn(channel: 1, key: 100, velocity: 127))])
        #expect(synth.groups[0].filterState1.l0 != 0)
        _ = render(synth, frames: 16, events: [(0, .pitchBend(channel: 1, value: 16383))])
        var subnormalsSeen: [String] = []
        for _ in 0..<30 {
            let out = render(synth, frames: frames(0.1))
            #expect(out.left.allSatisfy { !$0.isSubnormal })
            subnormalsSeen += subnormalFields(of: synth.groups[0])
        }
        #expect(subnormalsSeen.isEmpty, "subnormal values in \(Set(subnormalsSeen).sorted())")
        #expect(synth.activeVoices == 1, "the held voice must still be there")
        #expect(synth.groups[0].filterState1.l0 == 0 && synth.groups[0].filterState2.l0 == 0,
                "the silent voice's filter did not settle to exactly 0")
    }
}

/// Names of the float fields of a voice group holding a subnormal value in
/// any lane (integer fields such as phases are not floats and are skipped).
func subnormalFields(of group: VoiceGroup) -> [String] {
    var found: [String] = []
    func check(_ value: Any, _ name: String) {
        if let lanes = value as? FloatLanes {
            if [lanes.l0, lanes.l1, lanes.l2, lanes.l3].contains(where: \.isSubnormal) { found.append(name) }
        } else if let envelope = value as? EnvelopeLanes {
            for child in Mirror(reflecting: envelope).children { check(child.value, name + "." + (child.label ?? "?")) }
        }
    }
    for child in Mirror(reflecting: group).children { check(child.value, child.label ?? "?") }
    return found
}

@Suite("Robustness: extreme settings")
struct RobustnessTests {
    /// The most extreme values a preset may hold: the filter swept eight
    /// octaves within a millisecond at full resonance, pitches far beyond
    /// the keyboard, every modulation at full depth. The output must stay
    /// finite and bounded, and the voices must end.
    @Test func extremePresetsStayFiniteAndBounded() throws {
        var wild = Preset(name: "wild", program: 0)
        wild.wave = .square; wild.wave2 = .saw; wild.mix = 0.5; wild.pulseWidth = 0.05
        wild.interval = 36; wild.transpose = 36; wild.detune = 100
        wild.cutoff = 20; wild.resonance = 1; wild.filterEnvAmount = 96; wild.keyTracking = 1.5; wild.velocityToCutoff = 96
        wild.attack = 0; wild.decay = 0; wild.sustain = 1; wild.release = 0
        wild.filterAttack = 0; wild.filterDecay = 0.001; wild.filterSustain = 0; wild.filterRelease = 0
        wild.glide = 10; wild.lfoRate = 50; wild.vibrato = 12; wild.lfoToCutoff = 48
        wild.velocityCurve = 0.2; wild.gain = 12
        var low = wild
        low.name = "low"; low.program = 1; low.transpose = -36; low.interval = -36; low.filterEnvAmount = -96
        let synth = try makeSynth([wild, low], mpe: MPEZone(memberChannels: 7))
        var events: [(frame: Int, message: MIDIMessage)] = [
            (0, .controlChange(channel: 0, controller: 1, value: 127)),
            (0, .controlChange(channel: 9, controller: 1, value: 127)),
            (0, .controlChange(channel: 9, controller: 7, value: 127)),
        ]
        for (i, key) in [0, 1, 60, 100, 126, 127].enumerated() {
            events.append((i * 300, .noteOn(channel: UInt8(1 + i % 7), key: UInt8(key), velocity: 127)))
            events.append((i * 300 + 7, .pitchBend(channel: UInt8(1 + i % 7), value: i % 2 == 0 ? 16383 : 0)))
            events.append((i * 300 + 11, .controlChange(channel: UInt8(1 + i % 7), controller: 74, value: i % 2 == 0 ? 127 : 0)))
            events.append((i * 300 + 50, .programChange(channel: 9, program: UInt8(i % 2))))
            events.append((i * 300 + 51, .noteOn(channel: 9, key: UInt8(key), velocity: 1)))
            events.append((i * 300 + 52, .channelPressure(channel: 9, pressure: 127)))
        }
        events.append((frames(0.3), .controlChange(channel: 0, controller: 123, value: 0)))
        events.append((frames(0.3), .controlChange(channel: 9, controller: 123, value: 0)))
        let out = render(synth, frames: frames(0.4), events: events)
        for side in [out.left, out.right] {
            #expect(side.allSatisfy { $0.isFinite })
            #expect(SignalAnalysis.peak(side[...]) < 16, "runaway level \(SignalAnalysis.peak(side[...]))")
        }
        #expect(synth.activeVoices == 0)
    }
}
