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
///   lines are rotated in pairs (line k with line k + 8) by slowly varying
///   angles (a different LFO, 0.3-1.1 Hz, per pair). A rotation is orthogonal, so the loop stays
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
///   60 dB down, and only for decays under 0.25 s); every value written to
///   a delay line (and the damping filters' state at the end of each control
///   period) is flushed to 0 below 1e-20 (-400 dBFS), so a decaying tail
///   ends in exact zeros and never reaches the slow subnormal range.
/// - **Control rate.** Parameters, modulation and coefficients are updated
///   every 32 frames and interpolated per frame in between; the phase of
///   that grid is kept across `process` calls, so the output does not depend
///   on how the caller splits its blocks.
/// - **Block processing.** Inside a control period each stage (input,
///   reflections, diffusers, network, output) runs over all its frames
///   before the next. Every line is longer than a period (at least 53
///   frames), so the network reads a period's worth of every line before
///   writing any of it. The damping shelves, which are recursive, run per
///   frame with the 16 lines as the lanes of one SIMD vector; the rest of
///   the network (output taps, rotations, Hadamard transform, input) runs
///   four frames at a time with one vector of four frames per line, where
///   every step is an operation between whole vectors; 4×4 transposes move
///   between the two layouts. The ring buffers carry a mirrored copy of
///   their first frames past their end, so the reads and writes of a period
///   are contiguous runs. Each frame goes through the same arithmetic
///   wherever the caller's blocks begin and end.
///
/// Every parameter change glides: levels in 30 ms, damping and diffusion in
/// 50 ms, decay (in the log domain) and pre-delay in 200 ms, and `size` in
/// 0.5 s (the line lengths slide, which bends the pitch of the tail briefly
/// rather than clicking).
///
/// It owns its buffers and cannot be copied: they are freed when it goes
/// away (off the render thread, as it was made).
public struct Reverb: ~Copyable {
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

    /// Frames after the end of each ring buffer (the 16 lines, the two
    /// pre-delay lines) that repeat its first frames, so that the reads and
    /// writes of a whole control period are contiguous runs that never wrap.
    static let mirrorFrames = 64

    private let lineCapacity: Int                                 // power of two
    private let lineMask: Int
    private let lineStride: Int                                   // lineCapacity + mirrorFrames
    private let lines: FixedBuffer<Float>                         // 16 × lineStride
    private var writeIndex = 0

    private let lineMilliseconds: FixedBuffer<Double>             // 16, at size 1
    private let primes: FixedBuffer<Int>                          // 16, scratch for prime search
    private let baseLength: FixedBuffer<Double>                   // 16, current (gliding) length
    private let baseTarget: FixedBuffer<Double>                   // 16
    private let baseStep: FixedBuffer<Double>                     // 16
    private var baseRemaining = 0
    private var sizeTarget = -1.0
    private let sizeRampFrames: Int

    private let lineLength: FixedBuffer<Int>                      // 16, whole frames (when not gliding)
    private let readDelay: FixedBuffer<Float>                     // 16, gliding length now
    private let readDelayEnd: FixedBuffer<Float>                  // 16
    private let readDelayStep: FixedBuffer<Float>                 // 16
    private var lengthsGlide = false                              // this control period
    private var lengthsChanged = true                             // lineLength to update

    // Pair rotations: line k turns with line k + 8 by angle = depth · sin(2π·phase).
    // Per frame, cos and sin (scaled by 1/4, the Hadamard normalization)
    // step linearly from their values at the start of the control period
    // to those at its end.
    // Each LFO is a phasor (cos, sin of its phase) turned by a fixed step
    // every control period: no sine to evaluate.
    private let lfo: FixedBuffer<Double>                          // 8 each: cos, sin, step cos, step sin
    // (Scalars in memory, not SIMD8 lanes: inserting lanes one by one
    // stalled on store forwarding.)
    private let rotation: FixedBuffer<Float>                      // 8 each: cos, sin at the start; their steps; at the end
    private static let cosStart = 0, sinStart = 8, cosStep = 16, sinStep = 24, cosEnd = 32, sinEnd = 40

    // early reflections
    private let reflectionGain: FixedBuffer<Float>                // 12
    private let reflectionFrames: FixedBuffer<Float>              // 12, at size 1
    private let reflectionWhole: FixedBuffer<Int>                 // 12, steady positions (whole frames)
    private let reflectionFraction: FixedBuffer<Float>            // 12, and their fractions
    private var reflectionScale: SmoothedValue                    // size scale, glides with the lengths
    private var reflectionScaleRamp = Ramp(0)
    private var earlyLevel: SmoothedValue
    private var earlyRamp = Ramp(0)

    // Damping shelf per line (one lane each): y = b0·x + b1·x1 - a1·y1.
    private var shelfB0 = SIMD16<Float>(), shelfB1 = SIMD16<Float>(), shelfA1 = SIMD16<Float>()
    private var shelfX1 = SIMD16<Float>(), shelfY1 = SIMD16<Float>()
    private var coefficientsNeedUpdate = true

    private let tapLeft: SIMD16<Float>
    private let tapRight: SIMD16<Float>
    private let injection: SIMD16<Float>

    /// Work buffers for one control period (see `Scratch`).
    private let scratch: FixedBuffer<Float>

    private let preDelayCapacity: Int                             // power of two (+ mirrorFrames allocated)
    private let preDelayLeft: FixedBuffer<Float>
    private let preDelayRight: FixedBuffer<Float>
    private var preDelayIndex = 0

    private let diffuserStorage: FixedBuffer<Float>
    private let diffuserOffset: FixedBuffer<Int>                  // 8
    private let diffuserLength: FixedBuffer<Int>                  // 8
    private let diffuserIndex: FixedBuffer<Int>                   // 8
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
    /// Every line, filter and DC blocker holds zero (`rest` cleared them and
    /// nothing was processed since).
    private var stateCleared = false

    // per-frame ramps inside the control period
    private var preDelayRamp = Ramp(0)
    private var diffusionRamp = Ramp(0)
    private var wetRamp = Ramp(0)
    private var widthRamp = Ramp(0)
    private var clock = ControlClock(interval: Self.controlInterval)

    /// Offsets (in floats) of the work buffers inside `scratch`: per-frame
    /// signals of one control period, and the line reads and writes of that
    /// period with the 16 lines of a frame side by side.
    private enum Scratch {
        static let block = Reverb.controlInterval
        /// Per-frame signals, each with room for a vector past the block
        /// (the vector loops work in fours).
        static let row = block + 4
        static let fade = 0, inputLeft = row, inputRight = 2 * row
        static let earlyLeft = 3 * row, earlyRight = 4 * row, diffusion = 5 * row
        static let networkLeft = 6 * row, networkRight = 7 * row
        // the lines' reads, (block + 3) × 16 (gathered in fours); later the
        // damped reads by line, 16 × (block + 4)
        static let reads = 8 * row
        static let writes = reads + 16 * (block + 4)        // the damped reads, (block + 3) × 16
        static let count = writes + 16 * (block + 4)
    }

    /// Not on the render thread: allocates every buffer (about 0.5 MB at
    /// 48 kHz) for `sampleRate`.
    public init(sampleRate: Double, parameters: Parameters = Parameters()) {
        precondition(sampleRate >= 8000, "Reverb needs a sample rate of at least 8 kHz")
        self.sampleRate = sampleRate
        let p = parameters.clamped
        self.parameters = p
        let n = Self.lineCount

        let longest = Self.longestLineMilliseconds
        lineCapacity = DSPMath.powerOfTwo(atLeast: Int((longest * sampleRate / 1000).rounded(.up)) + 8 + Self.controlInterval)
        lineMask = lineCapacity - 1
        lineStride = lineCapacity + Self.mirrorFrames
        lines = FixedBuffer(repeating: 0, count: n * lineStride)

        // (Buffers are filled as locals through their pointers, then moved
        // in: a noncopyable value's members can be reached only once it is
        // whole.)
        let milliseconds = FixedBuffer<Double>(repeating: 0, count: n)
        for i in 0..<n {
            milliseconds.pointer[i] = Self.shortestLineMilliseconds
                * pow(Self.longestLineMilliseconds / Self.shortestLineMilliseconds, Double(i) / Double(n - 1))
        }
        self.lineMilliseconds = milliseconds
        primes = FixedBuffer(repeating: 0, count: n)
        baseLength = FixedBuffer(repeating: 0, count: n)
        baseTarget = FixedBuffer(repeating: 0, count: n)
        baseStep = FixedBuffer(repeating: 0, count: n)
        sizeRampFrames = Int(0.5 * sampleRate)
        lineLength = FixedBuffer(repeating: 0, count: n)
        readDelay = FixedBuffer(repeating: 0, count: n)
        readDelayEnd = FixedBuffer(repeating: 0, count: n)
        readDelayStep = FixedBuffer(repeating: 0, count: n)
        let phasors = FixedBuffer<Double>(repeating: 0, count: 4 * (n / 2))
        let gains = FixedBuffer<Float>(repeating: 0, count: Self.reflectionMilliseconds.count)
        let reflectionAt = FixedBuffer<Float>(repeating: 0, count: Self.reflectionMilliseconds.count)
        reflectionWhole = FixedBuffer(repeating: 0, count: Self.reflectionMilliseconds.count)
        reflectionFraction = FixedBuffer(repeating: 0, count: Self.reflectionMilliseconds.count)
        scratch = FixedBuffer(repeating: 0, count: Scratch.count)
        rotation = FixedBuffer(repeating: 0, count: 48)

        // Output taps: a sign pattern for the left and the same pattern with
        // half its signs flipped for the right. The two vectors are
        // orthogonal (their dot product is the sum of the flips, 0), so the
        // tails come out decorrelated; 1/4 = 1/√16 keeps unit power.
        let signs: [Float] = [1, -1, 1, 1, -1, 1, 1, -1, 1, 1, -1, -1, 1, -1, -1, 1]
        let flips: [Float] = [1, 1, -1, -1, 1, -1, 1, -1, -1, 1, -1, 1, 1, -1, -1, 1]
        // Input: left into the even lines, right into the odd ones, with
        // alternating signs; 1/√8 per line keeps unit power per channel.
        let inputSigns: [Float] = [1, 1, -1, 1, 1, -1, -1, -1, 1, -1, -1, 1, -1, 1, 1, 1]
        var tl = SIMD16<Float>(), tr = SIMD16<Float>(), inj = SIMD16<Float>()
        for i in 0..<n {
            tl[i] = 0.25 * signs[i]
            tr[i] = 0.25 * signs[i] * flips[i]
            inj[i] = inputSigns[i] / Float(8.0.squareRoot())
        }
        tapLeft = tl
        tapRight = tr
        injection = inj
        for k in 0..<(n / 2) {
            // Different slow rates (0.3-1.1 Hz) and phases, spread by the
            // golden ratio so no two pairs move together.
            let spread = (Double(k) * 0.618_033_988_75).truncatingRemainder(dividingBy: 1)
            let increment = (0.3 + 0.8 * spread) / sampleRate * Double(Self.controlInterval)    // turns per period
            let phase = (Double(k) * 0.381_966_011_25).truncatingRemainder(dividingBy: 1)
            phasors.pointer[k] = cos(2 * Double.pi * phase)
            phasors.pointer[8 + k] = sin(2 * Double.pi * phase)
            phasors.pointer[16 + k] = cos(2 * Double.pi * increment)
            phasors.pointer[24 + k] = sin(2 * Double.pi * increment)
        }
        self.lfo = phasors
        // Reflection gains fall by 1.5 dB per tap and have unit total power
        // per side (taps alternate between the same and the opposite input).
        let taps = Self.reflectionsPerSide
        var power = 0.0
        for k in 0..<taps { power += pow(0.84, 2 * Double(k)) }
        for k in 0..<Self.reflectionMilliseconds.count {
            let index = k % taps
            gains.pointer[k] = Float(pow(0.84, Double(index)) / power.squareRoot())
            reflectionAt.pointer[k] = Float(Self.reflectionMilliseconds[k] * sampleRate / 1000)
        }
        self.reflectionGain = gains
        self.reflectionFrames = reflectionAt

        let reflectionMax = Self.reflectionMilliseconds.max()!
        preDelayCapacity = DSPMath.powerOfTwo(atLeast: Int((Self.maxPreDelayMilliseconds + reflectionMax) * sampleRate / 1000)
                                                  + 4 + Self.controlInterval)
        preDelayLeft = FixedBuffer(repeating: 0, count: preDelayCapacity + Self.mirrorFrames)
        preDelayRight = FixedBuffer(repeating: 0, count: preDelayCapacity + Self.mirrorFrames)

        let offsets = FixedBuffer<Int>(repeating: 0, count: 2 * Self.diffuserCount)
        let lengths = FixedBuffer<Int>(repeating: 0, count: 2 * Self.diffuserCount)
        diffuserIndex = FixedBuffer(repeating: 0, count: 2 * Self.diffuserCount)
        var total = 0
        var longestLeft = 0, longestRight = 0
        for k in 0..<(2 * Self.diffuserCount) {
            let length = DSPMath.prime(atLeast: Int((Self.diffuserMilliseconds[k] * sampleRate / 1000).rounded()),
                                       excluding: lengths.pointer, count: k)
            lengths.pointer[k] = length
            offsets.pointer[k] = total
            total += length
            if k < Self.diffuserCount { longestLeft += length } else { longestRight += length }
        }
        self.diffuserOffset = offsets
        self.diffuserLength = lengths
        diffuserStorageCount = total
        diffuserStorage = FixedBuffer(repeating: 0, count: total)
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
        // A whole control period of reads comes from frames written before
        // it: every line (at least 6 ms, 53 frames at 8 kHz) is longer than
        // a period plus the interpolator's reach.
        precondition(primes[0] > Self.controlInterval + 2)
        settleRamps()
        updateDampingCoefficients()
    }

    /// The per-frame ramps, the lines' read positions and the rotations
    /// start where the smoothed values are now, with no glide (at the start,
    /// and after a reset's jump).
    private mutating func settleRamps() {
        preDelayRamp.reset(to: Float(preDelayFrames.current))
        diffusionRamp.reset(to: Float(diffusion.current))
        wetRamp.reset(to: Float(wet.current))
        widthRamp.reset(to: Float(width.current))
        reflectionScaleRamp.reset(to: Float(reflectionScale.current))
        earlyRamp.reset(to: Float(earlyLevel.current))
        for i in 0..<Self.lineCount { readDelayEnd[i] = Float(baseLength[i]) }
        setRotations(advancing: 0)
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
        settleRamps()
        coefficientsNeedUpdate = true
        clock.restart()
    }

    /// Number of subnormal values held in the reverb's state (diagnostics
    /// for tests; not for the render thread — it scans every buffer).
    public func subnormalStateCount() -> Int {
        let n = Self.lineCount
        var shelf = 0
        for i in 0..<n where shelfX1[i].isSubnormal || shelfY1[i].isSubnormal {
            shelf += (shelfX1[i].isSubnormal ? 1 : 0) + (shelfY1[i].isSubnormal ? 1 : 0)
        }
        return DSPMath.subnormalCount(lines.pointer, n * lineStride)
            + DSPMath.subnormalCount(preDelayLeft.pointer, preDelayCapacity + Self.mirrorFrames)
            + DSPMath.subnormalCount(preDelayRight.pointer, preDelayCapacity + Self.mirrorFrames)
            + DSPMath.subnormalCount(diffuserStorage.pointer, diffuserStorageCount)
            + shelf
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
        let (off, resetFirst) = bypass.fadedOut(needsClear: &needsClear)
        if resetFirst { reset() }
        if off { return }
        stateCleared = false

        var frame = 0
        while frame < frames {
            let (count, offset, begins) = clock.nextPiece(frames - frame)
            if begins { beginControlPeriod() }
            processBlock(inputLeft: inputLeft + frame, inputRight: inputRight + frame,
                         outputLeft: outputLeft + frame, outputRight: outputRight + frame,
                         offset: offset, count: count)
            frame += count
        }
    }

    /// Render thread only. Lets `frames` frames pass with no input and no
    /// output, for a return known to be silent (its input has been silent
    /// for longer than `tailSeconds`): the state is cleared (once, on the
    /// first call after audio), and the modulation, the parameter glides and
    /// every read and write position move on exactly as `process` on silent
    /// input from a cleared state would move them. So an instance that rests
    /// stays in step with one that processes the same frames (a stem's
    /// reverb with the mix's, the sum of the stems then equal to the mix to
    /// -120 dB), at the cost of a few additions per frame. Allocates nothing,
    /// takes no lock, makes no system call. Returns true (it can rest).
    @discardableResult
    public mutating func rest(frames: Int) -> Bool {
        guard frames > 0 else { return true }
        let (off, resetFirst) = bypass.fadedOut(needsClear: &needsClear)
        if resetFirst { reset() }
        if off { return true }
        if !stateCleared {
            clearState()
            stateCleared = true
            needsClear = true
        }
        var frame = 0
        while frame < frames {
            let (count, _, begins) = clock.nextPiece(frames - frame)
            if begins { beginControlPeriod() }
            restBlock(count: count)
            frame += count
        }
        return true
    }

    /// `processBlock` on silent input with a cleared state, less the
    /// arithmetic whose result is zero: the per-frame ramps, the positions.
    private mutating func restBlock(count: Int) {
        bypass.skip(count)
        if !(preDelayRamp.step == 0 && reflectionScaleRamp.step == 0) {
            preDelayRamp.skip(count)
            reflectionScaleRamp.skip(count)
        }
        preDelayIndex = (preDelayIndex &+ count) & (preDelayCapacity - 1)
        diffusionRamp.skip(count)
        for k in 0..<(2 * Self.diffuserCount) {
            diffuserIndex[k] = (diffuserIndex[k] &+ count) % diffuserLength[k]
        }
        if lengthsGlide {
            for i in 0..<Self.lineCount {
                var d = readDelay[i]
                let step = readDelayStep[i]
                for _ in 0..<count { d += step }
                readDelay[i] = d
            }
        }
        writeIndex = (writeIndex &+ count) & lineMask
        earlyRamp.skip(count)
        widthRamp.skip(count)
        wetRamp.skip(count)
    }

    /// Renders `count` frames (1...controlInterval) inside one control
    /// period, stage by stage: each stage runs over the whole block before
    /// the next one starts. Every frame goes through the same arithmetic as
    /// it would one frame at a time, so the output does not depend on how
    /// the caller splits its blocks.
    @inline(__always)
    private mutating func processBlock(inputLeft: UnsafePointer<Float>, inputRight: UnsafePointer<Float>,
                                       outputLeft: UnsafeMutablePointer<Float>, outputRight: UnsafeMutablePointer<Float>,
                                       offset: Int, count: Int) {
        let scratch = self.scratch.pointer
        let fade = scratch + Scratch.fade
        let xL = scratch + Scratch.inputLeft, xR = scratch + Scratch.inputRight
        let earlyL = scratch + Scratch.earlyLeft, earlyR = scratch + Scratch.earlyRight
        let netL = scratch + Scratch.networkLeft, netR = scratch + Scratch.networkRight
        let preDelayLeft = self.preDelayLeft.pointer, preDelayRight = self.preDelayRight.pointer
        let preCapacity = preDelayCapacity, preMask = preDelayCapacity - 1
        let mirror = Self.mirrorFrames

        // 1. Bypass fade, DC blocker, into the pre-delay lines. The
        // blocker's recursion runs first without its flush: the flush's
        // compare and mask would sit on the recursion's chain of latencies
        // (a frame waits for the previous one), and it changes nothing
        // while every output is at least the threshold in size. When one is
        // not (the silence after a note, an exact zero), the block runs
        // again from the same state with the flush: the same values either
        // way. The outputs wait in the input rows, which stage 2 refills.
        bypass.fill(fade, count: count)
        let dcR = dcCoefficient
        var dcInL = dcInLeft, dcOutL = dcOutLeft, dcInR = dcInRight, dcOutR = dcOutRight
        var smallestL = Float.infinity, smallestR = Float.infinity     // two chains, each shorter than the blocker's
        for n in 0..<count {
            let g = fade[n]
            let inL = inputLeft[n] * g, inR = inputRight[n] * g
            dcOutL = inL - dcInL + dcR * dcOutL; dcInL = inL
            dcOutR = inR - dcInR + dcR * dcOutR; dcInR = inR
            xL[n] = dcOutL
            xR[n] = dcOutR
            smallestL = min(smallestL, abs(dcOutL))     // (a NaN leaves it as it was)
            smallestR = min(smallestR, abs(dcOutR))
        }
        if min(smallestL, smallestR) < DSPMath.flushThreshold {
            dcInL = dcInLeft; dcOutL = dcOutLeft; dcInR = dcInRight; dcOutR = dcOutRight
            for n in 0..<count {
                let g = fade[n]
                let inL = inputLeft[n] * g, inR = inputRight[n] * g
                dcOutL = DSPMath.flush(inL - dcInL + dcR * dcOutL); dcInL = inL
                dcOutR = DSPMath.flush(inR - dcInR + dcR * dcOutR); dcInR = inR
                xL[n] = dcOutL
                xR[n] = dcOutR
            }
        }
        dcInLeft = dcInL; dcOutLeft = dcOutL; dcInRight = dcInR; dcOutRight = dcOutR
        for n in 0..<count {
            let j = (preDelayIndex &+ n) & preMask
            preDelayLeft[j] = xL[n]
            preDelayRight[j] = xR[n]
            if j < mirror {
                preDelayLeft[preCapacity &+ j] = xL[n]
                preDelayRight[preCapacity &+ j] = xR[n]
            }
        }

        // 2. Read the pre-delay and the early reflections: taps behind the
        // pre-delay, taps 0, 2, 4 of a side from that side's input, 1, 3, 5
        // from the other's. All at fixed positions unless the pre-delay or
        // the size glides (then per frame, with linear interpolation).
        let taps = Self.reflectionsPerSide
        if preDelayRamp.step == 0 && reflectionScaleRamp.step == 0 {
            // The steady pre-delay is a whole number of frames.
            let start = (preDelayIndex &- Int(preDelayRamp.value)) & preMask
            for n in 0..<count {
                xL[n] = preDelayLeft[start &+ n]
                xR[n] = preDelayRight[start &+ n]
            }
            if earlyRamp.isSteady(at: 0) {
                for n in 0..<count { earlyL[n] = 0; earlyR[n] = 0 }
            } else {
                // Four frames at a time, the six taps of a side summed in a
                // register in their order (from 0), then stored once.
                assert(taps == 6)
                for side in 0..<2 {
                    let sum = side == 0 ? earlyL : earlyR
                    let same = side == 0 ? preDelayLeft : preDelayRight
                    let other = side == 0 ? preDelayRight : preDelayLeft
                    // (No local functions here: one capturing a variable
                    // allocates its box in an unoptimized build.)
                    let k0 = side &* taps
                    let o0 = reflectionOlder(k0, same), o1 = reflectionOlder(k0 &+ 1, other)
                    let o2 = reflectionOlder(k0 &+ 2, same), o3 = reflectionOlder(k0 &+ 3, other)
                    let o4 = reflectionOlder(k0 &+ 4, same), o5 = reflectionOlder(k0 &+ 5, other)
                    let g0 = reflectionGain[k0], g1 = reflectionGain[k0 &+ 1], g2 = reflectionGain[k0 &+ 2]
                    let g3 = reflectionGain[k0 &+ 3], g4 = reflectionGain[k0 &+ 4], g5 = reflectionGain[k0 &+ 5]
                    let f0 = reflectionFraction[k0], f1 = reflectionFraction[k0 &+ 1], f2 = reflectionFraction[k0 &+ 2]
                    let f3 = reflectionFraction[k0 &+ 3], f4 = reflectionFraction[k0 &+ 4], f5 = reflectionFraction[k0 &+ 5]
                    var n = 0
                    while n < count {
                        let at = 4 &* n
                        var total = SIMD4<Float>()
                        total = total + Self.reflection(o0, at, g0, f0)
                        total = total + Self.reflection(o1, at, g1, f1)
                        total = total + Self.reflection(o2, at, g2, f2)
                        total = total + Self.reflection(o3, at, g3, f3)
                        total = total + Self.reflection(o4, at, g4, f4)
                        total = total + Self.reflection(o5, at, g5, f5)
                        UnsafeMutableRawPointer(sum + n).storeBytes(of: total, as: SIMD4<Float>.self)
                        n &+= 4
                    }
                }
            }
        } else {
            for n in 0..<count {
                let index = preDelayIndex &+ n
                let pd = preDelayRamp.next()
                let pdWhole = Int(pd)
                let pdFrac = pd - Float(pdWhole)
                let j0 = (index &- pdWhole) & preMask, j1 = (j0 &- 1) & preMask
                xL[n] = preDelayLeft[j0] + pdFrac * (preDelayLeft[j1] - preDelayLeft[j0])
                xR[n] = preDelayRight[j0] + pdFrac * (preDelayRight[j1] - preDelayRight[j0])
                let scale = reflectionScaleRamp.next()
                for side in 0..<2 {
                    let same = side == 0 ? preDelayLeft : preDelayRight
                    let other = side == 0 ? preDelayRight : preDelayLeft
                    var sum: Float = 0
                    for t in 0..<taps {
                        let k = side &* taps &+ t
                        let d = pd + scale * reflectionFrames[k]
                        let whole = Int(d)
                        let frac = d - Float(whole)
                        let source = t & 1 == 0 ? same : other
                        let i0 = (index &- whole) & preMask
                        let v0 = source[i0]
                        sum += reflectionGain[k] * (v0 + frac * (source[(i0 &- 1) & preMask] - v0))
                    }
                    if side == 0 { earlyL[n] = sum } else { earlyR[n] = sum }
                }
            }
        }
        preDelayIndex = (preDelayIndex &+ count) & preMask

        // 3. Input diffusion: allpass (g + z^-L) / (1 + g·z^-L) per stage,
        // each stage over the whole block.
        let diffusionGain = scratch + Scratch.diffusion
        diffusionRamp.fill(diffusionGain, count: count)
        for k in 0..<(2 * Self.diffuserCount) {
            diffuse(k < Self.diffuserCount ? xL : xR, count: count, stage: k, gain: diffusionGain)
        }

        // 4. The network. Gather this block's reads of every line (a
        // whole-frame run per line, or per frame with Hermite interpolation
        // while the lengths glide), 16 per frame side by side.
        let n16 = Self.lineCount
        let lines = self.lines.pointer, mask = lineMask, stride = lineStride
        let reads = scratch + Scratch.reads, writes = scratch + Scratch.writes
        let start = writeIndex
        if lengthsGlide {
            for i in 0..<n16 {
                let line = lines + i &* stride
                var d = readDelay[i]
                let step = readDelayStep[i]
                for n in 0..<count {
                    d += step
                    reads[n &* 16 &+ i] = DSPMath.readInterpolated(line, mask: mask, writeIndex: start &+ n, delay: d)
                }
                readDelay[i] = d
            }
        } else {
            // Four lines at a time, four frames at a time: four vector loads,
            // a 4×4 transpose, four vector stores. The last group may read
            // past `count` (the runs have room up to a whole period).
            var i = 0
            while i < n16 {
                let s0 = UnsafeRawPointer(lines + (i &* stride &+ ((start &- lineLength[i]) & mask)))
                let s1 = UnsafeRawPointer(lines + ((i &+ 1) &* stride &+ ((start &- lineLength[i &+ 1]) & mask)))
                let s2 = UnsafeRawPointer(lines + ((i &+ 2) &* stride &+ ((start &- lineLength[i &+ 2]) & mask)))
                let s3 = UnsafeRawPointer(lines + ((i &+ 3) &* stride &+ ((start &- lineLength[i &+ 3]) & mask)))
                let target = UnsafeMutableRawPointer(reads + i)
                var n = 0
                while n < count {
                    let t = Self.transpose(s0.loadUnaligned(fromByteOffset: n &* 4, as: SIMD4<Float>.self),
                                           s1.loadUnaligned(fromByteOffset: n &* 4, as: SIMD4<Float>.self),
                                           s2.loadUnaligned(fromByteOffset: n &* 4, as: SIMD4<Float>.self),
                                           s3.loadUnaligned(fromByteOffset: n &* 4, as: SIMD4<Float>.self))
                    target.storeBytes(of: t.0, toByteOffset: n &* 64, as: SIMD4<Float>.self)
                    target.storeBytes(of: t.1, toByteOffset: n &* 64 &+ 64, as: SIMD4<Float>.self)
                    target.storeBytes(of: t.2, toByteOffset: n &* 64 &+ 128, as: SIMD4<Float>.self)
                    target.storeBytes(of: t.3, toByteOffset: n &* 64 &+ 192, as: SIMD4<Float>.self)
                    n &+= 4
                }
                i &+= 4
            }
        }

        // Damp, per frame, one lane per line (the shelves are recursive).
        // The previous input of frame n > 0 is read again from frame n - 1:
        // carried from one iteration to the next, it made the compiler
        // shuffle it lane by lane.
        let b0 = shelfB0, b1 = shelfB1, a1 = shelfA1
        var y1 = shelfY1
        let readBytes = UnsafeRawPointer(reads), dampedBytes = UnsafeMutableRawPointer(writes)
        if count > 0 {
            y1 = b0 * readBytes.loadUnaligned(as: SIMD16<Float>.self) + b1 * shelfX1 - a1 * y1
            dampedBytes.storeBytes(of: y1, as: SIMD16<Float>.self)
        }
        for n in 1..<max(count, 1) {
            let x = readBytes.loadUnaligned(fromByteOffset: n &* 64, as: SIMD16<Float>.self)
            let x1 = readBytes.loadUnaligned(fromByteOffset: n &* 64 &- 64, as: SIMD16<Float>.self)
            y1 = b0 * x + b1 * x1 - a1 * y1
            dampedBytes.storeBytes(of: y1, toByteOffset: n &* 64, as: SIMD16<Float>.self)
        }
        if count > 0 { shelfX1 = readBytes.loadUnaligned(fromByteOffset: count &* 64 &- 64, as: SIMD16<Float>.self) }
        shelfY1 = DSPMath.flush(y1)

        // The rest four frames at a time, one vector per line (lanes are
        // frames): nothing in it is recursive within a period, and every
        // step is an operation between whole vectors. Sum the output taps,
        // rotate the pairs, mix (Hadamard), add the input, write the lines.
        // The transpose is a pass of its own, through memory: done inside
        // the loop below, the compiler would redo it for every use of its
        // results (it moves shuffles through arithmetic).
        let damped = UnsafeRawPointer(dampedBytes)
        let byLine = UnsafeMutableRawPointer(reads)          // line i's frames at 4·(i·(block + 4) + n) bytes
        let lineBytes = 4 &* (Self.controlInterval &+ 4)
        var group = 0
        while group < count {
            for r in 0..<4 {
                let t = Self.loadTransposed(damped, group &* 64 &+ 16 &* r)
                let base = byLine + (4 &* r &* lineBytes &+ 4 &* group)
                base.storeBytes(of: t.0, as: SIMD4<Float>.self)
                base.storeBytes(of: t.1, toByteOffset: lineBytes, as: SIMD4<Float>.self)
                base.storeBytes(of: t.2, toByteOffset: 2 &* lineBytes, as: SIMD4<Float>.self)
                base.storeBytes(of: t.3, toByteOffset: 3 &* lineBytes, as: SIMD4<Float>.self)
            }
            group &+= 4
        }
        let ys = UnsafeRawPointer(byLine)
        let cosStart = rotation.pointer + Self.cosStart, cosStep = rotation.pointer + Self.cosStep
        let sinStart = rotation.pointer + Self.sinStart, sinStep = rotation.pointer + Self.sinStep
        let tapLeft = self.tapLeft, tapRight = self.tapRight, injection = self.injection
        let end = start &+ count
        let target = lines + start
        // A last group of fewer than four frames is written whole to a
        // staging area (the damped reads' rows, done with by now) and its
        // frames copied to the lines after the loop: no per-line branch in
        // the loop.
        let staging = writes
        var n = 0
        while n < count {
            let at = 4 &* n
            let y0 = ys.loadUnaligned(fromByteOffset: at, as: SIMD4<Float>.self)
            let y1 = ys.loadUnaligned(fromByteOffset: at &+ lineBytes, as: SIMD4<Float>.self)
            let y2 = ys.loadUnaligned(fromByteOffset: at &+ 2 &* lineBytes, as: SIMD4<Float>.self)
            let y3 = ys.loadUnaligned(fromByteOffset: at &+ 3 &* lineBytes, as: SIMD4<Float>.self)
            let y4 = ys.loadUnaligned(fromByteOffset: at &+ 4 &* lineBytes, as: SIMD4<Float>.self)
            let y5 = ys.loadUnaligned(fromByteOffset: at &+ 5 &* lineBytes, as: SIMD4<Float>.self)
            let y6 = ys.loadUnaligned(fromByteOffset: at &+ 6 &* lineBytes, as: SIMD4<Float>.self)
            let y7 = ys.loadUnaligned(fromByteOffset: at &+ 7 &* lineBytes, as: SIMD4<Float>.self)
            let y8 = ys.loadUnaligned(fromByteOffset: at &+ 8 &* lineBytes, as: SIMD4<Float>.self)
            let y9 = ys.loadUnaligned(fromByteOffset: at &+ 9 &* lineBytes, as: SIMD4<Float>.self)
            let y10 = ys.loadUnaligned(fromByteOffset: at &+ 10 &* lineBytes, as: SIMD4<Float>.self)
            let y11 = ys.loadUnaligned(fromByteOffset: at &+ 11 &* lineBytes, as: SIMD4<Float>.self)
            let y12 = ys.loadUnaligned(fromByteOffset: at &+ 12 &* lineBytes, as: SIMD4<Float>.self)
            let y13 = ys.loadUnaligned(fromByteOffset: at &+ 13 &* lineBytes, as: SIMD4<Float>.self)
            let y14 = ys.loadUnaligned(fromByteOffset: at &+ 14 &* lineBytes, as: SIMD4<Float>.self)
            let y15 = ys.loadUnaligned(fromByteOffset: at &+ 15 &* lineBytes, as: SIMD4<Float>.self)

            let tl = tapLeft, tr = tapRight
            let left = (Self.taps(tl.lowHalf.lowHalf, y0, y1, y2, y3) + Self.taps(tl.lowHalf.highHalf, y4, y5, y6, y7))
                + (Self.taps(tl.highHalf.lowHalf, y8, y9, y10, y11) + Self.taps(tl.highHalf.highHalf, y12, y13, y14, y15))
            let right = (Self.taps(tr.lowHalf.lowHalf, y0, y1, y2, y3) + Self.taps(tr.lowHalf.highHalf, y4, y5, y6, y7))
                + (Self.taps(tr.highHalf.lowHalf, y8, y9, y10, y11) + Self.taps(tr.highHalf.highHalf, y12, y13, y14, y15))
            UnsafeMutableRawPointer(netL + n).storeBytes(of: left, as: SIMD4<Float>.self)
            UnsafeMutableRawPointer(netR + n).storeBytes(of: right, as: SIMD4<Float>.self)

            // Rotate line k with line k + 8 (cos and sin of the frames'
            // positions on the period's ramp), then the distance-8 butterfly.
            let f = SIMD4<Float>(repeating: Float(offset &+ n)) + SIMD4(1, 2, 3, 4)
            let (p0, q0) = Self.rotate(y0, y8, cosStart[0] + cosStep[0] * f, sinStart[0] + sinStep[0] * f)
            let (p1, q1) = Self.rotate(y1, y9, cosStart[1] + cosStep[1] * f, sinStart[1] + sinStep[1] * f)
            let (p2, q2) = Self.rotate(y2, y10, cosStart[2] + cosStep[2] * f, sinStart[2] + sinStep[2] * f)
            let (p3, q3) = Self.rotate(y3, y11, cosStart[3] + cosStep[3] * f, sinStart[3] + sinStep[3] * f)
            let (p4, q4) = Self.rotate(y4, y12, cosStart[4] + cosStep[4] * f, sinStart[4] + sinStep[4] * f)
            let (p5, q5) = Self.rotate(y5, y13, cosStart[5] + cosStep[5] * f, sinStart[5] + sinStep[5] * f)
            let (p6, q6) = Self.rotate(y6, y14, cosStart[6] + cosStep[6] * f, sinStart[6] + sinStep[6] * f)
            let (p7, q7) = Self.rotate(y7, y15, cosStart[7] + cosStep[7] * f, sinStart[7] + sinStep[7] * f)
            // The other three butterfly stages on each half.
            let (m0, m1, m2, m3, m4, m5, m6, m7) = Self.hadamard8(p0, p1, p2, p3, p4, p5, p6, p7)
            let (m8, m9, m10, m11, m12, m13, m14, m15) = Self.hadamard8(q0, q1, q2, q3, q4, q5, q6, q7)

            // Add the input (left into the even lines, right into the odd)
            // and write the lines.
            let inL = UnsafeRawPointer(xL + n).loadUnaligned(as: SIMD4<Float>.self)
            let inR = UnsafeRawPointer(xR + n).loadUnaligned(as: SIMD4<Float>.self)
            let whole = n &+ 4 <= count
            let base = whole ? target + n : staging, step = whole ? stride : 4
            Self.write(m0 + injection[0] * inL, base)
            Self.write(m1 + injection[1] * inR, base + step)
            Self.write(m2 + injection[2] * inL, base + 2 &* step)
            Self.write(m3 + injection[3] * inR, base + 3 &* step)
            Self.write(m4 + injection[4] * inL, base + 4 &* step)
            Self.write(m5 + injection[5] * inR, base + 5 &* step)
            Self.write(m6 + injection[6] * inL, base + 6 &* step)
            Self.write(m7 + injection[7] * inR, base + 7 &* step)
            Self.write(m8 + injection[8] * inL, base + 8 &* step)
            Self.write(m9 + injection[9] * inR, base + 9 &* step)
            Self.write(m10 + injection[10] * inL, base + 10 &* step)
            Self.write(m11 + injection[11] * inR, base + 11 &* step)
            Self.write(m12 + injection[12] * inL, base + 12 &* step)
            Self.write(m13 + injection[13] * inR, base + 13 &* step)
            Self.write(m14 + injection[14] * inL, base + 14 &* step)
            Self.write(m15 + injection[15] * inR, base + 15 &* step)
            n &+= 4
        }
        let last = count & ~3
        if last < count {
            for i in 0..<n16 {
                for j in 0..<(count &- last) { target[i &* stride &+ last &+ j] = staging[4 &* i &+ j] }
            }
        }

        // The part of the writes that landed in a mirror region goes to its twin.
        let capacity = lineCapacity
        for i in 0..<n16 {
            let line = lines + i &* stride
            if end > capacity {
                for j in capacity..<end { line[j &- capacity] = line[j] }
            } else if start < mirror {
                for j in start..<min(end, mirror) { line[capacity &+ j] = line[j] }
            }
        }
        writeIndex = end & mask

        // 5. Early reflections, width, wet level: the levels per frame
        // into the rows the input and the diffusion gains are done with,
        // then four frames at a time (the same arithmetic per frame).
        let earlyGain = xL, widthGain = xR, wetGain = diffusionGain
        earlyRamp.fill(earlyGain, count: count)
        widthRamp.fill(widthGain, count: count)
        wetRamp.fill(wetGain, count: count)
        var m = 0
        while m &+ 4 <= count {
            let early = DSPMath.load4(earlyGain + m)
            let outL = DSPMath.load4(netL + m) + early * DSPMath.load4(earlyL + m)
            let outR = DSPMath.load4(netR + m) + early * DSPMath.load4(earlyR + m)
            let wd = DSPMath.load4(widthGain + m)
            let direct = 0.5 + 0.5 * wd, cross = 0.5 - 0.5 * wd
            let gain = DSPMath.load4(wetGain + m) * DSPMath.load4(fade + m)
            UnsafeMutableRawPointer(outputLeft + m).storeBytes(of: DSPMath.load4(outputLeft + m) + gain * (direct * outL + cross * outR),
                                                              as: SIMD4<Float>.self)
            UnsafeMutableRawPointer(outputRight + m).storeBytes(of: DSPMath.load4(outputRight + m) + gain * (direct * outR + cross * outL),
                                                               as: SIMD4<Float>.self)
            m &+= 4
        }
        while m < count {
            let early = earlyGain[m]
            let outL = netL[m] + early * earlyL[m]
            let outR = netR[m] + early * earlyR[m]
            let wd = widthGain[m]
            let direct = 0.5 + 0.5 * wd, cross = 0.5 - 0.5 * wd
            let gain = wetGain[m] * fade[m]
            outputLeft[m] += gain * (direct * outL + cross * outR)
            outputRight[m] += gain * (direct * outR + cross * outL)
            m &+= 1
        }
    }

    /// Tap `k`'s older neighbour for the period's frame 0 on `source`
    /// (its pre-delay line), at the steady positions.
    @inline(__always) private func reflectionOlder(_ k: Int, _ source: UnsafeMutablePointer<Float>) -> UnsafeRawPointer {
        UnsafeRawPointer(source + ((preDelayIndex &- reflectionWhole[k] &- 1) & (preDelayCapacity - 1)))
    }

    /// One reflection tap over four frames: `older` is the tap's older
    /// neighbour for frame 0, `at` the frames' byte offset.
    @inline(__always) static func reflection(_ older: UnsafeRawPointer, _ at: Int, _ gain: Float, _ frac: Float) -> SIMD4<Float> {
        let v0 = older.loadUnaligned(fromByteOffset: at &+ 4, as: SIMD4<Float>.self)
        let v1 = older.loadUnaligned(fromByteOffset: at, as: SIMD4<Float>.self)
        return gain * (v0 + frac * (v1 - v0))
    }

    /// Four frames of four lanes at `offset` bytes (a frame every 64
    /// bytes), transposed: one vector per lane, its lanes the frames.
    @inline(__always) static func loadTransposed(_ p: UnsafeRawPointer, _ offset: Int)
        -> (SIMD4<Float>, SIMD4<Float>, SIMD4<Float>, SIMD4<Float>) {
        transpose(p.loadUnaligned(fromByteOffset: offset, as: SIMD4<Float>.self),
                  p.loadUnaligned(fromByteOffset: offset &+ 64, as: SIMD4<Float>.self),
                  p.loadUnaligned(fromByteOffset: offset &+ 128, as: SIMD4<Float>.self),
                  p.loadUnaligned(fromByteOffset: offset &+ 192, as: SIMD4<Float>.self))
    }

    /// g[0]·a + g[1]·b + g[2]·c + g[3]·d.
    @inline(__always) static func taps(_ g: SIMD4<Float>, _ a: SIMD4<Float>, _ b: SIMD4<Float>, _ c: SIMD4<Float>, _ d: SIMD4<Float>)
        -> SIMD4<Float> {
        let ab: SIMD4<Float> = g[0] * a + g[1] * b
        let cd: SIMD4<Float> = g[2] * c + g[3] * d
        return ab + cd
    }

    /// Rotates (`a`, `b`) by the angle whose cos and sin (times 1/4) are
    /// `c` and `s`, then the butterfly (sum, difference).
    @inline(__always) static func rotate(_ a: SIMD4<Float>, _ b: SIMD4<Float>, _ c: SIMD4<Float>, _ s: SIMD4<Float>)
        -> (SIMD4<Float>, SIMD4<Float>) {
        let ra = c * a - s * b, rb = s * a + c * b
        return (ra + rb, ra - rb)
    }

    /// The 8-point Walsh-Hadamard transform (unscaled, Sylvester order):
    /// three stages of butterflies at distances 4, 2, 1.
    @inline(__always) static func hadamard8(_ x0: SIMD4<Float>, _ x1: SIMD4<Float>, _ x2: SIMD4<Float>, _ x3: SIMD4<Float>,
                                            _ x4: SIMD4<Float>, _ x5: SIMD4<Float>, _ x6: SIMD4<Float>, _ x7: SIMD4<Float>)
        -> (SIMD4<Float>, SIMD4<Float>, SIMD4<Float>, SIMD4<Float>, SIMD4<Float>, SIMD4<Float>, SIMD4<Float>, SIMD4<Float>) {
        let a0 = x0 + x4, a4 = x0 - x4, a1 = x1 + x5, a5 = x1 - x5
        let a2 = x2 + x6, a6 = x2 - x6, a3 = x3 + x7, a7 = x3 - x7
        let b0 = a0 + a2, b2 = a0 - a2, b1 = a1 + a3, b3 = a1 - a3
        let b4 = a4 + a6, b6 = a4 - a6, b5 = a5 + a7, b7 = a5 - a7
        return (b0 + b1, b0 - b1, b2 + b3, b2 - b3, b4 + b5, b4 - b5, b6 + b7, b6 - b7)
    }

    /// Writes `v` (flushed) to `p[0..<4]`.
    @inline(__always) static func write(_ v: SIMD4<Float>, _ p: UnsafeMutablePointer<Float>) {
        UnsafeMutableRawPointer(p).storeBytes(of: DSPMath.flush(v), as: SIMD4<Float>.self)
    }

    /// The 4×4 transpose of the rows `a`, `b`, `c`, `d`.
    @inline(__always) static func transpose(_ a: SIMD4<Float>, _ b: SIMD4<Float>, _ c: SIMD4<Float>, _ d: SIMD4<Float>)
        -> (SIMD4<Float>, SIMD4<Float>, SIMD4<Float>, SIMD4<Float>) {
        (SIMD4(a[0], b[0], c[0], d[0]), SIMD4(a[1], b[1], c[1], d[1]),
         SIMD4(a[2], b[2], c[2], d[2]), SIMD4(a[3], b[3], c[3], d[3]))
    }

    /// Allpass stage `k` over a block, in place on `x`, with a gain per frame.
    @inline(__always) private mutating func diffuse(_ x: UnsafeMutablePointer<Float>, count: Int, stage k: Int,
                                                     gain: UnsafeMutablePointer<Float>) {
        let buffer = diffuserStorage.pointer + diffuserOffset[k]
        let length = diffuserLength[k]
        var index = diffuserIndex[k]
        var n = 0
        while n < count {
            let run = min(count &- n, length &- index)
            let b = buffer + index, xs = x + n, gs = gain + n
            // Each frame of a run reads and writes its own slot (a run
            // never wraps), so four at a time is the same arithmetic.
            var j = 0
            while j &+ 4 <= run {
                let delayed = UnsafeRawPointer(b + j).loadUnaligned(as: SIMD4<Float>.self)
                let g = UnsafeRawPointer(gs + j).loadUnaligned(as: SIMD4<Float>.self)
                let v = DSPMath.flush(UnsafeRawPointer(xs + j).loadUnaligned(as: SIMD4<Float>.self) - g * delayed)
                UnsafeMutableRawPointer(b + j).storeBytes(of: v, as: SIMD4<Float>.self)
                UnsafeMutableRawPointer(xs + j).storeBytes(of: delayed + g * v, as: SIMD4<Float>.self)
                j &+= 4
            }
            while j < run {
                let delayed = b[j]
                let g = gs[j]
                let v = DSPMath.flush(xs[j] - g * delayed)
                b[j] = v
                xs[j] = delayed + g * v
                j &+= 1
            }
            n &+= run
            index &+= run
            if index == length { index = 0 }
        }
        diffuserIndex[k] = index
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

        if lengthsGlide || lengthsChanged {
            lengthsChanged = false
            for i in 0..<n {
                readDelay[i] = readDelayEnd[i]       // exact start: no drift from summed steps
                readDelayEnd[i] = Float(baseLength[i])
                readDelayStep[i] = (readDelayEnd[i] - readDelay[i]) / Float(frames)
                lineLength[i] = Int(baseLength[i] + 0.5)
            }
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
    /// cos/sin ramps to their new angles (scaled by 1/4, which makes the
    /// unscaled Hadamard transform after them orthogonal).
    /// The eight pairs are the lanes of one vector (the same arithmetic
    /// per pair as one at a time).
    private mutating func setRotations(advancing frames: Int) {
        let depth = modulationDepth.current
        let l = UnsafeMutableRawPointer(lfo.pointer), r = UnsafeMutableRawPointer(rotation.pointer)
        let perFrame = 1 / Float(max(frames, 1))
        var phasorCos = l.loadUnaligned(as: SIMD8<Double>.self)
        var phasorSin = l.loadUnaligned(fromByteOffset: 64, as: SIMD8<Double>.self)
        if frames > 0 {
            // one period on (frames is always the control interval);
            // the factor keeps |phasor| at 1 against rounding drift
            let stepCos = l.loadUnaligned(fromByteOffset: 128, as: SIMD8<Double>.self)
            let stepSin = l.loadUnaligned(fromByteOffset: 192, as: SIMD8<Double>.self)
            let c = phasorCos * stepCos - phasorSin * stepSin, s = phasorSin * stepCos + phasorCos * stepSin
            let norm = 1.5 - 0.5 * (c * c + s * s)
            phasorCos = c * norm
            phasorSin = s * norm
            l.storeBytes(of: phasorCos, as: SIMD8<Double>.self)
            l.storeBytes(of: phasorSin, toByteOffset: 64, as: SIMD8<Double>.self)
        }
        let angle = DSPMath.sinCosOfSmallAngle(depth * phasorSin)   // |angle| <= π/4
        let c = SIMD8<Float>(0.25 * angle.cos), s = SIMD8<Float>(0.25 * angle.sin)
        // Frame n (0-based) of the period uses start + step · (n + 1);
        // the start is exactly the previous period's end.
        let cosEnd = frames == 0 ? c : r.loadUnaligned(fromByteOffset: 4 &* Self.cosEnd, as: SIMD8<Float>.self)
        let sinEnd = frames == 0 ? s : r.loadUnaligned(fromByteOffset: 4 &* Self.sinEnd, as: SIMD8<Float>.self)
        r.storeBytes(of: cosEnd, toByteOffset: 4 &* Self.cosStart, as: SIMD8<Float>.self)
        r.storeBytes(of: sinEnd, toByteOffset: 4 &* Self.sinStart, as: SIMD8<Float>.self)
        r.storeBytes(of: (c - cosEnd) * perFrame, toByteOffset: 4 &* Self.cosStep, as: SIMD8<Float>.self)
        r.storeBytes(of: (s - sinEnd) * perFrame, toByteOffset: 4 &* Self.sinStep, as: SIMD8<Float>.self)
        r.storeBytes(of: c, toByteOffset: 4 &* Self.cosEnd, as: SIMD8<Float>.self)
        r.storeBytes(of: s, toByteOffset: 4 &* Self.sinEnd, as: SIMD8<Float>.self)
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
                                       excluding: primes.pointer, count: i)
            primes[i] = target
            baseTarget[i] = Double(target)
            if glide {
                baseStep[i] = (baseTarget[i] - baseLength[i]) / Double(sizeRampFrames)
            } else {
                baseLength[i] = baseTarget[i]
            }
        }
        baseRemaining = glide ? sizeRampFrames : 0
        lengthsChanged = true
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
        lines.pointer.update(repeating: 0, count: n * lineStride)
        preDelayLeft.pointer.update(repeating: 0, count: preDelayCapacity + Self.mirrorFrames)
        preDelayRight.pointer.update(repeating: 0, count: preDelayCapacity + Self.mirrorFrames)
        diffuserStorage.pointer.update(repeating: 0, count: diffuserStorageCount)
        shelfX1 = .zero
        shelfY1 = .zero
        dcInLeft = 0; dcOutLeft = 0; dcInRight = 0; dcOutRight = 0
    }
}
