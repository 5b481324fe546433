import SpinetEffects
import SpinetMIDI

/// The three stereo sends the shared effects take (reverb, chorus, delay),
/// as planar buffers at one block's first frame.
public struct SendBus {
    public var reverbLeft: UnsafeMutablePointer<Float>
    public var reverbRight: UnsafeMutablePointer<Float>
    public var chorusLeft: UnsafeMutablePointer<Float>
    public var chorusRight: UnsafeMutablePointer<Float>
    public var delayLeft: UnsafeMutablePointer<Float>
    public var delayRight: UnsafeMutablePointer<Float>

    /// Six consecutive planar buffers of `stride` frames from `base`:
    /// reverb left and right, then chorus, then delay.
    public init(planar base: UnsafeMutablePointer<Float>, stride: Int) {
        reverbLeft = base; reverbRight = base + stride
        chorusLeft = base + 2 * stride; chorusRight = base + 3 * stride
        delayLeft = base + 4 * stride; delayRight = base + 5 * stride
    }

    /// A unit output's sends.
    public init(_ output: UnitOutput) {
        reverbLeft = output.reverbLeft; reverbRight = output.reverbRight
        chorusLeft = output.chorusLeft; chorusRight = output.chorusRight
        delayLeft = output.delayLeft; delayRight = output.delayRight
    }

    /// Send `effect`'s pair (0 the reverb, 1 the chorus, 2 the delay).
    @inline(__always)
    public func pair(_ effect: Int) -> (left: UnsafeMutablePointer<Float>, right: UnsafeMutablePointer<Float>) {
        switch effect {
        case 0: return (reverbLeft, reverbRight)
        case 1: return (chorusLeft, chorusRight)
        default: return (delayLeft, delayRight)
        }
    }
}

/// One send effect and its idle tracking: an effect whose input has been
/// silent for longer than its tail is skipped (its output would be silence).
/// It owns its effect, so it cannot be copied either.
struct SendSlot<Effect: SendEffect & ~Copyable>: ~Copyable {
    var effect: Effect
    /// Silent input frames in a row (saturating).
    var idle = Int.max
    /// The tail in frames, plus one block.
    var tailFrames: Int

    init(_ effect: consuming Effect, tailFrames: Int) {
        self.effect = effect
        self.tailFrames = tailFrames
    }

    /// The return level (linear) reached, the one asked for, and the ramp
    /// toward it: `levelRampFrames` frames whatever the calls' sizes, so the
    /// output does not depend on how a host splits its blocks.
    var level: Float = 1
    var levelTarget: Float = 1
    var levelStep: Float = 0
    var levelRampLeft = 0
    static var levelRampFrames: Int { 256 }

    /// Asks for a new return level (render thread); without `ramp`, at once.
    mutating func setLevel(_ target: Float, ramp: Bool = true) {
        guard ramp else {
            level = target; levelTarget = target; levelRampLeft = 0
            return
        }
        guard target != levelTarget else { return }
        levelTarget = target
        levelRampLeft = Self.levelRampFrames
        levelStep = (target - level) / Float(Self.levelRampFrames)
    }

    /// Processes `frames` frames: the effect runs on exactly the frames
    /// within `tailFrames` of the last non-silent input frame (decided frame
    /// by frame, so a host's block split changes nothing, the effect's
    /// LFOs included), its return added to the outputs at the level.
    /// Returns whether it added anything (false: the outputs are as they were).
    /// `activity`, when given (`frames` flags), records which frames the
    /// effect ran on: stems' effects follow it (`follow`).
    @inline(__always) @discardableResult
    mutating func process(_ inputLeft: UnsafeMutablePointer<Float>, _ inputRight: UnsafeMutablePointer<Float>,
                          _ outputLeft: UnsafeMutablePointer<Float>, _ outputRight: UnsafeMutablePointer<Float>, frames: Int,
                          scratch: UnsafeMutablePointer<Float>, activity: UnsafeMutablePointer<Bool>? = nil) -> Bool {
        // full return and steady: straight into the outputs
        let direct = level == 1 && levelRampLeft == 0
        if !direct { scratch.update(repeating: 0, count: 2 * frames) }
        var ran = false
        var runStart = -1
        var i = 0
        while i <= frames {
            var active = false
            if i < frames {
                if inputLeft[i] != 0 || inputRight[i] != 0 { idle = 0 } else if idle < Int.max { idle += 1 }
                active = idle <= tailFrames
                activity?[i] = active
            }
            if active {
                if runStart < 0 { runStart = i }
            } else if runStart >= 0 {
                let n = i - runStart
                if direct {
                    effect.process(inputLeft: inputLeft + runStart, inputRight: inputRight + runStart,
                                   outputLeft: outputLeft + runStart, outputRight: outputRight + runStart, frames: n)
                } else {
                    effect.process(inputLeft: inputLeft + runStart, inputRight: inputRight + runStart,
                                   outputLeft: scratch + runStart, outputRight: scratch + frames + runStart, frames: n)
                }
                ran = true
                runStart = -1
            }
            i += 1
        }
        if direct { return ran }
        // the level ramps over every frame, processed or not
        var g = level
        let ramping = min(levelRampLeft, frames)
        if ran {
            for k in 0..<ramping {
                g += levelStep
                outputLeft[k] += scratch[k] * g
                outputRight[k] += scratch[frames + k] * g
            }
        } else {
            g += levelStep * Float(ramping)
        }
        levelRampLeft -= ramping
        if levelRampLeft == 0 { g = levelTarget }
        if ran && g != 0 {
            for k in ramping..<frames {
                outputLeft[k] += scratch[k] * g
                outputRight[k] += scratch[frames + k] * g
            }
        }
        level = g
        return ran && (ramping > 0 || g != 0)
    }

    /// Runs the effect on exactly the frames `activity` names (another
    /// slot's record, see `process`), whatever this slot's own input, and
    /// adds the full return to the outputs. Effects that run on the same
    /// frames keep their modulation in step. Where this slot's own input has
    /// been silent for longer than its tail, the effect rests instead
    /// (`SendEffect.rest`: its return would be below -120 dB, and it moves
    /// on in step without computing one), if it can. Returns whether it
    /// added anything.
    @inline(__always)
    mutating func follow(_ activity: UnsafePointer<Bool>, _ inputLeft: UnsafeMutablePointer<Float>, _ inputRight: UnsafeMutablePointer<Float>,
                         _ outputLeft: UnsafeMutablePointer<Float>, _ outputRight: UnsafeMutablePointer<Float>, frames: Int) -> Bool {
        // The usual blocks, decided without a pass per frame: every frame
        // active, and either the tail outlasts the block (one run to
        // process) or the input was and stays silent past the tail (one
        // run to rest). The same runs the loop below would find.
        if frames > 0 && Self.allSet(activity, frames) {
            if idle <= tailFrames && tailFrames &- idle >= frames {
                let last = Self.lastSounding(inputLeft, inputRight, frames)
                idle = last >= 0 ? frames &- 1 &- last : idle &+ frames
                effect.process(inputLeft: inputLeft, inputRight: inputRight, outputLeft: outputLeft, outputRight: outputRight,
                               frames: frames)
                return true
            }
            if idle > tailFrames && Self.lastSounding(inputLeft, inputRight, frames) < 0 {
                idle = idle > Int.max &- frames ? Int.max : idle &+ frames
                if effect.rest(frames: frames) { return false }
                effect.process(inputLeft: inputLeft, inputRight: inputRight, outputLeft: outputLeft, outputRight: outputRight,
                               frames: frames)
                return true
            }
        }
        var ran = false
        var runStart = -1
        var runMode = 0                     // 0 none, 1 process, 2 rest
        var i = 0
        while i <= frames {
            var mode = 0
            if i < frames {
                if inputLeft[i] != 0 || inputRight[i] != 0 { idle = 0 } else if idle < Int.max { idle += 1 }
                if activity[i] { mode = idle <= tailFrames ? 1 : 2 }
            }
            if mode != runMode {
                if runStart >= 0 {
                    let n = i - runStart
                    if runMode == 1 || !effect.rest(frames: n) {
                        effect.process(inputLeft: inputLeft + runStart, inputRight: inputRight + runStart,
                                       outputLeft: outputLeft + runStart, outputRight: outputRight + runStart, frames: n)
                        ran = true
                    }
                }
                runStart = mode == 0 ? -1 : i
                runMode = mode
            }
            i += 1
        }
        return ran
    }

    /// Whether all of `flags[0..<count]` are true.
    @inline(__always) static func allSet(_ flags: UnsafePointer<Bool>, _ count: Int) -> Bool {
        let bytes = UnsafeRawPointer(flags)
        var i = 0
        while i &+ 8 <= count {
            if bytes.loadUnaligned(fromByteOffset: i, as: UInt64.self) != 0x0101_0101_0101_0101 { return false }
            i &+= 8
        }
        while i < count {
            if !flags[i] { return false }
            i &+= 1
        }
        return true
    }

    /// The last frame where either channel is not 0 (-1: none), as the
    /// per-frame test decides it.
    @inline(__always) static func lastSounding(_ left: UnsafePointer<Float>, _ right: UnsafePointer<Float>, _ count: Int) -> Int {
        var end = count
        while end >= 8 {
            let l = UnsafeRawPointer(left + (end &- 8)).loadUnaligned(as: SIMD8<Float>.self)
            let r = UnsafeRawPointer(right + (end &- 8)).loadUnaligned(as: SIMD8<Float>.self)
            if any((l .!= 0) .| (r .!= 0)) { break }
            end &-= 8
        }
        var i = end &- 1
        while i >= 0 {
            if left[i] != 0 || right[i] != 0 { return i }
            i &-= 1
        }
        return -1
    }
}

/// The shared send effects (reverb, chorus, delay), their input bus, the
/// skipping of idle effects, and the reverb and chorus types GS and GM2
/// SysEx select.
///
/// `process(_:outputLeft:outputRight:frames:)` takes any send input, so a
/// caller with several mixes (stems) can give each its own `SendEffects`
/// and feed it that mix's sends. The engine sums its units' sends into
/// `bus` (`accumulate`) and processes that.
///
/// Threads: `init` and `deinit` off the render thread (they allocate and
/// free); everything else on the render thread, or while none renders.
public final class SendEffects {
    public let sampleRate: Double
    public let maxFrames: Int
    /// The presets the effects were created with (a reset SysEx returns to them).
    public let configuredReverb: Reverb.Parameters?
    public let configuredChorus: Chorus.Parameters?
    private var reverb: SendSlot<Reverb>?
    private var chorus: SendSlot<Chorus>?
    private var delay: SendSlot<Delay>?
    private let busBuffer: FixedBuffer<Float>
    /// Per effect: its return before its level is applied (2 x maxFrames each).
    private let returnScratch: FixedBuffer<Float>
    /// Per effect, for `processReturn`: its return at its level (2 x
    /// maxFrames each), and whether the last block wrote one.
    private let returnBuffer: FixedBuffer<Float>
    private let returnWritten: FixedBuffer<Bool>
    /// The summed sends this object's owner feeds (`maxFrames` each).
    public let bus: SendBus
    /// Per effect (reverb, chorus, delay), the frames of the last
    /// `process` it ran on, when `recordsActivity` (stems follow them).
    private let activityBuffer: FixedBuffer<Bool>
    /// Whether `process` records `activityBuffer` (a stems render's shared effects).
    public var recordsActivity = false
    /// The reverbs and choruses the GS and GM2 type numbers select (nil: that number selects none).
    private let gsReverbs: [Reverb.Parameters?]
    private let gm2Reverbs: [Reverb.Parameters?]
    private let gsChoruses: [Chorus.Parameters?]
    private let gm2Choruses: [Chorus.Parameters?]
    /// Per buffer set (see `Engine`): changes a block asked for, made when
    /// that block is finished: the tempo (0: none), reverb and chorus types.
    private var tempoForSet: [Double] = [0, 0]
    private var reverbForSet: [Reverb.Parameters?] = [nil, nil]
    private var chorusForSet: [Chorus.Parameters?] = [nil, nil]

    /// Creates the effects that have a preset (nil: that effect is off),
    /// sized for blocks of up to `maxFrames` frames. Allocates.
    public init(reverb: ReverbPreset?, chorus: ChorusPreset?, delay: DelayPreset?, sampleRate: Double, maxFrames: Int) {
        self.sampleRate = sampleRate
        self.maxFrames = maxFrames
        configuredReverb = reverb?.parameters
        configuredChorus = chorus?.parameters
        busBuffer = FixedBuffer(repeating: 0, count: 6 * maxFrames)
        returnScratch = FixedBuffer(repeating: 0, count: 2 * Self.effectCount * maxFrames)
        returnBuffer = FixedBuffer(repeating: 0, count: 2 * Self.effectCount * maxFrames)
        returnWritten = FixedBuffer(repeating: false, count: Self.effectCount)
        activityBuffer = FixedBuffer(repeating: false, count: Self.effectCount * maxFrames)
        bus = SendBus(planar: busBuffer.pointer, stride: maxFrames)
        gsReverbs = (0..<128).map { ReverbPreset(gsType: $0)?.parameters }
        gm2Reverbs = (0..<128).map { ReverbPreset(gm2Type: $0)?.parameters }
        gsChoruses = (0..<128).map { ChorusPreset(gsType: $0)?.parameters }
        gm2Choruses = (0..<128).map { ChorusPreset(gm2Type: $0)?.parameters }
        if let preset = reverb { self.reverb = SendSlot(Reverb(sampleRate: sampleRate, parameters: preset.parameters), tailFrames: 0) }
        if let preset = chorus { self.chorus = SendSlot(Chorus(sampleRate: sampleRate, parameters: preset.parameters), tailFrames: 0) }
        if let preset = delay { self.delay = SendSlot(Delay(sampleRate: sampleRate, parameters: preset.parameters), tailFrames: 0) }
        // The first use of a code path can instantiate runtime metadata (an
        // allocation): take the type-SysEx path once here, not on the render thread.
        let gsHall: [UInt8] = [0xF0, 0x41, 0x10, 0x42, 0x12, 0x40, 0x01, 0x30, 0x04, 0x0B, 0xF7]
        gsHall.withUnsafeBufferPointer { if let r = EffectTypeSysEx($0) { request(r, forSet: 0) } }
        reverbForSet[0] = nil
        chorusForSet[0] = nil
        // `[0, 0]` is a constant the compiler may keep in read-only
        // storage: the first write copies it (an allocation). Here, not in
        // the first block.
        tempoForSet[0] = 0
        warmUp()
        if self.reverb != nil { self.reverb!.tailFrames = Self.tailFrames(self.reverb!.effect, sampleRate, maxFrames) }
        if self.chorus != nil { self.chorus!.tailFrames = Self.tailFrames(self.chorus!.effect, sampleRate, maxFrames) }
        if self.delay != nil { self.delay!.tailFrames = Self.tailFrames(self.delay!.effect, sampleRate, maxFrames) }
    }

    /// Frames each effect runs once before use (see `warmUp`).
    static let warmUpFrames = 4096

    /// How long after its input falls silent an effect keeps running: its
    /// tail plus a margin (1024 frames, not the block size: the frames an
    /// effect runs on must not depend on how the blocks are cut).
    static func tailFrames<Effect: SendEffect & ~Copyable>(_ effect: borrowing Effect, _ sampleRate: Double, _ maxFrames: Int) -> Int {
        Int(effect.tailSeconds * sampleRate) + 1024
    }

    /// Runs each effect once on an impulse, then clears it: the first run of
    /// a code path can instantiate runtime metadata (allocations and the
    /// runtime's locks), which belongs here, not on the render thread.
    ///
    /// Always 4096 frames (in pieces of `maxFrames`): the effects' LFOs keep
    /// their phase through `reset`, so the frames run here decide where they
    /// start, and a live host, a plugin with any block size and an offline
    /// render (1024-frame blocks) must all start them at the same place to
    /// give the same output for the same input.
    private func warmUp() {
        let n = maxFrames
        let storage = FixedBuffer<Float>(repeating: 0, count: 4 * n)
        let buffers = storage.pointer
        buffers[0] = 0.5
        buffers[n] = 0.5
        var left = Self.warmUpFrames
        while left > 0 {
            let k = min(n, left)
            if reverb != nil { reverb!.effect.process(inputLeft: buffers, inputRight: buffers + n, outputLeft: buffers + 2 * n, outputRight: buffers + 3 * n, frames: k) }
            if chorus != nil { chorus!.effect.process(inputLeft: buffers, inputRight: buffers + n, outputLeft: buffers + 2 * n, outputRight: buffers + 3 * n, frames: k) }
            if delay != nil { delay!.effect.process(inputLeft: buffers, inputRight: buffers + n, outputLeft: buffers + 2 * n, outputRight: buffers + 3 * n, frames: k) }
            left -= k
        }
        reverb?.effect.reset()
        chorus?.effect.reset()
        delay?.effect.reset()
    }

    /// True when no effect is on (there is nothing to feed).
    public var isEmpty: Bool { reverb == nil && chorus == nil && delay == nil }

    /// Longest time the effects ring after their input stops, in seconds.
    public var tailSeconds: Double {
        max(reverb?.effect.tailSeconds ?? 0, chorus?.effect.tailSeconds ?? 0, delay?.effect.tailSeconds ?? 0)
    }

    /// The reverb and chorus currently in effect (nil: that effect is off).
    public var reverbParameters: Reverb.Parameters? { reverb?.effect.parameters }
    public var chorusParameters: Chorus.Parameters? { chorus?.effect.parameters }
    /// Whether the delay is on.
    public var hasDelay: Bool { delay != nil }

    // MARK: the bus (render thread)

    /// Writes silence to the whole bus.
    public func clearBus() {
        busBuffer.pointer.update(repeating: 0, count: 6 * maxFrames)
    }

    /// Adds a unit's sends to the bus (`first`: writes them instead, for
    /// the first unit): the pairs of the effects this object has (the bus
    /// pair of an effect it lacks is never read).
    @inline(__always)
    public func accumulate(_ output: UnitOutput, first: Bool, frames: Int) {
        let b = bus
        if reverb != nil {
            Self.accumulate(output.reverbLeft, into: b.reverbLeft, first: first, frames)
            Self.accumulate(output.reverbRight, into: b.reverbRight, first: first, frames)
        }
        if chorus != nil {
            Self.accumulate(output.chorusLeft, into: b.chorusLeft, first: first, frames)
            Self.accumulate(output.chorusRight, into: b.chorusRight, first: first, frames)
        }
        if delay != nil {
            Self.accumulate(output.delayLeft, into: b.delayLeft, first: first, frames)
            Self.accumulate(output.delayRight, into: b.delayRight, first: first, frames)
        }
    }

    /// Adds one send pair of a unit to the bus's (`first`: writes it
    /// instead): `effect` 0 the reverb's, 1 the chorus's, 2 the delay's.
    @inline(__always)
    public func accumulate(_ output: UnitOutput, effect: Int, first: Bool, frames: Int) {
        let source = SendBus(output).pair(effect), destination = bus.pair(effect)
        Self.accumulate(source.left, into: destination.left, first: first, frames)
        Self.accumulate(source.right, into: destination.right, first: first, frames)
    }

    // MARK: processing (render thread)

    /// The effects, by number: 0 the reverb, 1 the chorus, 2 the delay.
    public static let effectCount = 3

    /// Whether effect `effect` is on.
    public func hasEffect(_ effect: Int) -> Bool {
        switch effect {
        case 0: return reverb != nil
        case 1: return chorus != nil
        default: return delay != nil
        }
    }

    /// Runs the reverb, chorus and delay (in that order) on `input`'s sends
    /// and adds their returns to the outputs; an effect whose input has been
    /// silent for longer than its tail is skipped. `frames` ≤ `maxFrames`.
    public func process(_ input: SendBus, outputLeft: UnsafeMutablePointer<Float>, outputRight: UnsafeMutablePointer<Float>,
                        frames: Int) {
        var e = 0
        while e < Self.effectCount {
            processEffect(e, input, outputLeft, outputRight, frames: frames)
            e += 1
        }
    }

    /// Effect `effect` of `process`: runs it (when on and not idle) on
    /// `input`'s pair for it and adds its return to the outputs; true when
    /// it added anything. Touches only that effect's state and scratch.
    @inline(__always) @discardableResult
    private func processEffect(_ effect: Int, _ input: SendBus, _ outputLeft: UnsafeMutablePointer<Float>,
                               _ outputRight: UnsafeMutablePointer<Float>, frames: Int) -> Bool {
        let scratch = returnScratch.pointer + 2 * effect * maxFrames
        let send = input.pair(effect)
        let activity = recordsActivity ? activityBuffer.pointer + effect * maxFrames : nil
        switch effect {
        case 0: if reverb != nil { return reverb!.process(send.left, send.right, outputLeft, outputRight, frames: frames, scratch: scratch, activity: activity) }
        case 1: if chorus != nil { return chorus!.process(send.left, send.right, outputLeft, outputRight, frames: frames, scratch: scratch, activity: activity) }
        default: if delay != nil { return delay!.process(send.left, send.right, outputLeft, outputRight, frames: frames, scratch: scratch, activity: activity) }
        }
        return false
    }

    /// `process` in parts that may run at once on several threads: effect
    /// `effect` alone, on the bus's pair for it (filled with `accumulate`),
    /// into a return buffer of its own. `addReturns` then adds the three
    /// returns to the mix, in `process`'s order, giving `process`'s output
    /// to the bit: each effect adds one value per frame to its output
    /// (`0 + v` is `v`), so the mix gets the same values in the same order.
    public func processReturn(_ effect: Int, frames: Int) {
        let l = returnBuffer.pointer + 2 * effect * maxFrames, r = l + maxFrames
        l.update(repeating: 0, count: frames)
        r.update(repeating: 0, count: frames)
        returnWritten.pointer[effect] = processEffect(effect, bus, l, r, frames: frames)
    }

    /// Adds the returns `processReturn` left (reverb, chorus, delay, those
    /// that wrote any) to the outputs. After every effect's `processReturn`.
    public func addReturns(outputLeft: UnsafeMutablePointer<Float>, outputRight: UnsafeMutablePointer<Float>, frames: Int) {
        var e = 0
        while e < Self.effectCount {
            if returnWritten.pointer[e] {
                let l = returnBuffer.pointer + 2 * e * maxFrames
                for i in 0..<frames { outputLeft[i] += l[i] }
                for i in 0..<frames { outputRight[i] += l[maxFrames + i] }
            }
            e += 1
        }
    }

    /// Sets the return levels (linear, 0 ... 1) of the reverb, chorus and
    /// delay; each moves there over the next 256 frames (`ramp` false: at
    /// once). A plugin's automatable return levels. Render thread, or while
    /// none renders.
    public func setReturnLevels(reverb r: Float, chorus c: Float, delay d: Float, ramp: Bool = true) {
        if reverb != nil { reverb!.setLevel(min(max(r, 0), 1), ramp: ramp) }
        if chorus != nil { chorus!.setLevel(min(max(c, 0), 1), ramp: ramp) }
        if delay != nil { delay!.setLevel(min(max(d, 0), 1), ramp: ramp) }
    }

    /// Stems: runs this object's effects on `input`'s sends on exactly the
    /// frames `shared`'s ran on in its last `process` (which recorded them:
    /// `recordsActivity`), at full return, and adds their returns to the
    /// outputs. Effects are linear in their input: when each stem's effects
    /// follow the shared ones (same presets, same changes), their returns
    /// add up to the shared return, modulation included. An effect this
    /// object lacks is not run (a stem that never sends to it). Returns
    /// the effects that ran (bit 0 the reverb, 1 the chorus, 2 the delay).
    public func follow(_ shared: SendEffects, _ input: SendBus, outputLeft: UnsafeMutablePointer<Float>,
                       outputRight: UnsafeMutablePointer<Float>, frames: Int) -> Int {
        let a = UnsafePointer(shared.activityBuffer.pointer), n = shared.maxFrames
        var ran = 0
        if reverb != nil && shared.reverb != nil
            && reverb!.follow(a, input.reverbLeft, input.reverbRight, outputLeft, outputRight, frames: frames) { ran |= 1 }
        if chorus != nil && shared.chorus != nil
            && chorus!.follow(a + n, input.chorusLeft, input.chorusRight, outputLeft, outputRight, frames: frames) { ran |= 2 }
        if delay != nil && shared.delay != nil
            && delay!.follow(a + 2 * n, input.delayLeft, input.delayRight, outputLeft, outputRight, frames: frames) { ran |= 4 }
        return ran
    }

    /// Sets the tempo tempo-synced effects (the delay) follow, now.
    public func setTempo(bpm: Double) {
        delay?.effect.setTempo(bpm: bpm)
    }

    /// Switches the reverb or chorus type as a type SysEx asks, now (see `request`).
    public func select(_ request: EffectTypeSysEx) {
        var r: Reverb.Parameters? = nil, c: Chorus.Parameters? = nil
        switch request {
        case .reset: r = configuredReverb; c = configuredChorus
        case .gsReverb(let t): r = gsReverbs[t & 0x7F]
        case .gm2Reverb(let t): r = gm2Reverbs[t & 0x7F]
        case .gsChorus(let t): c = gsChoruses[t & 0x7F]
        case .gm2Chorus(let t): c = gm2Choruses[t & 0x7F]
        }
        if let p = r, reverb != nil {
            reverb!.effect.parameters = p
            reverb!.tailFrames = Self.tailFrames(reverb!.effect, sampleRate, maxFrames)
        }
        if let p = c, chorus != nil {
            chorus!.effect.parameters = p
            chorus!.tailFrames = Self.tailFrames(chorus!.effect, sampleRate, maxFrames)
        }
    }

    // MARK: changes timed by buffer set (render thread)

    /// Records the tempo a block asked for (0: none), for `applyRequests`.
    func requestTempo(_ bpm: Double, forSet set: Int) {
        tempoForSet[set] = bpm
    }

    /// Records the reverb or chorus a type SysEx selects, for the block in
    /// buffer set `set`. A reset (GM System On, GS reset) goes back to the
    /// configured presets. Types that name no reverb or chorus (GS reverb
    /// types 6 and 7 are echoes) leave the effect as it is.
    func request(_ request: EffectTypeSysEx, forSet set: Int) {
        switch request {
        case .reset:
            reverbForSet[set] = configuredReverb
            chorusForSet[set] = configuredChorus
        case .gsReverb(let t):
            if let p = gsReverbs[t & 0x7F] { reverbForSet[set] = p }
        case .gm2Reverb(let t):
            if let p = gm2Reverbs[t & 0x7F] { reverbForSet[set] = p }
        case .gsChorus(let t):
            if let p = gsChoruses[t & 0x7F] { chorusForSet[set] = p }
        case .gm2Chorus(let t):
            if let p = gm2Choruses[t & 0x7F] { chorusForSet[set] = p }
        }
    }

    /// Makes the changes recorded for buffer set `set` (before its block is processed).
    func applyRequests(set: Int) {
        if tempoForSet[set] > 0 {
            delay?.effect.setTempo(bpm: tempoForSet[set])
            tempoForSet[set] = 0
        }
        if let p = reverbForSet[set] {
            if reverb != nil {
                reverb!.effect.parameters = p
                reverb!.tailFrames = Self.tailFrames(reverb!.effect, sampleRate, maxFrames)
            }
            reverbForSet[set] = nil
        }
        if let p = chorusForSet[set] {
            if chorus != nil {
                chorus!.effect.parameters = p
                chorus!.tailFrames = Self.tailFrames(chorus!.effect, sampleRate, maxFrames)
            }
            chorusForSet[set] = nil
        }
    }

    // MARK: helpers

    @inline(__always)
    static func accumulate(_ source: UnsafeMutablePointer<Float>, into destination: UnsafeMutablePointer<Float>, first: Bool, _ frames: Int) {
        if first {
            destination.update(from: source, count: frames)
        } else {
            for i in 0..<frames { destination[i] += source[i] }
        }
    }
}

/// A SysEx message that selects the type of the shared reverb or chorus.
public enum EffectTypeSysEx: Equatable, Sendable {
    /// GM System On (F0 7E dd 09 01 F7) or a GS reset: back to the configured presets.
    case reset
    /// GS Reverb Macro / Chorus Macro (F0 41 dd 42 12 40 01 30|38 vv cs F7; 0-7),
    /// with a valid Roland checksum.
    case gsReverb(Int), gsChorus(Int)
    /// GM2 Global Parameter Control, type parameter (F0 7F dd 04 05 01 01 01
    /// 01 01|02 00 vv F7: slot 01 01 reverb, 01 02 chorus).
    case gm2Reverb(Int), gm2Chorus(Int)

    /// nil for any other message (recognised by `SysExKind`). Allocates nothing.
    public init?(_ m: UnsafeBufferPointer<UInt8>) {
        switch SysExKind(m) {
        case .gmSystemOn, .gsReset(checksumValid: true): self = .reset
        case .gsReverbMacro(let t): self = .gsReverb(Int(t))
        case .gsChorusMacro(let t): self = .gsChorus(Int(t))
        case .gm2ReverbType(let t): self = .gm2Reverb(Int(t))
        case .gm2ChorusType(let t): self = .gm2Chorus(Int(t))
        default: return nil
        }
    }
}
