#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A stereo or ping-pong echo, its time in milliseconds or a note value at
/// the current tempo, with a low-pass and a high-pass filter in the
/// feedback loop (each repeat is darker and thinner than the last, as on a
/// tape echo).
///
/// Design choices:
/// - **Exact times.** The delay is a whole number of frames (the time
///   rounded to the nearest frame) and is read without interpolation: an
///   impulse comes back exactly `delayFrames` later, every time; at 120 bpm
///   and 48 kHz a dotted eighth is 18 000 frames (375 ms).
/// - **Changing the time crossfades** (30 ms) from the old read position to
///   the new one instead of sliding the delay (a slide would bend the pitch
///   of the echoes: fine for a tape effect, wrong for a tempo change in the
///   middle of a song). A change that arrives during a crossfade is taken up
///   when it ends.
/// - **Ping-pong.** The input (mono sum) enters the left line; each line
///   feeds the other, so repeats alternate left, right, left. In stereo mode
///   each side feeds itself. Switching modes crossfades the routing.
/// - **Loop filters.** Butterworth (RBJ) low-pass and high-pass, applied to
///   what is read from the line, so both the echo and what is fed back are
///   filtered: the n-th repeat has been through the filters n times. A
///   filter set to `nil` is crossfaded out, and when out the path is exactly
///   transparent (the repeats fall by exactly `feedback` each).
/// - Feedback, levels and filter corners glide (30-50 ms).
///
/// It owns its buffers and cannot be copied: they are freed when it goes
/// away (off the render thread, as it was made).
public struct Delay: ~Copyable {
    public enum Time: Sendable, Hashable {
        case milliseconds(Double)
        /// A note value at the tempo set with `setTempo(bpm:)`.
        case note(NoteValue)
    }

    public enum Mode: String, Sendable, Hashable, CaseIterable {
        case stereo
        case pingPong = "ping-pong"
    }

    public struct Parameters: Sendable, Hashable {
        public var time: Time
        public var mode: Mode
        /// Gain of each repeat relative to the one before, 0...0.98.
        public var feedback: Double
        /// Low-pass corner in the loop (20...20000 Hz), or nil for none.
        public var lowPassHz: Double?
        /// High-pass corner in the loop (20...20000 Hz), or nil for none.
        public var highPassHz: Double?
        /// Linear gain of the (100 % wet) return, 0...4.
        public var wetLevel: Double

        public init(time: Time = .note(.eighth), mode: Mode = .pingPong, feedback: Double = 0.35,
                    lowPassHz: Double? = 6000, highPassHz: Double? = 150, wetLevel: Double = 1) {
            self.time = time
            self.mode = mode
            self.feedback = feedback
            self.lowPassHz = lowPassHz
            self.highPassHz = highPassHz
            self.wetLevel = wetLevel
        }

        /// These parameters with every value inside its range.
        public var clamped: Parameters {
            func clamp(_ x: Double, _ lo: Double, _ hi: Double) -> Double { x.isNaN ? lo : min(max(x, lo), hi) }
            var p = self
            switch time {
            case .milliseconds(let ms): p.time = .milliseconds(clamp(ms, 0, 60_000))
            case .note(let value): p.time = .note(NoteValue(quarterNotes: clamp(value.quarterNotes, 0, 64)))
            }
            p.feedback = clamp(feedback, 0, 0.98)
            p.lowPassHz = lowPassHz.map { clamp($0, 20, 20000) }
            p.highPassHz = highPassHz.map { clamp($0, 20, 20000) }
            p.wetLevel = clamp(wetLevel, 0, 4)
            return p
        }
    }

    static let controlInterval = 32
    static let crossfadeSeconds = 0.03

    public let sampleRate: Double
    /// The longest delay the buffers hold.
    public let maxDelaySeconds: Double

    /// The parameters in effect (targets while a change glides).
    /// Render thread only: setting them allocates nothing and takes no lock.
    public var parameters: Parameters {
        didSet {
            parameters = parameters.clamped
            applyParameters()
        }
    }

    /// Tempo for note-value times, in quarter notes per minute.
    public private(set) var tempo: Double

    /// Fades the return out (and stops computing once silent) or back in.
    /// Render thread only.
    public var isBypassed: Bool {
        get { bypass.isBypassRequested }
        set { bypass.set(bypassed: newValue) }
    }

    /// The delay the parameters and tempo ask for, in frames (reached after
    /// at most two crossfades).
    public private(set) var delayFrames: Int

    /// Seconds after the input stops until the repeats are 120 dB down
    /// (filters ignored, so an upper bound).
    public var tailSeconds: Double {
        let seconds = Double(delayFrames) / sampleRate
        let fb = parameters.feedback
        let repeats = fb < 1e-6 ? 1 : 1 + (120 / (-20 * log10(fb))).rounded(.up)
        return seconds * repeats + 2 * Self.crossfadeSeconds
    }

    private let capacity: Int
    private let mask: Int
    private let maxFrames: Int
    private let bufferLeft: SilentLine
    private let bufferRight: SilentLine
    private var writeIndex = 0

    private var tapCurrent: Int
    private var tapNext: Int
    private var crossfade: Float = 0           // 0 = all tapCurrent
    private var crossfadeStep: Float = 0
    private var crossfading = false
    private let crossfadeFrames: Int

    private var lowPass = Biquad()
    private var highPass = Biquad()
    private var lowPassLog: SmoothedValue
    private var highPassLog: SmoothedValue
    private var lowPassOn: SmoothedValue
    private var highPassOn: SmoothedValue
    private var pingPong: SmoothedValue
    private var feedback: SmoothedValue
    private var wet: SmoothedValue
    private var lowPassRamp = Ramp(0)
    private var highPassRamp = Ramp(0)
    private var pingPongRamp = Ramp(0)
    private var feedbackRamp = Ramp(0)
    private var wetRamp = Ramp(0)
    private var bypass: BypassFade
    private var needsClear = false
    private var clock = ControlClock(interval: Self.controlInterval)

    /// Not on the render thread: allocates two lines of `maxDelaySeconds`
    /// (default 4 s: a whole note down to 60 bpm; 1.5 MB at 48 kHz).
    public init(sampleRate: Double, maxDelaySeconds: Double = 4, parameters: Parameters = Parameters(), bpm: Double = 120) {
        precondition(sampleRate >= 8000, "Delay needs a sample rate of at least 8 kHz")
        self.sampleRate = sampleRate
        self.maxDelaySeconds = max(maxDelaySeconds, 0.01)
        let p = parameters.clamped
        self.parameters = p
        tempo = min(max(bpm, 10), 400)
        maxFrames = Int((self.maxDelaySeconds * sampleRate).rounded())
        capacity = DSPMath.powerOfTwo(atLeast: maxFrames + 1)
        mask = capacity - 1
        bufferLeft = SilentLine(count: capacity)
        bufferRight = SilentLine(count: capacity)
        crossfadeFrames = max(1, Int(Self.crossfadeSeconds * sampleRate))
        delayFrames = 1
        tapCurrent = 1
        tapNext = 1

        let levelFrames = Int(0.03 * sampleRate)
        let shapeFrames = Int(0.05 * sampleRate)
        lowPassLog = SmoothedValue(log(p.lowPassHz ?? 20000), rampFrames: shapeFrames)
        highPassLog = SmoothedValue(log(p.highPassHz ?? 20), rampFrames: shapeFrames)
        lowPassOn = SmoothedValue(p.lowPassHz == nil ? 0 : 1, rampFrames: shapeFrames)
        highPassOn = SmoothedValue(p.highPassHz == nil ? 0 : 1, rampFrames: shapeFrames)
        pingPong = SmoothedValue(p.mode == .pingPong ? 1 : 0, rampFrames: shapeFrames)
        feedback = SmoothedValue(p.feedback, rampFrames: levelFrames)
        wet = SmoothedValue(p.wetLevel, rampFrames: levelFrames)
        bypass = BypassFade(sampleRate: sampleRate)
        delayFrames = frames(for: p.time)
        tapCurrent = delayFrames
        tapNext = delayFrames
        settleRamps()
    }

    /// The per-frame ramps and the filters start where the smoothed values
    /// are now, with no glide (at the start, and after a reset's jump).
    private mutating func settleRamps() {
        lowPassRamp.reset(to: Float(lowPassOn.current))
        highPassRamp.reset(to: Float(highPassOn.current))
        pingPongRamp.reset(to: Float(pingPong.current))
        feedbackRamp.reset(to: Float(feedback.current))
        wetRamp.reset(to: Float(wet.current))
        updateFilters()
    }

    /// Render thread only. Sets the tempo for note-value times (10...400 bpm);
    /// the delay crossfades to the new time.
    public mutating func setTempo(bpm: Double) {
        guard bpm.isFinite else { return }
        tempo = min(max(bpm, 10), 400)
        delayFrames = frames(for: parameters.time)
    }

    /// Render thread only. Silences the delay at once; glides jump to their targets.
    public mutating func reset() {
        needsClear = false
        bufferLeft.pointer.update(repeating: 0, count: capacity)
        bufferRight.pointer.update(repeating: 0, count: capacity)
        lowPass.reset()
        highPass.reset()
        tapCurrent = delayFrames
        tapNext = delayFrames
        crossfading = false
        crossfade = 0
        crossfadeStep = 0
        lowPassLog.jump(to: lowPassLog.target)
        highPassLog.jump(to: highPassLog.target)
        lowPassOn.jump(to: lowPassOn.target)
        highPassOn.jump(to: highPassOn.target)
        pingPong.jump(to: pingPong.target)
        feedback.jump(to: feedback.target)
        wet.jump(to: wet.target)
        settleRamps()
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
        let bufferLeft = self.bufferLeft.pointer, bufferRight = self.bufferRight.pointer, mask = self.mask

        var frame = 0
        while frame < frames {
            let (count, _, begins) = clock.nextPiece(frames - frame)
            if begins { beginControlPeriod() }
            let end = frame + count
            while frame < end {
                let fade = bypass.next()
                // Read (crossfading between two positions while the time changes).
                let a = (writeIndex &- tapCurrent) & mask
                var readL = bufferLeft[a], readR = bufferRight[a]
                if crossfading {
                    crossfade += crossfadeStep
                    let b = (writeIndex &- tapNext) & mask
                    readL += crossfade * (bufferLeft[b] - readL)
                    readR += crossfade * (bufferRight[b] - readR)
                    if crossfade >= 1 {
                        tapCurrent = tapNext
                        crossfading = false
                        crossfade = 0
                    }
                }
                // Loop filters, each crossfaded in by its on/off glide.
                let lpOn = Double(lowPassRamp.next()), hpOn = Double(highPassRamp.next())
                var l = Double(readL), r = Double(readR)
                let (lpL, lpR) = lowPass.process(l, r)
                l += lpOn * (lpL - l)
                r += lpOn * (lpR - r)
                let (hpL, hpR) = highPass.process(l, r)
                l += hpOn * (hpL - l)
                r += hpOn * (hpR - r)
                let echoL = Float(l), echoR = Float(r)

                // Write: stereo (each side feeds itself) blended with ping-pong
                // (mono input into the left; each side feeds the other).
                let fb = feedbackRamp.next()
                let ping = pingPongRamp.next()
                let inL = inputLeft[frame] * fade, inR = inputRight[frame] * fade
                let stereoL = inL + fb * echoL, stereoR = inR + fb * echoR
                let pingL = 0.5 * (inL + inR) + fb * echoR, pingR = fb * echoL
                bufferLeft[writeIndex] = DSPMath.flush(stereoL + ping * (pingL - stereoL))
                bufferRight[writeIndex] = DSPMath.flush(stereoR + ping * (pingR - stereoR))
                writeIndex = (writeIndex &+ 1) & mask

                let gain = wetRamp.next() * fade
                outputLeft[frame] += gain * echoL
                outputRight[frame] += gain * echoR
                frame += 1
            }
        }
    }

    // MARK: Control

    private func frames(for time: Time) -> Int {
        let seconds: Double
        switch time {
        case .milliseconds(let ms): seconds = ms / 1000
        case .note(let value): seconds = value.seconds(bpm: tempo)
        }
        return min(max(Int((seconds * sampleRate).rounded()), 1), maxFrames)
    }

    private mutating func beginControlPeriod() {
        let frames = Self.controlInterval
        bypass.beginPeriod(frames: frames)
        wetRamp.begin(to: Float(wet.advance(frames)), frames: frames)
        feedbackRamp.begin(to: Float(feedback.advance(frames)), frames: frames)
        pingPongRamp.begin(to: Float(pingPong.advance(frames)), frames: frames)
        lowPassRamp.begin(to: Float(lowPassOn.advance(frames)), frames: frames)
        highPassRamp.begin(to: Float(highPassOn.advance(frames)), frames: frames)
        if lowPassLog.isSmoothing || highPassLog.isSmoothing {
            lowPassLog.advance(frames)
            highPassLog.advance(frames)
            updateFilters()
        }
        if !crossfading && delayFrames != tapCurrent {
            tapNext = delayFrames
            crossfade = 0
            crossfadeStep = 1 / Float(crossfadeFrames)
            crossfading = true
        }
    }

    private mutating func updateFilters() {
        lowPass.coefficients = .lowPass(frequency: exp(lowPassLog.current), sampleRate: sampleRate)
        highPass.coefficients = .highPass(frequency: exp(highPassLog.current), sampleRate: sampleRate)
    }

    private mutating func applyParameters() {
        let p = parameters
        delayFrames = frames(for: p.time)
        feedback.set(p.feedback)
        wet.set(p.wetLevel)
        pingPong.set(p.mode == .pingPong ? 1 : 0)
        lowPassOn.set(p.lowPassHz == nil ? 0 : 1)
        highPassOn.set(p.highPassHz == nil ? 0 : 1)
        // A filter being switched off keeps its corner while it fades out.
        if let hz = p.lowPassHz { lowPassLog.set(log(hz)) }
        if let hz = p.highPassHz { highPassLog.set(log(hz)) }
    }
}
