import Foundation
import Testing
import SpinetMIDI
import SpinetTestSupport
@testable import SpinetSynth

/// Envelope of a tone: at each sample, the largest |x| over the last
/// `period` samples.
func envelope(_ x: [Float], period: Int) -> [Float] {
    var out = [Float](repeating: 0, count: x.count)
    for i in x.indices {
        var m: Float = 0
        for j in max(0, i - period + 1)...i { m = max(m, abs(x[j])) }
        out[i] = m
    }
    return out
}

/// Index of the last sample that is not exactly 0.
func lastSound(_ x: [Float]) -> Int? { x.lastIndex { $0 != 0 } }

@Suite("Envelopes: timing and shape")
struct EnvelopeTimingTests {
    static let rate = 48_000.0
    static let oneMillisecond = 48

    /// Attack time = time from note-on to full level, within 1 ms.
    @Test(arguments: [0.01, 0.05, 0.2])
    func attackReachesFullLevelOnTime(attack: Double) throws {
        let synth = try makeSynth([preset("sine") { $0.attack = attack }])
        let out = render(synth, frames: frames(attack + 0.05), events: [(0, .noteOn(channel: 0, key: 105, velocity: 127))])
        let env = envelope(out.left, period: 14)                     // 3520 Hz: one period
        let full = env.last ?? 0
        let reached = try #require(env.firstIndex { $0 >= 0.999 * full })
        #expect(abs(reached - frames(attack)) <= Self.oneMillisecond, "attack \(attack) s reached full level after \(reached) samples")
        // and it rises all the way, no jump
        let start = try #require(out.left.firstIndex { $0 != 0 })
        #expect(start == 0)
        #expect(env[frames(attack / 2)] < 0.9 * full && env[frames(attack / 2)] > 0.3 * full)
    }

    /// Release time = time from note-off to silence (exact zeros), within 1 ms.
    @Test(arguments: [0.02, 0.1, 0.5])
    func releaseEndsInSilenceOnTime(release: Double) throws {
        let synth = try makeSynth([preset("sine") { $0.release = release }])
        let off = frames(0.05)
        let out = render(synth, frames: off + frames(release + 0.05), events: [
            (0, .noteOn(channel: 0, key: 81, velocity: 100)), (off, .noteOff(channel: 0, key: 81, velocity: 0)),
        ])
        let end = try #require(lastSound(out.left))
        #expect(abs(end - off - frames(release)) <= Self.oneMillisecond, "release \(release) s ended \(end - off) samples after note-off")
        #expect(synth.activeVoices == 0)
        // Exponential: -20 dB a third of the way through, -30 dB half way.
        let env = envelope(out.left, period: 55)
        let peak = env[off]
        let third = Double(env[off + frames(release / 3)] / peak), half = Double(env[off + frames(release / 2)] / peak)
        #expect(release < 0.1 || abs(decibels(third) + 20) < 1.5 && abs(decibels(half) + 30) < 1.5, "release shape: \(decibels(third)) dB, \(decibels(half)) dB")
    }

    /// Decay time = time from the peak to the sustain level; with sustain 0
    /// the voice ends there. Within 1 ms of attack + decay.
    @Test func decayToZeroSustainEndsTheVoiceOnTime() throws {
        let synth = try makeSynth([preset("sine") { $0.attack = 0.01; $0.decay = 0.15; $0.sustain = 0 }])
        let out = render(synth, frames: frames(0.3), events: [(0, .noteOn(channel: 0, key: 81, velocity: 100))])
        let end = try #require(lastSound(out.left))
        #expect(abs(end - frames(0.16)) <= Self.oneMillisecond, "decay ended at \(end)")
        #expect(synth.activeVoices == 0)
    }

    @Test func decaySettlesAtTheSustainLevel() throws {
        let synth = try makeSynth([preset("sine") { $0.attack = 0.005; $0.decay = 0.05; $0.sustain = 0.25 }])
        let out = render(synth, frames: frames(0.3), events: [(0, .noteOn(channel: 0, key: 93, velocity: 127))])
        let env = envelope(out.left, period: 28)
        let peak = env[frames(0.005) + 30]
        let sustained = env[frames(0.25)]
        #expect(abs(decibels(Double(sustained / peak)) - decibels(0.25)) < 0.2, "sustain at \(sustained / peak)")
    }

    /// The filter envelope moves the cutoff: a pluck is bright at the start
    /// and dark later.
    @Test func filterEnvelopeSweepsTheCutoff() throws {
        let synth = try makeSynth([preset("saw") {
            $0.cutoff = 200; $0.filterEnvAmount = 60; $0.filterAttack = 0; $0.filterDecay = 0.5; $0.filterSustain = 0
        }])
        let out = render(synth, frames: frames(0.6) + 2048, events: [(0, .noteOn(channel: 0, key: 45, velocity: 127))])
        let early = SignalAnalysis.magnitudeSpectrum(out.left[480..<(480 + 2048)])
        let late = SignalAnalysis.magnitudeSpectrum(out.left[frames(0.6)..<(frames(0.6) + 2048)])
        let f0 = frequency(ofNote: 45)
        let earlyRatio = magnitude(early, at: 20 * f0, sampleRate: 48_000) / magnitude(early, at: f0, sampleRate: 48_000)
        let lateRatio = magnitude(late, at: 20 * f0, sampleRate: 48_000) / magnitude(late, at: f0, sampleRate: 48_000)
        #expect(decibels(earlyRatio) - decibels(lateRatio) > 30, "20th partial: \(decibels(earlyRatio)) dB early, \(decibels(lateRatio)) dB late")
    }
}

@Suite("Clicks: every level change is a ramp")
struct ClickTests {
    /// A low sine (110 Hz) steps at most 2·A·sin(π·110/48000) = 0.014·A per
    /// sample; a click (a cut or a jump in level) steps by a large part of A.
    /// The bound allows the natural step plus a ramp over 1 ms (A/48).
    static func clickBound(_ peak: Float) -> Float { 0.04 * peak }

    /// Offsets that put an event at different phases of a 110 Hz cycle
    /// (436 samples), including near its peak: a click at a zero crossing
    /// could go unnoticed.
    static let phases = [0, 55, 109, 163, 218, 327]

    func steadyPeak(_ name: String = "sine", key: UInt8 = 45, _ change: (inout Preset) -> Void = { _ in }) throws -> Float {
        let synth = try makeSynth([preset(name, change)])
        let out = render(synth, frames: frames(0.1), events: [(0, .noteOn(channel: 0, key: key, velocity: 127))])
        return SignalAnalysis.peak(out.left[frames(0.05)...])
    }

    @Test func attackZeroAndReleaseZeroDoNotClick() throws {
        let change: (inout Preset) -> Void = { $0.attack = 0; $0.release = 0 }
        let peak = try steadyPeak("sine", change)
        for offset in Self.phases {
            let synth = try makeSynth([preset("sine", change)])
            let out = render(synth, frames: frames(0.2), events: [
                (100, .noteOn(channel: 0, key: 45, velocity: 127)),
                (frames(0.1) + offset, .noteOff(channel: 0, key: 45, velocity: 0)),
            ])
            let step = SignalAnalysis.maxStep(out.left[...])
            #expect(step < Self.clickBound(peak), "note-off at +\(offset): max step \(step) for peak \(peak)")
            #expect(synth.activeVoices == 0)
        }
        let synth = try makeSynth([preset("sine", change)])
        let out = render(synth, frames: frames(0.2), events: [
            (100, .noteOn(channel: 0, key: 45, velocity: 127)),
            (frames(0.1) + 37, .noteOff(channel: 0, key: 45, velocity: 0)),
        ])
        // The minimum ramp is short: full level within about 1 ms, silent 1 ms after note-off.
        #expect(out.left[100 + 48 + 16 ..< 100 + 48 + 16 + 300].map(abs).max() ?? 0 > 0.95 * peak)
        #expect(lastSound(out.left).map { $0 - frames(0.1) - 37 } ?? 0 <= 48 + 16)
    }

    /// Stealing: with one voice, a second note steals the first; the stolen
    /// voice fades out over 3 ms while the new one starts on time.
    @Test func stealingDoesNotClick() throws {
        let peak = try steadyPeak()
        var events: [(frame: Int, message: MIDIMessage)] = [(0, .noteOn(channel: 0, key: 45, velocity: 127))]
        for (i, offset) in Self.phases.enumerated() {
            events.append((frames(0.05) * (i + 1) + offset, .noteOn(channel: 0, key: i % 2 == 0 ? 52 : 45, velocity: 127)))
        }
        let synth = try makeSynth([preset("sine") { $0.release = 2 }], polyphony: 1)
        let out = render(synth, frames: frames(0.05) * (Self.phases.count + 2), events: events)
        let step = SignalAnalysis.maxStep(out.left[...])
        #expect(step < Self.clickBound(peak), "max step \(step) for peak \(peak)")
        #expect(synth.activeVoices == 1)
        // The last note sounds alone.
        let f = SignalAnalysis.fundamentalFrequency(out.left[(out.left.count - frames(0.04))...], sampleRate: 48_000)
        #expect(abs(SignalAnalysis.cents(f, relativeTo: frequency(ofNote: 45))) < 1)
    }

    /// Same-note retrigger restarts the envelopes from the current level in
    /// the same voice: no second voice, no click.
    @Test func retriggerUsesTheSameVoiceWithoutAClick() throws {
        let peak = try steadyPeak()
        let synth = try makeSynth([preset("sine") { $0.attack = 0.01; $0.release = 0.3 }])
        let out = render(synth, frames: frames(0.4), events: [
            (0, .noteOn(channel: 0, key: 45, velocity: 127)),
            (frames(0.1) + 109, .noteOn(channel: 0, key: 45, velocity: 60)),      // while held, near a peak
            (frames(0.2), .noteOff(channel: 0, key: 45, velocity: 0)),
            (frames(0.25) + 55, .noteOn(channel: 0, key: 45, velocity: 127)),     // while releasing
        ])
        #expect(synth.activeVoices == 1)
        let step = SignalAnalysis.maxStep(out.left[...])
        #expect(step < Self.clickBound(peak), "max step \(step) for peak \(peak)")
        // The softer retrigger made it quieter, the last one loud again.
        let mid = SignalAnalysis.peak(out.left[frames(0.15)..<frames(0.2)])
        let end = SignalAnalysis.peak(out.left[frames(0.35)...])
        #expect(mid < 0.7 * end && end > 0.9 * peak)
    }

    @Test func allNotesOffAndAllSoundOffDoNotClick() throws {
        let change: (inout Preset) -> Void = { $0.release = 0 }
        let peak = try steadyPeak("sine", change)
        for controller: UInt8 in [123, 120] {
            for offset in Self.phases {
                let synth = try makeSynth([preset("sine", change)])
                let out = render(synth, frames: frames(0.2), events: [
                    (0, .noteOn(channel: 0, key: 45, velocity: 127)),
                    (frames(0.1) + offset, .controlChange(channel: 0, controller: controller, value: 0)),
                ])
                let step = SignalAnalysis.maxStep(out.left[...])
                #expect(step < Self.clickBound(peak), "CC \(controller) at +\(offset): max step \(step) for peak \(peak)")
                #expect(synth.activeVoices == 0, "CC \(controller) left voices sounding")
                #expect(lastSound(out.left).map { $0 < frames(0.1) + offset + 48 * 3 + 16 } ?? false)
            }
        }
    }

    /// Controller jumps are smoothed: volume 127 -> 10, pan hard left -> hard
    /// right, CC 74 on a resonant filter, all at once.
    @Test func controllerJumpsDoNotZipper() throws {
        let peak = try steadyPeak()
        let synth = try makeSynth([preset("sine") { $0.resonance = 0.5; $0.cutoff = 2000 }])
        let out = render(synth, frames: frames(0.3), events: [
            (0, .noteOn(channel: 0, key: 45, velocity: 127)),
            (0, .controlChange(channel: 0, controller: 10, value: 0)),
            (frames(0.1), .controlChange(channel: 0, controller: 7, value: 10)),
            (frames(0.1), .controlChange(channel: 0, controller: 10, value: 127)),
            (frames(0.1), .controlChange(channel: 0, controller: 74, value: 0)),
            (frames(0.2), .controlChange(channel: 0, controller: 7, value: 127)),
        ])
        for side in [out.left, out.right] {
            let step = SignalAnalysis.maxStep(side[...])
            let sidePeak = SignalAnalysis.peak(side[...])
            #expect(sidePeak > peak, "hard-panned level should be above the centred one")
            #expect(step < Self.clickBound(sidePeak), "max step \(step) for peak \(sidePeak)")
        }
    }
}
