#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A stereo chorus (and, with a short delay and feedback, a flanger):
/// up to four voices, each a copy of the input read from a delay line whose
/// length a sine LFO sweeps.
///
/// Design choices:
/// - **Voices.** Voice v's LFO runs `v / voices` of a cycle after voice 0, so
///   the delays are spread evenly over the sweep (a dense, even chorus
///   rather than one wobble). Each voice is scaled by `1/√voices`, which
///   keeps the level about constant for any voice count. When the count
///   changes, voices fade in or out and the phase offsets glide (in 0.2 s)
///   to their new spacing: nothing jumps.
/// - **Stereo.** The left and right taps of a voice are read from the left
///   and right input with LFO phases `width · 180°` apart: at width 1 one
///   side's delay grows while the other's shrinks, the classic wide chorus;
///   at 0 both sides move together.
/// - **Sweep.** A voice's delay moves between `delayMilliseconds` and
///   `delayMilliseconds + depthMilliseconds` (the GM2/GS chorus "delay" is
///   this minimum delay and its "depth" the sweep).
/// - **Interpolation.** Hermite (4-point cubic) reads: no high-frequency
///   loss that pulses with the LFO (linear interpolation's is audible at
///   flanger settings, where the feedback repeats it).
/// - **Feedback.** Voice 0's output is fed back into its own delay line
///   (a flanger's resonance); one loop, so |feedback| < 1 is always stable.
/// - **Control rate.** LFO values are computed every 32 frames and the
///   delays interpolated linearly per frame in between (a sub-10 Hz sine is
///   linear to 1e-4 over 32 frames); a frame's delay and gain depend only on
///   its position in the period, not on how the caller splits its blocks.
/// - **Block processing.** Inside a period the input is written first and
///   each tap is then read for the whole block, four frames per vector (the
///   read positions, Hermite weights and gains as vectors; each frame's four
///   neighbours in one load, thanks to a mirrored copy of the buffer's first
///   frames past its end). With feedback, voice 0 is read before the write,
///   which needs its delay to exceed the block; a flanger's shorter delays
///   take a frame-by-frame path. Levels, rate, width and feedback glide
///   in 30-50 ms; delay and depth in 0.5 s, so that even the largest change
///   bends the pitch by less than 8 % on the way: nothing ever clicks.
///
/// It owns its buffers and cannot be copied: they are freed when it goes
/// away (off the render thread, as it was made).
public struct Chorus: ~Copyable {
    public struct Parameters: Sendable, Hashable {
        /// LFO rate, 0...10 Hz.
        public var rateHz: Double
        /// Sweep of the delay (peak to peak), 0...20 ms.
        public var depthMilliseconds: Double
        /// Shortest delay, 0.1...40 ms (1-5 ms for a flanger, 5-25 for a chorus).
        public var delayMilliseconds: Double
        /// Number of voices, 1...4.
        public var voices: Int
        /// Feedback of voice 0 into its delay line, -0.95...0.95.
        public var feedback: Double
        /// LFO phase difference between left and right, 0 (0°) ... 1 (180°).
        public var width: Double
        /// Linear gain of the (100 % wet) return, 0...4.
        public var wetLevel: Double

        public init(rateHz: Double = 0.6, depthMilliseconds: Double = 3, delayMilliseconds: Double = 8,
                    voices: Int = 2, feedback: Double = 0, width: Double = 1, wetLevel: Double = 1) {
            self.rateHz = rateHz
            self.depthMilliseconds = depthMilliseconds
            self.delayMilliseconds = delayMilliseconds
            self.voices = voices
            self.feedback = feedback
            self.width = width
            self.wetLevel = wetLevel
        }

        /// These parameters with every value inside its range.
        public var clamped: Parameters {
            func clamp(_ x: Double, _ lo: Double, _ hi: Double) -> Double { x.isNaN ? lo : min(max(x, lo), hi) }
            return Parameters(rateHz: clamp(rateHz, 0, Chorus.maxRateHz),
                              depthMilliseconds: clamp(depthMilliseconds, 0, Chorus.maxDepthMilliseconds),
                              delayMilliseconds: clamp(delayMilliseconds, 0.1, Chorus.maxDelayMilliseconds),
                              voices: min(max(voices, 1), Chorus.maxVoices),
                              feedback: clamp(feedback, -0.95, 0.95),
                              width: clamp(width, 0, 1),
                              wetLevel: clamp(wetLevel, 0, 4))
        }
    }

    public static let maxVoices = 4
    public static let maxRateHz = 10.0
    public static let maxDepthMilliseconds = 20.0
    public static let maxDelayMilliseconds = 40.0
    static let controlInterval = 32

    public let sampleRate: Double

    /// The parameters in effect (targets while a change glides).
    /// Render thread only: setting them allocates nothing and takes no lock.
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

    /// Seconds after the input stops until the return is 120 dB down.
    public var tailSeconds: Double {
        let longest = (parameters.delayMilliseconds + parameters.depthMilliseconds) / 1000
        let fb = abs(parameters.feedback)
        let passes = fb < 1e-6 ? 1 : 1 + (120 / (-20 * log10(fb))).rounded(.up)
        return longest * passes
    }

    /// Frames after the end of each ring buffer that repeat its first
    /// frames, so that a tap's four neighbours are one contiguous load.
    static let mirrorFrames = 4
    static let block = controlInterval
    private let capacity: Int                   // power of two (+ mirrorFrames allocated)
    private let mask: Int
    /// Per-frame work buffers of one block: fade, then left and right sums
    /// and voice 0's reads (each with room for a vector past the block).
    private let scratch: FixedBuffer<Float>
    private let bufferLeft: FixedBuffer<Float>
    private let bufferRight: FixedBuffer<Float>
    private var writeIndex = 0

    // per tap (voice v: left 2v, right 2v+1)
    private let tapDelay: FixedBuffer<Float>
    private let tapDelayEnd: FixedBuffer<Float>
    private let tapDelayStep: FixedBuffer<Float>
    // per voice
    private let voiceGain: FixedBuffer<Float>
    private let voiceGainEnd: FixedBuffer<Float>
    private let voiceGainStep: FixedBuffer<Float>
    // Fixed buffers, not arrays: an array element's modify accessor is a
    // generic coroutine that may allocate in unoptimized builds.
    private let voiceLevel: FixedBuffer<SmoothedValue>
    private let voiceOffset: FixedBuffer<SmoothedValue>

    private var lfoPhase = 0.0                  // turns
    private var rate: SmoothedValue
    private var depthFrames: SmoothedValue
    private var delayFrames: SmoothedValue
    private var stereoPhase: SmoothedValue      // turns
    private var feedback: SmoothedValue
    private var wet: SmoothedValue
    private var feedbackRamp = Ramp(0)
    private var wetRamp = Ramp(0)
    private var bypass: BypassFade
    private var needsClear = false
    /// Both delay lines hold zero (`rest` cleared them; nothing processed since).
    private var linesCleared = false
    private var clock = ControlClock(interval: Self.controlInterval)

    /// Not on the render thread: allocates the delay lines (60 ms each).
    public init(sampleRate: Double, parameters: Parameters = Parameters()) {
        precondition(sampleRate >= 8000, "Chorus needs a sample rate of at least 8 kHz")
        self.sampleRate = sampleRate
        let p = parameters.clamped
        self.parameters = p
        let longest = (Self.maxDelayMilliseconds + Self.maxDepthMilliseconds) * sampleRate / 1000
        capacity = DSPMath.powerOfTwo(atLeast: Int(longest.rounded(.up)) + 8)
        mask = capacity - 1
        bufferLeft = FixedBuffer(repeating: 0, count: capacity + Self.mirrorFrames)
        bufferRight = FixedBuffer(repeating: 0, count: capacity + Self.mirrorFrames)
        scratch = FixedBuffer(repeating: 0, count: 5 * (Self.block + 4))
        let taps = 2 * Self.maxVoices
        tapDelay = FixedBuffer(repeating: 0, count: taps)
        tapDelayEnd = FixedBuffer(repeating: 0, count: taps)
        tapDelayStep = FixedBuffer(repeating: 0, count: taps)
        voiceGain = FixedBuffer(repeating: 0, count: Self.maxVoices)
        voiceGainEnd = FixedBuffer(repeating: 0, count: Self.maxVoices)
        voiceGainStep = FixedBuffer(repeating: 0, count: Self.maxVoices)

        let levelFrames = Int(0.03 * sampleRate)
        let shapeFrames = Int(0.05 * sampleRate)
        let offsetFrames = Int(0.2 * sampleRate)
        let sweepFrames = Int(0.5 * sampleRate)
        // (Filled as locals through their pointers, then moved in: a
        // noncopyable value's members can be reached only once it is whole.)
        let levels = FixedBuffer(repeating: SmoothedValue(0, rampFrames: levelFrames), count: Self.maxVoices)
        let offsets = FixedBuffer(repeating: SmoothedValue(0, rampFrames: offsetFrames), count: Self.maxVoices)
        for v in 0..<Self.maxVoices {
            levels.pointer[v] = SmoothedValue(v < p.voices ? 1 / Double(p.voices).squareRoot() : 0, rampFrames: levelFrames)
            offsets.pointer[v] = SmoothedValue(v < p.voices ? Double(v) / Double(p.voices) : 0, rampFrames: offsetFrames)
        }
        self.voiceLevel = levels
        self.voiceOffset = offsets
        rate = SmoothedValue(p.rateHz, rampFrames: shapeFrames)
        // Delay and depth glide slowly enough that the Doppler shift of the
        // glide stays small (at most 8 % for the largest change, 40 ms).
        depthFrames = SmoothedValue(p.depthMilliseconds * sampleRate / 1000, rampFrames: sweepFrames)
        delayFrames = SmoothedValue(p.delayMilliseconds * sampleRate / 1000, rampFrames: sweepFrames)
        stereoPhase = SmoothedValue(0.5 * p.width, rampFrames: shapeFrames)
        feedback = SmoothedValue(p.feedback, rampFrames: shapeFrames)
        wet = SmoothedValue(p.wetLevel, rampFrames: levelFrames)
        feedbackRamp.reset(to: Float(p.feedback))
        wetRamp.reset(to: Float(p.wetLevel))
        bypass = BypassFade(sampleRate: sampleRate)
        for v in 0..<Self.maxVoices {
            voiceGain[v] = Float(voiceLevel[v].current)
            voiceGainEnd[v] = voiceGain[v]
            for side in 0..<2 {
                let d = tapTarget(voice: v, side: side)
                tapDelay[2 * v + side] = d
                tapDelayEnd[2 * v + side] = d
            }
        }
    }

    /// Render thread only. Silences the chorus at once; glides jump to their targets.
    public mutating func reset() {
        needsClear = false
        bufferLeft.pointer.update(repeating: 0, count: capacity + Self.mirrorFrames)
        bufferRight.pointer.update(repeating: 0, count: capacity + Self.mirrorFrames)
        // Through local pointers: with ThreadSanitizer, swift-frontend 6.3.1
        // miscompiles a mutating call through the subscript's addressor here
        // ("Invalid bitcast ... Broken module found").
        let levels = voiceLevel.pointer, offsets = voiceOffset.pointer
        for v in 0..<Self.maxVoices {
            levels[v].jump(to: levels[v].target)
            offsets[v].jump(to: offsets[v].target)
        }
        rate.jump(to: rate.target)
        depthFrames.jump(to: depthFrames.target)
        delayFrames.jump(to: delayFrames.target)
        stereoPhase.jump(to: stereoPhase.target)
        feedback.jump(to: feedback.target)
        wet.jump(to: wet.target)
        feedbackRamp.reset(to: Float(feedback.current))
        wetRamp.reset(to: Float(wet.current))
        for v in 0..<Self.maxVoices {
            voiceGain[v] = Float(voiceLevel[v].current)
            voiceGainEnd[v] = voiceGain[v]
            voiceGainStep[v] = 0
            for side in 0..<2 {
                let d = tapTarget(voice: v, side: side)
                tapDelay[2 * v + side] = d
                tapDelayEnd[2 * v + side] = d
                tapDelayStep[2 * v + side] = 0
            }
        }
        clock.restart()
    }

    /// Render thread only. Adds the 100 %-wet stereo return of `frames`
    /// frames of input to the outputs. Any frame count, including 0.
    /// Allocates nothing, takes no lock, makes no system call.
    public mutating func process(inputLeft: UnsafePointer<Float>, inputRight: UnsafePointer<Float>,
                                 outputLeft: UnsafeMutablePointer<Float>, outputRight: UnsafeMutablePointer<Float>,
                                 frames: Int) {
        guard frames > 0 else { return }
        let (off, resetFirst) = bypass.fadedOut(needsClear: &needsClear)
        if resetFirst { reset() }
        if off { return }
        linesCleared = false
        var frame = 0
        while frame < frames {
            let (count, offset, begins) = clock.nextPiece(frames - frame)
            if begins { beginControlPeriod() }
            processBlock(inputLeft: inputLeft + frame, inputRight: inputRight + frame,
                         outputLeft: outputLeft + frame, outputRight: outputRight + frame, offset: offset, count: count)
            frame += count
        }
    }

    /// Render thread only. Lets `frames` frames pass with no input and no
    /// output, for a return known to be silent (its input has been silent
    /// for longer than `tailSeconds`): the delay lines are cleared (once,
    /// on the first call after audio), and the LFO, the glides and the
    /// write position move on exactly as `process` on silent input from
    /// cleared lines would move them, so that the chorus stays in step with
    /// an instance that processes those frames (see `Reverb.rest`).
    /// Allocates nothing, takes no lock, makes no system call. Returns true.
    @discardableResult
    public mutating func rest(frames: Int) -> Bool {
        guard frames > 0 else { return true }
        let (off, resetFirst) = bypass.fadedOut(needsClear: &needsClear)
        if resetFirst { reset() }
        if off { return true }
        if !linesCleared {
            bufferLeft.pointer.update(repeating: 0, count: capacity + Self.mirrorFrames)
            bufferRight.pointer.update(repeating: 0, count: capacity + Self.mirrorFrames)
            linesCleared = true
        }
        var frame = 0
        while frame < frames {
            let (count, _, begins) = clock.nextPiece(frames - frame)
            if begins { beginControlPeriod() }
            // processBlock's per-frame steps, less the arithmetic on zeros
            bypass.skip(count)
            feedbackRamp.skip(count)
            wetRamp.skip(count)
            writeIndex = (writeIndex &+ count) & mask
            frame += count
        }
        return true
    }

    /// Renders `count` frames from frame `offset` of the current control
    /// period. The taps are read a whole block at a time, four frames per
    /// vector, unless voice 0 feeds back from less than a block ago: then
    /// frame by frame.
    @inline(__always)
    private mutating func processBlock(inputLeft: UnsafePointer<Float>, inputRight: UnsafePointer<Float>,
                                       outputLeft: UnsafeMutablePointer<Float>, outputRight: UnsafeMutablePointer<Float>,
                                       offset: Int, count: Int) {
        let bufferLeft = self.bufferLeft.pointer, bufferRight = self.bufferRight.pointer, mask = self.mask, capacity = self.capacity
        let scratch = self.scratch.pointer
        let fade = scratch, sumL = scratch + Self.block, sumR = scratch + 2 * (Self.block + 4)
        let feedL = scratch + 3 * (Self.block + 4), feedR = scratch + 4 * (Self.block + 4)
        bypass.fill(fade, count: count)
        sumL.update(repeating: 0, count: count)
        sumR.update(repeating: 0, count: count)
        let noFeedback = feedbackRamp.isSteady(at: 0)
        // Voice 0's reads all come from before this block if its delay
        // (linear over the period: extreme at its ends) stays over it.
        // (Two-argument min: the variadic one allocates its array in debug builds.)
        let shortest = min(min(tapDelay[0], tapDelay[1]), min(tapDelayEnd[0], tapDelayEnd[1]))
        if noFeedback || shortest >= Float(count + 2) {
            let start = writeIndex
            if !noFeedback {
                readTaps(voice: 0, offset: offset, count: count, sumL: sumL, sumR: sumR, feedL: feedL, feedR: feedR)
            }
            var feedbackLevel = feedbackRamp            // in a register, not stored back every frame
            for n in 0..<count {
                let fb = feedbackLevel.next()
                let j = (start &+ n) & mask
                let l = DSPMath.flush(inputLeft[n] * fade[n] + (noFeedback ? 0 : fb * feedL[n]))
                let r = DSPMath.flush(inputRight[n] * fade[n] + (noFeedback ? 0 : fb * feedR[n]))
                bufferLeft[j] = l
                bufferRight[j] = r
                if j < Self.mirrorFrames {
                    bufferLeft[capacity &+ j] = l
                    bufferRight[capacity &+ j] = r
                }
            }
            feedbackRamp = feedbackLevel
            for v in (noFeedback ? 0 : 1)..<Self.maxVoices where v == 0 || voiceGain[v] != 0 || voiceGainStep[v] != 0 {
                readTaps(voice: v, offset: offset, count: count, sumL: sumL, sumR: sumR, feedL: nil, feedR: nil)
            }
            writeIndex = (start &+ count) & mask
        } else {
            for n in 0..<count {
                let position = Float(offset &+ n &+ 1)
                var l0: Float = 0, r0: Float = 0
                for v in 0..<Self.maxVoices {
                    let g = voiceGain[v] + voiceGainStep[v] * position
                    if g != 0 || v == 0 {
                        let l = DSPMath.readInterpolated(bufferLeft, mask: mask, writeIndex: writeIndex,
                                                         delay: tapDelay[2 * v] + tapDelayStep[2 * v] * position)
                        let r = DSPMath.readInterpolated(bufferRight, mask: mask, writeIndex: writeIndex,
                                                         delay: tapDelay[2 * v + 1] + tapDelayStep[2 * v + 1] * position)
                        if v == 0 { l0 = l; r0 = r }
                        sumL[n] += g * l
                        sumR[n] += g * r
                    }
                }
                let fb = feedbackRamp.next()
                let l = DSPMath.flush(inputLeft[n] * fade[n] + fb * l0)
                let r = DSPMath.flush(inputRight[n] * fade[n] + fb * r0)
                bufferLeft[writeIndex] = l
                bufferRight[writeIndex] = r
                if writeIndex < Self.mirrorFrames {
                    bufferLeft[capacity &+ writeIndex] = l
                    bufferRight[capacity &+ writeIndex] = r
                }
                writeIndex = (writeIndex &+ 1) & mask
            }
        }
        // The wet level per frame into a row the taps are done with, then
        // four frames at a time (the same arithmetic per frame).
        let wetGain = feedL
        wetRamp.fill(wetGain, count: count)
        var m = 0
        while m &+ 4 <= count {
            let gain = DSPMath.load4(wetGain + m) * DSPMath.load4(fade + m)
            UnsafeMutableRawPointer(outputLeft + m).storeBytes(of: DSPMath.load4(outputLeft + m) + gain * DSPMath.load4(sumL + m), as: SIMD4<Float>.self)
            UnsafeMutableRawPointer(outputRight + m).storeBytes(of: DSPMath.load4(outputRight + m) + gain * DSPMath.load4(sumR + m), as: SIMD4<Float>.self)
            m &+= 4
        }
        while m < count {
            let gain = wetGain[m] * fade[m]
            outputLeft[m] += gain * sumL[m]
            outputRight[m] += gain * sumR[m]
            m &+= 1
        }
    }

    /// Adds voice `v`'s taps, read for frames 0..<count of the block (frame
    /// n sits n frames after `writeIndex`), times its gain, to `sumL` and
    /// `sumR` (and stores the plain reads in `feedL`, `feedR` if given).
    /// Four frames at a time: the delays, fractions and read positions as
    /// vectors, the Hermite interpolation on vectors of four frames. Its four
    /// rows of neighbours are four loads when the whole delay is the same for
    /// the four frames (almost always), else each frame's neighbours in one
    /// load and a 4×4 transpose. Writes up to three values past `count`.
    @inline(__always)
    private func readTaps(voice v: Int, offset: Int, count: Int,
                          sumL: UnsafeMutablePointer<Float>, sumR: UnsafeMutablePointer<Float>,
                          feedL: UnsafeMutablePointer<Float>?, feedR: UnsafeMutablePointer<Float>?) {
        let gainStart = voiceGain[v], gainStep = voiceGainStep[v]
        for side in 0..<2 {
            let buffer = side == 0 ? bufferLeft.pointer : bufferRight.pointer
            let sum = side == 0 ? sumL : sumR
            let feed = side == 0 ? feedL : feedR
            let delayStart = tapDelay[2 * v + side], delayStep = tapDelayStep[2 * v + side]
            var n = 0
            while n < count {
                let position = SIMD4<Float>(repeating: Float(offset &+ n)) + SIMD4(1, 2, 3, 4)
                let delay = delayStart + delayStep * position
                // floor(delay) (or delay - 1 at whole numbers, with t = 1):
                // rounding delay - 0.5 by adding 2^23 leaves the whole part
                // in the low mantissa bits (delay is 2...2^22).
                let magic = (delay - 0.5) + 8_388_608
                let whole = unsafeBitCast(magic, to: SIMD4<Int32>.self) & 0x7F_FFFF
                let t = delay - (magic - 8_388_608)
                let first = SIMD4<UInt32>(repeating: UInt32(truncatingIfNeeded: writeIndex &+ n &- 2)) &+ SIMD4(0, 1, 2, 3)
                let index = (first &- unsafeBitCast(whole, to: SIMD4<UInt32>.self)) & UInt32(truncatingIfNeeded: mask)
                let p = UnsafeRawPointer(buffer)
                let i0 = Int(index[0]), i3 = Int(index[3])
                let rows: (SIMD4<Float>, SIMD4<Float>, SIMD4<Float>, SIMD4<Float>)
                if i3 == i0 &+ 3 {
                    // The usual case: the same whole delay for all four
                    // frames (the delay moves far less than a frame per
                    // frame), so row j is simply the four values from i0 + j.
                    rows = (p.loadUnaligned(fromByteOffset: i0 &* 4, as: SIMD4<Float>.self),
                            p.loadUnaligned(fromByteOffset: i0 &* 4 &+ 4, as: SIMD4<Float>.self),
                            p.loadUnaligned(fromByteOffset: i0 &* 4 &+ 8, as: SIMD4<Float>.self),
                            p.loadUnaligned(fromByteOffset: i0 &* 4 &+ 12, as: SIMD4<Float>.self))
                } else {
                    rows = Self.transpose(p.loadUnaligned(fromByteOffset: i0 &* 4, as: SIMD4<Float>.self),
                                          p.loadUnaligned(fromByteOffset: Int(index[1]) &* 4, as: SIMD4<Float>.self),
                                          p.loadUnaligned(fromByteOffset: Int(index[2]) &* 4, as: SIMD4<Float>.self),
                                          p.loadUnaligned(fromByteOffset: i3 &* 4, as: SIMD4<Float>.self))
                }
                // Rows: the samples at whole delay + 2, + 1, + 0, - 1. The
                // Hermite interpolation as weights on them (the polynomial
                // of DSPMath.hermite regrouped by sample), so that each row
                // is used once: the compiler then keeps the transpose as is
                // instead of redoing it for every use.
                let t2 = t * t
                let wY2 = 0.5 * t2 * (t - 1)
                let wY1 = t * ((2 - 1.5 * t) * t + 0.5)
                let wY0 = (1.5 * t - 2.5) * t2 + 1
                let wYm1 = t * ((1 - 0.5 * t) * t - 0.5)
                let value = (wY2 * rows.0 + wY1 * rows.1) + (wY0 * rows.2 + wYm1 * rows.3)
                let gain = gainStart + gainStep * position
                let s = UnsafeMutableRawPointer(sum + n)
                s.storeBytes(of: s.load(as: SIMD4<Float>.self) + gain * value, as: SIMD4<Float>.self)
                if let feed { UnsafeMutableRawPointer(feed + n).storeBytes(of: value, as: SIMD4<Float>.self) }
                n &+= 4
            }
        }
    }

    /// The 4×4 transpose of the rows `a`, `b`, `c`, `d`.
    @inline(__always) static func transpose(_ a: SIMD4<Float>, _ b: SIMD4<Float>, _ c: SIMD4<Float>, _ d: SIMD4<Float>)
        -> (SIMD4<Float>, SIMD4<Float>, SIMD4<Float>, SIMD4<Float>) {
        (SIMD4(a[0], b[0], c[0], d[0]), SIMD4(a[1], b[1], c[1], d[1]),
         SIMD4(a[2], b[2], c[2], d[2]), SIMD4(a[3], b[3], c[3], d[3]))
    }

    // MARK: Control

    /// Delay (frames) of a voice's tap at the current LFO phase and glides.
    private func tapTarget(voice v: Int, side: Int) -> Float {
        let phase = lfoPhase + voiceOffset[v].current + (side == 1 ? stereoPhase.current : 0)
        let sweep = 0.5 + 0.5 * DSPMath.sine(turns: phase)
        // Hermite needs two frames of history on the near side.
        return Float(max(2.0, delayFrames.current + depthFrames.current * sweep))
    }

    private mutating func beginControlPeriod() {
        let frames = Self.controlInterval
        bypass.beginPeriod(frames: frames)
        wetRamp.begin(to: Float(wet.advance(frames)), frames: frames)
        feedbackRamp.begin(to: Float(feedback.advance(frames)), frames: frames)
        let hz = rate.advance(frames)
        lfoPhase += hz * Double(frames) / sampleRate
        if lfoPhase >= 1 { lfoPhase -= Double(Int(lfoPhase)) }
        depthFrames.advance(frames)
        delayFrames.advance(frames)
        stereoPhase.advance(frames)
        let levels = voiceLevel.pointer, offsets = voiceOffset.pointer  // see `reset`
        for v in 0..<Self.maxVoices {
            offsets[v].advance(frames)
            voiceGain[v] = voiceGainEnd[v]
            voiceGainEnd[v] = Float(levels[v].advance(frames))
            voiceGainStep[v] = (voiceGainEnd[v] - voiceGain[v]) / Float(frames)
            for side in 0..<2 {
                let t = 2 * v + side
                tapDelay[t] = tapDelayEnd[t]
                tapDelayEnd[t] = tapTarget(voice: v, side: side)
                tapDelayStep[t] = (tapDelayEnd[t] - tapDelay[t]) / Float(frames)
            }
        }
    }

    private mutating func applyParameters() {
        let p = parameters
        rate.set(p.rateHz)
        depthFrames.set(p.depthMilliseconds * sampleRate / 1000)
        delayFrames.set(p.delayMilliseconds * sampleRate / 1000)
        stereoPhase.set(0.5 * p.width)
        feedback.set(p.feedback)
        wet.set(p.wetLevel)
        let levels = voiceLevel.pointer, offsets = voiceOffset.pointer  // see `reset`
        for v in 0..<Self.maxVoices {
            levels[v].set(v < p.voices ? 1 / Double(p.voices).squareRoot() : 0)
            if v < p.voices { offsets[v].set(Double(v) / Double(p.voices)) }
        }
    }
}
