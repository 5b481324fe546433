import Foundation
import Testing
import SpinetMIDI
import SpinetTestSupport
@testable import SpinetSynth

@Suite("Spectrum: band limiting and purity")
struct SpectrumTests {
    static let n = 16_384

    /// A steady tone of a plain preset, `n` samples after its attack.
    func tone(_ name: String, key: UInt8, bend: UInt16 = 8192, sampleRate: Double = 48_000) throws -> [Float] {
        let synth = try makeSynth([preset(name)], sampleRate: sampleRate)
        let start = frames(0.02, sampleRate)
        let out = render(synth, frames: start + Self.n, events: [
            (0, .pitchBend(channel: 0, value: bend)),
            (0, .noteOn(channel: 0, key: key, velocity: 127)),
        ])
        return Array(out.left[start...])
    }

    /// The strongest spectral component that is not a harmonic of f0 (nor
    /// DC), relative to the fundamental, in dB. Harmonic regions are the
    /// window's main lobe (±4 bins) plus one bin.
    func worstAlias(_ x: [Float], f0: Double, sampleRate: Double = 48_000) -> (dB: Double, hz: Double) {
        let spectrum = SignalAnalysis.magnitudeSpectrum(x[...])
        let binHz = sampleRate / Double(x.count)
        let fundamental = magnitude(spectrum, at: f0, sampleRate: sampleRate)
        var worst = 0.0, worstBin = 0
        for k in 0..<spectrum.count {
            let hz = Double(k) * binHz
            let harmonic = (hz / f0).rounded()
            if abs(hz - harmonic * f0) <= 5 * binHz { continue }     // a harmonic or DC
            if spectrum[k] > worst { worst = spectrum[k]; worstBin = k }
        }
        return (decibels(worst / fundamental), Double(worstBin) * binHz)
    }

    /// Saw and square near 4 kHz at 48 kHz: every alias at least 60 dB below
    /// the fundamental. (At exactly 4000 Hz every alias of a 48 kHz render
    /// lands on a harmonic, 48000/4000 being a whole number, so the test also
    /// plays the notes around it and 4000 Hz bent a little sharp.)
    @Test(arguments: ["saw", "square"])
    func aliasesStay60dBDownAt4kHz(name: String) throws {
        var cases: [(key: UInt8, bend: UInt16)] = [(106, 8192), (107, 8192), (108, 8192)]
        // B7 + 27 cents = 4014 Hz: bend 27/200 of the way up (range 2 semitones).
        cases.append((107, 8192 + UInt16((27.0 / 200 * 8191).rounded())))
        for c in cases {
            let bendSemitones = Double(Int(c.bend) - 8192) / 8191 * 2
            let f0 = frequency(ofNote: Double(c.key) + bendSemitones)
            let x = try tone(name, key: c.key, bend: c.bend)
            let alias = worstAlias(x, f0: f0)
            #expect(alias.dB < -60, "\(name) at \(f0) Hz: component at \(alias.hz) Hz is \(alias.dB) dB")
        }
    }

    @Test func triangleIsBandLimitedToo() throws {
        let f0 = frequency(ofNote: 107)
        let alias = worstAlias(try tone("triangle", key: 107), f0: f0)
        #expect(alias.dB < -60, "triangle: component at \(alias.hz) Hz is \(alias.dB) dB")
    }

    /// A low saw keeps its upper partials: the band limit is not a dull filter.
    @Test func lowSawKeepsItsPartialsUpTo18kHz() throws {
        let f0 = frequency(ofNote: 45)       // 110 Hz
        let spectrum = SignalAnalysis.magnitudeSpectrum(try tone("saw", key: 45)[...])
        let fundamental = magnitude(spectrum, at: f0, sampleRate: 48_000)
        for k in [2.0, 10, 50, 100, 160] {
            let level = decibels(magnitude(spectrum, at: k * f0, sampleRate: 48_000) / fundamental)
            // A saw's kth partial is 1/k; the plain preset's filter (open at
            // 20 kHz) may take a little off the top.
            #expect(abs(level - decibels(1 / k)) < 1.5, "partial \(Int(k)) at \(k * f0) Hz: \(level) dB")
        }
    }

    @Test func squareHasOnlyOddHarmonicsAndPulseWidthChangesThat() throws {
        let f0 = frequency(ofNote: 57)
        let spectrum = SignalAnalysis.magnitudeSpectrum(try tone("square", key: 57)[...])
        let h1 = magnitude(spectrum, at: f0, sampleRate: 48_000)
        #expect(decibels(magnitude(spectrum, at: 2 * f0, sampleRate: 48_000) / h1) < -60)
        #expect(abs(decibels(magnitude(spectrum, at: 3 * f0, sampleRate: 48_000) / h1) - decibels(1.0 / 3)) < 0.5)
        // 25 % pulse: the 4th harmonic vanishes, the 2nd is strong.
        let synth = try makeSynth([preset("square") { $0.pulseWidth = 0.25 }])
        let out = render(synth, frames: 960 + Self.n, events: [(0, .noteOn(channel: 0, key: 57, velocity: 127))])
        let pulse = SignalAnalysis.magnitudeSpectrum(out.left[960...])
        let p1 = magnitude(pulse, at: f0, sampleRate: 48_000)
        #expect(decibels(magnitude(pulse, at: 2 * f0, sampleRate: 48_000) / p1) > -8)
        #expect(decibels(magnitude(pulse, at: 4 * f0, sampleRate: 48_000) / p1) < -50)
    }

    /// Total harmonic distortion of the sine preset: below -80 dB.
    @Test(arguments: [57, 81, 93])
    func sineIsPure(key: Int) throws {
        let f0 = frequency(ofNote: Double(key))
        let x = try tone("sine", key: UInt8(key))
        let spectrum = SignalAnalysis.magnitudeSpectrum(x[...])
        let fundamental = magnitude(spectrum, at: f0, sampleRate: 48_000)
        var power = 0.0
        var h = 2.0
        while h * f0 < 23_500 {
            let m = magnitude(spectrum, at: h * f0, sampleRate: 48_000)
            power += m * m
            h += 1
        }
        let thd = decibels(power.squareRoot() / fundamental)
        #expect(thd < -80, "THD at \(f0) Hz: \(thd) dB")
        // and nothing else either (noise, aliases of the interpolation)
        let other = worstAlias(x, f0: f0)
        #expect(other.dB < -90, "sine at \(f0) Hz: component at \(other.hz) Hz is \(other.dB) dB")
    }
}
