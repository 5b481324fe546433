#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An algorithmic stereo reverb: a 16-line feedback delay network (FDN).
///
/// Signal path:
///
///     input → DC blocker → pre-delay ─┬─ early reflections (6 taps per side) ──────┐
///                                     └─ 4 allpass diffusers per channel            │
///                                        → 16 delay lines ⟲ (damping shelf per line, │
///                                          pair rotations, 16×16 Hadamard mix)      │
///                                        → two orthogonal output taps ──────────── + ─→ width
///                                                                 → wet level → added to the output
///
/// Design choices:
/// - **16 lines, Hadamard mixing.** The Hadamard matrix is orthogonal (the
///   loop is lossless before the damping filters, so the decay is set by the
///   filters alone, exactly) and every entry has the same magnitude, so each
///   recirculation spreads every line into all 16: echo density grows
///   16-fold per pass. It costs 64 additions (a fast Walsh-Hadamard
///   transform), against 256 multiplications for a general matrix. Eight
///   lines are too sparse for percussion at small sizes; 32 would double the
///   cost for little audible gain.
/// - **Mutually prime lengths.** The lengths are distinct primes (each is
///   the prime nearest above a geometric series from 24 to 76 ms, scaled by
///   `size`), so no two lines share a common period and the modes of the
///   network do not pile up on common frequencies (the cause of metallic
///   ringing). Their total (≈0.7 s at size 1) keeps the mode density above
///   Schroeder's criterion for decay times up to about 5 s.
/// - **Damping.** Each line ends in a first-order high shelf (bilinear, with
///   its half-dB point at `dampingFrequency`) whose gain is
///   `g = 10^(-3·m / (T·fs))` at DC and the same formula with `T·(1 - 0.9·damping)`
///   at Nyquist, m being the line length in samples: every line then loses
///   exactly 60 dB in T seconds at low and mid frequencies, whatever its
///   length (Jot's condition), and high frequencies die faster as in a real
///   room. `decaySeconds` is therefore the RT60 below `dampingFrequency`; with
///   `damping` 0 it is the broadband RT60.
/// - **Diffusion.** Four short allpasses per channel (different prime
///   lengths left and right) smear an impulse into a dense cluster before it
///   enters the network, so a snare does not excite a train of discrete
///   echoes (flutter).
/// - **Modulation without interpolation.** Before the Hadamard mix, the
///   lines are rotated in pairs by slowly varying angles (a different LFO,
///   0.3-1.1 Hz, per pair). A rotation is orthogonal, so the loop stays
///   exactly lossless and the decay exact, while the network's modes keep
///   moving, which keeps long tails from ringing on fixed frequencies
///   (Schlecht & Habets' time-varying feedback matrix). The usual
///   alternative, sweeping the line lengths, needs fractional reads whose
///   interpolation loses treble on every pass: measured here, it shortened
///   the broadband RT60 by 6 % and the 12 kHz RT60 by 25 %.
///   The lines are read at whole-sample lengths, exactly; only while `size`
///   glides are they read with Hermite interpolation.
/// - **Early reflections.** Six taps per side on the pre-delay line (4-40 ms
///   at size 1, scaled with `size`, alternately from the same and the
///   opposite input channel) give the first, discrete reflections of a room
///   while the network builds up; the late reverberation follows them
///   without a gap.
/// - **No DC, no subnormals.** A 5 Hz DC blocker on the input keeps offsets
///   out of the tail (its own 32 ms time constant shows only more than
///   60 dB down, and only for decays under 0.25 s); every value stored in
///   the loop is flushed to 0 below 1e-20 (-400 dBFS), so a decaying tail
///   ends in exact zeros and never reaches the slow subnormal range.
/// - **Control rate.** Parameters, modulation and coefficients are updated
///   every 32 frames and interpolated per frame in between; the phase of
///   that grid is kept across `process` calls, so the output does not depend
///   on how the caller splits its blocks.
///
/// Every parameter change glides: levels in 30 ms, damping and diffusion in
/// 50 ms, decay (in the log domain) and pre-delay in 200 ms, and `size` in
/// 0.5 s (the line lengths slide, which bends the pitch of the tail briefly
/// rather than clicking).
///
/// A value type that owns buffers: call `deallocate()` once, off the render
/// thread, and do not copy it (copies share the buffers).
public struct Reverb {
    /// Everything a preset sets. Values are clamped to the documented ranges.
    public struct Parameters: Sendable, Hashable {
        /// Delay before the reverberation starts, 0...500 ms.
        public var preDelayMilliseconds: Double
        /// RT60 below `dampingFrequency` (broadband with `damping` 0), 0.1...30 s.
        public var decaySeconds: Double
        /// Room size 0...1: scales the delay lengths from 25 % to 100 %
        /// (echo spacing 6-19 ms up to 24-76 ms).
        public var size: Double
        /// High-frequency damping 0...1: the RT60 above `dampingFrequency`
        /// is `decaySeconds · (1 - 0.9·damping)`.
        public var damping: Double
        /// Where the damping takes effect (half-way point), 500...18000 Hz.
        public var dampingFrequency: Double
        /// Input diffusion 0...1 (allpass gain 0...0.7).
        public var diffusion: Double
        /// Feedback-matrix modulation 0...1 (pair rotations of up to ±45°).
        public var modulation: Double
        /// Level of the early reflections 0...1 (0 = late reverberation only).
        public var earlyReflections: Double
        /// Stereo width 0 (mono) ... 1 (decorrelated left and right).
        public var width: Double
        /// Linear gain of the (100 % wet) return, 0...4.
        public var wetLevel: Double

        public init(preDelayMilliseconds: Double = 20, decaySeconds: Double = 2, size: Double = 0.7,
                    damping: Double = 0.4, dampingFrequency: Double = 5000, diffusion: Double = 0.8,
                    modulation: Double = 0.4, earlyReflections: Double = 0.4, width: Double = 1, wetLevel: Double = 1) {
            self.preDelayMilliseconds = preDelayMilliseconds
            self.decaySeconds = decaySeconds
            self.size = size
            self.damping = damping
            self.dampingFrequency = dampingFrequency
            self.diffusion = diffusion
            self.modulation = modulation
            self.earlyReflections = earlyReflections
            self.width = width
            self.wetLevel = wetLevel
        }

        /// These parameters with every value inside its range (NaN becomes the minimum).
        public var clamped: Parameters {
            func clamp(_ x: Double, _ lo: Double, _ hi: Double) -> Double { x.isNaN ? lo : min(max(x, lo), hi) }
            return Parameters(preDelayMilliseconds: clamp(preDelayMilliseconds, 0, Reverb.maxPreDelayMilliseconds),
                              decaySeconds: clamp(decaySeconds, 0.1, 30),
                              size: clamp(size, 0, 1),
                              damping: clamp(damping, 0, 1),
                              dampingFrequency: clamp(dampingFrequency, 500, 18000),
                              diffusion: clamp(diffusion, 0, 1),
                              modulation: clamp(modulation, 0, 1),
                              earlyReflections: clamp(earlyReflections, 0, 1),
                              width: clamp(width, 0, 1),
                              wetLevel: clamp(wetLevel, 0, 4))
        }
    }

    public static let lineCount = 16
    public static let maxPreDelayMilliseconds = 500.0
    static let controlInterval = 32
    /// Line lengths at size 1: geometric from 24 to 76 ms.
    static let shortestLineMilliseconds = 24.0
    static let longestLineMilliseconds = 76.0
    /// Largest rotation of a line pair (radians) at modulation 1.
    static let maxRotation = Double.pi / 4
    /// Allpass diffuser lengths (ms), left and right: all different, so the
    /// two channels are decorrelated from the first reflection on.
    static let diffuserMilliseconds: [Double] = [1.3, 2.3, 3.7, 5.9, 1.5, 2.1, 4.1, 5.3]
    /// Early-reflection taps at size 1 (ms after the pre-delay): six per
    /// side, irregularly spaced (no flutter), the right ones between the left.
    static let reflectionMilliseconds: [Double] = [4.1, 8.3, 13.7, 19.9, 27.1, 35.3, 5.3, 10.1, 16.3, 23.3, 31.1, 39.7]
    static let reflectionsPerSide = 6
    static let diffuserCount = 4

    public let sampleRate: Double

    /// The parameters in effect (their targets, while a change glides).
    /// Render thread only (or whichever thread exclusively owns the reverb):
    /// setting them allocates nothing and takes no lock.
    public var parameters: Parameters {
        didSet {
            parameters = parameters.clamped
            applyParameters()
        }
    }

    /// Fades the return out (and stops computing once silent) or back in.
    /// Render thread only.
    public var isBypassed: Bool {
        get { bypass.isBypassRequested }
        set { bypass.set(bypassed: newValue) }
    }

    /// Seconds after the input stops until the return is 120 dB below the
    /// input's level (an upper bound; for offline renders).
    public var tailSeconds: Double {
        parameters.preDelayMilliseconds / 1000 + diffuserTotalSeconds
            + Self.longestLineMilliseconds / 1000 + 2 * parameters.decaySeconds
    }

    // MARK: State

    private let lineCapacity: Int
    private let lineMask: Int
    private let lines: UnsafeMutablePointer<Float>          // 16 × lineCapacity
    private var writeIndex = 0

    private let lineMilliseconds: UnsafeMutablePointer<Double>    // 16, at size 1
    private let primes: UnsafeMutablePointer<Int>                 // 16, scratch for prime search
    private let baseLength: UnsafeMutablePointer<Double>          // 16, current (gliding) length
    private let baseTarget: UnsafeMutablePointer<Double>          // 16
    private let baseStep: UnsafeMutablePointer<Double>            // 16
    private var baseRemaining = 0
    private var sizeTarget = -1.0
    private let sizeRampFrames: Int

    private let lineLength: UnsafeMutablePointer<Int>             // 16, whole frames (when not gliding)
    private let readDelay: UnsafeMutablePointer<Float>            // 16, gliding length now
    private let readDelayEnd: UnsafeMutablePointer<Float>         // 16
    private let readDelayStep: UnsafeMutablePointer<Float>        // 16
    private var lengthsGlide = false                              // this control period

    // pair rotations: angle = depth · sin(2π·phase), cos/sin ramped per frame
    private let lfoPhase: UnsafeMutablePointer<Double>            // 8, turns
    private let lfoIncrement: UnsafeMutablePointer<Double>        // 8, turns per frame
    private let rotation: UnsafeMutablePointer<Float>             // 8 × (cos, sin, cosStep, sinStep, cosEnd, sinEnd)

    // early reflections
    private let reflectionGain: UnsafeMutablePointer<Float>       // 12
    private let reflectionFrames: UnsafeMutablePointer<Float>     // 12, at size 1
    private let reflectionWhole: UnsafeMutablePointer<Int>        // 12, steady positions (whole frames)
    private let reflectionFraction: UnsafeMutablePointer<Float>   // 12, and their fractions
    private var reflectionScale: SmoothedValue                    // size scale, glides with the lengths
    private var reflectionScaleRamp = Ramp(0)
    private var earlyLevel: SmoothedValue
    private var earlyRamp = Ramp(0)

    // damping shelf per line: y = b0·x + b1·x1 - a1·y1
    private let shelfB0: UnsafeMutablePointer<Float>
    private let shelfB1: UnsafeMutablePointer<Float>
    private let shelfA1: UnsafeMutablePointer<Float>
    private let shelfX1: UnsafeMutablePointer<Float>
    private let shelfY1: UnsafeMutablePointer<Float>
    private var coefficientsNeedUpdate = true

    private let tapLeft: UnsafeMutablePointer<Float>
    private let tapRight: UnsafeMutablePointer<Float>
    private let injection: UnsafeMutablePointer<Float>
    private let mix: UnsafeMutablePointer<Float>                  // 16, scratch

    private let preDelayCapacity: Int
    private let preDelayLeft: UnsafeMutablePointer<Float>
    private let preDelayRight: UnsafeMutablePointer<Float>
    private var preDelayIndex = 0

    private let diffuserStorage: UnsafeMutablePointer<Float>
    private let diffuserOffset: UnsafeMutablePointer<Int>         // 8
    private let diffuserLength: UnsafeMutablePointer<Int>         // 8
    private let diffuserIndex: UnsafeMutablePointer<Int>          // 8
    private let diffuserTotalSeconds: Double
    private let diffuserStorageCount: Int

    private var dcInLeft: Float = 0, dcOutLeft: Float = 0
    private var dcInRight: Float = 0, dcOutRight: Float = 0
    private let dcCoefficient: Float

    // smoothed parameters
    private var decayLog: SmoothedValue
    private var damping: SmoothedValue
    private var dampingFrequencyLog: SmoothedValue
    private var preDelayFrames: SmoothedValue
    private var diffusion: SmoothedValue
    private var modulationDepth: SmoothedValue       // radians
    private var width: SmoothedValue
    private var wet: SmoothedValue
    private var bypass: BypassFade
    private var needsClear = false

    // per-frame ramps inside the control period
    private var preDelayRamp = Ramp(0)
    private var diffusionRamp = Ramp(0)
    private var wetRamp = Ramp(0)
    private var widthRamp = Ramp(0)
    private var framesUntilControl = 0

    /// Not on the render thread: allocates every buffer (about 0.5 MB at
    /// 48 kHz) for `sampleRate`.
    public init(sampleRate: Double, parameters: Parameters = Parameters()) {
        precondition(sampleRate >= 8000, "Reverb needs a sample rate of at least 8 kHz")
        self.sampleRate = sampleRate
        let p = parameters.clamped
        self.parameters = p
        let n = Self.lineCount

        let longest = Self.longestLineMilliseconds
        lineCapacity = DSPMath.powerOfTwo(atLeast: Int((longest * sampleRate / 1000).rounded(.up)) + 8)
        lineMask = lineCapacity - 1
        lines = DSPMath.allocateZeroed(n * lineCapacity)

        lineMilliseconds = DSPMath.allocateZeroed(n)
        for i in 0..<n {
            lineMilliseconds[i] = Self.shortestLineMilliseconds
                * pow(Self.longestLineMilliseconds / Self.shortestLineMilliseconds, Double(i) / Double(n - 1))
        }
        primes = DSPMath.allocateZeroed(n)
        baseLength = DSPMath.allocateZeroed(n)
        baseTarget = DSPMath.allocateZeroed(n)
        baseStep = DSPMath.allocateZeroed(n)
        sizeRampFrames = Int(0.5 * sampleRate)
        lineLength = DSPMath.allocateZeroed(n)
        readDelay = DSPMath.allocateZeroed(n)
        readDelayEnd = DSPMath.allocateZeroed(n)
        readDelayStep = DSPMath.allocateZeroed(n)
        lfoPhase = DSPMath.allocateZeroed(n / 2)
        lfoIncrement = DSPMath.allocateZeroed(n / 2)
        rotation = DSPMath.allocateZeroed(3 * n)
        reflectionGain = DSPMath.allocateZeroed(Self.reflectionMilliseconds.count)
        reflectionFrames = DSPMath.allocateZeroed(Self.reflectionMilliseconds.count)
        reflectionWhole = DSPMath.allocateZeroed(Self.reflectionMilliseconds.count)
        reflectionFraction = DSPMath.allocateZeroed(Self.reflectionMilliseconds.count)
        shelfB0 = DSPMath.allocateZeroed(n)
        shelfB1 = DSPMath.allocateZeroed(n)
        shelfA1 = DSPMath.allocateZeroed(n)
        shelfX1 = DSPMath.allocateZeroed(n)
        shelfY1 = DSPMath.allocateZeroed(n)
        tapLeft = DSPMath.allocateZeroed(n)
        tapRight = DSPMath.allocateZeroed(n)
        injection = DSPMath.allocateZeroed(n)
        mix = DSPMath.allocateZeroed(n)

        // Output taps: a sign pattern for the left and the same pattern with
        // half its signs flipped for the right. The two vectors are
        // orthogonal (their dot product is the sum of the flips, 0), so the
        // tails come out decorrelated; 1/4 = 1/√16 keeps unit power.
        let signs: [Float] = [1, -1, 1, 1, -1, 1, 1, -1, 1, 1, -1, -1, 1, -1, -1, 1]
        let flips: [Float] = [1, 1, -1, -1, 1, -1, 1, -1, -1, 1, -1, 1, 1, -1, -1, 1]
        // Input: left into the even lines, right into the odd ones, with
        // alternating signs; 1/√8 per line keeps unit power per channel.
        let inputSigns: [Float] = [1, 1, -1, 1, 1, -1, -1, -1, 1, -1, -1, 1, -1, 1, 1, 1]
        for i in 0..<n {
            tapLeft[i] = 0.25 * signs[i]
            tapRight[i] = 0.25 * signs[i] * flips[i]
            injection[i] = inputSigns[i] / Float(8.0.squareRoot())
        }
        for k in 0..<(n / 2) {
            // Different slow rates (0.3-1.1 Hz) and phases, spread by the
            // golden ratio so no two pairs move together.
            let spread = (Double(k) * 0.618_033_988_75).truncatingRemainder(dividingBy: 1)
            lfoIncrement[k] = (0.3 + 0.8 * spread) / sampleRate
            lfoPhase[k] = (Double(k) * 0.381_966_011_25).truncatingRemainder(dividingBy: 1)
        }
        // Reflection gains fall by 1.5 dB per tap and have unit total power
        // per side (taps alternate between the same and the opposite input).
        let taps = Self.reflectionsPerSide
        var power = 0.0
        for k in 0..<taps { power += pow(0.84, 2 * Double(k)) }
        for k in 0..<Self.reflectionMilliseconds.count {
            let index = k % taps
            reflectionGain[k] = Float(pow(0.84, Double(index)) / power.squareRoot())
            reflectionFrames[k] = Float(Self.reflectionMilliseconds[k] * sampleRate / 1000)
        }

        let reflectionMax = Self.reflectionMilliseconds.max()!
        preDelayCapacity = DSPMath.powerOfTwo(atLeast: Int((Self.maxPreDelayMilliseconds + reflectionMax) * sampleRate / 1000) + 4)
        preDelayLeft = DSPMath.allocateZeroed(preDelayCapacity)
        preDelayRight = DSPMath.allocateZeroed(preDelayCapacity)

        diffuserOffset = DSPMath.allocateZeroed(2 * Self.diffuserCount)
        diffuserLength = DSPMath.allocateZeroed(2 * Self.diffuserCount)
        diffuserIndex = DSPMath.allocateZeroed(2 * Self.diffuserCount)
        var total = 0
        var longestLeft = 0, longestRight = 0
        for k in 0..<(2 * Self.diffuserCount) {
            let length = DSPMath.prime(atLeast: Int((Self.diffuserMilliseconds[k] * sampleRate / 1000).rounded()),
                                       excluding: diffuserLength, count: k)
            diffuserLength[k] = length
            diffuserOffset[k] = total
            total += length
            if k < Self.diffuserCount { longestLeft += length } else { longestRight += length }
        }
        diffuserStorageCount = total
        diffuserStorage = DSPMath.allocateZeroed(total)
        // An allpass of gain g rings for about log(1e-6)/log(g) periods; 0.7^k
        // falls by 120 dB after ~39 periods of the longest stage.
        diffuserTotalSeconds = Double(max(longestLeft, longestRight)) * 10 / sampleRate

        dcCoefficient = Float(exp(-2 * Double.pi * 5 / sampleRate))

        let levelFrames = Int(0.03 * sampleRate)
        let shapeFrames = Int(0.05 * sampleRate)
        let slowFrames = Int(0.2 * sampleRate)
        decayLog = SmoothedValue(log(p.decaySeconds), rampFrames: slowFrames)
        damping = SmoothedValue(p.damping, rampFrames: shapeFrames)
        dampingFrequencyLog = SmoothedValue(log(p.dampingFrequency), rampFrames: shapeFrames)
        preDelayFrames = SmoothedValue((p.preDelayMilliseconds * sampleRate / 1000).rounded(), rampFrames: slowFrames)
        diffusion = SmoothedValue(0.7 * p.diffusion, rampFrames: shapeFrames)
        modulationDepth = SmoothedValue(p.modulation * Self.maxRotation, rampFrames: shapeFrames)
        reflectionScale = SmoothedValue(Self.sizeScale(p.size), rampFrames: Int(0.5 * sampleRate))
        earlyLevel = SmoothedValue(p.earlyReflections, rampFrames: levelFrames)
        width = SmoothedValue(p.width, rampFrames: levelFrames)
        wet = SmoothedValue(p.wetLevel, rampFrames: levelFrames)
        bypass = BypassFade(sampleRate: sampleRate)

        setLineLengths(size: p.size, glide: false)
        preDelayRamp.reset(to: Float(preDelayFrames.current))
        diffusionRamp.reset(to: Float(diffusion.current))
        wetRamp.reset(to: Float(wet.current))
        widthRamp.reset(to: Float(width.current))
        reflectionScaleRamp.reset(to: Float(reflectionScale.current))
        earlyRamp.reset(to: Float(earlyLevel.current))
        for i in 0..<n { readDelayEnd[i] = Float(baseLength[i]) }
        setRotations(advancing: 0)
        updateDampingCoefficients()
    }

    /// Frees the buffers. Call once, off the render thread.
    public mutating func deallocate() {
        lines.deallocate()
        for p in [lineMilliseconds, baseLength, baseTarget, baseStep, lfoPhase, lfoIncrement] { p.deallocate() }
        primes.deallocate(); lineLength.deallocate(); reflectionWhole.deallocate()
        for p in [readDelay, readDelayEnd, readDelayStep, rotation, reflectionGain, reflectionFrames, reflectionFraction, shelfB0, shelfB1, shelfA1, shelfX1, shelfY1,
                  tapLeft, tapRight, injection, mix, preDelayLeft, preDelayRight, diffuserStorage] {
            p.deallocate()
        }
        diffuserOffset.deallocate(); diffuserLength.deallocate(); diffuserIndex.deallocate()
    }

    /// Render thread only. Silences the reverb at once (clears every line);
    /// parameter glides jump to their targets. Costs a pass over the buffers.
    public mutating func reset() {
        clearState()
        decayLog.jump(to: decayLog.target)
        damping.jump(to: damping.target)
        dampingFrequencyLog.jump(to: dampingFrequencyLog.target)
        preDelayFrames.jump(to: preDelayFrames.target)
        diffusion.jump(to: diffusion.target)
        modulationDepth.jump(to: modulationDepth.target)
        reflectionScale.jump(to: reflectionScale.target)
        earlyLevel.jump(to: earlyLevel.target)
        width.jump(to: width.target)
        wet.jump(to: wet.target)
        setLineLengths(size: parameters.size, glide: false)
        preDelayRamp.reset(to: Float(preDelayFrames.current))
        diffusionRamp.reset(to: Float(diffusion.current))
        wetRamp.reset(to: Float(wet.current))
        widthRamp.reset(to: Float(width.current))
        reflectionScaleRamp.reset(to: Float(reflectionScale.current))
        earlyRamp.reset(to: Float(earlyLevel.current))
        for i in 0..<Self.lineCount { readDelayEnd[i] = Float(baseLength[i]) }
        setRotations(advancing: 0)
        coefficientsNeedUpdate = true
        framesUntilControl = 0
    }

    /// Number of subnormal values held in the reverb's state (diagnostics
    /// for tests; not for the render thread — it scans every buffer).
    public func subnormalStateCount() -> Int {
        let n = Self.lineCount
        return DSPMath.subnormalCount(lines, n * lineCapacity)
            + DSPMath.subnormalCount(preDelayLeft, preDelayCapacity)
            + DSPMath.subnormalCount(preDelayRight, preDelayCapacity)
            + DSPMath.subnormalCount(diffuserStorage, diffuserStorageCount)
            + DSPMath.subnormalCount(shelfX1, n) + DSPMath.subnormalCount(shelfY1, n)
            + [dcInLeft, dcOutLeft, dcInRight, dcOutRight].filter(\.isSubnormal).count
    }

    // MARK: Render

    /// Render thread only. Adds the 100 %-wet stereo return of `frames`
    /// frames of input to the outputs. Any frame count, including 0; the
    /// inputs may be the same buffers as each other but not the outputs.
    /// Allocates nothing, takes no lock, makes no system call.
    public mutating func process(inputLeft: UnsafePointer<Float>, inputRight: UnsafePointer<Float>,
                                 outputLeft: UnsafeMutablePointer<Float>, outputRight: UnsafeMutablePointer<Float>,
                                 frames: Int) {
        guard frames > 0 else { return }
        if bypass.isSilent {
            // Faded out: clear once (so switching back on starts from
            // silence), let pending glides arrive, then compute nothing.
            if needsClear { reset() }
            return
        }
        needsClear = true

        let n = Self.lineCount
        let lines = self.lines, mask = lineMask, cap = lineCapacity
        let lineLength = self.lineLength, readDelay = self.readDelay, readDelayStep = self.readDelayStep
        let b0 = shelfB0, b1 = shelfB1, a1 = shelfA1, x1 = shelfX1, y1 = shelfY1
        let tapLeft = self.tapLeft, tapRight = self.tapRight, injection = self.injection, mix = self.mix
        let rotation = self.rotation
        let reflectionGain = self.reflectionGain
        let reflectionFrames = self.reflectionFrames
        let reflectionWhole = self.reflectionWhole, reflectionFraction = self.reflectionFraction
        let preDelayLeft = self.preDelayLeft, preDelayRight = self.preDelayRight
        let preMask = preDelayCapacity - 1
        let dcR = dcCoefficient
        let taps = Self.reflectionsPerSide

        var frame = 0
        while frame < frames {
            if framesUntilControl == 0 {
                beginControlPeriod()
                framesUntilControl = Self.controlInterval
            }
            let count = min(framesUntilControl, frames - frame)
            framesUntilControl -= count
            let end = frame + count
            let glide = lengthsGlide
            let reflectionsSteady = preDelayRamp.step == 0 && reflectionScaleRamp.step == 0
            while frame < end {
                let fade = bypass.next()
                // DC blocker, then the pre-delay line (read with linear
                // interpolation: outside the loop, and at whole frames
                // whenever the pre-delay is not gliding).
                let inL = inputLeft[frame] * fade, inR = inputRight[frame] * fade
                dcOutLeft = DSPMath.flush(inL - dcInLeft + dcR * dcOutLeft); dcInLeft = inL
                dcOutRight = DSPMath.flush(inR - dcInRight + dcR * dcOutRight); dcInRight = inR
                preDelayLeft[preDelayIndex] = dcOutLeft
                preDelayRight[preDelayIndex] = dcOutRight
                let pd = preDelayRamp.next()
                let pdWhole = Int(pd)
                let pdFrac = pd - Float(pdWhole)
                let j0 = (preDelayIndex &- pdWhole) & preMask, j1 = (j0 &- 1) & preMask
                var xL = preDelayLeft[j0] + pdFrac * (preDelayLeft[j1] - preDelayLeft[j0])
                var xR = preDelayRight[j0] + pdFrac * (preDelayRight[j1] - preDelayRight[j0])

                // Early reflections: taps behind the pre-delay. Taps 0, 2, 4
                // of a side read that side's input, taps 1, 3, 5 the other's.
                let scale = reflectionScaleRamp.next()
                let early = earlyRamp.next()
                var earlyL: Float = 0, earlyR: Float = 0
                if early != 0 {
                    var k = 0
                    while k < 2 * taps {
                        let same = k < taps ? preDelayLeft : preDelayRight
                        let other = k < taps ? preDelayRight : preDelayLeft
                        var sum: Float = 0
                        var j = k
                        while j < k + taps {
                            let whole: Int, frac: Float
                            if reflectionsSteady {
                                whole = reflectionWhole[j]
                                frac = reflectionFraction[j]
                            } else {
                                let d = pd + scale * reflectionFrames[j]
                                whole = Int(d)
                                frac = d - Float(whole)
                            }
                            let source = (j - k) & 1 == 0 ? same : other
                            let i0 = (preDelayIndex &- whole) & preMask
                            let v0 = source[i0]
                            sum += reflectionGain[j] * (v0 + frac * (source[(i0 &- 1) & preMask] - v0))
                            j += 1
                        }
                        if k == 0 { earlyL = sum } else { earlyR = sum }
                        k += taps
                    }
                }
                preDelayIndex = (preDelayIndex &+ 1) & preMask

                // Input diffusion: allpass (g + z^-L) / (1 + g·z^-L) per stage.
                let g = diffusionRamp.next()
                var k = 0
                while k < Self.diffuserCount {
                    xL = diffuse(xL, stage: k, gain: g)
                    xR = diffuse(xR, stage: k + Self.diffuserCount, gain: g)
                    k += 1
                }

                // Read and damp every line; sum the output taps.
                var outL: Float = 0, outR: Float = 0
                var i = 0
                while i < n {
                    let line = lines + i &* cap
                    let s: Float
                    if glide {
                        let d = readDelay[i] + readDelayStep[i]
                        readDelay[i] = d
                        s = DSPMath.readInterpolated(line, mask: mask, writeIndex: writeIndex, delay: d)
                    } else {
                        s = line[(writeIndex &- lineLength[i]) & mask]
                    }
                    let y = DSPMath.flush(b0[i] * s + b1[i] * x1[i] - a1[i] * y1[i])
                    x1[i] = s
                    y1[i] = y
                    outL += tapLeft[i] * y
                    outR += tapRight[i] * y
                    i += 1
                }

                // Rotate the lines in pairs (orthogonal, slowly varying),
                // mix them (Hadamard), write them back with the input.
                var pair = 0
                while pair < n / 2 {
                    let r = rotation + 6 * pair
                    let c = r[0] + r[2], sn = r[1] + r[3]
                    r[0] = c
                    r[1] = sn
                    let a = y1[2 * pair], b = y1[2 * pair + 1]
                    mix[2 * pair] = c * a - sn * b
                    mix[2 * pair + 1] = sn * a + c * b
                    pair += 1
                }
                Self.hadamard16(mix)
                i = 0
                while i < n {
                    let x = (i & 1) == 0 ? xL : xR
                    lines[i &* cap &+ writeIndex] = DSPMath.flush(0.25 * mix[i] + injection[i] * x)
                    i += 1
                }
                writeIndex = (writeIndex &+ 1) & mask

                // Width: blend each side with the other (1 = as is, 0 = mono).
                outL += early * earlyL
                outR += early * earlyR
                let wd = widthRamp.next()
                let direct = 0.5 + 0.5 * wd, cross = 0.5 - 0.5 * wd
                let gain = wetRamp.next() * fade
                outputLeft[frame] += gain * (direct * outL + cross * outR)
                outputRight[frame] += gain * (direct * outR + cross * outL)
                frame += 1
            }
        }
    }

    /// In-place 16-point fast Walsh-Hadamard transform (unscaled): the
    /// product with the Sylvester-ordered Hadamard matrix in 64 additions.
    /// Written out as four radix-2 stages over locals, which the compiler
    /// keeps in registers.
    @inline(__always) static func hadamard16(_ x: UnsafeMutablePointer<Float>) {
        // stage 1 (distance 8) and 2 (distance 4)
        var a0 = x[0] + x[8], a8 = x[0] - x[8], a1 = x[1] + x[9], a9 = x[1] - x[9]
        var a2 = x[2] + x[10], a10 = x[2] - x[10], a3 = x[3] + x[11], a11 = x[3] - x[11]
        var a4 = x[4] + x[12], a12 = x[4] - x[12], a5 = x[5] + x[13], a13 = x[5] - x[13]
        var a6 = x[6] + x[14], a14 = x[6] - x[14], a7 = x[7] + x[15], a15 = x[7] - x[15]
        (a0, a4) = (a0 + a4, a0 - a4); (a1, a5) = (a1 + a5, a1 - a5)
        (a2, a6) = (a2 + a6, a2 - a6); (a3, a7) = (a3 + a7, a3 - a7)
        (a8, a12) = (a8 + a12, a8 - a12); (a9, a13) = (a9 + a13, a9 - a13)
        (a10, a14) = (a10 + a14, a10 - a14); (a11, a15) = (a11 + a15, a11 - a15)
        // stage 3 (distance 2) and 4 (distance 1)
        (a0, a2) = (a0 + a2, a0 - a2); (a1, a3) = (a1 + a3, a1 - a3)
        (a4, a6) = (a4 + a6, a4 - a6); (a5, a7) = (a5 + a7, a5 - a7)
        (a8, a10) = (a8 + a10, a8 - a10); (a9, a11) = (a9 + a11, a9 - a11)
        (a12, a14) = (a12 + a14, a12 - a14); (a13, a15) = (a13 + a15, a13 - a15)
        x[0] = a0 + a1; x[1] = a0 - a1; x[2] = a2 + a3; x[3] = a2 - a3
        x[4] = a4 + a5; x[5] = a4 - a5; x[6] = a6 + a7; x[7] = a6 - a7
        x[8] = a8 + a9; x[9] = a8 - a9; x[10] = a10 + a11; x[11] = a10 - a11
        x[12] = a12 + a13; x[13] = a12 - a13; x[14] = a14 + a15; x[15] = a14 - a15
    }

    @inline(__always) private mutating func diffuse(_ x: Float, stage k: Int, gain g: Float) -> Float {
        let buffer = diffuserStorage + diffuserOffset[k]
        let index = diffuserIndex[k]
        let delayed = buffer[index]
        let v = DSPMath.flush(x - g * delayed)
        buffer[index] = v
        let next = index + 1
        diffuserIndex[k] = next == diffuserLength[k] ? 0 : next
        return delayed + g * v
    }

    // MARK: Control

    /// Advances every glide by one control period and sets up the per-frame
    /// ramps and modulated read positions for it.
    private mutating func beginControlPeriod() {
        let frames = Self.controlInterval
        let n = Self.lineCount
        bypass.beginPeriod(frames: frames)
        wetRamp.begin(to: Float(wet.advance(frames)), frames: frames)
        widthRamp.begin(to: Float(width.advance(frames)), frames: frames)
        preDelayRamp.begin(to: Float(preDelayFrames.advance(frames)), frames: frames)
        diffusionRamp.begin(to: Float(diffusion.advance(frames)), frames: frames)

        // Lengths glide during this period if they did at its start (so the
        // last period of a glide still moves the reads to the final lengths).
        lengthsGlide = baseRemaining > 0
        if lengthsGlide {
            let steps = min(frames, baseRemaining)
            baseRemaining -= steps
            for i in 0..<n {
                baseLength[i] = baseRemaining == 0 ? baseTarget[i] : baseLength[i] + baseStep[i] * Double(steps)
            }
        }
        if lengthsGlide || decayLog.isSmoothing || damping.isSmoothing || dampingFrequencyLog.isSmoothing {
            coefficientsNeedUpdate = true
        }
        decayLog.advance(frames)
        damping.advance(frames)
        dampingFrequencyLog.advance(frames)
        if coefficientsNeedUpdate { updateDampingCoefficients() }

        for i in 0..<n {
            readDelay[i] = readDelayEnd[i]       // exact start: no drift from summed steps
            readDelayEnd[i] = Float(baseLength[i])
            readDelayStep[i] = (readDelayEnd[i] - readDelay[i]) / Float(frames)
            lineLength[i] = Int(baseLength[i].rounded())
        }
        reflectionScaleRamp.begin(to: Float(reflectionScale.advance(frames)), frames: frames)
        earlyRamp.begin(to: Float(earlyLevel.advance(frames)), frames: frames)
        if preDelayRamp.step == 0 && reflectionScaleRamp.step == 0 {
            // steady this period: the per-frame arithmetic of the taps, once
            for k in 0..<2 * Self.reflectionsPerSide {
                let d = preDelayRamp.end + reflectionScaleRamp.end * reflectionFrames[k]
                reflectionWhole[k] = Int(d)
                reflectionFraction[k] = d - Float(reflectionWhole[k])
            }
        }
        modulationDepth.advance(frames)
        setRotations(advancing: frames)
    }

    /// Moves the pair-rotation LFOs `frames` on and sets up the per-frame
    /// cos/sin ramps to their new angles.
    private mutating func setRotations(advancing frames: Int) {
        let depth = modulationDepth.current
        for k in 0..<(Self.lineCount / 2) {
            var phase = lfoPhase[k] + lfoIncrement[k] * Double(frames)
            if phase >= 1 { phase -= 1 }
            lfoPhase[k] = phase
            let angle = depth * DSPMath.sine(turns: phase)
            let r = rotation + 6 * k
            let c = Float(cos(angle)), s = Float(sin(angle))
            if frames == 0 {
                r[0] = c; r[1] = s; r[2] = 0; r[3] = 0
            } else {
                r[0] = r[4]; r[1] = r[5]           // exact start
                r[2] = (c - r[0]) / Float(frames)
                r[3] = (s - r[1]) / Float(frames)
                r[0] -= r[2]; r[1] -= r[3]          // process() steps before use
            }
            r[4] = c; r[5] = s
        }
    }

    /// Per-line damping shelf for the current decay, damping and lengths.
    private mutating func updateDampingCoefficients() {
        coefficientsNeedUpdate = false
        let t60 = exp(decayLog.current)
        let t60High = t60 * (1 - 0.9 * damping.current)
        let fc = min(exp(dampingFrequencyLog.current), 0.45 * sampleRate)
        let k = tan(Double.pi * fc / sampleRate)
        for i in 0..<Self.lineCount {
            let m = baseLength[i]
            let g0 = pow(10, -3 * m / (t60 * sampleRate))
            let v = pow(10, -3 * m / sampleRate * (1 / t60High - 1 / t60))   // gain at Nyquist relative to DC
            let sv = v.squareRoot()
            let a0 = 1 + k * sv
            shelfB0[i] = Float(g0 * v * (1 + k / sv) / a0)
            shelfB1[i] = Float(g0 * v * (k / sv - 1) / a0)
            shelfA1[i] = Float((k * sv - 1) / a0)
        }
    }

    private mutating func setLineLengths(size: Double, glide: Bool) {
        sizeTarget = size
        let scale = Self.sizeScale(size)
        for i in 0..<Self.lineCount {
            let target = DSPMath.prime(atLeast: Int((lineMilliseconds[i] * scale * sampleRate / 1000).rounded()),
                                       excluding: primes, count: i)
            primes[i] = target
            baseTarget[i] = Double(target)
            if glide {
                baseStep[i] = (baseTarget[i] - baseLength[i]) / Double(sizeRampFrames)
            } else {
                baseLength[i] = baseTarget[i]
            }
        }
        baseRemaining = glide ? sizeRampFrames : 0
        coefficientsNeedUpdate = true
    }

    /// Length scale for a size: 25 % at size 0, 100 % at size 1.
    static func sizeScale(_ size: Double) -> Double { 0.25 + 0.75 * size }

    private mutating func applyParameters() {
        let p = parameters
        decayLog.set(log(p.decaySeconds))
        damping.set(p.damping)
        dampingFrequencyLog.set(log(p.dampingFrequency))
        preDelayFrames.set((p.preDelayMilliseconds * sampleRate / 1000).rounded())
        diffusion.set(0.7 * p.diffusion)
        modulationDepth.set(p.modulation * Self.maxRotation)
        earlyLevel.set(p.earlyReflections)
        reflectionScale.set(Self.sizeScale(p.size))
        width.set(p.width)
        wet.set(p.wetLevel)
        if p.size != sizeTarget { setLineLengths(size: p.size, glide: true) }
    }

    private mutating func clearState() {
        needsClear = false
        let n = Self.lineCount
        lines.update(repeating: 0, count: n * lineCapacity)
        preDelayLeft.update(repeating: 0, count: preDelayCapacity)
        preDelayRight.update(repeating: 0, count: preDelayCapacity)
        diffuserStorage.update(repeating: 0, count: diffuserStorageCount)
        shelfX1.update(repeating: 0, count: n)
        shelfY1.update(repeating: 0, count: n)
        dcInLeft = 0; dcOutLeft = 0; dcInRight = 0; dcOutRight = 0
    }
}
