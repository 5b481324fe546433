import Foundation
import Testing
import SpinetMIDI
import SpinetTestSupport
@testable import SpinetSynth

/// Level of a tone near `hz` in a stretch of output (windowed spectrum peak).
func level(_ x: ArraySlice<Float>, at hz: Double) -> Double {
    magnitude(SignalAnalysis.magnitudeSpectrum(x), at: hz, sampleRate: 48_000)
}

@Suite("Pedals: sustain, sostenuto, soft")
struct PedalTests {
    static let a = frequency(ofNote: 57), e = frequency(ofNote: 64)

    @Test func sustainHoldsReleasedKeysUntilLifted() throws {
        let synth = try makeSynth([preset("sine") { $0.release = 0.05 }])
        let out = render(synth, frames: frames(0.8), events: [
            (0, .controlChange(channel: 0, controller: 64, value: 127)),
            (0, .noteOn(channel: 0, key: 57, velocity: 100)),
            (frames(0.1), .noteOff(channel: 0, key: 57, velocity: 0)),
            (frames(0.5), .controlChange(channel: 0, controller: 64, value: 0)),
        ])
        let held = SignalAnalysis.rms(out.left[frames(0.3)..<frames(0.45)])
        let before = SignalAnalysis.rms(out.left[frames(0.02)..<frames(0.1)])
        #expect(abs(decibels(Double(held / before))) < 0.05, "the pedal did not hold the note")
        let end = try #require(lastSound(out.left))
        #expect(abs(end - frames(0.55)) <= 48, "released \(end - frames(0.5)) samples after the pedal")
        #expect(synth.activeVoices == 0)
    }

    /// Sostenuto holds only the keys that were down when it went down.
    @Test func sostenutoHoldsOnlyTheKeysDownWhenPressed() throws {
        let synth = try makeSynth([preset("sine") { $0.release = 0.05 }])
        let out = render(synth, frames: frames(1.0), events: [
            (0, .noteOn(channel: 0, key: 57, velocity: 100)),
            (frames(0.05), .controlChange(channel: 0, controller: 66, value: 127)),
            (frames(0.1), .noteOff(channel: 0, key: 57, velocity: 0)),              // held by sostenuto
            (frames(0.15), .noteOn(channel: 0, key: 64, velocity: 100)),            // after the pedal
            (frames(0.25), .noteOff(channel: 0, key: 64, velocity: 0)),             // released normally
            (frames(0.7), .controlChange(channel: 0, controller: 66, value: 0)),
        ])
        let window = out.left[frames(0.4)..<(frames(0.4) + 8192)]
        let aLevel = level(window, at: Self.a), eLevel = level(window, at: Self.e)
        #expect(aLevel > 0.05, "A stopped although sostenuto held it")
        #expect(eLevel < aLevel * 1e-4, "E kept sounding although it was played after the pedal")
        let end = try #require(lastSound(out.left))
        #expect(abs(end - frames(0.75)) <= 48, "A ended \(end - frames(0.7)) samples after sostenuto up")
    }

    /// Sustain and sostenuto together: lifting sostenuto leaves the sustain
    /// pedal holding; lifting sustain then releases.
    @Test func sostenutoUnderSustain() throws {
        let synth = try makeSynth([preset("sine") { $0.release = 0.05 }])
        _ = render(synth, frames: frames(0.6), events: [
            (0, .noteOn(channel: 0, key: 57, velocity: 100)),
            (frames(0.05), .controlChange(channel: 0, controller: 66, value: 127)),
            (frames(0.06), .controlChange(channel: 0, controller: 64, value: 127)),
            (frames(0.1), .noteOff(channel: 0, key: 57, velocity: 0)),
            (frames(0.2), .controlChange(channel: 0, controller: 66, value: 0)),
        ])
        #expect(synth.activeVoices == 1)
        _ = render(synth, frames: frames(0.2), events: [(0, .controlChange(channel: 0, controller: 64, value: 0))])
        #expect(synth.activeVoices == 0)
    }

    /// Soft pedal: notes struck while it is down are 3 dB quieter; notes
    /// already sounding are not changed.
    @Test func softPedalMakesNewNotesQuieter() throws {
        func rms(_ events: [(frame: Int, message: MIDIMessage)]) throws -> Float {
            let synth = try makeSynth([preset("sine")])
            let out = render(synth, frames: frames(0.5), events: events)
            return SignalAnalysis.rms(out.left[frames(0.4)...])
        }
        let normal = try rms([(0, .noteOn(channel: 0, key: 64, velocity: 100))])
        let soft = try rms([(0, .controlChange(channel: 0, controller: 67, value: 127)),
                            (0, .noteOn(channel: 0, key: 64, velocity: 100))])
        #expect(abs(decibels(Double(soft / normal)) + 3) < 0.05, "soft note level \(decibels(Double(soft / normal))) dB")
        // Pressing the pedal does not change a note already sounding.
        let pressedLater = try rms([(0, .noteOn(channel: 0, key: 64, velocity: 100)),
                                    (frames(0.2), .controlChange(channel: 0, controller: 67, value: 127))])
        #expect(pressedLater == normal)
        // The pedal also darkens (cutoff 5 semitones down, so about 5 dB less
        // well above a 12 dB/octave cutoff).
        func upper(_ soft: Bool) throws -> Double {
            let synth = try makeSynth([preset("saw") { $0.cutoff = 2000 }])
            let out = render(synth, frames: frames(0.05) + 4096, events: [
                (0, .controlChange(channel: 0, controller: 67, value: soft ? 127 : 0)),
                (0, .noteOn(channel: 0, key: 45, velocity: 127)),
            ])
            let x = out.left[frames(0.05)...]
            return level(x, at: 40 * frequency(ofNote: 45)) / level(x, at: frequency(ofNote: 45))
        }
        #expect(decibels(try upper(true) / upper(false)) < -4)
    }
}

@Suite("MIDI: notes, controllers, programs")
struct MIDIBehaviourTests {
    @Test func noteOnWithVelocityZeroIsANoteOff() throws {
        let synth = try makeSynth([preset("sine") { $0.release = 0.01 }])
        let out = render(synth, frames: frames(0.2), events: [
            (0, .noteOn(channel: 0, key: 60, velocity: 100)),
            (frames(0.05), .noteOn(channel: 0, key: 60, velocity: 0)),
        ])
        #expect(synth.activeVoices == 0)
        #expect(abs((lastSound(out.left) ?? 0) - frames(0.06)) <= 48)
    }

    /// Volume and expression follow (v/127)^2; pan is constant-power.
    @Test func volumeExpressionAndPan() throws {
        func stereoLevel(_ messages: [MIDIMessage]) throws -> (left: Double, right: Double) {
            let synth = try makeSynth([preset("sine")])
            let out = render(synth, frames: frames(0.05) + 4096,
                             events: messages.map { (0, $0) } + [(0, .noteOn(channel: 0, key: 69, velocity: 127))])
            return (level(out.left[frames(0.05)...], at: 440), level(out.right[frames(0.05)...], at: 440))
        }
        let full = try stereoLevel([.controlChange(channel: 0, controller: 7, value: 127)])
        let half = try stereoLevel([.controlChange(channel: 0, controller: 7, value: 64)])
        let quarterExpression = try stereoLevel([.controlChange(channel: 0, controller: 7, value: 127),
                                                 .controlChange(channel: 0, controller: 11, value: 32)])
        let gmDefault = try stereoLevel([])
        #expect(abs(decibels(half.left / full.left) - decibels(pow(64.0 / 127, 2))) < 0.05)
        #expect(abs(decibels(quarterExpression.left / full.left) - decibels(pow(32.0 / 127, 2))) < 0.05)
        #expect(abs(decibels(gmDefault.left / full.left) - decibels(pow(100.0 / 127, 2))) < 0.05, "default volume is 100")
        #expect(abs(full.left - full.right) < 1e-6 * full.left, "centre pan is not centred")
        for pan: UInt8 in [0, 1, 20, 64, 100, 127] {
            let p = try stereoLevel([.controlChange(channel: 0, controller: 7, value: 127),
                                     .controlChange(channel: 0, controller: 10, value: pan)])
            let power = p.left * p.left + p.right * p.right
            let centre = full.left * full.left + full.right * full.right
            #expect(abs(10 * log10(power / centre)) < 0.05, "pan \(pan) changed the power")
            if pan <= 1 { #expect(p.right < 1e-5 * p.left, "pan \(pan) is not hard left") }
            if pan == 127 { #expect(p.left < 1e-5 * p.right, "pan 127 is not hard right") }
        }
    }

    /// Program change picks the preset for the next notes: program 8 is the
    /// plain sine, 9 the plain saw (factory bank).
    @Test func programChangeSelectsThePreset() throws {
        let synth = try makeSynth()
        let f0 = frequency(ofNote: 57)
        let out = render(synth, frames: frames(0.5), events: [
            (0, .programChange(channel: 0, program: 8)),
            (0, .noteOn(channel: 0, key: 57, velocity: 100)),
            (frames(0.2), .programChange(channel: 0, program: 9)),
            (frames(0.25), .noteOn(channel: 0, key: 45, velocity: 100)),
        ])
        let sine = out.left[frames(0.05)..<(frames(0.05) + 8192)]
        #expect(decibels(level(sine, at: 2 * f0) / level(sine, at: f0)) < -80, "program 8 is not a sine")
        // The sine keeps playing after the program change; the new note is a saw.
        let both = out.left[frames(0.3)..<(frames(0.3) + 8192)]
        let saw = frequency(ofNote: 45)
        #expect(abs(decibels(level(both, at: 3 * saw) / level(both, at: saw)) - decibels(1.0 / 3)) < 1, "program 9 is not a saw")
        #expect(synth.presetName(channel: 0) == "saw")
    }

    @Test func resetAllControllersCentresTheBendButKeepsTheVolume() throws {
        let synth = try makeSynth([preset("sine")])
        let out = render(synth, frames: frames(0.5), events: [
            (0, .controlChange(channel: 0, controller: 7, value: 64)),
            (0, .pitchBend(channel: 0, value: 16383)),
            (0, .controlChange(channel: 0, controller: 64, value: 127)),
            (0, .noteOn(channel: 0, key: 69, velocity: 100)),
            (frames(0.1), .noteOff(channel: 0, key: 69, velocity: 0)),
            (frames(0.2), .controlChange(channel: 0, controller: 121, value: 0)),
        ])
        let bent = SignalAnalysis.fundamentalFrequency(out.left[frames(0.05)..<frames(0.1)], sampleRate: 48_000)
        #expect(abs(SignalAnalysis.cents(bent, relativeTo: 440) - 200) < 0.5)
        // The sustain pedal was reset too: the note released.
        #expect(synth.activeVoices == 0)
        let volume = synth.channels[0].volume
        #expect(volume == 64)
        #expect(synth.channels[0].bend == 0)
    }

    /// CC 74 opens and closes the filter.
    @Test func brightnessMovesTheCutoff() throws {
        func upperPartials(_ cc74: UInt8) throws -> Double {
            let synth = try makeSynth([preset("saw") { $0.cutoff = 1000; $0.resonance = 0 }])
            let out = render(synth, frames: frames(0.05) + 4096, events: [
                (0, .controlChange(channel: 0, controller: 74, value: cc74)),
                (0, .noteOn(channel: 0, key: 45, velocity: 127)),
            ])
            let x = out.left[frames(0.05)...]
            return level(x, at: 30 * frequency(ofNote: 45)) / level(x, at: frequency(ofNote: 45))
        }
        let dark = try upperPartials(0), neutral = try upperPartials(64), bright = try upperPartials(127)
        #expect(decibels(neutral / dark) > 20 && decibels(bright / neutral) > 20, "\(dark) \(neutral) \(bright)")
    }

    /// Channel pressure is routed to vibrato by default (and, on a preset
    /// that says so, to brightness); poly aftertouch to brightness per note.
    @Test func pressureAndAftertouchAreRouted() throws {
        func periodSpread(_ pressure: UInt8) throws -> Double {
            let synth = try makeSynth([preset("sine") { $0.vibrato = 1; $0.lfoRate = 6; $0.pressure = .vibrato }])
            let out = render(synth, frames: frames(0.6), events: [
                (0, .channelPressure(channel: 0, pressure: pressure)),
                (0, .noteOn(channel: 0, key: 69, velocity: 100)),
            ])
            var crossings: [Double] = []
            let x = out.left
            for i in frames(0.05)..<(x.count - 1) where x[i] <= 0 && x[i + 1] > 0 {
                crossings.append(Double(i) + Double(-x[i] / (x[i + 1] - x[i])))
            }
            let periods = zip(crossings.dropFirst(), crossings).map { $0 - $1 }
            return (periods.max() ?? 0) / (periods.min() ?? 1)
        }
        #expect(try periodSpread(0) < 1.0001, "vibrato without pressure or mod wheel")
        #expect(try periodSpread(127) > 1.08, "full pressure gave no vibrato")

        func brightness(poly: UInt8, key: UInt8) throws -> Double {
            let synth = try makeSynth([preset("saw") { $0.cutoff = 500; $0.polyPressure = .brightness }])
            let out = render(synth, frames: frames(0.05) + 4096, events: [
                (0, .noteOn(channel: 0, key: 45, velocity: 127)),
                (0, .polyPressure(channel: 0, key: key, pressure: poly)),
            ])
            let x = out.left[frames(0.05)...]
            return level(x, at: 20 * frequency(ofNote: 45)) / level(x, at: frequency(ofNote: 45))
        }
        #expect(decibels(try brightness(poly: 127, key: 45) / brightness(poly: 0, key: 45)) > 20)
        #expect(abs(decibels(try brightness(poly: 127, key: 46) / brightness(poly: 0, key: 45))) < 0.1, "aftertouch on another key changed this note")
    }

    /// Glide: a new note starts from the previous note's pitch.
    @Test func glideStartsFromThePreviousNote() throws {
        let synth = try makeSynth([preset("sine") { $0.glide = 0.2 }])
        let out = render(synth, frames: frames(0.8), events: [
            (0, .noteOn(channel: 0, key: 57, velocity: 100)),
            (frames(0.1), .noteOff(channel: 0, key: 57, velocity: 0)),
            (frames(0.2), .noteOn(channel: 0, key: 69, velocity: 100)),
        ])
        let early = SignalAnalysis.fundamentalFrequency(out.left[frames(0.2)..<frames(0.23)], sampleRate: 48_000)
        let late = SignalAnalysis.fundamentalFrequency(out.left[frames(0.5)...], sampleRate: 48_000)
        #expect(early < 330, "glide did not start near 220 Hz: \(early)")
        #expect(abs(SignalAnalysis.cents(late, relativeTo: 440)) < 0.5, "glide did not arrive: \(late)")
        // CC 65 off: no glide.
        let direct = try makeSynth([preset("sine") { $0.glide = 0.2 }])
        let out2 = render(direct, frames: frames(0.3), events: [
            (0, .controlChange(channel: 0, controller: 65, value: 0)),
            (0, .noteOn(channel: 0, key: 57, velocity: 100)),
            (frames(0.05), .noteOff(channel: 0, key: 57, velocity: 0)),
            (frames(0.1), .noteOn(channel: 0, key: 69, velocity: 100)),
        ])
        let f = SignalAnalysis.fundamentalFrequency(out2.left[frames(0.1)..<frames(0.13)], sampleRate: 48_000)
        #expect(f > 410, "portamento off still glided: \(f)")
    }

    /// Velocity curve: level = (1 - s) + s·(v/127)^curve.
    @Test func velocityCurve() throws {
        func peakLevel(_ velocity: UInt8, curve: Double) throws -> Double {
            let synth = try makeSynth([preset("sine") { $0.velocityCurve = curve }])
            let out = render(synth, frames: frames(0.05) + 4096, events: [(0, .noteOn(channel: 0, key: 69, velocity: velocity))])
            return level(out.left[frames(0.05)...], at: 440)
        }
        let full = try peakLevel(127, curve: 2)
        #expect(abs(try peakLevel(64, curve: 2) / full - pow(64.0 / 127, 2)) < 1e-3)
        #expect(abs(try peakLevel(64, curve: 1) / full - 64.0 / 127) < 1e-3)
    }
}
