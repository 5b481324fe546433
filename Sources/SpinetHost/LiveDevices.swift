import SpinetEngine

// The two sides a live host plugs into `LiveSession` (SpinetRig): where the
// sound goes and where the MIDI comes from. ALSA implements both
// (PCMOutput, SequencerClient); a JACK client implements both in one object.
//
// Who owns what: the device owns the thread or callback that renders (ALSA
// PCM: a render thread that writes periods; JACK: the process callback that
// the server calls); the session owns the engine and everything around it
// (start, stop, font swaps, recording, the status line, signals); the MIDI
// input owns its own reading thread, if it has one, and the bookkeeping of
// what each of its sources holds down (`HeldNoteTracker`), so that a source
// that leaves has exactly its notes released, in order with its other events.

/// Render load: render time as a fraction of the period (1 = 100 %).
public struct RenderLoad: Sendable {
    public var mean: Double
    public var peak: Double
    /// Periods measured.
    public var periods: Int
    public init(mean: Double, peak: Double, periods: Int) {
        self.mean = mean
        self.peak = peak
        self.periods = periods
    }
}

/// An audio output that pulls sound from an `Engine`, one block at a time,
/// on its own real-time thread or callback.
///
/// Each block, on that thread: publish where the engine's next frame will be
/// heard (`AudioTimeline`, so MIDI inputs can stamp events), `engine.render`
/// up to `periodFrames` frames, copy them to the record ring if there is one,
/// and hand them to the hardware or server. No allocation, lock or log there.
public protocol AudioDevice: AnyObject, Sendable {
    /// What the device runs at (it may differ from what was asked).
    var sampleRate: Int { get }
    /// The most frames one render call asks for: the engine is prepared for it.
    var periodFrames: Int { get }
    /// Periods between a block being rendered and being heard (ALSA: the
    /// buffer's periods; JACK: its period count). Enters the live latency.
    var periods: Int { get }
    /// Frames the device holds: after a fade-out this much silence more
    /// flushes it, so stopping cannot click.
    var bufferFrames: Int { get }
    /// One line for the user: device, rate, format, periods, channels.
    var summary: String { get }
    /// Xruns so far (any thread).
    var xruns: Int { get }
    /// Set once the device failed for good (it disappeared): the render
    /// thread has stopped. One line, naming the device.
    var failure: String? { get }
    /// Render load since the previous call (any thread).
    func takeIntervalLoad() -> RenderLoad
    /// Render load since the start, leaving out the first moments.
    var totalLoad: RenderLoad { get }
    /// Starts rendering `engine` (prepared for `periodFrames`), publishing to
    /// `timeline` and copying to `ring`. `priority` > 0 asks for SCHED_FIFO
    /// where the device makes its own thread. Control thread; once.
    func start(engine: Engine, timeline: AudioTimeline, ring: RecordRing?, priority: Int32) -> ThreadScheduling
    /// Stops rendering, then the device. With `drain`, what is queued is
    /// played first; else it is dropped. Control thread.
    func stop(drain: Bool)
}

/// A device whose rate can change while it runs (a JACK server, PipeWire's
/// `clock.force-rate`), where the host follows: it watches `sampleRate`,
/// builds and prepares a new engine at the new rate off the render thread,
/// and offers it; the render thread swaps it in at the start of a block
/// (no allocation, no lock there) and is silent while no engine matches.
public protocol RateFollowingDevice: AudioDevice {
    /// The host follows rate changes from now on. Before `start`.
    func hostWillFollowRate()
    /// Hands over an engine prepared at `sampleRate` now. False while an
    /// earlier one waits to be swapped in: try again. Control thread.
    func offer(engine: Engine) -> Bool
    /// True once the render thread has swapped in the engine last offered
    /// (its next `AudioTimeline` publication is that engine's frames).
    var offeredEngineTaken: Bool { get }
}

/// Counts a MIDI input keeps, for the status line and the closing summary.
public struct MIDIInputStatistics: Sendable {
    /// MIDI events received (ALSA: on the input ports, not the System
    /// announcements about ports and connections).
    public var received = 0
    /// Of those, how many carried an arrival time from the system (ALSA: the
    /// kernel's queue stamp) rather than the reading thread's clock.
    public var stamped = 0
    /// Times the system's own buffer overflowed (ALSA: the kernel pool).
    public var overflows = 0
    /// Events the system lost on the way (ALSA: the kernel could not deliver).
    public var lost = 0
    /// SysEx messages longer than the input passes on, and those never finished.
    public var sysExTooLong = 0
    public var sysExUnfinished = 0
    /// Held notes and pedals released because their source went away.
    public var released = 0
    /// Sources connected now.
    public var connected = 0
    public init() {}

    /// Events lost on the input's side (the engine's own drops are apart).
    public var dropped: Int { lost + overflows + sysExTooLong + sysExUnfinished }
}

/// A source of live MIDI for one engine.
///
/// `start` is called once the audio runs and `timeline` has its first anchor.
/// An input with a reading thread of its own (ALSA sequencer) stamps each
/// event with its arrival time and pushes it to `queue` at
/// `timing.frame(forArrival:anchor:)`: played at arrival plus a constant
/// latency. An input that the audio callback reads (JACK MIDI ports, a
/// plugin's event list) ignores `queue` and hands its events to the engine
/// inside that callback, at their frame offsets in the block.
public protocol MIDIInput: AnyObject, Sendable {
    /// Starts delivering events. `priority` > 0 asks for SCHED_FIFO for a
    /// reading thread. `tempo` gets the tempo of a MIDI clock a source sends,
    /// whenever it changes. Returns one line for the user: the input's name
    /// and what it is connected from.
    func start(queue: EventQueue, timeline: AudioTimeline, timing: LiveTiming, priority: Int32,
               tempo: @escaping @Sendable (Double) -> Void) throws -> String
    /// Stops delivering and closes the input. Idempotent.
    func stop()
    /// Lines for the user (connections made and lost, overflows), oldest first.
    func takeNotices() -> [String]
    var inputStatistics: MIDIInputStatistics { get }
    /// True for an input the audio callback reads (JACK MIDI ports, a
    /// plugin's event list): its events land at their frames in the block
    /// being rendered, so MIDI in to audio out is the engine's own latency,
    /// not the device buffer's. Default false.
    var readsInAudioCallback: Bool { get }
    /// True for an input with a thread of its own that can move to another
    /// engine while it runs (`follow`): the session then follows a device's
    /// rate change with it. Default false.
    var canFollowNewEngine: Bool { get }
    /// From now on, push to `queue` (a new engine's, which only this input
    /// feeds) with `timing` (at that engine's rate), and start counting
    /// frames afresh from the timeline's anchors, which are that engine's
    /// by now. Control thread, after `start`. Default: nothing.
    func follow(queue: EventQueue, timing: LiveTiming)
}

extension MIDIInput {
    public var readsInAudioCallback: Bool { false }
    public var canFollowNewEngine: Bool { false }
    public func follow(queue: EventQueue, timing: LiveTiming) {}
}
