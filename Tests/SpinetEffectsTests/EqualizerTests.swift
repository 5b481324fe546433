import Foundation
import SpinetEffects
import SpinetTestSupport
import Testing

@Suite("Equalizer")
struct EqualizerTests {
    let fs = 48000.0

    /// Gain in dB of the equalizer for a sine at `frequency` (after it settles).
    func gain(_ parameters: Equalizer.Parameters, at frequency: Double) -> Double {
        var eq = Equalizer(sampleRate: fs, parameters: parameters)
        let input = Measure.sine(frequency: frequency, amplitude: 0.25, frames: 24000, sampleRate: fs)
        var l = input, r = input
        l.withUnsafeMutableBufferPointer { lp in
            r.withUnsafeMutableBufferPointer { rp in
                eq.process(left: lp.baseAddress!, right: rp.baseAddress!, frames: lp.count)
            }
        }
        // whole periods of the last 0.25 s
        let periods = Int(0.25 * frequency)
        let length = Int((Double(periods) * fs / frequency).rounded())
        return Measure.gainDB(input: input[(24000 - length)...], output: l[(24000 - length)...])
    }

    @Test func highShelfMeasuresItsGainAboveAndNothingBelow() {
        let shelf = Equalizer.Parameters(highShelfFrequency: 1000, highShelfGainDB: 6)
        let above = gain(shelf, at: 12000), below = gain(shelf, at: 60)
        print("high shelf +6 dB at 1 kHz: \(above) dB at 12 kHz, \(below) dB at 60 Hz")
        #expect(abs(above - 6) < 0.2)
        #expect(abs(below) < 0.2)
    }

    @Test func lowShelfMeasuresItsGainBelowAndNothingAbove() {
        let shelf = Equalizer.Parameters(lowShelfFrequency: 200, lowShelfGainDB: -4)
        let below = gain(shelf, at: 20), above = gain(shelf, at: 5000)
        print("low shelf -4 dB at 200 Hz: \(below) dB at 20 Hz, \(above) dB at 5 kHz")
        #expect(abs(below + 4) < 0.2)
        #expect(abs(above) < 0.2)
    }

    @Test func highPassIsMinus3dBAtItsCutoff() {
        let hp = Equalizer.Parameters(highPassEnabled: true, highPassFrequency: 100)
        let atCutoff = gain(hp, at: 100), pass = gain(hp, at: 2000), stop = gain(hp, at: 25)
        print("high-pass 100 Hz: \(atCutoff) dB at 100 Hz, \(pass) dB at 2 kHz, \(stop) dB at 25 Hz")
        #expect(abs(atCutoff + 3) < 0.5)
        #expect(abs(pass) < 0.1)
        #expect(stop < -20)       // 12 dB per octave, two octaves down
    }

    /// Flat settings pass the signal unchanged (to float rounding).
    @Test func flatIsTransparent() {
        var eq = Equalizer(sampleRate: fs)
        let input = Measure.noise(4800)
        var l = input, r = input
        l.withUnsafeMutableBufferPointer { lp in
            r.withUnsafeMutableBufferPointer { rp in
                eq.process(left: lp.baseAddress!, right: rp.baseAddress!, frames: lp.count)
            }
        }
        #expect(l == input && r == input)
    }

    /// Turning a shelf from 0 to +12 dB and the high-pass on while a bass
    /// tone plays glides: no step beyond the louder tone's own.
    @Test func changesAreSmoothed() {
        var eq = Equalizer(sampleRate: fs)
        let input = Measure.sine(frequency: 80, amplitude: 0.2, frames: 24000, sampleRate: fs)
        var l = input, r = input
        l.withUnsafeMutableBufferPointer { lp in
            r.withUnsafeMutableBufferPointer { rp in
                eq.process(left: lp.baseAddress!, right: rp.baseAddress!, frames: 9600)
                eq.parameters = .init(highPassEnabled: true, highPassFrequency: 40, lowShelfFrequency: 200, lowShelfGainDB: 12)
                eq.process(left: lp.baseAddress! + 9600, right: rp.baseAddress! + 9600, frames: 14400)
            }
        }
        let peak = SignalAnalysis.peak(l[19200...])
        let step = SignalAnalysis.maxStep(l[...])
        // 80 Hz at amplitude A steps at most 2π·80/48000·A = 0.0105·A
        print("EQ change: max step \(step), final peak \(peak)")
        #expect(peak > 0.6)
        #expect(step < 0.0125 * peak)
    }
}
