import SpinetEffects
import SpinetMIDI

// The engine's configuration and control API: building the graph before
// `prepare` (units, routing, inputs), and what any thread may ask or request
// while it renders (statistics, tempo, fade-out, gain).
extension Engine {
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

}

extension Engine {
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
        router.route(channel: channel, to: unit)
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
        router.route(channel: channel, takingTurns: units, fixedKeys: fixedKeys)
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
        router.routeBank(msb: msb, to: unit)
    }

    /// `routeBank(msb:to:)` for one global channel only; it comes before a
    /// route of the same bank for every channel. Stems give each channel
    /// that Bank Select moves to the synth a synth of its own.
    public func routeBank(msb: UInt8, channel: Int, to unit: Int) {
        precondition(!prepared, "set bank routes before prepare")
        precondition(unit >= 0 && unit < units.count)
        router.routeBank(msb: msb, channel: channel, to: unit)
    }

    /// The unit index a global channel is routed to.
    public func unitIndex(forChannel channel: Int) -> Int? {
        router.unit(forChannel: channel)
    }

    /// Creates an input queue for one producer thread.
    public func addInput(capacity: Int = 8192, byteCapacity: Int = 1 << 18) -> EventQueue {
        precondition(!prepared, "add inputs before prepare")
        let q = EventQueue(capacity: capacity, byteCapacity: byteCapacity)
        inputs.append(q)
        return q
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
    public var effectTailSeconds: Double { sendEffects?.tailSeconds ?? 0 }

    /// The reverb and chorus currently in effect (nil: that effect is off).
    /// Render thread, or when no render is running.
    public var reverbParameters: Reverb.Parameters? { sendEffects?.reverbParameters }
    public var chorusParameters: Chorus.Parameters? { sendEffects?.chorusParameters }

    /// Frames of delay the engine adds after the units (the limiter's
    /// look-ahead), in both `render` and `renderOverlapped`.
    public var latencyFrames: Int { masterBus.latencyFrames }

    // MARK: statistics and requests (any thread)

    public struct Statistics: Sendable {
        public var droppedEvents: Int
        /// Events a unit held back to a later block under a flood (none lost).
        public var delayedEvents: Int
        public var lateEvents: Int
        public var activeVoices: Int
        public var peakVoices: Int
        public var oversizeSysEx: Int
    }

    public var statistics: Statistics {
        Statistics(droppedEvents: inputs.reduce(0) { $0 + $1.dropped } + units.reduce(0) { $0 + $1.droppedEvents }
                    + droppedCallbackEvents.load(ordering: .relaxed),
                   delayedEvents: units.reduce(0) { $0 + $1.delayedEvents },
                   lateEvents: lateEventCount.load(ordering: .relaxed),
                   activeVoices: voiceCount.load(ordering: .relaxed),
                   peakVoices: peakVoiceCount.load(ordering: .relaxed),
                   oversizeSysEx: oversizeSysExCount.load(ordering: .relaxed))
    }

    /// Asks the render thread to fade the output to silence over `frames`
    /// frames (and stay silent). Any thread.
    public func requestFadeOut(frames: Int) { masterBus.requestFadeOut(frames: frames) }

    /// True once a requested fade-out has reached silence.
    public var isFadedOut: Bool { masterBus.isFadedOut }

    /// Sets the master gain in dB (render thread, or before rendering
    /// starts; `ramp` false: from the first frame, not ramping to it).
    public func setGain(dB: Double, ramp: Bool = true) { masterBus.setGain(dB: dB, ramp: ramp) }
}
