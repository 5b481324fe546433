import Foundation
import SpinetEffects
import SpinetTestSupport
import Testing

@Suite("Chorus")
struct ChorusTests {
    let fs = 48000.0

    func render(_ parameters: Chorus.Parameters, _ input: [Float]) -> (left: [Float], right: [Float]) {
        var chorus = Chorus(sampleRate: fs, parameters: parameters)
        return Measure.render(left: input, right: input) {
            chorus.process(inputLeft: $0, inputRight: $1, outputLeft: $2, outputRight: $3, frames: $4)
        }
    }

    /// Share of a spectrum's power within ±`bins` of bin `k`.
    func share(_ spectrum: [Double], around k: Int, bins: Int) -> Double {
        var near = 0.0, total = 0.0
        for (j, m) in spectrum.enumerated() {
            total += m * m
            if abs(j - k) <= bins { near += m * m }
        }
        return near / total
    }

    /// A 1 kHz sine comes out frequency-modulated: most of its power moves
    /// into sidebands. Without depth it stays a pure (delayed) sine.
    @Test func sineInputComesOutModulated() {
        let n = 16384
        let input = Measure.sine(frequency: 1000, amplitude: 0.5, frames: 9600 + n, sampleRate: fs)
        let k = Int((1000 / fs * Double(n)).rounded())
        let modulated = render(.init(rateHz: 5, depthMilliseconds: 2, delayMilliseconds: 5, voices: 1), input)
        let still = render(.init(rateHz: 5, depthMilliseconds: 0, delayMilliseconds: 5, voices: 1), input)
        let m = share(SignalAnalysis.magnitudeSpectrum(modulated.left[9600...]), around: k, bins: 5)
        let s = share(SignalAnalysis.magnitudeSpectrum(still.left[9600...]), around: k, bins: 5)
        print("chorus: share of power near 1 kHz, modulated \(m), unmodulated \(s)")
        #expect(m < 0.5)
        #expect(s > 0.999)
        // The right side is swept in opposition (width 1): it differs from the left.
        #expect(SignalAnalysis.rms(zip(modulated.left, modulated.right).map { $0 - $1 }[9600...]) > 0.1)
    }

    /// With 1 to 4 voices the level stays near the input's: never above the
    /// coherent sum of the voices, never far below the input.
    @Test(arguments: [1, 2, 3, 4])
    func levelStaysWithinBounds(voices: Int) {
        let input = Measure.sine(frequency: 440, amplitude: 0.5, frames: 24000, sampleRate: fs)
        let out = render(.init(rateHz: 1.3, depthMilliseconds: 6, delayMilliseconds: 8, voices: voices), input)
        let peak = max(SignalAnalysis.peak(out.left[4800...]), SignalAnalysis.peak(out.right[4800...]))
        let rmsDB = SignalAnalysis.dBFS(SignalAnalysis.rms(out.left[4800...]) / SignalAnalysis.rms(input[4800...]))
        print("chorus \(voices) voice(s): peak \(peak), level \(rmsDB) dB re input")
        #expect(peak <= 0.5 * Float(voices).squareRoot() * 1.001)
        #expect(rmsDB > -6 && rmsDB < 3)
    }

    /// Abrupt changes of rate, depth, delay, voices and width glide: the
    /// output never steps more than the swept tone itself does.
    @Test func changingParametersDoesNotClick() {
        let input = Measure.sine(frequency: 440, amplitude: 0.5, frames: Int(1.6 * fs), sampleRate: fs)
        let settings: [Chorus.Parameters] = [
            .init(rateHz: 0.5, depthMilliseconds: 2, delayMilliseconds: 7, voices: 2),
            .init(rateHz: 6, depthMilliseconds: 8, delayMilliseconds: 15, voices: 4, width: 0.2),
            .init(rateHz: 0.2, depthMilliseconds: 0.5, delayMilliseconds: 3, voices: 1, feedback: 0.5),
            .init(rateHz: 3, depthMilliseconds: 5, delayMilliseconds: 10, voices: 3),
        ]
        // The largest step each setting makes on its own, once settled.
        var steady: Float = 0
        for p in settings {
            let out = render(p, input)
            steady = max(steady, SignalAnalysis.maxStep(out.left[9600...]), SignalAnalysis.maxStep(out.right[9600...]))
        }
        var chorus = Chorus(sampleRate: fs, parameters: settings[0])
        var frame = 0
        let out = Measure.render(left: input, right: input, block: 100) {
            if frame > 0 && frame % 19200 == 0 { chorus.parameters = settings[(frame / 19200) % settings.count] }
            chorus.process(inputLeft: $0, inputRight: $1, outputLeft: $2, outputRight: $3, frames: $4)
            frame += $4
        }
        let changing = max(SignalAnalysis.maxStep(out.left[9600...]), SignalAnalysis.maxStep(out.right[9600...]))
        print("chorus parameter changes: max step \(changing), settled settings at most \(steady)")
        #expect(changing < 1.5 * steady)
    }

    /// A flanger (short delay, strong feedback) stays stable and finite.
    @Test func flangerFeedbackIsStable() {
        let flanger = ChorusPreset(gm2Type: 5)!
        let out = render(flanger.parameters, Measure.noise(48000))
        #expect(out.left.allSatisfy { $0.isFinite })
        #expect(SignalAnalysis.peak(out.left[...]) < 4)
    }
}
