import Glibc
import Synchronization
import SpinetEffects
import SpinetMIDI

/// Spinet's real-time core. Each block it
/// 1. gathers the events due in the block from its input queues, in frame
///    order, into slices (a slice ends early only under an event flood);
/// 2. routes each event once (`ChannelRouter`) into per-unit event lists;
/// 3. renders every unit through the slice: up to its next event, applies
///    it, goes on, to the slice's end;
/// 4. mixes the units in Float32 with headroom and sums their sends;
/// 5. runs the send effects (`SendEffects`) on the sends;
/// 6. finishes with the master bus (`MasterBus`: gain, master volume,
///    fade, EQ, limiter).
///
/// One engine, two drivers: the live audio callback and the offline file
/// renderer call the same `render`; offline rendering may also overlap the
/// units of one block with the finishing of the one before
/// (`renderOverlapped`, in Engine+Overlapped.swift).
///
/// Threads: `init`, `addInput`, `route` and `prepare` on a control thread
/// before rendering starts; `render` on the render thread only; the
/// `statistics` and `request…` methods from any thread. The configuration
/// and the control API (building the graph, statistics, requests) are in
/// Engine+Control.swift.
public final class Engine: @unchecked Sendable {
    public let configuration: Configuration
    public var channelCount: Int { configuration.ports * 16 }

    public internal(set) var units: [any InstrumentUnit] = []
    var inputs: [EventQueue] = []
    /// Channel, bank and turn-taking routing, mute and solo.
    var router: ChannelRouter

    // render-thread state, allocated in prepare
    public private(set) var sampleRate: Double = 0
    public private(set) var maxFrames: Int = 0
    var prepared = false
    /// Two sets (index `set * units.count + unit`) of per-unit buffers: dry
    /// stereo and three stereo sends, `maxFrames` each. `render` uses set 0;
    /// `renderOverlapped` renders the units into one set while it finishes
    /// the block before from the other.
    var unitOutputs: [UnitOutput] = []
    /// The memory of `unitOutputs` (from `prepare`).
    private var unitOutputBuffer = FixedBuffer<Float>(repeating: 0, count: 0)
    /// The set the units render into during the current block.
    private(set) var synthSet = 0
    /// The shared reverb, chorus and delay, and the bus that feeds them (from `prepare`).
    public private(set) var sendEffects: SendEffects?
    /// Master gain and volume, fade-out, EQ and limiter.
    public let masterBus: MasterBus
    /// The events of the current slice, in frame order, as gathered.
    private let sliceEventBuffer: FixedBuffer<SliceEvent>
    private var sliceEvents: UnsafeMutablePointer<SliceEvent> { sliceEventBuffer.pointer }
    private var sliceEventCount = 0
    /// Per unit: the slice's events routed to it (`unitEventCapacity` each, from `prepare`).
    private var unitEventBuffer = FixedBuffer(repeating: SliceEvent(frame: 0, kind: .message(.systemReset)), count: 0)
    private let unitEventCountBuffer = FixedBuffer<Int>(repeating: 0, count: 64)
    private var unitEvents: UnsafeMutablePointer<SliceEvent> { unitEventBuffer.pointer }
    private var unitEventCounts: UnsafeMutablePointer<Int> { unitEventCountBuffer.pointer }
    private var unitEventCapacity = 0
    /// The slice's SysEx bytes.
    private let sysExArenaBuffer: FixedBuffer<UInt8>
    private var sysExArena: UnsafeMutablePointer<UInt8> { sysExArenaBuffer.pointer }
    private var sysExArenaUsed = 0
    private var sysExArenaCapacity: Int
    private var workers: UnitWorkers?
    /// Whether offline worker threads render the units.
    var hasWorkers: Bool { workers != nil }
    /// The bits of the tempo `setTempo` asked for, until a block takes it (0: none).
    let tempoRequest = Atomic<UInt64>(0)
    /// Offline overlapped rendering's state (Engine+Overlapped.swift).
    let overlap = OverlapState()
    /// Stems: the pieces each stem sums, and each stem's own send effects
    /// (Engine+Stems.swift; nil: no stems).
    var stems: StemState?
    /// The stems `setStems` asked for, until `prepare` makes them.
    var plannedStems: StemPlan?

    /// The events of the current `render(frames:left:right:events:)` call:
    /// where they start, how many, the next one to gather, and the call's
    /// first and last engine frames.
    private var callbackEvents: UnsafePointer<CallbackEvent>?
    private var callbackEventCount = 0
    private var callbackNext = 0
    private var callbackFirstFrame: Int64 = 0
    private var callbackLastFrame: Int64 = 0
    /// The frame the last gathered call event was taken at (events out of order are late).
    private var callbackFloor: Int64 = 0

    /// Frames rendered since `prepare` (the engine timeline's "now").
    public private(set) var frameTime: Int64 = 0

    // cross-thread statistics
    let lateEventCount = Atomic<Int>(0)
    let voiceCount = Atomic<Int>(0)
    let peakVoiceCount = Atomic<Int>(0)
    let oversizeSysExCount = Atomic<Int>(0)
    let droppedCallbackEvents = Atomic<Int>(0)

    /// One gathered event at its engine frame: a message, or a SysEx message in `sysExArena`.
    struct SliceEvent {
        var frame: Int64
        var kind: Kind
        enum Kind {
            case message(MIDIMessage)
            case sysEx(offset: Int, length: Int)
        }
    }

    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
        router = ChannelRouter(channels: configuration.ports * 16, muted: configuration.mutedChannels, solo: configuration.soloChannels)
        masterBus = MasterBus(gainDB: configuration.gainDB, ceilingDBFS: configuration.ceilingDBFS, equalizer: configuration.equalizer)
        sliceEventBuffer = FixedBuffer(repeating: SliceEvent(frame: 0, kind: .message(.systemReset)),
                                       count: max(configuration.maxEventsPerSlice, 1))
        sysExArenaCapacity = max(configuration.maxSysExBytes * 4, 1024)
        sysExArenaBuffer = FixedBuffer(repeating: 0, count: sysExArenaCapacity)
    }

    deinit {
        workers?.stop()
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
        // two sets of eight planar buffers per unit: dry L/R, reverb, chorus and delay sends
        unitOutputBuffer = FixedBuffer(repeating: 0, count: 2 * units.count * 8 * maxFrames)
        for i in 0..<(2 * units.count) {
            unitOutputs.append(UnitOutput(planar: unitOutputBuffer.pointer + i * 8 * maxFrames, stride: maxFrames))
        }
        // Each slice event (the routing's own ones included, which stay
        // within maxEventsPerSlice) reaches a unit at most once; 3 spare.
        unitEventCapacity = max(configuration.maxEventsPerSlice, 1) + 3
        unitEventBuffer = FixedBuffer(repeating: SliceEvent(frame: 0, kind: .message(.systemReset)),
                                      count: max(units.count, 1) * unitEventCapacity)
        sendEffects = SendEffects(reverb: configuration.reverb, chorus: configuration.chorus, delay: configuration.delay,
                                  sampleRate: sampleRate, maxFrames: maxFrames)
        masterBus.prepare(sampleRate: sampleRate, maxFrames: maxFrames)
        prepareStems()
        // one task per unit, plus finishing the block before when overlapped
        let threads = min(configuration.offlineRenderThreads, units.count + 1)
        if threads > 1 { workers = UnitWorkers(engine: self, threads: threads) }
        prepared = true
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
            renderUnits(frames: n, set: 0)
            finish(frames: n, set: 0, left: left + done, right: right + done)
            done += n
        }
    }

    /// Render thread only. Renders `frames` frames like
    /// `render(frames:left:right:)`, and delivers `events` (the MIDI a host
    /// hands over inside its audio callback: JACK, LV2, CLAP) within them,
    /// merged with the events of the input queues.
    ///
    /// - Each event's `offset` is a frame within this call: 0 is the call's
    ///   first frame (`frameTime` when it starts), `frames - 1` its last.
    ///   An offset past the end is delivered at the last frame, a negative
    ///   one at the first.
    /// - `events` must be sorted by offset. One that comes before the
    ///   frames already rendered (out of order) is delivered at once and
    ///   counted in `statistics.lateEvents`, as a late queue event is.
    /// - At the same frame, queue events come first, then `events` in order.
    /// - Each unit gets each event at its frame (a unit on a coarser grid,
    ///   FluidSynth's 64 frames, at its nearest grid point), exactly as queue
    ///   events: the units render up to the event, apply it, and go on.
    /// - SysEx bytes are copied during the call; the buffers need live only
    ///   until it returns. A SysEx longer than `configuration.maxSysExBytes`
    ///   is skipped and counted in `statistics.oversizeSysEx`.
    /// - The engine keeps nothing of `events` after the call. Events it could
    ///   not take (only under a flood beyond `maxEventsPerSlice` per slice,
    ///   or every event of a 0-frame call) are counted in
    ///   `statistics.droppedEvents`.
    ///
    /// Allocates nothing, takes no lock, makes no system call, logs nothing.
    public func render(frames: Int, left: UnsafeMutablePointer<Float>, right: UnsafeMutablePointer<Float>,
                       events: UnsafeBufferPointer<CallbackEvent>) {
        callbackEvents = events.baseAddress
        callbackEventCount = events.baseAddress == nil ? 0 : events.count
        callbackNext = 0
        callbackFirstFrame = frameTime
        callbackLastFrame = frameTime + Int64(max(frames, 1) - 1)
        callbackFloor = frameTime
        render(frames: frames, left: left, right: right)
        if callbackNext < callbackEventCount {
            droppedCallbackEvents.add(callbackEventCount - callbackNext, ordering: .relaxed)
        }
        callbackEvents = nil
        callbackEventCount = 0
        callbackNext = 0
    }

    /// The engine frame of the current call's event `i` as its offset says
    /// (clamped into the call).
    @inline(__always)
    private func callbackFrame(_ i: Int) -> Int64 {
        let offset = callbackEvents![i].offset
        return min(max(callbackFirstFrame + Int64(offset), callbackFirstFrame), callbackLastFrame)
    }

    /// Gathers the next `frames` frames' events and renders every unit into
    /// buffer set `set` (and, on the workers, a pending finishing step).
    func renderUnits(frames: Int, set: Int) {
        synthSet = set
        let sends = sendEffects!
        let tempoBits = tempoRequest.exchange(0, ordering: .acquiring)
        sends.requestTempo(tempoBits != 0 ? Double(bitPattern: tempoBits) : 0, forSet: set)
        stems?.requestTempo(tempoBits != 0 ? Double(bitPattern: tempoBits) : 0, forSet: set)
        let blockStart = frameTime
        let blockEnd = blockStart + Int64(frames)
        var sliceStart = blockStart
        let unitCount = units.count
        masterBus.beginBlock(set: set)

        while true {
            // Gather the slice's events, then route each once.
            let sliceEnd = gatherSlice(from: sliceStart, blockEnd: blockEnd)
            routeSlice()

            // Master volume SysEx belongs to the engine; it takes effect at its
            // frame. Reverb and chorus type SysEx take effect from this block.
            var e = 0
            while e < sliceEventCount {
                if case .sysEx(let off, let len) = sliceEvents[e].kind {
                    let message = UnsafeBufferPointer(start: sysExArena + off, count: len)
                    masterBus.receiveSysEx(message, atFrame: Int(sliceEvents[e].frame - blockStart))
                    if let request = EffectTypeSysEx(message) {
                        sends.request(request, forSet: set)
                        stems?.request(request, forSet: set)
                    }
                }
                e += 1
            }
            masterBus.fillGainRamp(to: Int(sliceEnd - blockStart))

            // Each unit renders its own slices between the events routed to it
            // (in parallel when offline workers exist; they also take the
            // pending finishing step, once).
            if let pool = workers {
                overlap.roundHasFinish = overlap.postPending
                pool.run(sliceStart: sliceStart, sliceEnd: sliceEnd, blockStart: blockStart,
                         tasks: unitCount + overlap.stemTasks + overlap.finishParts + (overlap.postPending ? 1 : 0)
                             + (overlap.sideTask != nil ? 1 : 0))
                overlap.stemTasks = 0       // a block's stems and finishing parts run in the call's first round
                overlap.finishParts = 0
            } else {
                var u = 0
                while u < unitCount {
                    renderUnit(u, sliceStart: sliceStart, sliceEnd: sliceEnd, blockStart: blockStart)
                    u += 1
                }
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

    /// Gathers the events due before `blockEnd` into `sliceEvents`, in frame
    /// order (an event already late is taken at `sliceStart` and counted);
    /// returns where the slice ends. It ends at `blockEnd` unless the slice
    /// buffers are full (an event flood: the rest waits one slice), or a unit
    /// has no room for more (a flood it is still passing on: the rest waits
    /// in the queue, and the slice lasts until the next event or 64 frames,
    /// so the unit can pass some on).
    private func gatherSlice(from sliceStart: Int64, blockEnd: Int64) -> Int64 {
        sliceEventCount = 0
        sysExArenaUsed = 0
        var sliceEnd = blockEnd
        var room = configuration.maxEventsPerSlice
        var r = 0
        while r < units.count {
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
            // the events handed to this call come after the queues' at the same frame
            if callbackNext < callbackEventCount {
                let f = max(callbackFrame(callbackNext), callbackFloor)
                if f < bestFrame {
                    best = Int.max
                    bestFrame = f
                }
            }
            if best < 0 || bestFrame >= blockEnd { break gather }
            if sliceEventCount >= room {
                sliceEnd = room > 0 ? max(bestFrame, sliceStart + 1) : min(blockEnd, max(bestFrame, sliceStart + 64))
                break gather
            }
            if best == Int.max {
                if !gatherCallbackEvent(sliceStart: sliceStart) {
                    sliceEnd = max(bestFrame, sliceStart + 1)
                    break gather
                }
                continue gather
            }
            let q = inputs[best]
            guard let event = q.peek() else { break gather }
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
        return sliceEnd
    }

    /// Gathers the current call's next event into the slice; false (taking
    /// nothing) when its SysEx does not fit the slice's SysEx arena.
    private func gatherCallbackEvent(sliceStart: Int64) -> Bool {
        let event = callbackEvents![callbackNext]
        let exact = callbackFrame(callbackNext)
        let frame = max(exact, sliceStart, callbackFloor)
        switch event.kind {
        case .message(let m):
            if exact < frame { lateEventCount.add(1, ordering: .relaxed) }
            sliceEvents[sliceEventCount] = SliceEvent(frame: frame, kind: .message(m))
            sliceEventCount += 1
        case .sysEx(let bytes):
            let n = bytes.count
            if n > configuration.maxSysExBytes || bytes.baseAddress == nil {
                oversizeSysExCount.add(n > 0 ? 1 : 0, ordering: .relaxed)
                callbackNext += 1
                return true
            }
            if sysExArenaUsed + n > sysExArenaCapacity { return false }
            if exact < frame { lateEventCount.add(1, ordering: .relaxed) }
            // an index loop: the generic copy allocates in unoptimized builds
            let source = bytes.baseAddress!, destination = sysExArena + sysExArenaUsed
            var i = 0
            while i < n { destination[i] = source[i]; i += 1 }
            sliceEvents[sliceEventCount] = SliceEvent(frame: frame, kind: .sysEx(offset: sysExArenaUsed, length: n))
            sysExArenaUsed += n
            sliceEventCount += 1
        }
        callbackFloor = frame
        callbackNext += 1
        return true
    }

    /// Files the slice's events into the per-unit event lists, resolving
    /// each channel message's routing once, in event order (see
    /// `ChannelRouter.resolve`): a Bank Select route's move adds pedals up
    /// and All Notes Off for the unit left behind, a split channel's note-on
    /// a note-off for the key's previous note on another unit. Messages
    /// without a channel and SysEx go to every unit. Render thread.
    private func routeSlice() {
        let unitCount = units.count
        let everyUnit: UInt64 = unitCount >= 64 ? ~0 : (UInt64(1) << UInt64(unitCount)) &- 1
        var u = 0
        while u < unitCount { unitEventCounts[u] = 0; u += 1 }
        // the slice's events and the ones routing adds stay within maxEventsPerSlice
        var total = sliceEventCount
        var e = 0
        while e < sliceEventCount {
            let event = sliceEvents[e]
            if case .message(let m) = event.kind, let ch = m.channel {
                let d = router.resolve(m, roomForLeaving: total + 3 <= configuration.maxEventsPerSlice)
                if d.leaving != 0 {
                    // Release everything the unit left behind holds on this
                    // channel, just before the change: pedals up (All Notes
                    // Off spares notes a pedal holds), then All Notes Off.
                    total += 3
                    file(.controlChange(channel: ch, controller: MIDIController.sustain, value: 0), at: event.frame, to: d.leaving)
                    file(.controlChange(channel: ch, controller: MIDIController.sostenuto, value: 0), at: event.frame, to: d.leaving)
                    file(.controlChange(channel: ch, controller: MIDIController.allNotesOff, value: 0), at: event.frame, to: d.leaving)
                }
                if d.release != 0, case .noteOn(_, let key, _) = m {
                    // the key's previous note, released where the new one starts on another unit
                    file(.noteOff(channel: ch, key: key, velocity: 64), at: event.frame, to: d.release)
                }
                file(event, to: d.units)
            } else {
                file(event, to: everyUnit)
            }
            e += 1
        }
    }

    /// Appends a message to the event lists of the units in `mask`.
    @inline(__always)
    private func file(_ message: MIDIMessage, at frame: Int64, to mask: UInt64) {
        file(SliceEvent(frame: frame, kind: .message(message)), to: mask)
    }

    /// Appends an event to the event lists of the units in `mask`.
    @inline(__always)
    private func file(_ event: SliceEvent, to mask: UInt64) {
        var m = mask
        while m != 0 {
            let u = m.trailingZeroBitCount
            m &= m &- 1
            unitEvents[u * unitEventCapacity + unitEventCounts[u]] = event
            unitEventCounts[u] += 1
        }
    }

    /// Renders unit `u` over one slice, delivering the slice's events routed to it.
    /// Render thread (or an offline worker that owns this unit for the slice).
    func renderUnit(_ u: Int, sliceStart: Int64, sliceEnd: Int64, blockStart: Int64) {
        let unit = units[u]
        var position = sliceStart
        let output = unitOutputs[synthSet * units.count + u]
        let events = unitEvents + u * unitEventCapacity
        let count = unitEventCounts[u]
        var e = 0
        while e < count {
            let event = events[e]
            let at = min(max(unit.deliveryFrame(forEventAt: event.frame), position), sliceEnd)
            if at > position {
                renderPiece(u, unit, output, offset: Int(position - blockStart), frames: Int(at - position))
                position = at
            }
            switch event.kind {
            case .message(let m):
                unit.receive(m)
            case .sysEx(let off, let len):
                unit.receiveSysEx(UnsafeBufferPointer(start: sysExArena + off, count: len))
            }
            e += 1
        }
        if sliceEnd > position {
            renderPiece(u, unit, output, offset: Int(position - blockStart), frames: Int(sliceEnd - position))
        }
    }

    /// Mixes buffer set `set` (`frames` frames), runs the send effects and
    /// the master bus, and writes the result to `left`/`right` (with stems,
    /// when `stemOutputs` is given: see `finishStems`).
    func finish(frames: Int, set: Int, left: UnsafeMutablePointer<Float>, right: UnsafeMutablePointer<Float>,
                stemOutputs: UnsafePointer<UnsafeMutablePointer<Float>>? = nil) {
        sendEffects!.applyRequests(set: set)
        mix(frames: frames, set: set, left: left, right: right)
        if let stemOutputs, stems != nil {
            finishStems(frames: frames, set: set, left: left, right: right, stemOutputs: stemOutputs)
        } else {
            masterBus.process(left: left, right: right, frames: frames, set: set)
        }
    }

    /// Buffer set `set`'s mix before the master bus, into `left`/`right`:
    /// every unit's dry sound, and the send effects' returns on the sum of
    /// their sends (after `applyRequests`).
    func mix(frames: Int, set: Int, left: UnsafeMutablePointer<Float>, right: UnsafeMutablePointer<Float>) {
        let unitCount = units.count
        let sends = sendEffects!
        // Mix the dry sound and the sends; the send effects add their returns.
        mixDry(frames: frames, set: set, left: left, right: right)
        if !sends.isEmpty {
            if unitCount == 0 { sends.clearBus() }
            var u = 0
            while u < unitCount {
                sends.accumulate(unitOutputs[set * unitCount + u], first: u == 0, frames: frames)
                u += 1
            }
        }
        sends.process(sends.bus, outputLeft: left, outputRight: right, frames: frames)
    }

    /// Writes the sum of buffer set `set`'s dry unit outputs (`frames`
    /// frames) to `left`/`right`: a plain Float32 sum, headroom is the float range.
    func mixDry(frames: Int, set: Int, left: UnsafeMutablePointer<Float>, right: UnsafeMutablePointer<Float>) {
        left.update(repeating: 0, count: frames)
        right.update(repeating: 0, count: frames)
        let unitCount = units.count
        var u = 0
        while u < unitCount {
            let o = unitOutputs[set * unitCount + u]
            // one simple loop per buffer: each vectorizes
            Self.add(o.left, into: left, frames)
            Self.add(o.right, into: right, frames)
            u += 1
        }
    }

    @inline(__always)
    static func add(_ source: UnsafeMutablePointer<Float>, into destination: UnsafeMutablePointer<Float>, _ frames: Int) {
        for i in 0..<frames { destination[i] += source[i] }
    }
}
