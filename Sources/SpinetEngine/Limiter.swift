import Glibc
import SpinetEffects

/// A stereo-linked look-ahead peak limiter with a soft knee: the last stage
/// before any integer conversion, and the only place in Spinet that stops
/// overs.
///
/// For each input frame it computes the gain that frame needs. Below the
/// knee (`kneeDB` under the ceiling) that is 1. Above it, a frame x dB over
/// the knee comes out at knee + w·(1 - e^(-x/w)) (w = `kneeDB`): the curve
/// leaves the straight line with slope 1 (no corner, so limiting sets in
/// gradually) and approaches the ceiling without reaching it, however loud
/// the input. It holds the minimum of that gain over
/// the look-ahead window, lets it recover with a smooth release, then
/// averages it over the window. Because the hold and the average both span
/// `lookahead + 1` frames and the audio is delayed by `lookahead` frames,
/// the gain applied to every frame is at most the gain that frame needs:
/// no sample ever leaves above the ceiling, and the gain moves smoothly
/// (a ramp over the look-ahead), never in steps.
///
/// Below the knee the gain is exactly 1.0 and the signal passes
/// bit-transparently (only delayed).
///
/// It owns its buffers and cannot be copied: they are freed when it goes
/// away (off the render thread, as it was made).
public struct Limiter: ~Copyable {
    public private(set) var ceiling: Float
    /// Where the knee starts (linear): frames quieter than this pass untouched.
    public private(set) var knee: Float
    private let kneeWidthDB: Double
    public let lookahead: Int
    private let window: Int
    private let releaseCoefficient: Double
    // delay line (stereo), ring of `lookahead` frames
    private let delayL: FixedBuffer<Float>
    private let delayR: FixedBuffer<Float>
    private var delayPos = 0
    // monotonic deque for the running minimum of the required gain
    private let dequeValue: FixedBuffer<Double>
    private let dequeIndex: FixedBuffer<Int>
    private var dequeStart = 0
    private var dequeCount = 0
    private var frameIndex = 0
    // release stage and box average
    private var envelope: Double = 1
    private let boxRing: FixedBuffer<Double>
    private var boxPos = 0
    private var boxSum: Double
    private var boxBelowUnity = 0
    /// Frames whose gain was below 1 (for reporting).
    public private(set) var limitedFrames = 0
    /// Smallest gain applied so far.
    public private(set) var minimumGain: Float = 1

    /// - Parameters:
    ///   - ceilingDBFS: the level no sample may exceed (default -1 dBFS).
    ///   - lookaheadSeconds: look-ahead and attack time.
    ///   - releaseSeconds: time constant of the gain recovery.
    ///   - kneeDB: width of the soft knee below the ceiling (0: a hard knee at the ceiling).
    public init(sampleRate: Double, ceilingDBFS: Double = -1, lookaheadSeconds: Double = 0.0015, releaseSeconds: Double = 0.08,
                kneeDB: Double = 1) {
        ceiling = Float(pow(10, ceilingDBFS / 20))
        kneeWidthDB = max(0, kneeDB)
        knee = Float(pow(10, (ceilingDBFS - kneeWidthDB) / 20))
        lookahead = Self.lookaheadFrames(sampleRate: sampleRate, lookaheadSeconds: lookaheadSeconds)
        window = lookahead + 1
        releaseCoefficient = exp(-1 / (max(releaseSeconds, 0.001) * sampleRate))
        delayL = FixedBuffer(repeating: 0, count: lookahead)
        delayR = FixedBuffer(repeating: 0, count: lookahead)
        dequeValue = FixedBuffer(repeating: 1, count: window)
        dequeIndex = FixedBuffer(repeating: 0, count: window)
        boxRing = FixedBuffer(repeating: 1, count: window)
        boxSum = Double(window)
    }

    /// The look-ahead (in frames) a limiter at `sampleRate` has: the delay it adds.
    public static func lookaheadFrames(sampleRate: Double, lookaheadSeconds: Double = 0.0015) -> Int {
        max(1, Int((sampleRate * lookaheadSeconds).rounded()))
    }

    /// Moves the ceiling (and the knee below it) to `ceilingDBFS`. Frames
    /// already in the look-ahead keep the gain computed for them, and are
    /// clipped to the new ceiling: a lowered ceiling holds at once. Render
    /// thread.
    public mutating func setCeiling(dBFS ceilingDBFS: Double) {
        ceiling = Float(pow(10, ceilingDBFS / 20))
        knee = Float(pow(10, (ceilingDBFS - kneeWidthDB) / 20))
    }

    /// Render thread. Limits `frames` frames in place (output is delayed by `lookahead`).
    /// `gains`, when given (`frames` floats), receives the gain applied to
    /// each output frame: other signals delayed by `lookahead` frames and
    /// multiplied by it get exactly the treatment this one got (stems).
    public mutating func process(left: UnsafeMutablePointer<Float>, right: UnsafeMutablePointer<Float>, frames: Int,
                                 gains: UnsafeMutablePointer<Float>? = nil) {
        let kneeD = Double(knee)
        let delayL = self.delayL.pointer, delayR = self.delayR.pointer
        let dequeValue = self.dequeValue.pointer, dequeIndex = self.dequeIndex.pointer, boxRing = self.boxRing.pointer
        for i in 0..<frames {
            var l = left[i], r = right[i]
            // A NaN or infinity must never reach the output or the gain computer.
            if !l.isFinite { l = 0 }
            if !r.isFinite { r = 0 }
            let peak = Double(max(abs(l), abs(r)))
            let required = peak > kneeD ? gain(forPeak: peak) : 1

            // Running minimum over the last `window` frames (this one
            // included). The frame that leaves the window goes first, so
            // the ring never holds more than `window` entries: a peak that
            // falls frame after frame for a whole window fills it exactly.
            if dequeCount > 0 && dequeIndex[dequeStart] <= frameIndex - window {
                dequeStart = dequeStart + 1 == window ? 0 : dequeStart + 1
                dequeCount -= 1
            }
            while dequeCount > 0 {
                var last = dequeStart + dequeCount - 1
                if last >= window { last -= window }
                if dequeValue[last] < required { break }
                dequeCount -= 1
            }
            var slot = dequeStart + dequeCount
            if slot >= window { slot -= window }
            dequeValue[slot] = required
            dequeIndex[slot] = frameIndex
            dequeCount += 1
            let held = dequeValue[dequeStart]
            frameIndex &+= 1

            // instant attack to the held value, smooth release above it
            if held < envelope {
                envelope = held
            } else if envelope < 1 {
                envelope = held - (held - envelope) * releaseCoefficient
                if envelope > 0.999_999 && held == 1 { envelope = 1 }
            }

            // box average over the window
            let leaving = boxRing[boxPos]
            if leaving < 1 { boxBelowUnity -= 1 }
            if envelope < 1 { boxBelowUnity += 1 }
            boxRing[boxPos] = envelope
            boxPos = boxPos + 1 == window ? 0 : boxPos + 1
            let gain: Float
            if boxBelowUnity == 0 {
                boxSum = Double(window)      // exact again: no drift from earlier sums
                gain = 1
            } else {
                boxSum += envelope - leaving
                gain = Float(min(1, boxSum / Double(window)))
            }

            if let gains { gains[i] = gain }
            // delayed output
            var outL = delayL[delayPos] * gain
            var outR = delayR[delayPos] * gain
            delayL[delayPos] = l
            delayR[delayPos] = r
            delayPos = delayPos + 1 == lookahead ? 0 : delayPos + 1
            if gain < 1 {
                limitedFrames &+= 1
                if gain < minimumGain { minimumGain = gain }
            }
            // Float rounding of the product may exceed the ceiling by an ulp.
            if outL > ceiling { outL = ceiling } else if outL < -ceiling { outL = -ceiling }
            if outR > ceiling { outR = ceiling } else if outR < -ceiling { outR = -ceiling }
            left[i] = outL
            right[i] = outR
        }
    }

    /// The gain that brings a frame of `peak` (above the knee) onto the
    /// knee curve: below the ceiling, and below `ceiling / peak`.
    @inline(__always)
    func gain(forPeak peak: Double) -> Double {
        let kneeD = Double(knee)
        guard kneeWidthDB > 0 else { return min(1, Double(ceiling) / peak) }
        let over = 20 * log10(peak / kneeD)                     // dB above the knee
        let out = kneeWidthDB * (1 - exp(-over / kneeWidthDB))  // dB above the knee, after
        return min(1, pow(10, (out - over) / 20))
    }
}
