import Foundation
import Testing
import SpinetMIDI
import SpinetTestSupport
@testable import SpinetSynth

@Suite("Pitch: tuning, pitch bend, RPN 0, MPE")
struct PitchTests {
    /// The pitch of `key` on `channel` after `events`, measured on the
    /// steady part of a 0.4 s render of the plain sine preset.
    func measuredPitch(sampleRate: Double = 48_000, key: UInt8 = 69, channel: UInt8 = 0,
                       before events: [MIDIMessage] = [], mpe: MPEZone? = nil) throws -> Double {
        let synth = try makeSynth([preset("sine")], sampleRate: sampleRate, mpe: mpe)
        var timeline = events.map { (frame: 0, message: $0) }
        timeline.append((0, .noteOn(channel: channel, key: key, velocity: 100)))
        let out = render(synth, frames: frames(0.4, sampleRate), events: timeline)
        return SignalAnalysis.fundamentalFrequency(out.left[frames(0.05, sampleRate)...], sampleRate: sampleRate)
    }

    @Test("A4 sounds at 440 Hz within 0.1 cent", arguments: [44_100.0, 48_000.0, 96_000.0])
    func a4IsIn440(sampleRate: Double) throws {
        let f = try measuredPitch(sampleRate: sampleRate)
        #expect(abs(SignalAnalysis.cents(f, relativeTo: 440)) < 0.1, "A4 at \(sampleRate) Hz measured \(f) Hz")
    }

    @Test func otherKeysAreEqualTempered() throws {
        for key: UInt8 in [21, 60, 100] {
            let f = try measuredPitch(key: key)
            #expect(abs(SignalAnalysis.cents(f, relativeTo: frequency(ofNote: Double(key)))) < 0.1, "key \(key): \(f) Hz")
        }
    }

    @Test func fullPitchBendMovesByExactlyTheDefaultTwoSemitones() throws {
        let up = try measuredPitch(before: [.pitchBend(channel: 0, value: 16383)])
        let down = try measuredPitch(before: [.pitchBend(channel: 0, value: 0)])
        #expect(abs(SignalAnalysis.cents(up, relativeTo: 440) - 200) < 0.1, "bent up: \(up) Hz")
        #expect(abs(SignalAnalysis.cents(down, relativeTo: 440) + 200) < 0.1, "bent down: \(down) Hz")
    }

    @Test func rpnZeroSetsTheBendRange() throws {
        let twelve: [MIDIMessage] = [
            .controlChange(channel: 0, controller: 101, value: 0), .controlChange(channel: 0, controller: 100, value: 0),
            .controlChange(channel: 0, controller: 6, value: 12), .controlChange(channel: 0, controller: 38, value: 0),
        ]
        let up = try measuredPitch(before: twelve + [.pitchBend(channel: 0, value: 16383)])
        let down = try measuredPitch(before: twelve + [.pitchBend(channel: 0, value: 0)])
        #expect(abs(SignalAnalysis.cents(up, relativeTo: 880)) < 0.1, "up an octave: \(up) Hz")
        #expect(abs(SignalAnalysis.cents(down, relativeTo: 220)) < 0.1, "down an octave: \(down) Hz")
        // Cents in the LSB: 1 semitone + 50 cents, bent fully up.
        let fine: [MIDIMessage] = [
            .controlChange(channel: 0, controller: 101, value: 0), .controlChange(channel: 0, controller: 100, value: 0),
            .controlChange(channel: 0, controller: 6, value: 1), .controlChange(channel: 0, controller: 38, value: 50),
        ]
        let f = try measuredPitch(before: fine + [.pitchBend(channel: 0, value: 16383)])
        #expect(abs(SignalAnalysis.cents(f, relativeTo: 440) - 150) < 0.1, "1.5 semitones: \(f) Hz")
        // An NRPN selected in between: data entry must not reach RPN 0.
        let nrpn: [MIDIMessage] = [
            .controlChange(channel: 0, controller: 99, value: 1), .controlChange(channel: 0, controller: 98, value: 8),
            .controlChange(channel: 0, controller: 6, value: 24),
        ]
        let g = try measuredPitch(before: nrpn + [.pitchBend(channel: 0, value: 16383)])
        #expect(abs(SignalAnalysis.cents(g, relativeTo: 440) - 200) < 0.1, "NRPN data changed the bend range: \(g) Hz")
    }

    @Test func bendDuringANoteMovesIt() throws {
        let synth = try makeSynth([preset("sine")])
        let out = render(synth, frames: frames(0.6), events: [
            (0, .noteOn(channel: 0, key: 69, velocity: 100)),
            (frames(0.2), .pitchBend(channel: 0, value: 16383)),
        ])
        let before = SignalAnalysis.fundamentalFrequency(out.left[frames(0.05)..<frames(0.2)], sampleRate: 48_000)
        let after = SignalAnalysis.fundamentalFrequency(out.left[frames(0.25)...], sampleRate: 48_000)
        #expect(abs(SignalAnalysis.cents(before, relativeTo: 440)) < 0.1)
        #expect(abs(SignalAnalysis.cents(after, relativeTo: 440) - 200) < 0.1)
    }

    /// Two notes on two MPE member channels; bending one member channel
    /// moves only that note, and the manager's bend moves both.
    @Test func mpePerNoteBendMovesOnlyItsOwnNote() throws {
        let synth = try makeSynth([preset("sine")], mpe: .lower)
        let n = 16_384
        // Member channels 2 and 3 (indices 1 and 2). 6144 is exactly -12 of 48 semitones.
        let out = render(synth, frames: frames(0.1) + n, events: [
            (0, .noteOn(channel: 1, key: 57, velocity: 100)),        // 220 Hz
            (0, .noteOn(channel: 2, key: 81, velocity: 100)),        // 880 Hz
            (0, .pitchBend(channel: 1, value: 6144)),                // note 1 -> 110 Hz
        ])
        let spectrum = SignalAnalysis.magnitudeSpectrum(out.left[frames(0.1)...])
        let at110 = magnitude(spectrum, at: 110, sampleRate: 48_000)
        let at220 = magnitude(spectrum, at: 220, sampleRate: 48_000)
        let at880 = magnitude(spectrum, at: 880, sampleRate: 48_000)
        #expect(at110 > 0.05, "the bent note is not at 110 Hz")
        #expect(decibels(at880 / at110) > -1 && decibels(at880 / at110) < 1, "the other note moved or changed level")
        #expect(decibels(at220 / at110) < -60, "something still sounds at the bent note's old pitch")

        // The manager channel's bend (range 2) moves every note of the zone.
        let f = try measuredPitch(key: 69, channel: 5, before: [.pitchBend(channel: 0, value: 16383)], mpe: .lower)
        #expect(abs(SignalAnalysis.cents(f, relativeTo: 440) - 200) < 0.1, "manager bend: \(f) Hz")
        // A member channel's own bend uses the MPE default range of 48 semitones.
        let g = try measuredPitch(key: 45, channel: 5, before: [.pitchBend(channel: 5, value: 8192 + 4096)], mpe: .lower)
        #expect(abs(SignalAnalysis.cents(g, relativeTo: frequency(ofNote: 45 + 48 * 4096.0 / 8191))) < 0.1, "member bend: \(g) Hz")
    }

    /// CC 74 and pressure on a member channel shape only that channel's note.
    @Test func mpeTimbreIsPerNote() throws {
        let synth = try makeSynth([preset("saw") { $0.cutoff = 400; $0.pressure = .brightness }], mpe: .lower)
        let low = frequency(ofNote: 45), high = frequency(ofNote: 51)
        // Partials chosen well apart from the other note's (1320 Hz against
        // 1244 and 1400; 1556 Hz against 1540 and 1650).
        func brightness(_ out: Rendered, _ f0: Double, partial: Double) -> Double {
            let x = out.left[frames(0.05)...]
            let s = SignalAnalysis.magnitudeSpectrum(x)
            return magnitude(s, at: partial * f0, sampleRate: 48_000, width: 1) / magnitude(s, at: f0, sampleRate: 48_000, width: 1)
        }
        let plain = render(synth, frames: frames(0.05) + 16_384, events: [
            (0, .noteOn(channel: 1, key: 45, velocity: 100)), (0, .noteOn(channel: 2, key: 51, velocity: 100)),
        ])
        _ = render(synth, frames: frames(0.2), events: [(0, .controlChange(channel: 0, controller: 123, value: 0))])
        let shaped = render(synth, frames: frames(0.05) + 16_384, events: [
            (0, .noteOn(channel: 1, key: 45, velocity: 100)), (0, .noteOn(channel: 2, key: 51, velocity: 100)),
            (0, .controlChange(channel: 1, controller: 74, value: 127)),
            (0, .channelPressure(channel: 1, pressure: 127)),
        ])
        #expect(decibels(brightness(shaped, low, partial: 12) / brightness(plain, low, partial: 12)) > 20,
                "member channel CC 74 did not brighten its note")
        #expect(abs(decibels(brightness(shaped, high, partial: 10) / brightness(plain, high, partial: 10))) < 0.5,
                "it changed the other note")
    }

    /// The MPE Configuration Message (RPN 6 on channel 1) turns on a lower
    /// zone at run time; 0 members turns it off again.
    @Test func mpeConfigurationMessageSetsTheZone() throws {
        let configure: (UInt8) -> [MIDIMessage] = { members in [
            .controlChange(channel: 0, controller: 101, value: 0), .controlChange(channel: 0, controller: 100, value: 6),
            .controlChange(channel: 0, controller: 6, value: members),
        ] }
        // Member channel 3: its bend range becomes 48.
        let bent = try measuredPitch(key: 45, channel: 2, before: configure(7) + [.pitchBend(channel: 2, value: 6144)])
        #expect(abs(SignalAnalysis.cents(bent, relativeTo: frequency(ofNote: 45 - 12))) < 0.1, "\(bent) Hz")
        // Channel 9 is outside a 7-member zone: its bend range stays 2.
        let outside = try measuredPitch(key: 69, channel: 8, before: configure(7) + [.pitchBend(channel: 8, value: 0)])
        #expect(abs(SignalAnalysis.cents(outside, relativeTo: 440) + 200) < 0.1, "\(outside) Hz")
        // Zone off again: back to 2 semitones.
        let off = try measuredPitch(key: 69, channel: 2, before: configure(7) + configure(0) + [.pitchBend(channel: 2, value: 0)])
        #expect(abs(SignalAnalysis.cents(off, relativeTo: 440) + 200) < 0.1, "\(off) Hz")
    }
}
