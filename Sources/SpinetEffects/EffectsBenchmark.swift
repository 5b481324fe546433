#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// How much processor time each effect takes (not a test: figures depend on
/// the machine and on the build; run it from a release build).
public enum EffectsBenchmark {
    /// Microseconds of processing per second of stereo audio for each effect
    /// at a typical preset (hall reverb, wide chorus, dotted-eighth delay,
    /// equalizer with all three bands on), in 256-frame blocks of noise.
    /// The best of three runs of two seconds each. Takes about a second in a
    /// release build.
    public static func costPerSecondOfAudio(sampleRate: Double = 48000) -> [(name: String, microsecondsPerSecond: Double)] {
        let block = 256
        let seconds = 2.0
        let frames = Int(seconds * sampleRate)
        let buffers = FixedBuffer<Float>(repeating: 0, count: 4 * frames)
        let inL = buffers.pointer, inR = inL + frames, outL = inR + frames, outR = outL + frames
        var seed: UInt64 = 0x2545_F491_4F6C_DD1D
        for i in 0..<frames {
            seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            inL[i] = 0.25 * (Float(seed >> 40) / Float(1 << 23) - 1)
            inR[i] = 0.25 * (Float((seed >> 16) & 0xFFFFFF) / Float(1 << 23) - 1)
        }

        /// Best time over three runs of `run`, in µs per second of audio.
        func measure(_ run: () -> Void) -> Double {
            var best = Double.infinity
            for _ in 0..<3 {
                let start = now()
                run()
                best = min(best, now() - start)
            }
            return best / seconds * 1e6
        }

        func blocks(_ body: (Int, Int) -> Void) {
            var start = 0
            while start < frames {
                let n = min(block, frames - start)
                body(start, n)
                start += n
            }
        }

        var results: [(name: String, microsecondsPerSecond: Double)] = []

        var reverb = Reverb(sampleRate: sampleRate, parameters: ReverbPreset.hall.parameters)
        results.append(("reverb (hall)", measure {
            blocks { reverb.process(inputLeft: inL + $0, inputRight: inR + $0, outputLeft: outL + $0, outputRight: outR + $0, frames: $1) }
        }))
        _ = consume reverb          // frees its buffers before the next is built

        var chorus = Chorus(sampleRate: sampleRate, parameters: ChorusPreset.wide.parameters)
        results.append(("chorus (wide, 3 voices)", measure {
            blocks { chorus.process(inputLeft: inL + $0, inputRight: inR + $0, outputLeft: outL + $0, outputRight: outR + $0, frames: $1) }
        }))
        _ = consume chorus          // frees its buffers before the next is built

        var delay = Delay(sampleRate: sampleRate, parameters: DelayPreset.dottedEighth.parameters)
        results.append(("delay (dotted-eighth)", measure {
            blocks { delay.process(inputLeft: inL + $0, inputRight: inR + $0, outputLeft: outL + $0, outputRight: outR + $0, frames: $1) }
        }))
        _ = consume delay          // frees its buffers before the next is built

        var equalizer = Equalizer(sampleRate: sampleRate, parameters: .init(
            highPassEnabled: true, highPassFrequency: 30, lowShelfGainDB: 3, highShelfGainDB: -2))
        results.append(("equalizer (3 bands)", measure {
            blocks { equalizer.process(left: outL + $0, right: outR + $0, frames: $1) }
        }))
        return results
    }

    private static func now() -> Double {
        var t = timespec()
        clock_gettime(CLOCK_MONOTONIC, &t)
        return Double(t.tv_sec) + Double(t.tv_nsec) * 1e-9
    }
}
