import Foundation
import SpinetEffects
import SpinetTestSupport
import Testing

@Suite("Reverb")
struct ReverbTests {
    let fs = 48000.0

    func impulseResponse(_ parameters: Reverb.Parameters, seconds: Double) -> (left: [Float], right: [Float]) {
        var reverb = Reverb(sampleRate: fs, parameters: parameters)
        let x = Measure.impulse(Int(seconds * fs))
        return Measure.render(left: x, right: x) {
            reverb.process(inputLeft: $0, inputRight: $1, outputLeft: $2, outputRight: $3, frames: $4)
        }
    }

    /// RT60 from the Schroeder integral (T30), broadband, with the damping off:
    /// the modulated, diffused network decays at the rate it was set to.
    @Test(arguments: [0.8, 2.0, 4.0])
    func broadbandDecayTimeMatchesTheSetting(decay: Double) {
        let ir = impulseResponse(.init(preDelayMilliseconds: 10, decaySeconds: decay, size: 0.8, damping: 0),
                                 seconds: decay + 0.3)
        let rt60 = Measure.rt60(energy: Measure.energy(ir.left, ir.right), sampleRate: fs)
        print("RT60 set \(decay) s, measured \(rt60) s (\(((rt60 / decay - 1) * 100).rounded()) %)")
        #expect(abs(rt60 / decay - 1) < 0.15)
    }

    /// With damping, `decaySeconds` still holds below the damping frequency
    /// (the 500 Hz octave) while the 8 kHz octave dies much faster.
    @Test func dampingShortensOnlyTheHighFrequencyDecay() {
        let decay = 2.0
        let ir = impulseResponse(.init(preDelayMilliseconds: 10, decaySeconds: decay, size: 0.8, damping: 0.5,
                                       dampingFrequency: 5000), seconds: decay + 0.3)
        func bandRT(_ centre: Double) -> Double {
            let l = Measure.bandPass(ir.left, centre: centre, sampleRate: fs)
            let r = Measure.bandPass(ir.right, centre: centre, sampleRate: fs)
            return Measure.rt60(energy: Measure.energy(l, r), sampleRate: fs)
        }
        let low = bandRT(500), high = bandRT(8000)
        print("damping 0.5: RT60 500 Hz \(low) s, 8 kHz \(high) s")
        #expect(abs(low / decay - 1) < 0.1)
        #expect(high < 0.7 * decay)
        #expect(high > 0.4 * decay)
    }

    @Test func tailIsDecorrelatedFreeOfDCAndFinite() {
        let ir = impulseResponse(.init(decaySeconds: 2), seconds: 1.2)
        #expect(ir.left.allSatisfy { $0.isFinite } && ir.right.allSatisfy { $0.isFinite })
        let tail = Int(0.1 * fs)..<Int(1.2 * fs)
        let correlation = Measure.correlation(ir.left[tail], ir.right[tail])
        let nearLags = Measure.maxCorrelation(ir.left[Int(0.1 * fs)..<Int(0.4 * fs)], ir.right[Int(0.1 * fs)..<Int(0.4 * fs)],
                                              maxLag: 48)
        print("L/R correlation of the tail: \(correlation) (max over ±1 ms: \(nearLags))")
        #expect(abs(correlation) < 0.3)
        #expect(nearLags < 0.3)
        for channel in [ir.left, ir.right] {
            let mean = channel[tail].reduce(0.0) { $0 + Double($1) } / Double(tail.count)
            let rms = Double(SignalAnalysis.rms(channel[tail]))
            #expect(abs(mean) < 0.005 * rms)
        }
    }

    /// Width 0 folds the tail to mono.
    @Test func widthZeroIsMono() {
        let ir = impulseResponse(.init(decaySeconds: 1, width: 0), seconds: 0.3)
        #expect(zip(ir.left, ir.right).allSatisfy { abs($0 - $1) <= 1e-6 * max(abs($0), 1e-3) })
        #expect(SignalAnalysis.peak(ir.left[...]) > 0.001)
    }

    /// A click becomes a dense, noise-like tail within 80 ms (normalized
    /// echo density near 1, for every preset: no flutter), and the late
    /// spectrum has no resonance standing out of the noise (no metallic
    /// ringing: the largest bin stays within the statistics of a noise-like
    /// tail, about 9 dB above its neighbourhood's mean power for 2000 bins).
    @Test(arguments: ReverbPreset.all)
    func percussionGivesADenseTailWithoutRinging(preset: ReverbPreset) {
        let ir = impulseResponse(preset.parameters, seconds: 0.7)
        let preDelay = Int(preset.parameters.preDelayMilliseconds * fs / 1000)
        let window = (preDelay + Int(0.08 * fs))..<(preDelay + Int(0.1 * fs))
        let density = Measure.echoDensity(ir.left[window])
        let start = Int(0.3 * fs)
        let spectrum = SignalAnalysis.magnitudeSpectrum(ir.left[start..<(start + 16384)])
        var worst = 0.0
        let lo = Int(200 / fs * 16384), hi = Int(6000 / fs * 16384)
        for k in lo..<hi {
            var mean = 0.0
            for j in (k - 32)...(k + 32) { mean += spectrum[j] * spectrum[j] }
            worst = max(worst, 10 * log10(spectrum[k] * spectrum[k] / (mean / 65)))
        }
        print("\(preset.name): echo density 80-100 ms \(density); strongest bin \(worst) dB above its neighbourhood")
        #expect(density > 0.85)
        #expect(worst < 15)
    }

    @Test func preDelayDelaysTheOnset() {
        let ir = impulseResponse(.init(preDelayMilliseconds: 100, decaySeconds: 1), seconds: 0.3)
        let onset = SignalAnalysis.firstOnset(ir.left, threshold: 1e-5)!
        // pre-delay plus the first early reflection (4.1 ms × 0.775 at size 0.7)
        #expect(abs(onset - (Int(0.1 * fs) + Int(0.0041 * 0.775 * fs))) <= 1)
        // Without early reflections: pre-delay, diffusers (at least 13 ms)
        // and the shortest line (24 ms × 0.775).
        let late = impulseResponse(.init(preDelayMilliseconds: 100, decaySeconds: 1, earlyReflections: 0), seconds: 0.3)
        let lateOnset = SignalAnalysis.firstOnset(late.left, threshold: 1e-5)!
        #expect(lateOnset > Int(0.1 * fs) + Int(0.018 * fs))
        #expect(lateOnset < Int(0.1 * fs) + Int(0.04 * fs))
    }

    /// The tail reaches -120 dBFS within `tailSeconds` (a bound offline
    /// renders can rely on), and ends in exact zeros.
    @Test func tailFallsBelowMinus120dBWithinTailSeconds() {
        var reverb = Reverb(sampleRate: fs, parameters: .init(preDelayMilliseconds: 10, decaySeconds: 0.5))
        let tail = reverb.tailSeconds
        let x = Measure.impulse(Int((tail + 0.3) * fs))
        let out = Measure.render(left: x, right: x) {
            reverb.process(inputLeft: $0, inputRight: $1, outputLeft: $2, outputRight: $3, frames: $4)
        }
        let last = max(out.left.lastIndex { abs($0) > 1e-6 } ?? 0, out.right.lastIndex { abs($0) > 1e-6 } ?? 0)
        print("tailSeconds \(tail); last sample above -120 dBFS at \(Double(last) / fs) s")
        #expect(Double(last) / fs < tail)
        #expect(Double(last) / fs > 0.5)   // and the bound is not vacuous
    }

    /// A decaying tail never leaves subnormal numbers in the state, so the
    /// silence after it costs no more than music does.
    @Test func silenceAfterTheTailHasNoSubnormalsAndIsNotSlow() {
        var reverb = Reverb(sampleRate: fs, parameters: .init(decaySeconds: 0.15))
        let block = 12000
        let noise = Measure.noise(block)
        let silence = [Float](repeating: 0, count: block)
        var sink = [Float](repeating: 0, count: block)
        func run(_ input: [Float]) {
            input.withUnsafeBufferPointer { i in
                sink.withUnsafeMutableBufferPointer { o in
                    reverb.process(inputLeft: i.baseAddress!, inputRight: i.baseAddress!, outputLeft: o.baseAddress!,
                                   outputRight: o.baseAddress!, frames: block)
                }
            }
        }
        run(noise)
        // Without the flush, this tail reaches the subnormal range (below
        // 1.2e-38) after about 2.9 s (the last 0.2 s of its decay follow the
        // 5 Hz DC blocker, -27 dB per 0.1 s) and stays there.
        for _ in 0..<16 {
            run(silence)
            #expect(reverb.subnormalStateCount() == 0)
        }
        sink = [Float](repeating: 0, count: block)
        run(silence)
        #expect(sink.allSatisfy { $0 == 0 })      // the tail ended in exact zeros

        // Timing: alternate a silent block (this reverb) with a noise block
        // (a busy one) and keep the best of each, so that other work on the
        // machine affects both alike. (On the AMD EPYC this was written on,
        // an unflushed tail, 132 000 subnormal values, ran 1.6x slower in a
        // release build; Intel cores are slower still with subnormals.)
        var busy = Reverb(sampleRate: fs, parameters: .init(decaySeconds: 0.15))
        func seconds(_ body: () -> Void) -> Double {
            let start = DispatchTime.now().uptimeNanoseconds
            body()
            return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        }
        var silent = Double.infinity, loud = Double.infinity
        for _ in 0..<10 {
            silent = min(silent, seconds { run(silence) })
            loud = min(loud, seconds {
                noise.withUnsafeBufferPointer { i in
                    sink.withUnsafeMutableBufferPointer { o in
                        busy.process(inputLeft: i.baseAddress!, inputRight: i.baseAddress!, outputLeft: o.baseAddress!,
                                     outputRight: o.baseAddress!, frames: block)
                    }
                }
            })
        }
        print("block of silence after the tail: \(silent * 1e3) ms, block of noise: \(loud * 1e3) ms")
        #expect(silent < 2 * loud)
    }

    /// The output does not depend on how the caller splits its blocks (the
    /// control grid's phase is kept across calls).
    @Test func outputDoesNotDependOnTheBlockSize() {
        let x = Measure.noise(4000)
        var results: [[Float]] = []
        for block in [1, 37, 256, 4000] {
            var reverb = Reverb(sampleRate: fs, parameters: ReverbPreset.plate.parameters)
            let out = Measure.render(left: x, right: x, block: block) {
                reverb.process(inputLeft: $0, inputRight: $1, outputLeft: $2, outputRight: $3, frames: $4)
            }
            results.append(out.left + out.right)
        }
        #expect(results.allSatisfy { $0 == results[0] })
    }

    /// Changing every parameter at once while a tone sounds glides: the
    /// output never steps more than the tone itself does.
    @Test func parameterChangesDoNotClick() {
        var reverb = Reverb(sampleRate: fs, parameters: ReverbPreset.room.parameters)
        let x = Measure.sine(frequency: 200, amplitude: 0.5, frames: Int(1.2 * fs), sampleRate: fs)
        var frame = 0
        let out = Measure.render(left: x, right: x, block: 128) {
            if frame == Int(0.6 * fs) / 128 * 128 { reverb.parameters = ReverbPreset.hall.parameters }
            reverb.process(inputLeft: $0, inputRight: $1, outputLeft: $2, outputRight: $3, frames: $4)
            frame += $4
        }
        let steady = SignalAnalysis.maxStep(out.left[Int(0.3 * fs)..<Int(0.6 * fs)])
        let change = SignalAnalysis.maxStep(out.left[Int(0.6 * fs)..<Int(1.2 * fs)])
        let level = SignalAnalysis.peak(out.left[Int(0.3 * fs)...])
        // A 200 Hz tone of amplitude A steps at most 2πfA/fs = 0.026·A per frame.
        print("reverb preset change: max step \(change) (steady \(steady)), peak \(level)")
        #expect(change < 0.04 * level)
    }
}
