import Glibc
import Synchronization
import SpinetEffects
import SpinetMIDI

/// The engine's last stage: the master gain (the configured gain times the
/// master volume SysEx, smoothed), a requested fade-out, the optional master
/// EQ and the limiter.
///
/// The gain is a per-frame ramp, filled while a block's units render (a
/// master volume SysEx changes it at its frame) and applied when that block
/// is finished; the engine keeps one ramp per buffer set, because its
/// overlapped rendering fills one block's ramp while it finishes the block
/// before (`set` is 0 or 1).
///
/// Threads: `init` and `prepare` off the render thread; `requestFadeOut`
/// and `isFadedOut` from any thread; the rest on the render thread (or
/// before rendering starts).
public final class MasterBus: @unchecked Sendable {
    /// The limiter's ceiling: as configured, or as `setCeiling` last moved it.
    public private(set) var ceilingDBFS: Double
    public let equalizerParameters: Equalizer.Parameters?
    public private(set) var sampleRate: Double = 0
    public private(set) var maxFrames: Int = 0
    private var masterGain: Float = 1        // from --gain
    private var masterVolume: Float = 1      // from the master volume SysEx
    private var currentGain: Float = 1       // smoothed product
    private var gainTarget: Float = 1        // what the ramp being filled approaches
    private var gainCoefficient: Float = 0.001
    /// Per set (`maxFrames` each): the smoothed master gain for each frame of its block.
    private var gainRamps = FixedBuffer<Float>(repeating: 1, count: 0)
    /// The set whose ramp is being filled, and how far.
    private var rampSet = 0
    private var rampFilled = 0
    private var fadePosition: Float = 1      // 1 = not fading, 0 = faded out
    private var fadeStep: Float = 0
    private let fadeRequest = Atomic<Int>(0)   // frames of a requested fade-out; 0 = none
    private let fadeGainAtomic = Atomic<Int>(1)
    private var limiter: Limiter?
    private var equalizer: Equalizer?
    /// Stems (`prepareStems`): how many, each one's EQ, the look-ahead delay
    /// line of each (left then right, `lookahead` frames each), its position,
    /// and per frame of a block the master gain and the limiter's gain.
    public private(set) var stemCount = 0
    private var stemEqualizers: [Equalizer] = []
    private var stemDelay = FixedBuffer<Float>(repeating: 0, count: 0)
    private var stemDelayPosition = 0
    private var frameGains = FixedBuffer<Float>(repeating: 1, count: 0)
    private var limiterGains = FixedBuffer<Float>(repeating: 1, count: 0)

    /// - Parameters:
    ///   - gainDB: the master gain before the limiter.
    ///   - ceilingDBFS: the limiter's ceiling.
    ///   - equalizer: the master EQ (nil, or flat settings: none).
    public init(gainDB: Double = 0, ceilingDBFS: Double = -1, equalizer: Equalizer.Parameters? = nil) {
        self.ceilingDBFS = ceilingDBFS
        self.equalizerParameters = equalizer
        masterGain = Float(pow(10, gainDB / 20))
        currentGain = masterGain
    }

    /// Allocates the ramps, the limiter and the EQ. Not on the render thread; once.
    public func prepare(sampleRate: Double, maxFrames: Int) {
        precondition(self.maxFrames == 0, "prepare once")
        precondition(maxFrames > 0)
        self.sampleRate = sampleRate
        self.maxFrames = maxFrames
        gainRamps = FixedBuffer(repeating: 1, count: 2 * maxFrames)
        // about 5 ms to settle to a new gain: smooth, yet no audible lag
        gainCoefficient = Float(1 - exp(-1 / (0.005 * sampleRate / 3)))
        limiter = Limiter(sampleRate: sampleRate, ceilingDBFS: ceilingDBFS)
        if let p = equalizerParameters, !p.isFlat { equalizer = Equalizer(sampleRate: sampleRate, parameters: p.clamped) }
    }

    /// Makes room for `count` stems (`processStems`). After `prepare`, not
    /// on the render thread; once.
    public func prepareStems(count: Int) {
        precondition(maxFrames > 0 && stemCount == 0, "prepare the bus, then its stems, once")
        stemCount = count
        stemDelay = FixedBuffer(repeating: 0, count: 2 * count * latencyFrames)
        frameGains = FixedBuffer(repeating: 1, count: maxFrames)
        limiterGains = FixedBuffer(repeating: 1, count: maxFrames)
        if let e = equalizer { stemEqualizers = Array(repeating: e, count: count) }
    }

    /// Frames of delay the bus adds (the limiter's look-ahead).
    public var latencyFrames: Int { limiter?.lookahead ?? 0 }

    /// Sets the master gain in dB (render thread, or before rendering
    /// starts); the ramp moves to it from the next block on, or, with
    /// `ramp` false (a graph about to start), starts there.
    public func setGain(dB: Double, ramp: Bool = true) {
        masterGain = Float(pow(10, dB / 20))
        if !ramp { currentGain = masterGain * masterVolume }
    }

    /// Moves the limiter's ceiling (render thread, or before rendering
    /// starts; a plugin's automatable ceiling).
    public func setCeiling(dBFS: Double) {
        ceilingDBFS = dBFS
        limiter?.setCeiling(dBFS: dBFS)
    }

    /// Asks the render thread to fade the output to silence over `frames`
    /// frames (and stay silent). Any thread.
    public func requestFadeOut(frames: Int) {
        fadeRequest.store(max(frames, 1), ordering: .releasing)
    }

    /// True once a requested fade-out has reached silence. Any thread.
    public var isFadedOut: Bool { fadeGainAtomic.load(ordering: .acquiring) == 0 }

    // MARK: the gain ramp (render thread, while a block's units render)

    /// Starts filling the ramp of buffer set `set` for a new block.
    public func beginBlock(set: Int) {
        rampSet = set
        rampFilled = 0
        gainTarget = masterGain * masterVolume
    }

    /// Extends the ramp up to (not including) block frame `to`.
    public func fillGainRamp(to: Int) {
        let from = rampFilled
        guard to > from else { return }
        rampFilled = to
        let gainRamp = gainRamps.pointer + rampSet * maxFrames
        let target = gainTarget
        var g = currentGain
        if g == target {
            for i in from..<to { gainRamp[i] = g }
            return
        }
        for i in from..<to {
            let next = g + (target - g) * gainCoefficient
            // Snaps when close, or when float rounding stops the step: the
            // step would otherwise stall some ulps short of the target (at
            // 48 kHz, 2.4e-6 under 10^(-6/20): a -106 dB level error that
            // stays as long as the gain does).
            g = next == g || abs(target - next) < 1e-6 ? target : next
            gainRamp[i] = g
        }
        currentGain = g
    }

    /// Sets the master volume (linear) from block frame `frame` on.
    public func setMasterVolume(_ volume: Float, atFrame frame: Int) {
        fillGainRamp(to: frame)
        masterVolume = volume
        gainTarget = masterGain * masterVolume
    }

    /// Applies a master volume SysEx (or a reset, which sets it back to
    /// full) at block frame `frame`; ignores any other message.
    public func receiveSysEx(_ message: UnsafeBufferPointer<UInt8>, atFrame frame: Int) {
        if let v = SysExKind(message)?.masterVolumeGain { setMasterVolume(v, atFrame: frame) }
    }

    // MARK: processing (render thread)

    /// Takes a fade-out `requestFadeOut` asked for (render thread, once a block).
    @inline(__always)
    private func beginFade() {
        let requestedFade = fadeRequest.exchange(0, ordering: .acquiring)
        if requestedFade > 0 { fadeStep = fadePosition / Float(requestedFade) }
    }

    /// The next frame's gain: `ramp` (master gain and volume), times the
    /// fade when one runs. Smoothstep, not a straight line: the gain leaves
    /// 1 and arrives at 0 with zero slope (no corner to hear), and the last
    /// tenth of the fade is 31 dB down or more.
    @inline(__always)
    private func fadedGain(_ ramp: Float) -> Float {
        guard fadeStep > 0 else { return ramp }
        fadePosition = max(0, fadePosition - fadeStep)
        return ramp * (fadePosition * fadePosition * (3 - 2 * fadePosition))
    }

    /// Publishes the end of a fade (render thread, after the block's gains).
    @inline(__always)
    private func endFade() {
        if fadeStep > 0 && fadePosition == 0 { fadeGainAtomic.store(0, ordering: .releasing) }
    }

    /// Applies buffer set `set`'s gain ramp (and any fade), the EQ and the
    /// limiter to `frames` frames of `left`/`right`, in place.
    public func process(left: UnsafeMutablePointer<Float>, right: UnsafeMutablePointer<Float>, frames: Int, set: Int) {
        processMix(left: left, right: right, frames: frames, set: set, gains: nil)
    }

    /// `process`; with `gains`, also records each frame's gain (`frameGains`)
    /// and the limiter's (`gains`), for stems.
    @inline(__always)
    private func processMix(left: UnsafeMutablePointer<Float>, right: UnsafeMutablePointer<Float>, frames: Int, set: Int,
                            gains: UnsafeMutablePointer<Float>?) {
        let gainRamp = gainRamps.pointer + set * maxFrames
        let record = gains != nil, g = frameGains.pointer
        beginFade()
        for i in 0..<frames {
            let gain = fadedGain(gainRamp[i])
            left[i] *= gain
            right[i] *= gain
            if record { g[i] = gain }
        }
        endFade()
        if equalizer != nil { equalizer!.process(left: left, right: right, frames: frames) }
        limiter!.process(left: left, right: right, frames: frames, gains: gains)
    }

    /// The master bus for stems that add up to the mix: `left`/`right`
    /// (the mix of every unit with the shared effects, as without stems)
    /// get exactly what `process` gives them; each stem gets the same gain
    /// ramp (and fade), the EQ (each stem its own: linear, so the EQ of the
    /// sum is the sum of the EQs) and the limiter's gain, delayed by the
    /// same look-ahead. The stems then sum to the mix (within float
    /// rounding) when they sum to it before the bus. `stems` holds
    /// `stemCount` pairs of pointers, left then right, `frames` frames each.
    public func processStems(left: UnsafeMutablePointer<Float>, right: UnsafeMutablePointer<Float>,
                             stems: UnsafePointer<UnsafeMutablePointer<Float>>, frames: Int, set: Int) {
        let gains = limiterGains.pointer
        processMix(left: left, right: right, frames: frames, set: set, gains: gains)
        let g = frameGains.pointer
        var s = 0
        while s < stemCount {
            let l = stems[2 * s], r = stems[2 * s + 1]
            for i in 0..<frames {
                l[i] *= g[i]
                r[i] *= g[i]
            }
            if equalizer != nil { stemEqualizers[s].process(left: l, right: r, frames: frames) }
            s += 1
        }
        let lookahead = latencyFrames
        s = 0
        while s < stemCount {
            let l = stems[2 * s], r = stems[2 * s + 1]
            let dl = stemDelay.pointer + 2 * s * lookahead, dr = dl + lookahead
            var p = stemDelayPosition
            for i in 0..<frames {
                var inL = l[i], inR = r[i]
                // as the limiter does: nothing non-finite reaches the output
                if !inL.isFinite { inL = 0 }
                if !inR.isFinite { inR = 0 }
                l[i] = dl[p] * gains[i]
                r[i] = dr[p] * gains[i]
                dl[p] = inL
                dr[p] = inR
                p = p + 1 == lookahead ? 0 : p + 1
            }
            s += 1
        }
        stemDelayPosition = (stemDelayPosition + frames) % lookahead
    }
}
