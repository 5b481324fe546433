#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The master equalizer: an optional high-pass, a low shelf and a high
/// shelf (RBJ cookbook biquads), processed in place.
///
/// Design choices:
/// - **Order.** High-pass first (it removes rumble and DC before the shelves
///   can boost them), then low shelf, then high shelf.
/// - **Shapes.** The high-pass is Butterworth (Q = 1/√2): -3 dB exactly at its
///   corner, no peak. The shelves use slope S = 1 (the steepest without
///   overshoot); their gain is half-way (in dB) at the corner. A shelf at
///   0 dB is exactly transparent.
/// - **Smoothing.** Corners glide in the log domain and gains in dB (30 ms),
///   with the coefficients recomputed every 16 frames while anything moves;
///   switching the high-pass on or off crossfades its output, and bypass
///   crossfades between the processed and the dry signal (20 ms). The
///   filters keep running while bypassed, so switching back on finds them
///   in the state the music left them in (no start-up transient).
/// - Double-precision filters: a 20 Hz high-pass at 48 kHz has its poles
///   within 0.3 % of z = 1.
///
/// Holds no buffers, so unlike the send effects it stays copyable: a copy
/// has its own state.
public struct Equalizer {
    public struct Parameters: Sendable, Hashable {
        /// High-pass on or off.
        public var highPassEnabled: Bool
        /// High-pass corner (-3 dB), 10...2000 Hz.
        public var highPassFrequency: Double
        /// Low-shelf corner, 20...2000 Hz, and gain, -24...24 dB.
        public var lowShelfFrequency: Double
        public var lowShelfGainDB: Double
        /// High-shelf corner, 500...20000 Hz, and gain, -24...24 dB.
        public var highShelfFrequency: Double
        public var highShelfGainDB: Double

        public init(highPassEnabled: Bool = false, highPassFrequency: Double = 30,
                    lowShelfFrequency: Double = 150, lowShelfGainDB: Double = 0,
                    highShelfFrequency: Double = 6000, highShelfGainDB: Double = 0) {
            self.highPassEnabled = highPassEnabled
            self.highPassFrequency = highPassFrequency
            self.lowShelfFrequency = lowShelfFrequency
            self.lowShelfGainDB = lowShelfGainDB
            self.highShelfFrequency = highShelfFrequency
            self.highShelfGainDB = highShelfGainDB
        }

        /// These parameters with every value inside its range.
        public var clamped: Parameters {
            func clamp(_ x: Double, _ lo: Double, _ hi: Double) -> Double { x.isNaN ? lo : min(max(x, lo), hi) }
            return Parameters(highPassEnabled: highPassEnabled,
                              highPassFrequency: clamp(highPassFrequency, 10, 2000),
                              lowShelfFrequency: clamp(lowShelfFrequency, 20, 2000),
                              lowShelfGainDB: clamp(lowShelfGainDB, -24, 24),
                              highShelfFrequency: clamp(highShelfFrequency, 500, 20000),
                              highShelfGainDB: clamp(highShelfGainDB, -24, 24))
        }

        /// True if the settings leave the signal unchanged.
        public var isFlat: Bool { !highPassEnabled && lowShelfGainDB == 0 && highShelfGainDB == 0 }
    }

    static let controlInterval = 16

    public let sampleRate: Double

    /// The parameters in effect (targets while a change glides).
    /// Render thread only: setting them allocates nothing and takes no lock.
    public var parameters: Parameters {
        didSet {
            parameters = parameters.clamped
            applyParameters()
        }
    }

    /// Crossfades to the dry signal (and back). Render thread only.
    public var isBypassed: Bool {
        get { bypass.isBypassRequested }
        set { bypass.set(bypassed: newValue) }
    }

    /// An equalizer adds no tail worth rendering.
    public var tailSeconds: Double { 0 }

    private var highPass = Biquad()
    private var lowShelf = Biquad()
    private var highShelf = Biquad()
    private var highPassLog: SmoothedValue
    private var lowShelfLog: SmoothedValue
    private var highShelfLog: SmoothedValue
    private var lowShelfGain: SmoothedValue
    private var highShelfGain: SmoothedValue
    private var highPassOn: SmoothedValue
    private var highPassRamp = Ramp(0)
    private var bypass: BypassFade
    private var clock = ControlClock(interval: Self.controlInterval)

    /// Allocates nothing; may be created anywhere.
    public init(sampleRate: Double, parameters: Parameters = Parameters()) {
        self.sampleRate = sampleRate
        let p = parameters.clamped
        self.parameters = p
        let frames = Int(0.03 * sampleRate)
        highPassLog = SmoothedValue(log(p.highPassFrequency), rampFrames: frames)
        lowShelfLog = SmoothedValue(log(p.lowShelfFrequency), rampFrames: frames)
        highShelfLog = SmoothedValue(log(p.highShelfFrequency), rampFrames: frames)
        lowShelfGain = SmoothedValue(p.lowShelfGainDB, rampFrames: frames)
        highShelfGain = SmoothedValue(p.highShelfGainDB, rampFrames: frames)
        highPassOn = SmoothedValue(p.highPassEnabled ? 1 : 0, rampFrames: frames)
        highPassRamp.reset(to: Float(highPassOn.current))
        bypass = BypassFade(sampleRate: sampleRate)
        updateCoefficients()
    }

    /// Render thread only. Filters `frames` frames of `left` and `right` in
    /// place. Any frame count, including 0. Allocates nothing, takes no lock.
    public mutating func process(left: UnsafeMutablePointer<Float>, right: UnsafeMutablePointer<Float>, frames: Int) {
        var frame = 0
        while frame < frames {
            let (count, _, begins) = clock.nextPiece(frames - frame)
            if begins { beginControlPeriod() }
            let end = frame + count
            while frame < end {
                let dryL = Double(left[frame]), dryR = Double(right[frame])
                let on = Double(highPassRamp.next())
                var (l, r) = highPass.process(dryL, dryR)
                l = dryL + on * (l - dryL)
                r = dryR + on * (r - dryR)
                (l, r) = lowShelf.process(l, r)
                (l, r) = highShelf.process(l, r)
                let wet = Double(bypass.next())
                left[frame] = Float(dryL + wet * (l - dryL))
                right[frame] = Float(dryR + wet * (r - dryR))
                frame += 1
            }
        }
    }

    /// Render thread only. Clears the filter states; glides jump to their targets.
    public mutating func reset() {
        highPass.reset(); lowShelf.reset(); highShelf.reset()
        highPassLog.jump(to: highPassLog.target)
        lowShelfLog.jump(to: lowShelfLog.target)
        highShelfLog.jump(to: highShelfLog.target)
        lowShelfGain.jump(to: lowShelfGain.target)
        highShelfGain.jump(to: highShelfGain.target)
        highPassOn.jump(to: highPassOn.target)
        highPassRamp.reset(to: Float(highPassOn.current))
        updateCoefficients()
        clock.restart()
    }

    private mutating func beginControlPeriod() {
        let frames = Self.controlInterval
        bypass.beginPeriod(frames: frames)
        highPassRamp.begin(to: Float(highPassOn.advance(frames)), frames: frames)
        if highPassLog.isSmoothing || lowShelfLog.isSmoothing || highShelfLog.isSmoothing
            || lowShelfGain.isSmoothing || highShelfGain.isSmoothing {
            highPassLog.advance(frames)
            lowShelfLog.advance(frames)
            highShelfLog.advance(frames)
            lowShelfGain.advance(frames)
            highShelfGain.advance(frames)
            updateCoefficients()
        }
    }

    private mutating func updateCoefficients() {
        highPass.coefficients = .highPass(frequency: exp(highPassLog.current), sampleRate: sampleRate)
        lowShelf.coefficients = .lowShelf(frequency: exp(lowShelfLog.current), gainDB: lowShelfGain.current,
                                          sampleRate: sampleRate)
        highShelf.coefficients = .highShelf(frequency: exp(highShelfLog.current), gainDB: highShelfGain.current,
                                            sampleRate: sampleRate)
    }

    private mutating func applyParameters() {
        let p = parameters
        highPassLog.set(log(p.highPassFrequency))
        lowShelfLog.set(log(p.lowShelfFrequency))
        highShelfLog.set(log(p.highShelfFrequency))
        lowShelfGain.set(p.lowShelfGainDB)
        highShelfGain.set(p.highShelfGainDB)
        highPassOn.set(p.highPassEnabled ? 1 : 0)
    }
}
