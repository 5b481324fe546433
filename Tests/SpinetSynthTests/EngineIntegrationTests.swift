import Foundation
import Testing
import SpinetEngine
import SpinetMIDI
import SpinetTestSupport
@testable import SpinetSynth
import SpinetTestTraits

@Suite("Engine: sample-exact, real-time safe")
struct EngineIntegrationTests {
    /// A note-on at frame f sounds from exactly f + engine.latencyFrames:
    /// every sample before is exactly 0, that one is not. Whatever the block
    /// sizes the driver uses.
    @Test(arguments: [[256], [1, 7, 0, 300, 64, 1000, 13], [4096]])
    func noteOnStartsOnItsExactFrame(blockSizes: [Int]) throws {
        let bank = try PresetBank(presets: [preset("saw")])
        for frame: Int64 in [0, 1, 15, 16, 17, 1000, 1234, 4097] {
            let (engine, queue) = EngineHarness.make(OscillatorSynth(presets: bank), maxFrames: 512)
            #expect(queue.push(EngineEvent(frame: frame, .noteOn(channel: 3, key: 60, velocity: 100))))
            let out = renderEngine(engine, frames: Int(frame) + engine.latencyFrames + 200, blockSizes: blockSizes)
            let onset = out.left.firstIndex { $0 != 0 }
            #expect(onset == Int(frame) + engine.latencyFrames, "note-on at \(frame) sounded from \(onset.map(String.init) ?? "never")")
        }
    }

    /// Events inside a note are sample-exact too: a note-off with release 0
    /// ends the note 1 ms (the minimum ramp) after its frame, to the block.
    @Test func noteOffIsAppliedAtItsFrame() throws {
        let bank = try PresetBank(presets: [preset("sine") { $0.release = 0 }])
        let (engine, queue) = EngineHarness.make(OscillatorSynth(presets: bank))
        queue.push(EngineEvent(frame: 100, .noteOn(channel: 0, key: 69, velocity: 100)))
        queue.push(EngineEvent(frame: 2_001, .noteOff(channel: 0, key: 69, velocity: 0)))
        let out = renderEngine(engine, frames: 4000, blockSizes: [256])
        let end = try #require(out.left.lastIndex { $0 != 0 })
        let releaseEnd = 2_001 + engine.latencyFrames + 48
        #expect(end >= releaseEnd - 1 && end < releaseEnd + OscillatorSynth.controlBlock, "ended at \(end)")
    }

    /// A busy second of MIDI at `start`: notes (enough to steal), note-offs,
    /// bends, program changes, controllers (effect sends too) and pedals, pressure, RPN 0 and
    /// the MPE configuration RPN, all-notes/sound-off, reset all
    /// controllers, System Reset and a GM System On SysEx.
    static func busySecond(into queue: EventQueue, start: Int64) {
        var rng = SplitMix64(seed: UInt64(start) + 1)
        for i in 0..<400 {
            let at = start + Int64(rng.next() % 48_000)
            let channel = UInt8(rng.next() % 16)
            let key = UInt8(24 + rng.next() % 80)
            let message: MIDIMessage
            switch i % 16 {
            case 0, 1, 2, 3: message = .noteOn(channel: channel, key: key, velocity: UInt8(1 + rng.next() % 127))
            case 4, 5: message = .noteOff(channel: channel, key: key, velocity: 0)
            case 6: message = .pitchBend(channel: channel, value: UInt16(rng.next() % 16384))
            case 7: message = .programChange(channel: channel, program: UInt8(rng.next() % 14))
            case 8: message = .controlChange(channel: channel, controller: [1, 7, 10, 11, 74, 64, 66, 67, 65, 91, 93, 94][Int(rng.next() % 12)], value: UInt8(rng.next() % 128))
            case 9: message = .channelPressure(channel: channel, pressure: UInt8(rng.next() % 128))
            case 10: message = .polyPressure(channel: channel, key: key, pressure: UInt8(rng.next() % 128))
            case 11: message = .controlChange(channel: channel, controller: [100, 101, 6, 38][Int(rng.next() % 4)], value: UInt8(rng.next() % 16))
            case 12: message = .controlChange(channel: channel, controller: [120, 121, 123][Int(rng.next() % 3)], value: 0)
            case 13: message = .noteOn(channel: channel, key: key, velocity: 0)
            case 14: message = .controlChange(channel: 0, controller: 6, value: UInt8(rng.next() % 16))
            default: message = i % 160 == 15 ? .systemReset : .noteOn(channel: channel, key: key, velocity: 90)
            }
            queue.push(EngineEvent(frame: at, message))
        }
        queue.pushSysEx(frame: start + 24_000, [0xF0, 0x7E, 0x7F, 0x09, 0x01, 0xF7])
    }

    /// Allocations, frees and locks of one busy second rendered through an
    /// engine holding `unit` (after a warm-up second).
    static func countEngineRender(with unit: any InstrumentUnit) -> RealtimeProbe.Counts<Void> {
        let (engine, queue) = EngineHarness.make(unit, queueCapacity: 1 << 14)
        let sizes = [256, 64, 1, 255, 0, 128]
        var left = [Float](repeating: 0, count: 48_000), right = left
        busySecond(into: queue, start: 0)
        _ = renderEngine(engine, frames: 48_000, blockSizes: sizes)       // warm-up
        busySecond(into: queue, start: 48_000)
        return left.withUnsafeMutableBufferPointer { l in
            right.withUnsafeMutableBufferPointer { r in
                let base = (l.baseAddress!, r.baseAddress!)
                return RealtimeProbe.counts {
                    var done = 0, i = 0
                    while done < 48_000 {
                        let n = min(sizes[i % 6], 48_000 - done)
                        engine.render(frames: n, left: base.0 + done, right: base.1 + done)
                        done += n
                        i += 1
                    }
                }
            }
        }
    }

    /// The render path allocates nothing and takes no lock: the synth's own
    /// entry points (receive, receiveSysEx, render) counted directly, and
    /// engine + synth under a busy second of MIDI, which must cost exactly
    /// what the engine costs with a unit that does nothing. (In a debug
    /// build the engine's own event loop allocates; in release it is 0 too.)
    @Test(.realtimeProbe) func renderAllocatesNothingAndTakesNoLock() throws {
        try #require(RealtimeProbe.isActive, "the allocation/lock probe is not active: this test cannot prove anything")

        // The synth alone, driven the way the engine drives it.
        let synth = OscillatorSynth(polyphony: 24, mpe: .lower)
        synth.prepare(sampleRate: 48_000, maxFrames: 256, channels: 16)
        var left = [Float](repeating: 0, count: 256), right = left
        left.withUnsafeMutableBufferPointer { l in
            right.withUnsafeMutableBufferPointer { r in
                expectBusySecondRealtimeSafe(synth) { synth.render(left: l.baseAddress!, right: r.baseAddress!, frames: $0) }
            }
        }

        // Through the engine, against the engine's own baseline.
        let silent = Self.countEngineRender(with: SilentUnit())
        let busy = Self.countEngineRender(with: OscillatorSynth(polyphony: 24, mpe: .lower))
        #expect(busy.allocations == silent.allocations, "the synth allocated \(busy.allocations - silent.allocations) times")
        #expect(busy.frees == silent.frees)
        #expect(busy.locks == 0 && silent.locks == 0)
        #if !DEBUG
        // Optimized, the whole path is clean (`swift test -c release -Xswiftc -enable-testing`).
        #expect(busy.allocations == 0 && busy.frees == 0)
        #endif
    }
}

/// A unit that renders silence and ignores every message: the engine's own
/// cost, for comparison.
final class SilentUnit: InstrumentUnit {
    let name = "silent"
    func prepare(sampleRate: Double, maxFrames: Int, channels: Int) {}
    func receive(_ message: MIDIMessage) {}
    func receiveSysEx(_ message: UnsafeBufferPointer<UInt8>) {}
    func render(left: UnsafeMutablePointer<Float>, right: UnsafeMutablePointer<Float>, frames: Int) {
        left.update(repeating: 0, count: frames)
        right.update(repeating: 0, count: frames)
    }
    var activeVoices: Int { 0 }
}

@Suite("Engine: bank select 126 picks the synth")
struct BankRoutingTests {
    /// With the engine's bank route for `spinetPresetBank`, CC 0 = 126 and a
    /// program change move a channel from another unit to the synth and pick
    /// the preset; the synth then plays it.
    @Test func bankSelect126AndAProgramChangeSelectTheSynthPreset() throws {
        let synth = OscillatorSynth()
        let (engine, queue) = EngineHarness.make([SilentUnit(), synth]) { engine, units in
            engine.routeAll(to: units[0])
            engine.routeBank(msb: OscillatorSynth.spinetPresetBank, to: units[1])
        }
        queue.push(EngineEvent(frame: 0, .noteOn(channel: 2, key: 57, velocity: 100)))          // to the silent unit
        queue.push(EngineEvent(frame: 4_800, .controlChange(channel: 2, controller: 0, value: OscillatorSynth.spinetPresetBank)))
        queue.push(EngineEvent(frame: 4_800, .programChange(channel: 2, program: 9)))           // "saw"
        queue.push(EngineEvent(frame: 4_800, .noteOn(channel: 2, key: 57, velocity: 100)))
        let out = renderEngine(engine, frames: 4_800 + 2_400 + 8_192, blockSizes: [256])
        #expect(out.left[..<(4_800 + engine.latencyFrames)].allSatisfy { $0 == 0 })
        #expect(synth.presetName(channel: 2) == "saw")
        let f0 = frequency(ofNote: 57)
        let tail = out.left[(4_800 + 2_400)...]
        let spectrum = SignalAnalysis.magnitudeSpectrum(tail.prefix(8192))
        #expect(magnitude(spectrum, at: f0, sampleRate: 48_000) > 0.05)
        #expect(abs(decibels(magnitude(spectrum, at: 2 * f0, sampleRate: 48_000) / magnitude(spectrum, at: f0, sampleRate: 48_000)) - decibels(0.5)) < 1,
                "not a saw")
    }
}
