import Testing
import SpinetEngine
import SpinetMIDI
@testable import SpinetSynth

/// Spinet's synth through `Engine.render(frames:left:right:events:)`, the
/// call a JACK or plugin host makes with the MIDI of its callback.
@Suite("Engine: synth notes handed over inside the render call")
struct CallbackEventSynthTests {
    /// A note-on at offset k of a call sounds from exactly frame k of that
    /// call (plus the limiter's latency): every sample before is 0.
    @Test(arguments: [0, 1, 15, 16, 17, 100, 255, 256, 511])
    func noteOnAtOffsetStartsAtThatFrame(offset: Int) throws {
        let bank = try PresetBank(presets: [preset("saw")])
        let engine = Engine()
        engine.routeAll(to: engine.add(OscillatorSynth(presets: bank)))
        engine.prepare(sampleRate: 48_000, maxFrames: 256)
        let latency = engine.latencyFrames
        let frames = 512 + latency + 64
        var left = [Float](repeating: .nan, count: frames)
        var right = [Float](repeating: .nan, count: frames)
        let events = [CallbackEvent(offset: offset, .noteOn(channel: 2, key: 60, velocity: 100))]
        left.withUnsafeMutableBufferPointer { l in
            right.withUnsafeMutableBufferPointer { r in
                // one call before, so the call does not start at frame 0
                engine.render(frames: 77, left: l.baseAddress!, right: r.baseAddress!)
                events.withUnsafeBufferPointer { e in
                    engine.render(frames: frames, left: l.baseAddress!, right: r.baseAddress!, events: e)
                }
            }
        }
        let onset = left.firstIndex { $0 != 0 }
        #expect(onset == offset + latency, "note-on at offset \(offset) sounded from \(onset.map(String.init) ?? "never")")
    }
}
