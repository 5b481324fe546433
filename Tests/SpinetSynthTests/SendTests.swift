import Foundation
import Testing
import SpinetEngine
import SpinetMIDI
import SpinetTestSupport
@testable import SpinetSynth
import SpinetTestTraits

/// Planar output of a render with effect sends.
struct RenderedWithSends {
    var dry: Rendered
    var reverb: Rendered
    var chorus: Rendered
    var delay: Rendered
}

/// Like `render`, through `render(_:frames:)`: dry sound and the three sends.
func renderWithSends(_ synth: OscillatorSynth, frames: Int, events: [(frame: Int, message: MIDIMessage)] = [],
                     block: Int = 256) -> RenderedWithSends {
    var planes = [[Float]](repeating: [Float](repeating: .nan, count: frames), count: 8)
    var storage = planes.flatMap { $0 }
    storage.withUnsafeMutableBufferPointer { buffer in
        let output = UnitOutput(planar: buffer.baseAddress!, stride: frames)
        _ = slice(synth, frames: frames, events: events, block: block) { position, n in
            synth.render(output.advanced(by: position), frames: n)
        }
    }
    for k in 0..<8 { planes[k] = Array(storage[(k * frames)..<((k + 1) * frames)]) }
    return RenderedWithSends(dry: Rendered(left: planes[0], right: planes[1]),
                             reverb: Rendered(left: planes[2], right: planes[3]),
                             chorus: Rendered(left: planes[4], right: planes[5]),
                             delay: Rendered(left: planes[6], right: planes[7]))
}

func controlChange(_ channel: UInt8, _ controller: UInt8, _ value: UInt8) -> MIDIMessage {
    .controlChange(channel: channel, controller: controller, value: value)
}

/// The largest |a[i] - b[i] * scale| over both sides.
func largestDifference(_ a: Rendered, _ b: Rendered, scale: Float = 1) -> Float {
    var worst: Float = 0
    for i in 0..<a.left.count {
        worst = max(worst, abs(a.left[i] - b.left[i] * scale), abs(a.right[i] - b.right[i] * scale))
    }
    return worst
}

func peak(_ r: Rendered) -> Float {
    max(r.left.map(abs).max() ?? 0, r.right.map(abs).max() ?? 0)
}

@Suite("Synth: effect sends (CC 91, 93, 94)")
struct SendTests {
    /// A held, panned note: CC 91 = 127 sends exactly the dry sound to the
    /// reverb, CC 93 = 64 sends dry x 64/127 to the chorus, CC 94 = 0 nothing.
    @Test func sendsAreTheDrySoundTimesTheLevel() throws {
        let synth = try makeSynth([preset("saw")])
        let events: [(frame: Int, message: MIDIMessage)] = [
            (0, controlChange(0, MIDIController.pan, 30)),
            (0, controlChange(0, MIDIController.reverbSend, 127)),
            (0, controlChange(0, MIDIController.chorusSend, 64)),
            (0, controlChange(0, MIDIController.delaySend, 0)),
            (0, .noteOn(channel: 0, key: 57, velocity: 100)),
            (frames(0.3), .noteOff(channel: 0, key: 57, velocity: 0)),
        ]
        let out = renderWithSends(synth, frames: frames(0.6), events: events, block: 100)
        let dryPeak = peak(out.dry)
        #expect(dryPeak > 0.05)
        #expect(out.dry.left.map(abs).max()! > 1.5 * out.dry.right.map(abs).max()!, "not panned left")
        #expect(largestDifference(out.reverb, out.dry) <= dryPeak * 1e-6)
        #expect(largestDifference(out.chorus, out.dry, scale: 64 / 127) <= dryPeak * 1e-6)
        #expect(peak(out.delay) == 0)
    }

    /// Without CC 93/94 a note sends to the reverb only, at the default
    /// level 40/127 (the SoundFont unit's GM2 default; see
    /// SoundFontUnitTests.synthAndSoundFontSendDefaultsAgree), and a System
    /// Reset or a GM System On restores that after other levels.
    @Test func defaultSendsAreReverb40AndNothingElse() throws {
        #expect(OscillatorSynth.defaultReverbSend == Float(40) / 127)
        #expect(OscillatorSynth.defaultChorusSend == 0 && OscillatorSynth.defaultDelaySend == 0)
        let synth = try makeSynth([preset("saw")])
        let plain = renderWithSends(synth, frames: frames(0.2), events: [(0, .noteOn(channel: 4, key: 60, velocity: 90))])
        #expect(peak(plain.dry) > 0.05)
        #expect(largestDifference(plain.reverb, plain.dry, scale: 40 / 127) <= peak(plain.dry) * 1e-6)
        #expect(peak(plain.chorus) == 0 && peak(plain.delay) == 0)

        let resets: [(String, (OscillatorSynth) -> Void)] = [
            ("System Reset", { $0.receive(.systemReset) }),
            ("GM System On", { s in [UInt8]([0xF0, 0x7E, 0x7F, 0x09, 0x01, 0xF7]).withUnsafeBufferPointer { s.receiveSysEx($0) } }),
            ("GS reset", { s in [UInt8]([0xF0, 0x41, 0x10, 0x42, 0x12, 0x40, 0x00, 0x7F, 0x00, 0x41, 0xF7]).withUnsafeBufferPointer { s.receiveSysEx($0) } }),
        ]
        for (name, reset) in resets {
            let s = try makeSynth([preset("saw")])
            for (cc, v) in [(MIDIController.reverbSend, UInt8(0)), (MIDIController.chorusSend, 100), (MIDIController.delaySend, 100)] {
                s.receive(controlChange(4, cc, v))
            }
            reset(s)
            let out = renderWithSends(s, frames: frames(0.2), events: [(0, .noteOn(channel: 4, key: 60, velocity: 90))])
            #expect(largestDifference(out.reverb, out.dry, scale: 40 / 127) <= peak(out.dry) * 1e-6, "\(name)")
            #expect(peak(out.chorus) == 0 && peak(out.delay) == 0, "\(name)")
        }

        // Reset All Controllers leaves the sends alone (RP-015, as the SoundFont unit does).
        let kept = renderWithSends(try makeSynth([preset("saw")]), frames: frames(0.2), events: [
            (0, controlChange(4, MIDIController.delaySend, 127)),
            (0, controlChange(4, MIDIController.resetAllControllers, 0)),
            (0, .noteOn(channel: 4, key: 60, velocity: 90)),
        ])
        #expect(largestDifference(kept.delay, kept.dry) <= peak(kept.dry) * 1e-6)
    }

    /// Two channels at once, channel 1 to the reverb only and channel 2 to
    /// the delay only: each send holds exactly its channel's sound, which
    /// rendering each channel alone gives.
    @Test func eachSendCarriesOnlyItsChannels() throws {
        let setup: [(frame: Int, message: MIDIMessage)] = [
            (0, controlChange(0, MIDIController.reverbSend, 127)),
            (0, controlChange(0, MIDIController.delaySend, 0)),
            (0, controlChange(1, MIDIController.reverbSend, 0)),
            (0, controlChange(1, MIDIController.delaySend, 90)),
            (0, controlChange(1, MIDIController.pan, 110)),
        ]
        let first: [(frame: Int, message: MIDIMessage)] = [(0, .noteOn(channel: 0, key: 48, velocity: 100)), (3000, .noteOn(channel: 0, key: 55, velocity: 80))]
        let second: [(frame: Int, message: MIDIMessage)] = [(500, .noteOn(channel: 1, key: 72, velocity: 110))]
        let n = frames(0.4)
        let both = renderWithSends(try makeSynth([preset("saw")]), frames: n, events: setup + first + second)
        let one = renderWithSends(try makeSynth([preset("saw")]), frames: n, events: setup + first)
        let two = renderWithSends(try makeSynth([preset("saw")]), frames: n, events: setup + second)
        #expect(peak(one.dry) > 0.05 && peak(two.dry) > 0.05)
        let tolerance = peak(both.dry) * 1e-5
        #expect(largestDifference(both.reverb, one.dry) <= tolerance)
        #expect(largestDifference(both.delay, two.dry, scale: 90 / 127) <= tolerance)
        #expect(peak(both.chorus) == 0)
        // and not the other channel's share
        #expect(largestDifference(both.reverb, both.dry) > 0.02)
    }

    /// CC 91 from 0 to 127 in the middle of a note: the send level ramps in
    /// over a few milliseconds (5 ms smoothing) instead of jumping.
    @Test func aSendChangeRampsInsteadOfJumping() throws {
        let sine = preset("sine") { $0.attack = 0; $0.sustain = 1; $0.decay = 0.01 }
        // The change goes where the sine is near its peak, so a jump would be large.
        let plain = render(try makeSynth([sine]), frames: 5_300, events: [(0, .noteOn(channel: 0, key: 45, velocity: 127))])
        var change = 4_800
        for i in 4_800..<5_300 where abs(plain.left[i]) > abs(plain.left[change]) { change = i }
        let synth = try makeSynth([sine])
        let out = renderWithSends(synth, frames: change + 4_800, events: [
            (0, controlChange(0, MIDIController.reverbSend, 0)),
            (0, .noteOn(channel: 0, key: 45, velocity: 127)),
            (change, controlChange(0, MIDIController.reverbSend, 127)),
        ], block: 64)
        #expect(out.reverb.left[..<change].allSatisfy { $0 == 0 })
        var largestStep: Float = 0, largestDryStep: Float = 0
        for i in change..<(change + 960) {
            largestStep = max(largestStep, abs(out.reverb.left[i] - out.reverb.left[i - 1]))
            largestDryStep = max(largestDryStep, abs(out.dry.left[i] - out.dry.left[i - 1]))
        }
        // A jump would be as large as the signal (its peak here); the ramp
        // adds at most a few percent of it per sample to the sine's own steps.
        let dryPeak = peak(out.dry)
        #expect(dryPeak > 0.1)
        #expect(largestStep < largestDryStep + 0.02 * dryPeak, "step \(largestStep), dry step \(largestDryStep)")
        // The level (send / dry, measured where the sine is loud within half
        // a period) is partway 1-6 ms after the change, there after 50 ms.
        func level(around frame: Int) -> Float {
            var best = frame
            for i in frame..<(frame + 220) where abs(out.dry.left[i]) > abs(out.dry.left[best]) { best = i }
            return out.reverb.left[best] / out.dry.left[best]
        }
        let early = level(around: change + 48)
        #expect(early > 0.05 && early < 0.8, "level 1-6 ms after the change: \(early)")
        #expect(abs(level(around: change + 2_400) - 1) < 0.001)
    }

    /// `render(left:right:)` and the dry part of `render(_:)` are the same,
    /// sample for sample, with sends on several channels, MPE members,
    /// changes, pan and stolen voices.
    @Test func dryRenderIsTheSameWithOrWithoutSends() throws {
        var events: [(frame: Int, message: MIDIMessage)] = []
        var rng = SplitMix64(seed: 7)
        for i in 0..<300 {
            let at = Int(rng.next() % 24_000)
            let channel = UInt8(rng.next() % 6)
            let key = UInt8(36 + rng.next() % 48)
            switch i % 6 {
            case 0, 1: events.append((at, .noteOn(channel: channel, key: key, velocity: UInt8(1 + rng.next() % 127))))
            case 2: events.append((at, .noteOff(channel: channel, key: key, velocity: 0)))
            case 3: events.append((at, controlChange(channel, [91, 93, 94][Int(rng.next() % 3)], UInt8(rng.next() % 128))))
            case 4: events.append((at, controlChange(channel, [7, 10, 11][Int(rng.next() % 3)], UInt8(rng.next() % 128))))
            default: events.append((at, .pitchBend(channel: channel, value: UInt16(rng.next() % 16384))))
            }
        }
        let plain = render(try makeSynth(polyphony: 12, mpe: MPEZone(memberChannels: 3)), frames: 26_000, events: events, block: 200)
        let withSends = renderWithSends(try makeSynth(polyphony: 12, mpe: MPEZone(memberChannels: 3)), frames: 26_000, events: events, block: 200)
        #expect(peak(plain) > 0.05)
        #expect(peak(withSends.reverb) > 0.01 && peak(withSends.chorus) > 0.01 && peak(withSends.delay) > 0.01)
        #expect(plain.left == withSends.dry.left)
        #expect(plain.right == withSends.dry.right)
    }

    /// MPE: a member channel's notes use the manager channel's sends, like
    /// its volume and pan; the member's own CC 91 is ignored.
    @Test func mpeMembersUseTheManagersSends() throws {
        let synth = try makeSynth([preset("saw")], mpe: .lower)
        let out = renderWithSends(synth, frames: frames(0.2), events: [
            (0, controlChange(0, MIDIController.reverbSend, 0)),
            (0, controlChange(0, MIDIController.chorusSend, 127)),
            (0, controlChange(3, MIDIController.reverbSend, 127)),
            (0, .noteOn(channel: 3, key: 60, velocity: 100)),
        ])
        #expect(peak(out.dry) > 0.05)
        #expect(peak(out.reverb) == 0)
        #expect(largestDifference(out.chorus, out.dry) <= peak(out.dry) * 1e-6)
    }

    /// Zero sends everywhere: the send buffers are exact silence (the send
    /// work is skipped), and so are they with no voice at all.
    @Test func zeroSendsWriteSilence() throws {
        let synth = try makeSynth([preset("saw")])
        var events: [(frame: Int, message: MIDIMessage)] = []
        for c: UInt8 in 0..<16 { events.append((0, controlChange(c, MIDIController.reverbSend, 0))) }
        events.append((100, .noteOn(channel: 2, key: 60, velocity: 100)))
        let out = renderWithSends(synth, frames: 4_000, events: events)
        #expect(peak(out.dry) > 0.05)
        #expect(peak(out.reverb) == 0 && peak(out.chorus) == 0 && peak(out.delay) == 0)
        #expect(!out.reverb.left.contains { $0.isNaN })
    }

    /// The sends path allocates nothing and takes no lock: a busy second
    /// (with send changes) rendered through `render(_:frames:)`, after a
    /// warm-up second.
    @Test(.realtimeProbe) func renderWithSendsAllocatesNothingAndTakesNoLock() throws {
        try #require(RealtimeProbe.isActive, "the allocation/lock probe is not active: this test cannot prove anything")
        let synth = OscillatorSynth(polyphony: 24, mpe: .lower)
        synth.prepare(sampleRate: 48_000, maxFrames: 256, channels: 16)
        for c: UInt8 in 0..<16 {
            synth.receive(controlChange(c, MIDIController.chorusSend, 40))
            synth.receive(controlChange(c, MIDIController.delaySend, c % 2 == 0 ? 30 : 0))
        }
        let buffers = UnsafeMutablePointer<Float>.allocate(capacity: 8 * 256)
        buffers.initialize(repeating: 0, count: 8 * 256)
        defer { buffers.deallocate() }
        let output = UnitOutput(planar: buffers, stride: 256)
        var sent: Float = 0
        expectBusySecondRealtimeSafe(synth) { n in
            synth.render(output, frames: n)
            for i in 0..<n { sent = max(sent, abs(output.chorusLeft[i]) + abs(output.delayRight[i])) }
        }
        #expect(sent > 0.001, "the sends path was not exercised")
    }
}

@Suite("Synth: effect sends through the engine")
struct SendEngineTests {
    /// With Spinet's hall reverb, a synth note sent with CC 91 = 127 rings
    /// on after its release has ended; with CC 91 = 0 the output is exact
    /// silence from there.
    @Test func reverbSendGivesATailAndNoSendNone() throws {
        let bank = try PresetBank(presets: [preset("saw") { $0.release = 0.05 }])
        var tails: [UInt8: Float] = [:]
        for send: UInt8 in [127, 0] {
            var configuration = Engine.Configuration()
            configuration.reverb = .hall
            let (engine, queue) = EngineHarness.make(OscillatorSynth(presets: bank), configuration: configuration)
            queue.push(EngineEvent(frame: 0, controlChange(0, MIDIController.reverbSend, send)))
            queue.push(EngineEvent(frame: 0, .noteOn(channel: 0, key: 60, velocity: 110)))
            queue.push(EngineEvent(frame: 9_600, .noteOff(channel: 0, key: 60, velocity: 0)))
            let out = renderEngine(engine, frames: 48_000, blockSizes: [256, 100])
            #expect(peak(Rendered(left: Array(out.left[..<9_600]), right: Array(out.right[..<9_600]))) > 0.05)
            // The release (50 ms) is over 100 ms after the note-off.
            let start = 9_600 + 4_800 + engine.latencyFrames
            tails[send] = peak(Rendered(left: Array(out.left[start...]), right: Array(out.right[start...])))
        }
        #expect(tails[127]! > 0.001, "no reverb tail: \(tails)")
        #expect(tails[0]! == 0, "a tail without a send: \(tails)")
    }
}
