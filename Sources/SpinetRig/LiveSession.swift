import Glibc
import SpinetEngine
import SpinetHost
import SpinetSoundFont
import SpinetSupport

/// A live synth from start to stop, over any `AudioDevice` and `MIDIInput`:
/// what `spinet play` does once its options are checked, and what a JACK
/// client will do.
///
/// `run` prepares the engine for the device, starts the audio, then the MIDI
/// (once the device has published where its frames meet the clock), prints
/// the latency, and loops until a stopping signal, the end of `duration`, or
/// a device failure: font swaps (a path on standard input, SIGHUP), notices,
/// the status line. Then it fades out, stops both sides, finishes the
/// recording and prints the summary.
///
/// The graph's `inputs[0]` takes the MIDI input's events, `inputs[1]` (if
/// any) this thread's; its `soundFontSlot` takes the fonts swapped in.
///
/// On a device whose rate can change while it runs (`RateFollowingDevice`:
/// JACK, PipeWire), the session follows a new rate: this thread builds the
/// graph again at that rate (a new SoundFont player for the current fonts,
/// the same settings) and offers it to the device, whose render thread
/// swaps it in. A recording stops there (a file has one rate). MIDI the
/// audio callback reads needs nothing more. A MIDI input of its own thread
/// (the ALSA sequencer) pushes to the first graph's queue at frames of the
/// first engine: once the device has swapped the new engine in and
/// published its first anchor, the input is moved to the new graph's queue
/// and timing (`MIDIInput.follow`). An input that cannot move keeps the
/// session from following: silence until the rate is back.
public final class LiveSession {
    public struct Options: Sendable {
        /// Latency added for the MIDI thread's reaction time, in ms.
        public var safetyMilliseconds = 1.0
        /// SCHED_FIFO priority of the audio thread (the MIDI thread gets 5
        /// less); 0 for normal scheduling.
        public var priority = 70
        /// Tempo of the tempo-synced delay until a MIDI clock arrives.
        public var tempo = 120.0
        /// No status line and no messages but errors.
        public var quiet = false
        /// Show the status line (a terminal).
        public var statusLine = false
        /// Measuring aid: stop after this many seconds.
        public var duration: Double?
        /// Measuring aid: hold this many organ notes from the start (no MIDI needed).
        public var benchNotes = 0
        /// Read SoundFont paths from standard input (off when it carries a MIDI file or the keys).
        public var readsStandardInput = true
        public init() {}
    }

    /// The graph playing now (a new one after a rate change).
    public private(set) var graph: EngineGraph
    public let device: any AudioDevice
    public let midi: (any MIDIInput)?
    public let recorder: Recorder?
    public let options: Options
    /// The fonts playing now (a reload by SIGHUP loads them again).
    public private(set) var fonts: [String]
    private let log: (String) -> Void
    /// Driven on each turn of the control loop (the MIDI file player); the
    /// session ends when it has nothing more to play.
    public var player: (any LivePlayer)?

    /// - Parameters:
    ///   - fonts: the fonts `graph`'s SoundFont unit was loaded from.
    ///   - log: prints one line to the user (standard error).
    public init(graph: EngineGraph, device: any AudioDevice, midi: (any MIDIInput)?, fonts: [String],
                recorder: Recorder?, options: Options, log: @escaping (String) -> Void) {
        precondition(graph.soundFontSlot != nil, "a live graph (GraphBuilder.live)")
        self.graph = graph
        self.device = device
        self.midi = midi
        self.fonts = fonts
        self.recorder = recorder
        self.options = options
        self.log = log
    }

    /// Installs the handlers `run` answers: SIGINT and the other stopping
    /// signals fade out and end the session, SIGHUP reloads the SoundFont.
    /// Call first thing, before any device or file is opened.
    public static func installSignalHandlers() {
        ProcessSignals.installStopHandlers(hangUp: false)
        ProcessSignals.installReloadHandler()
    }

    private func say(_ line: String) {
        if !options.quiet { log(line) }
    }

    /// What one `run` keeps between its steps (the control thread's own).
    private final class Run {
        var sampleRate: Double
        let follower: RateFollowingDevice?
        let timing: LiveTiming
        /// Frames added for the MIDI thread's reaction time.
        let safetyFrames: Int
        let tempoTarget: TempoTarget
        let timeline = AudioTimeline()
        let memoryProblem: String?
        var recording: Recorder?
        var recordLine = ""
        /// A rate the graph could not be built at (silent until it changes).
        var failedRate = 0
        var failure: String?
        var start = 0.0
        var lastStatus = 0.0
        var lastXruns = 0
        var lastDropped = 0
        var fluidMessages = Set<String>()
        let status: StatusLine
        /// SoundFont switching: a path on standard input (SIGHUP reloads).
        var requests: SoundFontRequests?

        init(sampleRate: Double, follower: RateFollowingDevice?, timing: LiveTiming, safetyFrames: Int, tempoTarget: TempoTarget,
             memoryProblem: String?, recording: Recorder?, status: StatusLine) {
            self.sampleRate = sampleRate
            self.follower = follower
            self.timing = timing
            self.safetyFrames = safetyFrames
            self.tempoTarget = tempoTarget
            self.memoryProblem = memoryProblem
            self.recording = recording
            self.status = status
        }
    }

    /// Runs until stopped; returns the exit status: 0 after Ctrl-C (how a
    /// player ends play) or `duration`, 128 + the signal after any other
    /// stopping signal. Throws a `RigError` when the device failed or the
    /// MIDI input or the recording could not go on.
    public func run() throws(RigError) -> Int32 {
        let run = prepare()
        let scheduling = try start(run)
        announce(run, scheduling: scheduling)
        run.requests = options.readsStandardInput ? SoundFontRequests() : nil
        run.start = monotonicSeconds()
        while !ProcessSignals.stopRequested.load(ordering: .relaxed) {
            usleep(20_000)
            if let f = device.failure { run.failure = f; break }
            let now = monotonicSeconds()
            if let d = options.duration, now - run.start >= d { break }
            for line in midi?.takeNotices() ?? [] where !options.quiet { run.status.print(line) }
            followRateChange(run)
            if run.failure != nil { break }
            if let player, let anchor = run.timeline.read() {
                let more = player.step(graph: graph, now: anchor.frame, periodFrames: device.periodFrames)
                for line in player.takeNotices() where !options.quiet { run.status.print(line) }
                if !more { break }
            }
            switchFontsIfAsked(run)
            for line in SoundFontUnit.drainRenderThreadMessages() where !options.quiet {
                // The render thread may raise the same complaint thousands of times: say it once.
                if run.fluidMessages.insert(line).inserted { run.status.print("FluidSynth: \(line) (said once)") }
            }
            showStatus(run, now: now)
        }
        try stop(run)
        // Ctrl-C is how a player ends play: 0. A signal from elsewhere (a
        // service manager's SIGTERM, SIGQUIT, ...) is told apart: 128 + it.
        let stoppedBy = ProcessSignals.firstStop.load(ordering: .relaxed)
        return stoppedBy != 0 && stoppedBy != SIGINT ? 128 + stoppedBy : 0
    }

    /// Prepares the engine for the device and works out the timing.
    private func prepare() -> Run {
        let engine = graph.engine
        let sampleRate = Double(device.sampleRate)
        // Follow rate changes where the device can and the MIDI goes through
        // its callback or can move to the new graph's queue.
        let midiFollows = midi.map { $0.readsInAudioCallback || $0.canFollowNewEngine } ?? true
        let follower = midiFollows ? device as? RateFollowingDevice : nil
        follower?.hostWillFollowRate()
        engine.prepare(sampleRate: sampleRate, maxFrames: device.periodFrames)
        engine.setTempo(beatsPerMinute: options.tempo)
        let safetyFrames = Int((options.safetyMilliseconds / 1000 * sampleRate).rounded())
        let timing = LiveTiming(sampleRate: sampleRate, periodFrames: device.periodFrames, periods: device.periods, safetyFrames: safetyFrames)
        let run = Run(sampleRate: sampleRate, follower: follower, timing: timing, safetyFrames: safetyFrames, tempoTarget: TempoTarget(engine),
                      memoryProblem: options.priority > 0 ? lockMemory() : nil, recording: recorder,
                      status: StatusLine(enabled: !options.quiet && options.statusLine))
        if options.benchNotes > 0, let control = graph.inputs.last {
            control.push(EngineEvent(frame: 0, .programChange(channel: 0, program: 19)))
            for i in 0..<options.benchNotes {
                control.push(EngineEvent(frame: 0, .noteOn(channel: 0, key: UInt8(24 + i % 96), velocity: 90)))
            }
        }
        return run
    }

    /// Starts the audio first, then MIDI. The input ports appear only once
    /// the audio thread has published where its frames meet the clock, so a
    /// note a DAW sends the moment it sees them is played at its arrival
    /// plus the latency, like any later one.
    private func start(_ run: Run) throws(RigError) -> ThreadScheduling {
        let priority = options.priority
        recorder?.start()
        let scheduling = device.start(engine: graph.engine, timeline: run.timeline, ring: recorder?.ring, priority: Int32(priority))
        guard let midi else { return scheduling }
        // The first anchor comes once the device runs (its buffer filled):
        // a few periods. A device that never starts fails within 5 s.
        let deadline = monotonicSeconds() + 10
        while run.timeline.read() == nil && device.failure == nil && !ProcessSignals.stopRequested.load(ordering: .relaxed)
                && monotonicSeconds() < deadline {
            usleep(1_000)
        }
        let line: String
        do {
            let tempoTarget = run.tempoTarget
            line = try midi.start(queue: graph.inputs[0], timeline: run.timeline, timing: run.timing,
                                  priority: priority > 0 ? Int32(max(1, priority - 5)) : 0,
                                  tempo: { bpm in tempoTarget.set(bpm) })
        } catch {
            device.stop(drain: false)
            throw RigError(String(describing: error))
        }
        say("MIDI: " + line)
        _ = midi.takeNotices()
        return scheduling
    }

    /// Prints the device, the latency and what keeps it from real time.
    private func announce(_ run: Run, scheduling: ThreadScheduling) {
        let engine = graph.engine, sampleRate = run.sampleRate, timing = run.timing
        say("Audio: " + device.summary)
        if midi?.readsInAudioCallback == true {
            say(formatted("Latency: %.1f ms from MIDI in to audio out (the limiter's look-ahead, %ld frames at %ld Hz; each event lands at its frame in the cycle)",
                          Double(engine.latencyFrames) * 1000 / sampleRate, engine.latencyFrames, device.sampleRate))
        } else {
            let totalLatency = Int(timing.latencyFrames) + engine.latencyFrames
            say(formatted("Latency: %.1f ms from MIDI in to audio out (%ld x %ld frames buffer + %ld safety + %ld limiter look-ahead = %ld frames at %ld Hz)",
                          Double(totalLatency) * 1000 / sampleRate, device.periods, device.periodFrames, run.safetyFrames,
                          engine.latencyFrames, totalLatency, device.sampleRate))
        }
        if case .refused(let e) = scheduling {
            say("spinet: warning: the audio thread has no real-time priority (\(String(cString: strerror(e)))), so sound may click when the machine is busy. "
                + "To allow it: add '@audio - rtprio 95' and '@audio - memlock unlimited' to /etc/security/limits.d/audio.conf, "
                + "join the group (sudo usermod -aG audio $USER) and log in again; or pass --priority 0 to run without it.")
        } else if let m = run.memoryProblem {
            say("spinet: warning: cannot lock memory (\(m)): the audio thread may wait for paging; raise 'memlock' in /etc/security/limits.d/audio.conf")
        }
    }

    /// When the device's rate changed, builds the graph again at the new
    /// rate (off the render thread: the device is silent until it is
    /// offered) and moves the MIDI input and the tempo to it. A recording
    /// stops there (a file has one rate).
    private func followRateChange(_ run: Run) {
        guard let follower = run.follower, case let rate = device.sampleRate, rate > 0,
              rate != Int(run.sampleRate), rate != run.failedRate else { return }
        let settings = graph.settings
        if let r = run.recording {
            run.recordLine = finishRecording(r, sampleRate: run.sampleRate, failure: &run.failure)
            run.recording = nil
            if !options.quiet { run.status.print(formatted("recording stopped at the rate change (%ld Hz to %ld Hz; a file has one rate): ", Int(run.sampleRate), rate)
                                                 + r.target + " keeps what was played before") }
            if run.failure != nil { return }
        }
        do {
            let next = try GraphBuilder.live(settings, fonts: fonts, rate: Double(rate), inputCapacities: graph.inputs.map(\.capacity))
            next.engine.prepare(sampleRate: Double(rate), maxFrames: max(device.periodFrames, 1))
            next.engine.setTempo(beatsPerMinute: options.tempo)
            while !follower.offer(engine: next.engine) && !ProcessSignals.stopRequested.load(ordering: .relaxed) { usleep(5_000) }
            if let midi, !midi.readsInAudioCallback {
                // The input stamps events against the timeline: move it
                // once the anchors are the new engine's (the first
                // published after the swap).
                let deadline = monotonicSeconds() + 5
                while !follower.offeredEngineTaken && device.failure == nil && monotonicSeconds() < deadline
                        && !ProcessSignals.stopRequested.load(ordering: .relaxed) { usleep(1_000) }
                let seen = run.timeline.publications
                while run.timeline.publications == seen && device.failure == nil && monotonicSeconds() < deadline
                        && !ProcessSignals.stopRequested.load(ordering: .relaxed) { usleep(1_000) }
                let safety = Int((options.safetyMilliseconds / 1000 * Double(rate)).rounded())
                midi.follow(queue: next.inputs[0],
                            timing: LiveTiming(sampleRate: Double(rate), periodFrames: device.periodFrames,
                                               periods: device.periods, safetyFrames: safety))
            }
            run.tempoTarget.move(to: next.engine)
            graph = next
            run.sampleRate = Double(rate)
            if !options.quiet { run.status.print("the audio now runs at \(rate) Hz; Spinet follows with its graph built again at \(rate) Hz (notes sounding were cut)") }
        } catch {
            run.failedRate = rate
            run.status.print("cannot build the graph at \(rate) Hz: \(error); silent until the rate changes again")
        }
    }

    /// Loads the fonts asked for (a path on standard input, SIGHUP: the
    /// current ones again) here, off the render thread, and offers them to
    /// the graph's slot; the render thread swaps them in.
    private func switchFontsIfAsked(_ run: Run) {
        guard let next = run.requests?.take(reloading: fonts)
                ?? (ProcessSignals.reloadRequested.exchange(false, ordering: .relaxed) ? fonts : nil) else { return }
        let settings = graph.settings
        do {
            let newUnit = try GraphBuilder.liveSoundFont(settings, fonts: next, rate: run.sampleRate)
            let slot = graph.soundFontSlot!
            while !slot.offer(newUnit) && !ProcessSignals.stopRequested.load(ordering: .relaxed) { usleep(20_000) }
            fonts = next
            if !options.quiet { run.status.print("SoundFont: switched to \(next.joined(separator: ", ")) (notes sounding ring on)") }
            for w in newUnit.fontWarnings { run.status.print("warning: \(w)") }
        } catch {
            run.status.print("cannot switch SoundFont: \(error.description)")
        }
    }

    /// Twice a second: the status line on a terminal, or a line when xruns
    /// or dropped events grew.
    private func showStatus(_ run: Run, now: Double) {
        guard now - run.lastStatus >= 0.5 else { return }
        run.lastStatus = now
        let engine = graph.engine
        let load = device.takeIntervalLoad()
        let dropped = droppedEvents()
        let xruns = device.xruns
        if run.status.enabled {
            run.status.show((player?.status.map { $0 + " | " } ?? "") + formatted("voices %3ld | load %5.1f%% (peak %5.1f%%) | xruns %ld | dropped %ld | late %ld",
                                  engine.statistics.activeVoices, load.mean * 100, load.peak * 100,
                                  xruns, dropped, engine.statistics.lateEvents))
        } else if !options.quiet && (xruns != run.lastXruns || dropped != run.lastDropped) {
            log("spinet: \(xruns) xrun\(xruns == 1 ? "" : "s"), \(dropped) MIDI event\(dropped == 1 ? "" : "s") dropped so far")
        }
        run.lastXruns = xruns
        run.lastDropped = dropped
    }

    /// Fades out (no click), plays out what is queued, closes both sides,
    /// finishes the recording and prints the summary. Throws the device's,
    /// the input's or the recording's failure.
    private func stop(_ run: Run) throws(RigError) {
        let engine = graph.engine, sampleRate = run.sampleRate
        let fadeFrames = Int(0.02 * sampleRate)
        engine.requestFadeOut(frames: fadeFrames)
        let fadeDeadline = monotonicSeconds() + 0.15
        while run.failure == nil && !engine.isFadedOut && monotonicSeconds() < fadeDeadline { usleep(2_000) }
        if run.failure == nil {
            // The faded block is at most a buffer ahead of the device. Keep
            // writing silence for a whole buffer more (plus a period and the
            // limiter's delay line): by then the fade has been played and every
            // frame left in the ring is zero, so stopping cannot click, on any
            // device, even one that plays past the last frame written.
            let frames = device.bufferFrames + device.periodFrames + engine.latencyFrames
            usleep(UInt32(Double(frames) / sampleRate * 1e6) + 2_000)
        }
        device.stop(drain: false)
        // (a device may fail while it stops: a JACK client libjack would not close)
        run.failure = run.failure ?? device.failure
        midi?.stop()
        run.status.finish()
        let elapsed = monotonicSeconds() - run.start
        if let r = run.recording { run.recordLine = finishRecording(r, sampleRate: sampleRate, failure: &run.failure) }
        if let failure = run.failure { throw RigError(failure) }
        let total = device.totalLoad
        let stats = engine.statistics
        let input = midi?.inputStatistics ?? MIDIInputStatistics()
        let dropped = droppedEvents()
        var why = ""
        if dropped > 0 {
            why = " (engine queue or SoundFont flood backlog full \(stats.droppedEvents); never a note-off, pedal release or All Notes Off; kernel pool overflowed \(input.overflows) times, "
                + "kernel lost \(input.lost), SysEx too long \(input.sysExTooLong), "
                + "SysEx unfinished \(input.sysExUnfinished))"
        }
        say(formatted("Played %.1f s: render load %.1f%% mean, %.1f%% peak of a %ld-frame period; %ld voices at most; %ld xruns; %ld MIDI events (%ld stamped by the kernel), %ld dropped",
                      elapsed, total.mean * 100, total.peak * 100, device.periodFrames, stats.peakVoices, device.xruns,
                      input.received, input.stamped, dropped)
            + "\(why), \(stats.lateEvents) late; \(input.released) held notes released\(run.recordLine)")
    }

    /// Finishes the file; returns the summary's part about it.
    private func finishRecording(_ recorder: Recorder, sampleRate: Double, failure: inout String?) -> String {
        do {
            let lost = recorder.ring.lostFrames
            let frames = try recorder.finish()
            return formatted("; recorded %.1f s to ", Double(frames) / sampleRate) + recorder.target
                + (lost > 0 ? " (\(lost) frames lost: the disk was too slow)" : "")
        } catch {
            failure = failure ?? error.description
            return ""
        }
    }

    /// Events lost anywhere on the way in: the engine queue was full, the
    /// input lost them (ALSA: the kernel could not deliver, its pool
    /// overflowed, at least one each time), or a SysEx message was too long
    /// or never finished.
    private func droppedEvents() -> Int {
        graph.engine.statistics.droppedEvents + (midi?.inputStatistics.dropped ?? 0)
    }
}

/// The engine a MIDI clock's tempo goes to (the MIDI thread sets it; the
/// session moves it to a graph built for a new rate, with the tempo the
/// clock gave).
final class TempoTarget: @unchecked Sendable {
    private let state: Locked<(engine: Engine, clock: Double?)>

    init(_ engine: Engine) { state = Locked((engine, nil)) }

    /// MIDI thread.
    func set(_ bpm: Double) {
        state.withLock { s in
            s.clock = bpm
            s.engine.setTempo(beatsPerMinute: bpm)
        }
    }

    /// Control thread.
    func move(to engine: Engine) {
        state.withLock { s in
            s.engine = engine
            if let bpm = s.clock { engine.setTempo(beatsPerMinute: bpm) }
        }
    }
}

/// Requests to switch SoundFont: a line on standard input naming a file
/// (several separated by commas stack), or SIGHUP to reload the current ones.
final class SoundFontRequests: @unchecked Sendable {
    private let lines = Locked<[String]>([])

    init() {
        // A background job that reads its terminal would be stopped: read() fails instead.
        signal(SIGTTIN, SIG_IGN)
        // Never joined: it waits in read() until the program ends.
        _ = NativeThread(name: "spinet-stdin") { [self] in
            var pending: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let n = buffer.withUnsafeMutableBytes { read(STDIN_FILENO, $0.baseAddress, $0.count) }
                if n == 0 { return }                     // no more input (or /dev/null)
                if n < 0 {
                    if errno == EINTR { continue }
                    sleep(1)                             // EIO while in the background
                    continue
                }
                pending += buffer[0..<n]
                while let nl = pending.firstIndex(of: 10) {
                    let path = String(decoding: pending[..<nl], as: UTF8.self).trimmingSpaces
                    pending.removeSubrange(...nl)
                    if !path.isEmpty { self.lines.withLock { $0.append(path) } }
                }
            }
        }
    }

    /// The fonts to switch to, if asked since the last call.
    func take(reloading current: [String]) -> [String]? {
        if let line = lines.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) {
            return line.split(separator: ",").map { String($0).trimmingSpaces }
        }
        if ProcessSignals.reloadRequested.exchange(false, ordering: .relaxed) { return current }
        return nil
    }
}

func monotonicSeconds() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

/// The one-line status display on a terminal; other lines print above it.
final class StatusLine {
    let enabled: Bool
    private var shown = false

    init(enabled: Bool) { self.enabled = enabled }

    func show(_ text: String) {
        guard enabled else { return }
        writeStandardError("\r\(text)\u{1B}[K")
        shown = true
    }

    /// Prints a line (above the status line, if one is shown).
    func print(_ line: String) {
        if shown { writeStandardError("\r\u{1B}[K"); shown = false }
        writeStandardError(clippingEchoes("spinet: \(line)") + "\n")
    }

    func finish() {
        guard enabled, shown else { return }
        writeStandardError("\r\u{1B}[K")
        shown = false
    }
}
