#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Rendering and acoustic measurements shared by the effect tests.
enum Measure {
    /// Feeds `left`/`right` through `process` in blocks of `block` frames
    /// (the last block may be shorter) and returns what it added to silent
    /// outputs.
    static func render(left: [Float], right: [Float], block: Int = 256,
                       _ process: (UnsafePointer<Float>, UnsafePointer<Float>, UnsafeMutablePointer<Float>, UnsafeMutablePointer<Float>, Int) -> Void)
        -> (left: [Float], right: [Float]) {
        precondition(left.count == right.count)
        var outL = [Float](repeating: 0, count: left.count)
        var outR = [Float](repeating: 0, count: left.count)
        left.withUnsafeBufferPointer { l in
            right.withUnsafeBufferPointer { r in
                outL.withUnsafeMutableBufferPointer { ol in
                    outR.withUnsafeMutableBufferPointer { or in
                        var start = 0
                        while start < l.count {
                            let n = min(block, l.count - start)
                            process(l.baseAddress! + start, r.baseAddress! + start, ol.baseAddress! + start, or.baseAddress! + start, n)
                            start += n
                        }
                    }
                }
            }
        }
        return (outL, outR)
    }

    /// A unit impulse at frame 0 followed by silence.
    static func impulse(_ frames: Int, amplitude: Float = 1) -> [Float] {
        var x = [Float](repeating: 0, count: frames)
        x[0] = amplitude
        return x
    }

    static func sine(frequency: Double, amplitude: Float, frames: Int, sampleRate: Double) -> [Float] {
        (0..<frames).map { amplitude * Float(sin(2 * Double.pi * frequency * Double($0) / sampleRate)) }
    }

    /// Deterministic white noise in -amplitude...amplitude.
    static func noise(_ frames: Int, amplitude: Float = 0.5, seed: UInt64 = 0x9E37_79B9_7F4A_7C15) -> [Float] {
        var state = seed
        return (0..<frames).map { _ in
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return amplitude * (Float(state >> 40) / Float(1 << 23) - 1)
        }
    }

    /// RT60 of an impulse response from the Schroeder backward integral of
    /// its energy: a least-squares line through the decay curve between
    /// -5 and -35 dB (T30), extrapolated to 60 dB.
    static func rt60(energy: [Double], sampleRate: Double, from: Double = -5, to: Double = -35) -> Double {
        var edc = [Double](repeating: 0, count: energy.count)
        var sum = 0.0
        for i in stride(from: energy.count - 1, through: 0, by: -1) {
            sum += energy[i]
            edc[i] = sum
        }
        let total = edc[0]
        var sx = 0.0, sy = 0.0, sxx = 0.0, sxy = 0.0, n = 0.0
        for i in 0..<edc.count {
            let level = 10 * log10(edc[i] / total)
            if level > from { continue }
            if level < to { break }
            let t = Double(i) / sampleRate
            sx += t; sy += level; sxx += t * t; sxy += t * level; n += 1
        }
        let slope = (n * sxy - sx * sy) / (n * sxx - sx * sx)
        return -60 / slope
    }

    static func energy(_ l: [Float], _ r: [Float]) -> [Double] {
        var e = [Double](repeating: 0, count: min(l.count, r.count))
        for i in e.indices {
            let a = Double(l[i]), b = Double(r[i])
            e[i] = a * a + b * b
        }
        return e
    }

    /// Normalized cross-correlation of two equally long signals at lag 0.
    static func correlation(_ a: ArraySlice<Float>, _ b: ArraySlice<Float>) -> Double {
        var ab = 0.0, aa = 0.0, bb = 0.0
        for (x, y) in zip(a, b) {
            ab += Double(x) * Double(y); aa += Double(x) * Double(x); bb += Double(y) * Double(y)
        }
        return ab / (aa * bb).squareRoot()
    }

    /// Largest |normalized cross-correlation| over lags -maxLag...maxLag.
    static func maxCorrelation(_ a: ArraySlice<Float>, _ b: ArraySlice<Float>, maxLag: Int) -> Double {
        let a = Array(a), b = Array(b)
        var best = 0.0
        for lag in -maxLag...maxLag {
            var ab = 0.0, aa = 0.0, bb = 0.0
            for i in maxLag..<(a.count - maxLag) {
                let x = Double(a[i]), y = Double(b[i + lag])
                ab += x * y; aa += x * x; bb += y * y
            }
            best = max(best, abs(ab / (aa * bb).squareRoot()))
        }
        return best
    }

    /// Normalized echo density (Abel & Huang): the fraction of samples in a
    /// window lying more than one standard deviation from zero, divided by
    /// the Gaussian fraction erfc(1/√2). About 1 for a dense, noise-like
    /// tail; far below 1 for sparse echoes or ringing.
    static func echoDensity(_ x: ArraySlice<Float>) -> Double {
        var power = 0.0
        for v in x { power += Double(v) * Double(v) }
        let sigma = (power / Double(x.count)).squareRoot()
        var outside = 0
        for v in x where Double(abs(v)) > sigma { outside += 1 }
        return Double(outside) / Double(x.count) / erfc(1 / 2.0.squareRoot())
    }

    /// Applies an RBJ band-pass (constant 0 dB peak gain) twice: a
    /// 4th-order band around `centre` with bandwidth of about an octave.
    static func bandPass(_ x: [Float], centre: Double, sampleRate: Double) -> [Float] {
        let w0 = 2 * Double.pi * centre / sampleRate
        let q = 2.0.squareRoot()
        let alpha = sin(w0) / (2 * q)
        let a0 = 1 + alpha
        let b0 = alpha / a0, b2 = -alpha / a0, a1 = -2 * cos(w0) / a0, a2 = (1 - alpha) / a0
        var y = x.map(Double.init)
        for _ in 0..<2 {
            var s1 = 0.0, s2 = 0.0
            for i in 0..<y.count {
                let input = y[i]
                let out = b0 * input + s1
                s1 = -a1 * out + s2
                s2 = b2 * input - a2 * out
                y[i] = out
            }
        }
        return y.map { Float($0) }
    }

    /// Gain in dB of a steady sine through `output` relative to `input`
    /// (RMS over the last `frames` frames).
    static func gainDB(input: ArraySlice<Float>, output: ArraySlice<Float>) -> Double {
        func rms(_ s: ArraySlice<Float>) -> Double {
            var sum = 0.0
            for v in s { sum += Double(v) * Double(v) }
            return (sum / Double(s.count)).squareRoot()
        }
        return 20 * log10(rms(output) / rms(input))
    }
}
