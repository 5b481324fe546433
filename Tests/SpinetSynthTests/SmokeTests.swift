import Testing
import SpinetMIDI
@testable import SpinetSynth
import SpinetTestSupport
import SpinetTestTraits

@Suite struct SmokeTests {
    @Test func aNoteSounds() throws {
        let synth = try makeSynth()
        let out = render(synth, frames: 4800, events: [(0, .noteOn(channel: 0, key: 60, velocity: 100))])
        let peak = out.left.map(abs).max() ?? 0
        #expect(peak > 0.05 && peak < 1)
        #expect(synth.activeVoices == 1)
    }
}

/// The synth's exact output for fixed notes (hash of the bit patterns): how
/// it keeps its buffers must not change one bit of what it renders, and
/// neither must the size of the render calls.
@Suite("Synth output bits")
struct SynthOutputBitsTests {
    @Test func chordsOnThreeChannelsInOddBlocks() throws {
        let synth = try makeSynth()
        var events: [(frame: Int, message: MIDIMessage)] = []
        for (i, program) in [0, 1, 3].enumerated() {
            let c = UInt8(i)
            events.append((0, .programChange(channel: c, program: UInt8(program))))
            for (j, key) in [48, 55, 64, 71].enumerated() {
                events.append((100 * j + 7 * i, .noteOn(channel: c, key: UInt8(key + i), velocity: UInt8(70 + 10 * j))))
                events.append((9000 + 500 * j, .noteOff(channel: c, key: UInt8(key + i), velocity: 64)))
            }
        }
        events.append((3000, .pitchBend(channel: 1, value: 12000)))
        events.append((4000, .controlChange(channel: 2, controller: 1, value: 90)))
        let out = render(synth, frames: 16000, events: events, block: 333)
        #expect(BitHash.of(out.left + out.right) == 7886465064746580064)
        let whole = render(try makeSynth(), frames: 16000, events: events, block: 16000)
        #expect(BitHash.of(whole.left + whole.right) == 7886465064746580064)
    }
}

/// The synth owns its buffers: re-preparing it frees the ones it replaces,
/// and dropping it frees the rest (every allocation made is freed).
@Suite("Synth ownership", .realtimeProbe)
struct SynthOwnershipTests {
    @Test func aPreparedReplayedAndDroppedSynthFreesAllItAllocated() throws {
        #expect(RealtimeProbe.isActive)
        func body() throws {
            let synth = try makeSynth(maxFrames: 256)
            _ = render(synth, frames: 512, events: [(0, .noteOn(channel: 0, key: 60, velocity: 100))])
            synth.prepare(sampleRate: 48_000, maxFrames: 128, channels: 32)
            _ = render(synth, frames: 256, events: [(0, .noteOn(channel: 17, key: 64, velocity: 90))], block: 128)
        }
        try body()
        let counts = try RealtimeProbe.counts(body)
        #expect(counts.allocations > 0)
        #expect(counts.frees == counts.allocations, "\(counts.allocations) allocations, \(counts.frees) frees")
    }
}
