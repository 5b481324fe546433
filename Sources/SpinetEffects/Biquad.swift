#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A stereo second-order filter section (one set of coefficients, a state
/// per channel), designed with the RBJ "Audio EQ Cookbook" formulas.
///
/// Transposed direct form II in Double: two state variables per channel, and
/// well behaved when the coefficients change while it runs (the equalizer
/// and the delay glide their corner frequencies). Double, because a 20 Hz
/// high-pass at 48 kHz has poles within 0.3 % of z = 1, where Float
/// coefficients and states lose the low end to rounding noise.
struct Biquad {
    struct Coefficients: Equatable {
        var b0 = 1.0, b1 = 0.0, b2 = 0.0, a1 = 0.0, a2 = 0.0

        static let identity = Coefficients()

        /// Butterworth (Q = 1/√2) gives exactly -3.01 dB at `frequency`:
        /// the cookbook pre-warps the corner of the bilinear transform.
        static func lowPass(frequency: Double, q: Double = 0.5.squareRoot(), sampleRate: Double) -> Coefficients {
            let (cosw, alpha) = Self.angle(frequency, q, sampleRate)
            let a0 = 1 + alpha
            return Coefficients(b0: (1 - cosw) / 2 / a0, b1: (1 - cosw) / a0, b2: (1 - cosw) / 2 / a0,
                                a1: -2 * cosw / a0, a2: (1 - alpha) / a0)
        }

        static func highPass(frequency: Double, q: Double = 0.5.squareRoot(), sampleRate: Double) -> Coefficients {
            let (cosw, alpha) = Self.angle(frequency, q, sampleRate)
            let a0 = 1 + alpha
            return Coefficients(b0: (1 + cosw) / 2 / a0, b1: -(1 + cosw) / a0, b2: (1 + cosw) / 2 / a0,
                                a1: -2 * cosw / a0, a2: (1 - alpha) / a0)
        }

        /// Shelf with slope S = 1 (the steepest without overshoot); the gain
        /// is half (in dB) at `frequency`. At 0 dB the coefficients are
        /// exactly the identity.
        static func lowShelf(frequency: Double, gainDB: Double, sampleRate: Double) -> Coefficients {
            let a = pow(10, gainDB / 40)
            let (cosw, alpha) = Self.shelfAngle(frequency, a, sampleRate)
            let beta = 2 * a.squareRoot() * alpha
            let a0 = (a + 1) + (a - 1) * cosw + beta
            return Coefficients(b0: a * ((a + 1) - (a - 1) * cosw + beta) / a0,
                                b1: 2 * a * ((a - 1) - (a + 1) * cosw) / a0,
                                b2: a * ((a + 1) - (a - 1) * cosw - beta) / a0,
                                a1: -2 * ((a - 1) + (a + 1) * cosw) / a0,
                                a2: ((a + 1) + (a - 1) * cosw - beta) / a0)
        }

        static func highShelf(frequency: Double, gainDB: Double, sampleRate: Double) -> Coefficients {
            let a = pow(10, gainDB / 40)
            let (cosw, alpha) = Self.shelfAngle(frequency, a, sampleRate)
            let beta = 2 * a.squareRoot() * alpha
            let a0 = (a + 1) - (a - 1) * cosw + beta
            return Coefficients(b0: a * ((a + 1) + (a - 1) * cosw + beta) / a0,
                                b1: -2 * a * ((a - 1) + (a + 1) * cosw) / a0,
                                b2: a * ((a + 1) + (a - 1) * cosw - beta) / a0,
                                a1: 2 * ((a - 1) - (a + 1) * cosw) / a0,
                                a2: ((a + 1) - (a - 1) * cosw - beta) / a0)
        }

        private static func angle(_ f: Double, _ q: Double, _ fs: Double) -> (cos: Double, alpha: Double) {
            let w0 = 2 * Double.pi * min(max(f, 1), 0.49 * fs) / fs
            return (cos(w0), sin(w0) / (2 * q))
        }

        private static func shelfAngle(_ f: Double, _ a: Double, _ fs: Double) -> (cos: Double, alpha: Double) {
            let w0 = 2 * Double.pi * min(max(f, 1), 0.49 * fs) / fs
            let slope = 1.0
            return (cos(w0), sin(w0) / 2 * ((a + 1 / a) * (1 / slope - 1) + 2).squareRoot())
        }
    }

    var coefficients = Coefficients.identity
    private var s1L = 0.0, s2L = 0.0, s1R = 0.0, s2R = 0.0

    /// One sample through the filter whose state is `s1`, `s2`
    /// (transposed direct form II); the one step every channel takes.
    @inline(__always) private static func step(_ x: Double, _ c: Coefficients, _ s1: inout Double, _ s2: inout Double) -> Double {
        let y = c.b0 * x + s1
        s1 = DSPMath.flush(c.b1 * x - c.a1 * y + s2)
        s2 = DSPMath.flush(c.b2 * x - c.a2 * y)
        return y
    }

    /// Render thread only. Filters one stereo frame.
    @inline(__always) mutating func process(_ left: Double, _ right: Double) -> (Double, Double) {
        let c = coefficients
        return (Self.step(left, c, &s1L, &s2L), Self.step(right, c, &s1R, &s2R))
    }

    /// Render thread only. One channel of a mono use (the left state).
    @inline(__always) mutating func processLeft(_ x: Double) -> Double {
        Self.step(x, coefficients, &s1L, &s2L)
    }

    @inline(__always) mutating func processRight(_ x: Double) -> Double {
        Self.step(x, coefficients, &s1R, &s2R)
    }

    mutating func reset() {
        s1L = 0; s2L = 0; s1R = 0; s2R = 0
    }

    var subnormalStateCount: Int {
        [s1L, s2L, s1R, s2R].reduce(0) { $0 + ($1.isSubnormal ? 1 : 0) }
    }
}
