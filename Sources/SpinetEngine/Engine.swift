import Glibc
import Synchronization
import SpinetEffects
import SpinetMIDI

/// Spinet's real-time core: pulls events from its input queues, splits each
/// block at event frames so every instrument unit sees each event at its
/// frame, mixes the units in Float32 with headroom, adds the send effects'
/// returns, applies master gain and the optional master EQ, and finishes
/// with the limiter.
///
/// One engine, two drivers: the live audio callback and the offline file
/// renderer call the same `render`.
///
/// Threads: `init`, `addInput`, `route` and `prepare` on a control thread
/// before rendering starts; `render` on the render thread only; the
/// `statistics` and `request…` methods from any thread.
public final class Engine: @unchecked Sendable {
    public struct Configuration: Sendable {
        /// Blocks of 16 MIDI channels.
        public var ports: Int = 1
        /// Master gain in dB applied before the limiter.
        public var gainDB: Double = 0
        /// The limiter's ceiling.
        public var ceilingDBFS: Double = -1
        /// The most events one render slice gathers before it is cut short.
        public var maxEventsPerSlice: Int = 4096
        /// The longest SysEx message the engine passes on, in bytes.
        public var maxSysExBytes: Int = 65536
        /// Threads that render units in parallel, for offline rendering only:
        /// the caller of `render`/`renderOverlapped` waits for the workers
        /// each slice, which a live render thread must never do. 1 renders
        /// everything on the caller.
        public var offlineRenderThreads: Int = 1
        /// The shared send effects (nil: that effect is off). Units feed them
        /// through their sends (CC 91 reverb, CC 93 chorus, CC 94 delay).
        public var reverb: ReverbPreset? = nil
        public var chorus: ChorusPreset? = nil
        public var delay: DelayPreset? = nil
        /// The master EQ after the effects and the master gain, before the
        /// limiter (nil, or flat settings: none).
        public var equalizer: Equalizer.Parameters? = nil
        /// Muted global channels: they play no new note (their note-ons are
        /// dropped; controllers, program changes and note-offs still apply,
        /// so the channel's state stays right and nothing hangs).
        public var mutedChannels: [Int] = []
        /// Soloed global channels: when there are any, every other channel is muted.
        public var soloChannels: [Int] = []
        public init() {}
    }

    public let configuration: Configuration
    public var channelCount: Int { configuration.ports * 16 }

    public private(set) var units: [any InstrumentUnit] = []
    private var inputs: [EventQueue] = []
    /// channel -> unit index (or -1 for none): where the channel's events go now
    private var routing: UnsafeMutablePointer<Int>
    /// channel -> the unit `route` assigned (bank routes switch away from and back to it)
    private var homeRouting: UnsafeMutablePointer<Int>
    /// channel -> last Bank Select MSB seen
    private var bankMSB: UnsafeMutablePointer<UInt8>
    /// bank MSB -> unit index, for banks that select a unit (-1: none)
    private var bankRoutes: UnsafeMutablePointer<Int>
    /// channel -> muted (by `mutedChannels`, or by another channel's solo)
    private var muted: UnsafeMutablePointer<Bool>
    /// channel -> bit u: unit u takes turns playing the channel's notes (0: not split)
    private var laneUnits: UnsafeMutablePointer<UInt64>
    /// channel * 128 + key -> the key always plays on the channel's home unit
    private var fixedKey: UnsafeMutablePointer<Bool>
    /// channel * 128 + key -> the unit that got the key's last note-on (-1: none yet)
    private var keyTurn: UnsafeMutablePointer<Int>
    /// `SliceEvent.unit` of a split channel's non-note message: every unit
    /// in the channel's `laneUnits`.
    static let everyLane = -2

    // render-thread state, allocated in prepare
    public private(set) var sampleRate: Double = 0
    public private(set) var maxFrames: Int = 0
    private var prepared = false
    /// Two sets (index `set * units.count + unit`) of per-unit buffers: dry
    /// stereo and three stereo sends, `maxFrames` each. `render` uses set 0;
    /// `renderOverlapped` renders the units into one set while it finishes
    /// the block before from the other.
    private var unitOutputs: [UnitOutput] = []
    /// The set the units render into during the current block.
    private var synthSet = 0
    /// The summed sends and the effects they feed.
    private var sendBuffers: UnsafeMutablePointer<Float>?
    private var reverb: Reverb?
    private var chorus: Chorus?
    private var delay: Delay?
    private var reverbIdle = Int.max, chorusIdle = Int.max, delayIdle = Int.max
    private var reverbTailFrames = 0, chorusTailFrames = 0, delayTailFrames = 0
    private var sliceEvents: UnsafeMutablePointer<SliceEvent>
    private var sliceEventCount = 0
    private var sysExArena: UnsafeMutablePointer<UInt8>
    private var sysExArenaUsed = 0
    private var sysExArenaCapacity: Int
    private var limiter: Limiter?
    private var equalizer: Equalizer?
    private var workers: UnitWorkers?
    /// Per set: the smoothed master gain for each frame of its block.
    private var gainRamps: [UnsafeMutablePointer<Float>] = []
    /// The ramp of the block whose units are being rendered.
    private var gainRamp: UnsafeMutablePointer<Float> { gainRamps[synthSet] }
    private var rampFilled = 0
    /// Per set: the tempo (bpm) the delay follows from that block on (0: no change).
    private var tempoForSet: [Double] = [0, 0]
    /// Per set: reverb and chorus types a SysEx in that block selected.
    private var reverbForSet: [Reverb.Parameters?] = [nil, nil]
    private var chorusForSet: [Chorus.Parameters?] = [nil, nil]
    /// The reverbs and choruses the GS and GM2 type numbers select, looked
    /// up in `prepare` (nil: that number selects none).
    private var gsReverbs: [Reverb.Parameters?] = []
    private var gm2Reverbs: [Reverb.Parameters?] = []
    private var gsChoruses: [Chorus.Parameters?] = []
    private var gm2Choruses: [Chorus.Parameters?] = []
    /// The bits of the tempo `setTempo` asked for, until a block takes it (0: none).
    private let tempoRequest = Atomic<UInt64>(0)

    // overlapped rendering (offline): the block whose units are rendered and
    // which waits to be finished, and the finishing work of the current round
    private var overlapSet = 0
    private var overlapPendingFrames = 0
    private var postPending = false
    private var postFrames = 0
    private var postSet = 0
    private var postLeft: UnsafeMutablePointer<Float>?
    private var postRight: UnsafeMutablePointer<Float>?
    /// The caller's work to run beside this round's units (see `renderOverlapped`).
    private var sideTask: (() -> Void)?
    /// Whether the current round's first extra task is the finishing step
    /// (fixed before the round starts; the tasks themselves clear `postPending`).
    private var roundHasFinish = false

    /// Frames rendered since `prepare` (the engine timeline's "now").
    public private(set) var frameTime: Int64 = 0
    private var masterGain: Float = 1        // from --gain
    private var masterVolume: Float = 1      // from the master volume SysEx
    private var currentGain: Float = 1       // smoothed product
    private var fadePosition: Float = 1      // 1 = not fading, 0 = faded out
    private var fadeStep: Float = 0
    private var gainCoefficient: Float = 0.001

    // cross-thread statistics and requests
    private let lateEventCount = Atomic<Int>(0)
    private let voiceCount = Atomic<Int>(0)
    private let peakVoiceCount = Atomic<Int>(0)
    private let oversizeSysExCount = Atomic<Int>(0)
    private let fadeRequest = Atomic<Int>(0)   // frames of a requested fade-out; 0 = none

    struct SliceEvent {
        var frame: Int64
        /// The unit a channel message goes to (fixed when the slice is gathered).
        var unit: Int = -1
        /// For a note-on of a split channel: the unit that played the key's
        /// previous note and gets a note-off at this frame (-1: none).
        var release: Int = -1
        var kind: Kind
        enum Kind {
            case message(MIDIMessage)
            case sysEx(offset: Int, length: Int)
        }
    }

    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
        let channels = configuration.ports * 16
        routing = .allocate(capacity: channels)
        routing.initialize(repeating: -1, count: channels)
        homeRouting = .allocate(capacity: channels)
        homeRouting.initialize(repeating: -1, count: channels)
        bankMSB = .allocate(capacity: channels)
        bankMSB.initialize(repeating: 0, count: channels)
        bankRoutes = .allocate(capacity: 128)
        bankRoutes.initialize(repeating: -1, count: 128)
        fixedKey = .allocate(capacity: channels * 128)
        fixedKey.initialize(repeating: false, count: channels * 128)
        keyTurn = .allocate(capacity: channels * 128)
        keyTurn.initialize(repeating: -1, count: channels * 128)
        laneUnits = .allocate(capacity: channels)
        laneUnits.initialize(repeating: 0, count: channels)
        muted = .allocate(capacity: channels)
        let solo = configuration.soloChannels.filter { $0 >= 0 && $0 < channels }
        for c in 0..<channels {
            (muted + c).initialize(to: configuration.mutedChannels.contains(c) || (!solo.isEmpty && !solo.contains(c)))
        }
        sliceEvents = .allocate(capacity: max(configuration.maxEventsPerSlice, 1))
        sysExArenaCapacity = max(configuration.maxSysExBytes * 4, 1024)
        sysExArena = .allocate(capacity: sysExArenaCapacity)
        masterGain = Float(pow(10, configuration.gainDB / 20))
        currentGain = masterGain
    }

    deinit {
        routing.deallocate()
        homeRouting.deallocate()
        bankMSB.deallocate()
        bankRoutes.deallocate()
        muted.deallocate()
        fixedKey.deallocate()
        keyTurn.deallocate()
        laneUnits.deallocate()
        sliceEvents.deallocate()
        sysExArena.deallocate()
        for r in gainRamps { r.deallocate() }
        for o in unitOutputs { o.left.deallocate() }
        sendBuffers?.deallocate()
        reverb?.deallocate()
        chorus?.deallocate()
        delay?.deallocate()
        limiter?.deallocate()
        workers?.stop()
    }

    // MARK: building the graph (control thread, before prepare)

    /// Adds an instrument unit; returns its index for `route`.
    @discardableResult
    public func add(_ unit: any InstrumentUnit) -> Int {
        precondition(!prepared, "add units before prepare")
        precondition(units.count < 64, "an engine holds at most 64 units")
        units.append(unit)
        return units.count - 1
    }

    /// Routes a global MIDI channel (port * 16 + channel) to a unit.
    public func route(channel: Int, to unit: Int?) {
        precondition(channel >= 0 && channel < channelCount)
        routing[channel] = unit ?? -1
        homeRouting[channel] = unit ?? -1
        laneUnits[channel] = 0
        (fixedKey + channel * 128).update(repeating: false, count: 128)
    }

    /// Splits a global channel over several units: each key's notes take
    /// turns among `units` (the first note of a key goes to `units[0]`, the
    /// next to `units[1]`, ...), and a note that goes to another unit than
    /// the key's previous note releases that one with a note-off there, as
    /// a repeated key does within one synthesizer. `fixedKeys` (those of an
    /// exclusive class, whose notes cut each other off within one
    /// synthesizer) always play on `units[0]`, the channel's home, which is
    /// also where Bank Select routes (`routeBank`) move the whole channel
    /// from and back to. The channel's other messages (controllers,
    /// programs, bends) go to every one of `units`. Offline rendering
    /// spreads a song's heaviest track over its render threads this way.
    public func route(channel: Int, takingTurns units: [Int], fixedKeys: [Int] = []) {
        precondition(!prepared, "split channels before prepare")
        precondition(channel >= 0 && channel < channelCount && !units.isEmpty)
        precondition(units.allSatisfy { $0 >= 0 && $0 < self.units.count })
        route(channel: channel, to: units[0])
        if units.count == 1 { return }
        for u in units { laneUnits[channel] |= UInt64(1) << UInt64(u) }
        for k in fixedKeys where k >= 0 && k < 128 { fixedKey[channel * 128 + k] = true }
    }

    /// The unit after `unit` in `mask` (cyclic).
    @inline(__always)
    static func nextLane(after unit: Int, in mask: UInt64) -> Int {
        let higher = unit >= 63 ? 0 : mask & ~((UInt64(2) << UInt64(unit)) &- 1)
        return higher != 0 ? higher.trailingZeroBitCount : mask.trailingZeroBitCount
    }

    /// Routes every channel to one unit.
    public func routeAll(to unit: Int) {
        for c in 0..<channelCount { route(channel: c, to: unit) }
    }

    /// Makes a Bank Select MSB choose a unit: a Program Change on a channel
    /// whose last bank MSB is `msb` moves the channel to `unit` (from that
    /// event on); a Program Change with any other bank moves it back to the
    /// unit `route` gave it. The unit the channel leaves gets All Notes Off on
    /// that channel, so nothing is left sounding there. This is how a DAW
    /// switches a channel between the SoundFont player and Spinet's own synth
    /// without restarting.
    public func routeBank(msb: UInt8, to unit: Int) {
        precondition(!prepared, "set bank routes before prepare")
        bankRoutes[Int(msb & 0x7F)] = unit
    }

    /// The unit index a global channel is routed to.
    public func unitIndex(forChannel channel: Int) -> Int? {
        let u = routing[channel]
        return u >= 0 ? u : nil
    }

    /// Creates an input queue for one producer thread.
    public func addInput(capacity: Int = 8192, byteCapacity: Int = 1 << 18) -> EventQueue {
        precondition(!prepared, "add inputs before prepare")
        let q = EventQueue(capacity: capacity, byteCapacity: byteCapacity)
        inputs.append(q)
        return q
    }

    /// Allocates everything the render thread will use. Not on the render thread.
    public func prepare(sampleRate: Double, maxFrames: Int) {
        precondition(!prepared, "prepare once")
        precondition(sampleRate > 0 && maxFrames > 0)
        self.sampleRate = sampleRate
        self.maxFrames = maxFrames
        for unit in units {
            unit.prepare(sampleRate: sampleRate, maxFrames: maxFrames, channels: channelCount)
        }
        for _ in 0..<2 {
            for _ in units { unitOutputs.append(Self.allocateOutput(frames: maxFrames)) }
        }
        let sends = UnsafeMutablePointer<Float>.allocate(capacity: 6 * maxFrames)
        sends.initialize(repeating: 0, count: 6 * maxFrames)
        sendBuffers = sends
        if let preset = configuration.reverb { reverb = Reverb(sampleRate: sampleRate, parameters: preset.parameters) }
        if let preset = configuration.chorus { chorus = Chorus(sampleRate: sampleRate, parameters: preset.parameters) }
        if let preset = configuration.delay { delay = Delay(sampleRate: sampleRate, parameters: preset.parameters) }
        gsReverbs = (0..<128).map { ReverbPreset(gsType: $0)?.parameters }
        gm2Reverbs = (0..<128).map { ReverbPreset(gm2Type: $0)?.parameters }
        gsChoruses = (0..<128).map { ChorusPreset(gsType: $0)?.parameters }
        gm2Choruses = (0..<128).map { ChorusPreset(gm2Type: $0)?.parameters }
        // The first use of a code path can instantiate runtime metadata (an
        // allocation): take the type-SysEx path once here, not on the render thread.
        let gsHall: [UInt8] = [0xF0, 0x41, 0x10, 0x42, 0x12, 0x40, 0x01, 0x30, 0x04, 0x0B, 0xF7]
        gsHall.withUnsafeBufferPointer { if let r = EffectTypeSysEx($0) { selectEffectType(r, set: 0) } }
        reverbForSet[0] = nil
        chorusForSet[0] = nil
        warmUpEffects()
        reverbTailFrames = Int((reverb?.tailSeconds ?? 0) * sampleRate) + maxFrames
        chorusTailFrames = Int((chorus?.tailSeconds ?? 0) * sampleRate) + maxFrames
        delayTailFrames = Int((delay?.tailSeconds ?? 0) * sampleRate) + maxFrames
        for _ in 0..<2 {
            let ramp = UnsafeMutablePointer<Float>.allocate(capacity: maxFrames)
            ramp.initialize(repeating: 1, count: maxFrames)
            gainRamps.append(ramp)
        }
        // about 5 ms to settle to a new gain: smooth, yet no audible lag
        gainCoefficient = Float(1 - exp(-1 / (0.005 * sampleRate / 3)))
        limiter = Limiter(sampleRate: sampleRate, ceilingDBFS: configuration.ceilingDBFS)
        if let p = configuration.equalizer, !p.isFlat { equalizer = Equalizer(sampleRate: sampleRate, parameters: p.clamped) }
        // one task per unit, plus finishing the block before when overlapped
        let threads = min(configuration.offlineRenderThreads, units.count + 1)
        if threads > 1 { workers = UnitWorkers(engine: self, threads: threads) }
        prepared = true
    }

    /// Runs each effect once on an impulse, then clears it: the first run of
    /// a code path can instantiate runtime metadata (allocations and the
    /// runtime's locks), which belongs here, not on the render thread.
    private func warmUpEffects() {
        let n = maxFrames
        let buffers = UnsafeMutablePointer<Float>.allocate(capacity: 4 * n)
        defer { buffers.deallocate() }
        buffers.initialize(repeating: 0, count: 4 * n)
        buffers[0] = 0.5
        buffers[n] = 0.5
        for _ in 0..<4 {
            if reverb != nil { reverb!.process(inputLeft: buffers, inputRight: buffers + n, outputLeft: buffers + 2 * n, outputRight: buffers + 3 * n, frames: n) }
            if chorus != nil { chorus!.process(inputLeft: buffers, inputRight: buffers + n, outputLeft: buffers + 2 * n, outputRight: buffers + 3 * n, frames: n) }
            if delay != nil { delay!.process(inputLeft: buffers, inputRight: buffers + n, outputLeft: buffers + 2 * n, outputRight: buffers + 3 * n, frames: n) }
        }
        reverb?.reset()
        chorus?.reset()
        delay?.reset()
    }

    /// One block of eight planar buffers: dry L/R, reverb, chorus and delay sends.
    static func allocateOutput(frames: Int) -> UnitOutput {
        let base = UnsafeMutablePointer<Float>.allocate(capacity: 8 * frames)
        base.initialize(repeating: 0, count: 8 * frames)
        return UnitOutput(planar: base, stride: frames)
    }

    @inline(__always)
    static func add(_ source: UnsafeMutablePointer<Float>, into destination: UnsafeMutablePointer<Float>, _ frames: Int) {
        for i in 0..<frames { destination[i] += source[i] }
    }

    @inline(__always)
    static func accumulate(_ source: UnsafeMutablePointer<Float>, into destination: UnsafeMutablePointer<Float>, first: Bool, _ frames: Int) {
        if first {
            destination.update(from: source, count: frames)
        } else {
            for i in 0..<frames { destination[i] += source[i] }
        }
    }

    /// Counts silent input frames; true while the effect may still sound
    /// (input within the last `tail` frames).
    @inline(__always)
    static func stillRinging(_ idle: inout Int, _ l: UnsafeMutablePointer<Float>, _ r: UnsafeMutablePointer<Float>, _ frames: Int, tail: Int) -> Bool {
        var silent = true
        for i in 0..<frames where l[i] != 0 || r[i] != 0 { silent = false; break }
        if silent {
            if idle < Int.max - frames { idle += frames }
        } else {
            idle = 0
        }
        return idle < tail
    }

    /// Sets the tempo tempo-synced effects follow (the delay), from the next
    /// block rendered on. Any thread (a live MIDI clock sets it from the
    /// sequencer thread): the render thread picks it up with one atomic
    /// exchange per block.
    public func setTempo(beatsPerMinute bpm: Double) {
        guard bpm > 0 && bpm.isFinite else { return }
        tempoRequest.store(bpm.bitPattern, ordering: .releasing)
    }

    /// Longest time the effects ring after their input stops, in seconds.
    public var effectTailSeconds: Double {
        max(reverb?.tailSeconds ?? 0, chorus?.tailSeconds ?? 0, delay?.tailSeconds ?? 0)
    }

    /// Frames of delay the engine adds after the units (the limiter's
    /// look-ahead), in both `render` and `renderOverlapped`.
    public var latencyFrames: Int { limiter?.lookahead ?? 0 }

    // MARK: statistics and requests (any thread)

    public struct Statistics: Sendable {
        public var droppedEvents: Int
        public var lateEvents: Int
        public var activeVoices: Int
        public var peakVoices: Int
        public var oversizeSysEx: Int
    }

    public var statistics: Statistics {
        Statistics(droppedEvents: inputs.reduce(0) { $0 + $1.dropped } + units.reduce(0) { $0 + $1.droppedEvents },
                   lateEvents: lateEventCount.load(ordering: .relaxed),
                   activeVoices: voiceCount.load(ordering: .relaxed),
                   peakVoices: peakVoiceCount.load(ordering: .relaxed),
                   oversizeSysEx: oversizeSysExCount.load(ordering: .relaxed))
    }

    /// Asks the render thread to fade the output to silence over `frames`
    /// frames (and stay silent). Any thread.
    public func requestFadeOut(frames: Int) {
        fadeRequest.store(max(frames, 1), ordering: .releasing)
    }

    /// True once a requested fade-out has reached silence.
    public var isFadedOut: Bool { fadeGainAtomic.load(ordering: .acquiring) == 0 }
    private let fadeGainAtomic = Atomic<Int>(1)

    /// Sets the master gain in dB (render thread, or before rendering starts).
    public func setGain(dB: Double) {
        masterGain = Float(pow(10, dB / 20))
    }

    // MARK: rendering (render thread)

    /// Render thread only. Renders `frames` frames into `left` and `right`
    /// (each holding at least `frames` floats). Any count including 0; counts
    /// above `maxFrames` are rendered in pieces. Allocates nothing, takes no
    /// lock, makes no system call, logs nothing.
    public func render(frames: Int, left: UnsafeMutablePointer<Float>, right: UnsafeMutablePointer<Float>) {
        var done = 0
        while done < frames {
            let n = min(frames - done, maxFrames)
            renderBlock(frames: n, left: left + done, right: right + done)
            done += n
        }
    }

    private func renderBlock(frames: Int, left: UnsafeMutablePointer<Float>, right: UnsafeMutablePointer<Float>) {
        renderUnits(frames: frames, set: 0)
        finish(frames: frames, set: 0, left: left, right: right)
    }

    /// Offline only: renders the units over the next `frames` frames (at
    /// most `maxFrames`) while it finishes the block of the previous call
    /// (mix, effects, master gain, limiter) into `left` and `right`, on the
    /// offline worker threads when there are any. Returns how many frames it
    /// wrote: the previous call's `frames` (0 on the first call). After the
    /// last call, `finishOverlapped` writes the last block.
    ///
    /// The output is the same as `render`'s, one call later, and the same on
    /// any number of threads: each unit and the finishing step do the same
    /// work whichever thread runs them. A live render thread must use
    /// `render` (this waits for the workers).
    ///
    /// `alongside`, when given, runs once during the call as one more task
    /// of the round, on whichever thread is free (the caller's own work on
    /// an earlier block's output, such as writing it to a file). It must not
    /// touch the engine, nor `left`/`right`. Pass the same closure each call
    /// (creating one per call would allocate).
    public func renderOverlapped(frames: Int, left: UnsafeMutablePointer<Float>, right: UnsafeMutablePointer<Float>,
                                 alongside: (() -> Void)? = nil) -> Int {
        precondition(frames >= 0 && frames <= maxFrames, "renderOverlapped renders at most maxFrames frames")
        let produced = overlapPendingFrames
        if produced > 0 {
            postPending = true
            postFrames = produced
            postSet = 1 - overlapSet
            postLeft = left
            postRight = right
        }
        sideTask = alongside
        renderUnits(frames: frames, set: overlapSet)
        if postPending { finishPending() }      // no workers, or no unit round ran it
        runSideTask()
        overlapPendingFrames = frames
        overlapSet = 1 - overlapSet
        return produced
    }

    /// Offline only: finishes the block the last `renderOverlapped` left
    /// pending into `left` and `right`; returns its frame count (0 if none).
    public func finishOverlapped(left: UnsafeMutablePointer<Float>, right: UnsafeMutablePointer<Float>) -> Int {
        let produced = overlapPendingFrames
        if produced > 0 { finish(frames: produced, set: 1 - overlapSet, left: left, right: right) }
        overlapPendingFrames = 0
        return produced
    }

    /// The finishing step `renderOverlapped` scheduled (any one thread).
    func finishPending() {
        guard postPending else { return }
        postPending = false
        finish(frames: postFrames, set: postSet, left: postLeft!, right: postRight!)
    }

    /// The caller's side task of this call, once (any one thread).
    func runSideTask() {
        guard let task = sideTask else { return }
        sideTask = nil
        task()
    }

    /// Extra task `index` of a worker round: the finishing step first (when
    /// the round has one), then the side task.
    func runExtraTask(_ index: Int) {
        if roundHasFinish && index == 0 { finishPending() } else { runSideTask() }
    }

    /// Gathers the next `frames` frames' events and renders every unit into
    /// buffer set `set` (and, on the workers, a pending finishing step).
    private func renderUnits(frames: Int, set: Int) {
        synthSet = set
        let tempoBits = tempoRequest.exchange(0, ordering: .acquiring)
        tempoForSet[set] = tempoBits != 0 ? Double(bitPattern: tempoBits) : 0
        let blockStart = frameTime
        let blockEnd = blockStart + Int64(frames)
        var sliceStart = blockStart
        let unitCount = units.count
        var gainTarget = masterGain * masterVolume
        rampFilled = 0

        // Gather events into slices; a slice ends early only when the slice
        // buffers are full (an event flood), so the rest waits one slice,
        // or when a unit has no room for more (a flood it is still passing
        // on): then the rest waits in the queue, and the slice lasts until
        // the next event or 64 frames, so the unit can pass some on.
        while true {
            sliceEventCount = 0
            sysExArenaUsed = 0
            var sliceEnd = blockEnd
            var room = configuration.maxEventsPerSlice
            var r = 0
            while r < unitCount {
                room = min(room, units[r].eventRoom)
                r += 1
            }
            gather: while true {
                var best = -1
                var bestFrame = Int64.max
                // Index loops: a for-in over an array allocates in unoptimized builds.
                var i = 0
                while i < inputs.count {
                    if let e = inputs[i].peek(), e.frame < bestFrame {
                        best = i
                        bestFrame = e.frame
                    }
                    i += 1
                }
                if best < 0 || bestFrame >= blockEnd { break gather }
                let q = inputs[best]
                guard let event = q.peek() else { break gather }
                if sliceEventCount >= room {
                    sliceEnd = room > 0 ? max(bestFrame, sliceStart + 1) : min(blockEnd, max(bestFrame, sliceStart + 64))
                    break gather
                }
                let frame = max(event.frame, sliceStart)
                if event.frame < sliceStart { lateEventCount.add(1, ordering: .relaxed) }
                switch event.kind {
                case .message(let m):
                    q.pop()
                    sliceEvents[sliceEventCount] = SliceEvent(frame: frame, kind: .message(m))
                    sliceEventCount += 1
                case .sysEx(let length):
                    let n = Int(length)
                    if n > configuration.maxSysExBytes {
                        q.pop()
                        oversizeSysExCount.add(1, ordering: .relaxed)
                        continue gather
                    }
                    if sysExArenaUsed + n > sysExArenaCapacity {
                        sliceEnd = max(bestFrame, sliceStart + 1)
                        break gather
                    }
                    q.pop(sysExDestination: sysExArena + sysExArenaUsed)
                    sliceEvents[sliceEventCount] = SliceEvent(frame: frame, kind: .sysEx(offset: sysExArenaUsed, length: n))
                    sysExArenaUsed += n
                    sliceEventCount += 1
                }
            }

            // Bank-routed program changes move channels between units; the
            // routing is then fixed for the slice, so record each move as a
            // pair of events: All Notes Off for the old unit, then the change.
            applyBankRouting()

            // Master volume SysEx belongs to the engine; it takes effect at its
            // frame. Reverb and chorus type SysEx take effect from this block.
            for e in 0..<sliceEventCount {
                guard case .sysEx(let off, let len) = sliceEvents[e].kind else { continue }
                let message = UnsafeBufferPointer(start: sysExArena + off, count: len)
                if let v = Self.masterVolume(message) {
                    fillGainRamp(to: Int(sliceEvents[e].frame - blockStart), target: gainTarget)
                    masterVolume = v
                    gainTarget = masterGain * masterVolume
                }
                if let request = EffectTypeSysEx(message) { selectEffectType(request, set: set) }
            }
            fillGainRamp(to: Int(sliceEnd - blockStart), target: gainTarget)

            // Each unit renders its own slices between the events routed to it
            // (in parallel when offline workers exist; they also take the
            // pending finishing step, once).
            if let pool = workers {
                roundHasFinish = postPending
                pool.run(sliceStart: sliceStart, sliceEnd: sliceEnd, blockStart: blockStart,
                         tasks: unitCount + (postPending ? 1 : 0) + (sideTask != nil ? 1 : 0))
            } else {
                for u in 0..<unitCount { renderUnit(u, sliceStart: sliceStart, sliceEnd: sliceEnd, blockStart: blockStart) }
            }
            sliceStart = sliceEnd
            if sliceStart >= blockEnd { break }
        }

        var voices = 0
        for u in 0..<unitCount { voices += units[u].activeVoices }
        voiceCount.store(voices, ordering: .relaxed)
        if voices > peakVoiceCount.load(ordering: .relaxed) { peakVoiceCount.store(voices, ordering: .relaxed) }
        frameTime = blockEnd
    }

    /// Mixes buffer set `set` (`frames` frames), runs the send effects, the
    /// master gain, the EQ and the limiter, and writes the result to `left`/`right`.
    private func finish(frames: Int, set: Int, left: UnsafeMutablePointer<Float>, right: UnsafeMutablePointer<Float>) {
        let unitCount = units.count
        let gainRamp = gainRamps[set]
        if tempoForSet[set] > 0 {
            delay?.setTempo(bpm: tempoForSet[set])
            tempoForSet[set] = 0
        }
        if let p = reverbForSet[set] {
            if reverb != nil {
                reverb!.parameters = p
                reverbTailFrames = Int(reverb!.tailSeconds * sampleRate) + maxFrames
            }
            reverbForSet[set] = nil
        }
        if let p = chorusForSet[set] {
            if chorus != nil {
                chorus!.parameters = p
                chorusTailFrames = Int(chorus!.tailSeconds * sampleRate) + maxFrames
            }
            chorusForSet[set] = nil
        }

        // Mix: plain Float32 sum (headroom is the float range) of the dry
        // sound and of the sends; the send effects add their returns.
        left.update(repeating: 0, count: frames)
        right.update(repeating: 0, count: frames)
        let sends = sendBuffers!
        let n = maxFrames
        let hasEffects = reverb != nil || chorus != nil || delay != nil
        if hasEffects && unitCount == 0 { sends.update(repeating: 0, count: 6 * n) }
        var u = 0
        while u < unitCount {
            let o = unitOutputs[set * unitCount + u]
            // one simple loop per buffer: each vectorizes
            Self.add(o.left, into: left, frames)
            Self.add(o.right, into: right, frames)
            if hasEffects {
                Self.accumulate(o.reverbLeft, into: sends, first: u == 0, frames)
                Self.accumulate(o.reverbRight, into: sends + n, first: u == 0, frames)
                Self.accumulate(o.chorusLeft, into: sends + 2 * n, first: u == 0, frames)
                Self.accumulate(o.chorusRight, into: sends + 3 * n, first: u == 0, frames)
                Self.accumulate(o.delayLeft, into: sends + 4 * n, first: u == 0, frames)
                Self.accumulate(o.delayRight, into: sends + 5 * n, first: u == 0, frames)
            }
            u += 1
        }
        // An effect whose input has been silent for longer than its tail is
        // skipped: its output would be silence.
        if reverb != nil && Self.stillRinging(&reverbIdle, sends, sends + n, frames, tail: reverbTailFrames) {
            reverb!.process(inputLeft: sends, inputRight: sends + n, outputLeft: left, outputRight: right, frames: frames)
        }
        if chorus != nil && Self.stillRinging(&chorusIdle, sends + 2 * n, sends + 3 * n, frames, tail: chorusTailFrames) {
            chorus!.process(inputLeft: sends + 2 * n, inputRight: sends + 3 * n, outputLeft: left, outputRight: right, frames: frames)
        }
        if delay != nil && Self.stillRinging(&delayIdle, sends + 4 * n, sends + 5 * n, frames, tail: delayTailFrames) {
            delay!.process(inputLeft: sends + 4 * n, inputRight: sends + 5 * n, outputLeft: left, outputRight: right, frames: frames)
        }
        let requestedFade = fadeRequest.exchange(0, ordering: .acquiring)
        if requestedFade > 0 { fadeStep = fadePosition / Float(requestedFade) }
        for i in 0..<frames {
            var g = gainRamp[i]
            if fadeStep > 0 {
                // Smoothstep, not a straight line: the gain leaves 1 and
                // arrives at 0 with zero slope (no corner to hear), and the
                // last tenth of the fade is 31 dB down or more.
                fadePosition = max(0, fadePosition - fadeStep)
                g *= fadePosition * fadePosition * (3 - 2 * fadePosition)
            }
            left[i] *= g
            right[i] *= g
        }
        if fadeStep > 0 && fadePosition == 0 { fadeGainAtomic.store(0, ordering: .releasing) }
        if equalizer != nil { equalizer!.process(left: left, right: right, frames: frames) }
        limiter!.process(left: left, right: right, frames: frames)
    }

    /// Fixes the target unit of each channel message in the slice, applying
    /// Bank Select + Program Change routes in event order. Render thread.
    private func applyBankRouting() {
        var e = 0
        while e < sliceEventCount {
            if case .message(let m) = sliceEvents[e].kind, let ch = m.channel {
                let c = Int(ch) % channelCount
                if case .controlChange(_, let controller, let value) = m, controller == MIDIController.bankSelectMSB {
                    bankMSB[c] = value
                } else if case .programChange = m {
                    let bankUnit = bankRoutes[Int(bankMSB[c])]
                    let target = bankUnit >= 0 ? bankUnit : homeRouting[c]
                    let old = routing[c]
                    if target != old && target >= 0 {
                        routing[c] = target
                        if old >= 0 && sliceEventCount + 3 <= configuration.maxEventsPerSlice {
                            // Release everything the unit left behind holds on this
                            // channel, just before the change: pedals up (All Notes
                            // Off spares notes a pedal holds), then All Notes Off.
                            var k = sliceEventCount - 1
                            while k >= e { sliceEvents[k + 3] = sliceEvents[k]; k -= 1 }
                            let frame = sliceEvents[e + 3].frame
                            // (a split channel leaving home: every lane's unit)
                            let from = laneUnits[c] != 0 && old == homeRouting[c] ? Self.everyLane : old
                            sliceEvents[e] = SliceEvent(frame: frame, unit: from, kind: .message(.controlChange(channel: ch, controller: MIDIController.sustain, value: 0)))
                            sliceEvents[e + 1] = SliceEvent(frame: frame, unit: from, kind: .message(.controlChange(channel: ch, controller: MIDIController.sostenuto, value: 0)))
                            sliceEvents[e + 2] = SliceEvent(frame: frame, unit: from, kind: .message(.controlChange(channel: ch, controller: MIDIController.allNotesOff, value: 0)))
                            sliceEventCount += 3
                            e += 3
                        }
                    }
                }
                // a muted channel's note-ons go nowhere
                var unit = routing[c]
                sliceEvents[e].release = -1
                if laneUnits[c] != 0 && unit == homeRouting[c] {
                    // a split channel at home: a key's note-ons take turns,
                    // its note-offs and pressure follow its last note-on,
                    // everything else goes to every lane
                    switch m {
                    case .noteOn(_, let key, let velocity) where velocity > 0:
                        let k = c * 128 + Int(key & 0x7F)
                        if !fixedKey[k] && !muted[c] {
                            let last = keyTurn[k]
                            unit = last < 0 ? unit : Self.nextLane(after: last, in: laneUnits[c])
                            if last >= 0 && last != unit { sliceEvents[e].release = last }
                            keyTurn[k] = unit
                        }
                    case .noteOn(_, let key, _), .noteOff(_, let key, _), .polyPressure(_, let key, _):
                        let k = c * 128 + Int(key & 0x7F)
                        if !fixedKey[k] && keyTurn[k] >= 0 { unit = keyTurn[k] }
                    default:
                        unit = Self.everyLane
                    }
                }
                sliceEvents[e].unit = muted[c] && m.isNoteOn ? -1 : unit
            }
            e += 1
        }
    }

    /// Renders unit `u` over one slice, delivering the slice's events routed to it.
    /// Render thread (or an offline worker that owns this unit for the slice).
    func renderUnit(_ u: Int, sliceStart: Int64, sliceEnd: Int64, blockStart: Int64) {
        let unit = units[u]
        var position = sliceStart
        let output = unitOutputs[synthSet * units.count + u].advanced(by: Int(sliceStart - blockStart))
        for e in 0..<sliceEventCount {
            let event = sliceEvents[e]
            var message: MIDIMessage? = nil
            switch event.kind {
            case .message(let m):
                message = m
                if let ch = m.channel, event.unit != u {
                    if event.release == u, case .noteOn(_, let key, _) = m {
                        // the key's previous note, on this unit: released
                        // where the new one starts on another
                        message = .noteOff(channel: ch, key: key, velocity: 64)
                    } else if event.unit != Self.everyLane
                                || laneUnits[Int(ch) % channelCount] & (UInt64(1) << UInt64(u)) == 0 {
                        continue
                    }
                }
            case .sysEx:
                break
            }
            let at = min(max(unit.deliveryFrame(forEventAt: event.frame), position), sliceEnd)
            if at > position {
                unit.render(output.advanced(by: Int(position - sliceStart)), frames: Int(at - position))
                position = at
            }
            switch event.kind {
            case .message:
                unit.receive(message!)
            case .sysEx(let off, let len):
                unit.receiveSysEx(UnsafeBufferPointer(start: sysExArena + off, count: len))
            }
        }
        if sliceEnd > position {
            unit.render(output.advanced(by: Int(position - sliceStart)), frames: Int(sliceEnd - position))
        }
    }

    /// Records the reverb or chorus a type SysEx selects, for the block in
    /// buffer set `set`. A reset (GM System On, GS reset) goes back to the
    /// configured presets. Types that name no reverb or chorus (GS reverb
    /// types 6 and 7 are echoes) leave the effect as it is.
    private func selectEffectType(_ request: EffectTypeSysEx, set: Int) {
        switch request {
        case .reset:
            reverbForSet[set] = configuration.reverb?.parameters
            chorusForSet[set] = configuration.chorus?.parameters
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

    /// The reverb and chorus currently in effect (nil: that effect is off).
    /// Render thread, or when no render is running.
    public var reverbParameters: Reverb.Parameters? { reverb?.parameters }
    public var chorusParameters: Chorus.Parameters? { chorus?.parameters }

    /// Extends gainRamp up to (not including) `to` with the smoothed master
    /// gain approaching `target`.
    private func fillGainRamp(to: Int, target: Float) {
        let from = rampFilled
        guard to > from else { return }
        rampFilled = to
        var g = currentGain
        if g == target {
            for i in from..<to { gainRamp[i] = g }
            return
        }
        for i in from..<to {
            g += (target - g) * gainCoefficient
            if abs(target - g) < 1e-6 { g = target }
            gainRamp[i] = g
        }
        currentGain = g
    }

    /// The gain a universal real-time Master Volume message sets
    /// (F0 7F <device> 04 01 <lsb> <msb> F7), or nil for any other message.
    /// GM System On and GS/XG resets return 1 (master volume back to full).
    static func masterVolume(_ m: UnsafeBufferPointer<UInt8>) -> Float? {
        if m.count == 8 && m[0] == 0xF0 && m[1] == 0x7F && m[3] == 0x04 && m[4] == 0x01 && m[7] == 0xF7 {
            let v = Int(m[5] & 0x7F) | (Int(m[6] & 0x7F) << 7)
            // The level is linear in the 14-bit value (MMA CA-018 leaves the
            // curve open); squaring gives a perceptually even fader.
            let x = Float(v) / 16383
            return x * x
        }
        if m.count == 6 && m[0] == 0xF0 && m[1] == 0x7E && m[3] == 0x09 && (m[4] == 0x01 || m[4] == 0x03) && m[5] == 0xF7 {
            return 1
        }
        if m.count == 11 && m[0] == 0xF0 && m[1] == 0x41 && m[3] == 0x42 && m[4] == 0x12
            && m[5] == 0x40 && m[6] == 0x00 && m[7] == 0x7F {
            return 1
        }
        return nil
    }
}


/// A SysEx message that selects the type of the shared reverb or chorus.
enum EffectTypeSysEx: Equatable {
    /// GM System On (F0 7E dd 09 01 F7) or a GS reset: back to the configured presets.
    case reset
    /// GS Reverb Macro / Chorus Macro (F0 41 dd 42 12 40 01 30|38 vv cs F7; 0-7),
    /// with a valid Roland checksum.
    case gsReverb(Int), gsChorus(Int)
    /// GM2 Global Parameter Control, type parameter (F0 7F dd 04 05 01 01 01
    /// 01 01|02 00 vv F7: slot 01 01 reverb, 01 02 chorus).
    case gm2Reverb(Int), gm2Chorus(Int)

    /// nil for any other message. Allocates nothing.
    init?(_ m: UnsafeBufferPointer<UInt8>) {
        guard m.count >= 6, m[0] == 0xF0, m[m.count - 1] == 0xF7 else { return nil }
        if m.count == 6 && m[1] == 0x7E && m[3] == 0x09 && m[4] == 0x01 {
            self = .reset
            return
        }
        if m.count == 11 && m[1] == 0x41 && m[3] == 0x42 && m[4] == 0x12 {
            // address 40 00 7F (GS reset) or 40 01 30/38 (macros); checksum over address + data
            var sum = 0
            for i in 5...9 { sum += Int(m[i]) }
            guard sum % 128 == 0 else { return nil }
            let a = (m[5], m[6], m[7])
            if a == (0x40, 0x00, 0x7F) { self = .reset; return }
            guard a.0 == 0x40 && a.1 == 0x01 && m[8] <= 7 else { return nil }
            if a.2 == 0x30 { self = .gsReverb(Int(m[8])); return }
            if a.2 == 0x38 { self = .gsChorus(Int(m[8])); return }
            return nil
        }
        if m.count == 13 && m[1] == 0x7F && m[3] == 0x04 && m[4] == 0x05
            && m[5] == 0x01 && m[6] == 0x01 && m[7] == 0x01 && m[8] == 0x01 && m[10] == 0x00 {
            if m[9] == 0x01 { self = .gm2Reverb(Int(m[11])); return }
            if m[9] == 0x02 { self = .gm2Chorus(Int(m[11])); return }
        }
        return nil
    }
}
