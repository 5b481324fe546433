import CSpinetPlugin
import FoundationEssentials
import Glibc
import Synchronization
import SpinetEngine
import SpinetMIDI
import SpinetRig
import SpinetSoundFont
import SpinetSynth

/// One plugin instance: a live graph from the rig (`GraphBuilder.live`, the
/// graph `spinet play` runs), driven by a host's process calls with the
/// events of each call at their frames. The LV2 and CLAP glue call it
/// through the C API (PluginAPI.swift).
///
/// Threads:
/// - the control side (`init`, `activate`, `deactivate`, `loadSoundFont`,
///   `saveState`, `restoreState`) runs on the host's main or worker thread,
///   one call at a time (a mutex, never taken by `process`);
/// - SoundFonts are loaded by the instance's one loader: `loadSoundFont`,
///   called by an LV2 host's worker, or by the instance's own loader thread
///   for a `requestSoundFont` (any thread, the audio thread too), whose
///   results `takeSoundFontResult` gives back;
/// - `activate` and `deactivate` may run on a host's audio thread (Ardour
///   deactivates and activates its plugins there at every transport stop
///   and after an export): an activation takes a spare graph the loader
///   thread built and prepared beforehand, and the graphs they replace are
///   released by the loader thread. Neither loads a font or frees a graph
///   once a spare is ready;
/// - `process` runs on the audio thread: it allocates nothing, takes no lock
///   and makes no system call. A graph built off the audio thread (a
///   restored state) reaches it through an atomic slot and the one it
///   replaces goes back through another, to be released off the audio
///   thread; a new SoundFont goes through the graph's `SwappableInstrument`.
/// - parameters are atomics, set from any thread and applied by `process`
///   at the start of its next call.
public final class PluginInstance: @unchecked Sendable {
    public let sampleRate: Double
    /// The frames of delay the plugin adds (the limiter's look-ahead).
    public let latencyFrames: Int
    private let log: @Sendable (Int32, String) -> Void
    /// Where the plugin was loaded from (a restored state's font is also
    /// looked for there), and the font a new instance plays: what a
    /// restored state falls back to when its own font is gone.
    private let bundleDirectory: String?
    public let defaultSoundFont: String

    // control side, under `control`
    private let control = PThreadLock()
    private var settings: PluginSettings
    /// Between an activation and the next deactivation (set under `control`).
    /// `process` reads it too: while inactive it renders silence and touches
    /// no graph (the loader may be installing one then).
    private let processing = Atomic<Bool>(false)
    private var active: Bool { processing.load(ordering: .acquiring) }
    private var maxFrames = 0
    /// Set once the current graph has rendered: a later activation builds a
    /// fresh one (activation starts from silence, and from the same state).
    private let rendered = Atomic<Bool>(false)

    // The graph process renders: retained, released only off the audio
    // thread. While active only the audio thread touches it; the control
    // side uses `newest`.
    private var current: Unmanaged<EngineGraph>?
    /// The graph the audio thread plays or takes next (under `control`):
    /// `current` while inactive, else the last one installed. A control
    /// thread that read `current` while active could see the old graph
    /// after the audio thread had taken an offer but before it installed
    /// it, and hand a font to a graph about to be retired.
    private var newest: EngineGraph?
    /// Graphs built and prepared off the audio thread, and the ones they replaced, handed back.
    private let graphs = HandOver<EngineGraph>()
    /// The graph the next activation takes, fresh: built and prepared by the
    /// loader thread for `settings` as they were at `generation`, for blocks
    /// of `frames` (the parameters are applied at the swap).
    private var spare: (graph: EngineGraph, generation: Int, frames: Int)?
    /// Counts the changes of `settings` a spare must follow (a font, a restored state).
    private var generation = 0
    /// Graphs an activation or deactivation replaced: released by the
    /// loader thread, not on the thread that activates.
    private var retiring = [EngineGraph?](repeating: nil, count: 8)

    // parameters: the value asked for (any thread), the value applied (audio thread)
    private let gainBits = Atomic<UInt64>(0)
    private let reverbBits = Atomic<UInt64>(0)
    private let chorusBits = Atomic<UInt64>(0)
    private let delayBits = Atomic<UInt64>(0)
    private let ceilingBits = Atomic<UInt64>(0)
    /// The host's tempo (bits of a Double; 0: none given), and the one applied.
    private let tempoBits = Atomic<UInt64>(0)
    private var appliedTempo = 0.0
    private let applied: UnsafeMutablePointer<Double>

    // Each channel's state as the host's MIDI set it (audio thread), by
    // ChannelState's one rule. A new graph (a re-activation) starts from
    // silence and defaults; the first process call after it plays this
    // state back into it, so a channel the host moved to Spinet's synth
    // (Bank Select 126) stays there.
    private var channelState = ChannelState(channels: 16)
    private var replayPending = false
    /// A state restored while processing: the audio thread forgets the channel state.
    private let forgetRequested = Atomic<Bool>(false)

    /// The thread that loads the fonts asked for with `requestSoundFont`.
    private var loader: SoundFontLoader!

    // the call's events, converted (audio thread)
    public static let eventCapacity = 8192
    /// `PluginParameter.allCases.count`, without building the array.
    private static let parameterCount = PluginParameter.allCases.count
    private let scratch: UnsafeMutablePointer<CallbackEvent>
    /// Events beyond `eventCapacity` in one call, dropped.
    public let droppedEvents = Atomic<Int>(0)

    /// Loads the default settings' SoundFont and builds the graph (not yet
    /// prepared). Throws the one line the host should log.
    public init(sampleRate: Double, bundleDirectory: String?, log: @escaping @Sendable (Int32, String) -> Void) throws(PluginSettings.Problem) {
        guard sampleRate.isFinite, sampleRate >= 8000, sampleRate <= 768_000 else {
            throw PluginSettings.Problem("sample rate \(sampleRate) Hz is not one Spinet runs at (8000 to 768000)")
        }
        self.sampleRate = sampleRate
        self.log = log
        latencyFrames = Limiter.lookaheadFrames(sampleRate: sampleRate)
        guard let defaults = PluginSettings.defaults(bundleDirectory: bundleDirectory, warning: { log(1, $0) }) else {
            throw PluginSettings.Problem("no SoundFont found: install one (Debian: apt install fluid-soundfont-gm) or put \(SoundFontLocator.bundledName) in the plugin's SoundFonts directory")
        }
        settings = defaults
        self.bundleDirectory = bundleDirectory
        defaultSoundFont = defaults.soundFont
        applied = .allocate(capacity: Self.parameterCount)
        applied.initialize(repeating: .nan, count: Self.parameterCount)
        scratch = .allocate(capacity: Self.eventCapacity)
        scratch.initialize(repeating: CallbackEvent(offset: 0, .systemReset), count: Self.eventCapacity)
        // (every stored property is set here: when the build throws, the
        // deinit runs and frees the buffers; freeing them here too was a
        // double free)
        let graph = try build(defaults)
        current = .passRetained(graph)
        newest = graph
        storeParameters(defaults.parameters)
        loader = SoundFontLoader(load: { [weak self] path in
            guard let self else { return (-1, "") }
            return (self.loadSoundFontLogging(path), self.soundFontPath)
        }, upkeep: { [weak self] in self?.upkeep() })
    }

    deinit {
        loader?.stop()
        current?.release()
        applied.deallocate()
        scratch.deallocate()
    }

    /// The first events an engine in this process delivers instantiate
    /// runtime metadata (in an unoptimized build: 6 allocations and 8 locks
    /// at the first controller, once per process): here, on a throwaway
    /// graph of the same kind at the first activation, not in a host's
    /// first process call.
    ///
    /// Every activation returns only after the warm-up finished: a second
    /// instance activated while the first one warms waits for it (once per
    /// process, on the mutex), else its first process calls would race the
    /// warm-up for the metadata and allocate. Once done, the flag is all an
    /// activation reads.
    private static let warmed = Atomic<Bool>(false)
    private static let warming = Mutex<Void>(())

    private func warmEventPath(font: String, settings: GraphSettings) {
        guard !Self.warmed.load(ordering: .acquiring) else { return }
        Self.warming.withLock { _ in
            guard !Self.warmed.load(ordering: .acquiring) else { return }
            warmEventPathOnce(font: font, settings: settings)
            Self.warmed.store(true, ordering: .releasing)
        }
    }

    private func warmEventPathOnce(font: String, settings: GraphSettings) {
        var small = settings
        small.soundFont.programs = [0]
        small.soundFont.polyphony = 8
        guard let graph = try? GraphBuilder.live(small, fonts: [font], rate: sampleRate, inputCapacities: []) else { return }
        graph.engine.prepare(sampleRate: sampleRate, maxFrames: 64)
        let gmOn: [UInt8] = [0xF0, 0x7E, 0x7F, 0x09, 0x01, 0xF7]
        let l = UnsafeMutablePointer<Float>.allocate(capacity: 64), r = UnsafeMutablePointer<Float>.allocate(capacity: 64)
        defer { l.deallocate(); r.deallocate() }
        var messages: [MIDIMessage] = [.programChange(channel: 0, program: 0), .noteOn(channel: 0, key: 60, velocity: 90),
                                       .polyPressure(channel: 0, key: 60, pressure: 10), .channelPressure(channel: 0, pressure: 10),
                                       .pitchBend(channel: 0, value: 9000), .noteOff(channel: 0, key: 60, velocity: 0),
                                       .controlChange(channel: 1, controller: 0, value: OscillatorSynth.spinetPresetBank),
                                       .programChange(channel: 1, program: 0), .noteOn(channel: 1, key: 60, velocity: 90),
                                       .noteOff(channel: 1, key: 60, velocity: 0), .controlChange(channel: 1, controller: 0, value: 0),
                                       .programChange(channel: 1, program: 0), .systemReset]
        for n: UInt8 in [1, 7, 10, 11, 64, 66, 67, 69, 91, 93, 94, 100, 101, 6, 38, 121, 123, 120] {
            messages.append(.controlChange(channel: 0, controller: n, value: n == 64 ? 100 : 0))
        }
        gmOn.withUnsafeBufferPointer { sysEx in
            var events = messages.enumerated().map { CallbackEvent(offset: $0.offset % 64, $0.element) }
            events.append(CallbackEvent(offset: 63, sysEx: sysEx))
            events.withUnsafeBufferPointer { e in
                for _ in 0..<2 { graph.engine.render(frames: 64, left: l, right: r, events: e) }
            }
        }
    }

    /// A SoundFont message in a host's words: the fix is choosing another
    /// file in the plugin, not a command-line option.
    static func hostWording(_ line: String) -> String {
        line.replacing(" with --soundfont", with: " in the plugin's SoundFont setting")
    }

    /// Writes one line to the host's log (control side).
    public func logLine(_ level: Int32, _ line: String) { log(level, line) }

    // MARK: the graph (control side)

    /// A graph for `s` (not prepared), with `reusing`'s SoundFont player if
    /// it was built for the same font and never prepared, else a new one
    /// (whose warnings about the font go to the log, unless `quiet`).
    private func build(_ s: PluginSettings, reusing old: EngineGraph? = nil, quiet: Bool = false) throws(PluginSettings.Problem) -> EngineGraph {
        let g = try s.graphSettings()
        let unit: SoundFontUnit
        if let old, old.engine.maxFrames == 0, old.settings.soundFont.fluidEffects == g.soundFont.fluidEffects,
           let font = old.soundFonts.first, font.fonts == [s.soundFont] {
            unit = font
        } else {
            do { unit = try GraphBuilder.liveSoundFont(g, fonts: [s.soundFont], rate: sampleRate) } catch {
                throw PluginSettings.Problem(Self.hostWording(error.description))
            }
            if !quiet { for w in unit.fontWarnings { log(1, Self.hostWording(w)) } }
        }
        do { return try GraphBuilder.live(g, soundFont: unit, inputCapacities: []) } catch {
            throw PluginSettings.Problem(error.description)
        }
    }

    /// Releases a graph the audio thread handed back.
    private func collect() {
        graphs.collect()
    }

    /// Replaces the graph: directly while inactive, through `pending` while
    /// processing (the audio thread takes it at its next call).
    private func install(_ graph: EngineGraph) {
        collect()
        if active {
            graph.engine.prepare(sampleRate: sampleRate, maxFrames: maxFrames)
            graph.engine.sendEffects?.setReturnLevels(reverb: Float(parameter(.reverb)), chorus: Float(parameter(.chorus)),
                                                      delay: Float(parameter(.delay)), ramp: false)
            graphs.offer(graph)
        } else {
            current?.release()
            current = .passRetained(graph)
            rendered.store(false, ordering: .releasing)
        }
        newest = graph
    }

    private func drainLogs(_ graph: EngineGraph?) {
        guard let graph else { return }
        for unit in graph.soundFonts { for line in unit.drainRenderMessages() { log(1, line) } }
    }

    // MARK: control side

    /// Puts `graph` (the caller's reference) aside, for the loader thread to
    /// release (here only when all 8 places are taken).
    private func putAside(_ graph: EngineGraph) {
        for i in 0..<retiring.count where retiring[i] == nil {
            retiring[i] = graph
            return
        }
    }

    /// Prepares a graph for blocks of up to `maxFrames` (0: not known;
    /// longer calls are rendered in pieces), from silence: the current one
    /// if it never played, else the spare, else (the first activation, a
    /// new block size, a change the spare has not followed yet) a new one.
    public func activate(maxFrames requested: Int) throws(PluginSettings.Problem) {
        try control.withLock { () throws(PluginSettings.Problem) in
            if let back = graphs.takeBack() { putAside(back) }
            let frames = requested > 0 ? min(requested, 8192) : 1024
            let old = current?.takeUnretainedValue()
            let graph: EngineGraph
            if let old, old.engine.maxFrames == frames, !rendered.load(ordering: .acquiring) {
                graph = old
            } else if let s = spare?.graph, spareFits(frames: frames) {
                spare = nil
                graph = s
            } else {
                // the parameters as they are now; the SoundFont player is kept if it was never prepared
                settings.parameters = loadParameters()
                graph = try build(settings, reusing: old)
                graph.engine.prepare(sampleRate: sampleRate, maxFrames: frames)
            }
            if graph !== old {
                if let c = current { putAside(c.takeRetainedValue()) }
                current = .passRetained(graph)
            }
            newest = graph
            // The gain, ceiling and return levels start where the parameters
            // are, not ramping from the values the graph was built with.
            graph.engine.setGain(dB: parameter(.gain), ramp: false)
            graph.engine.masterBus.setCeiling(dBFS: parameter(.ceiling))
            graph.engine.sendEffects?.setReturnLevels(reverb: Float(parameter(.reverb)), chorus: Float(parameter(.chorus)),
                                                      delay: Float(parameter(.delay)), ramp: false)
            warmEventPath(font: settings.soundFont, settings: graph.settings)
            maxFrames = frames
            applied.update(repeating: .nan, count: Self.parameterCount)
            appliedTempo = 0
            replayPending = true
            rendered.store(false, ordering: .releasing)
            processing.store(true, ordering: .releasing)
            loader.requestUpkeep()   // the next spare
        }
    }

    public func deactivate() {
        control.withLock {
            processing.store(false, ordering: .releasing)
            // a graph the audio thread did not take is the one to keep
            if let graph = graphs.withdraw() {
                if let c = current { putAside(c.takeRetainedValue()) }
                current = .passRetained(graph)
                rendered.store(false, ordering: .releasing)
            }
            newest = current?.takeUnretainedValue()
            if let back = graphs.takeBack() { putAside(back) }
            loader.requestUpkeep()
        }
    }

    /// Whether the spare was built for the current settings and blocks of `frames`.
    private func spareFits(frames: Int) -> Bool {
        spare.map { $0.generation == generation && $0.frames == frames } ?? false
    }

    /// Waits up to `seconds` for the spare graph the next activation takes
    /// (tests; a host never needs to). True when it is ready.
    public func waitForSpare(seconds: Double) -> Bool {
        var waited = 0.0
        while true {
            if control.withLock({ spareFits(frames: maxFrames) }) { return true }
            guard waited < seconds else { return false }
            usleep(2000)
            waited += 0.002
        }
    }

    /// The loader thread's upkeep: releases the graphs put aside, passes on
    /// the log lines of the graph in use, and builds the spare (a failed
    /// build leaves it to the next activation, which says why).
    private func upkeep() {
        var (doomed, job) = control.withLock { () -> ([EngineGraph], (PluginSettings, Int, Int)?) in
            var doomed: [EngineGraph] = []
            for i in retiring.indices where retiring[i] != nil {
                doomed.append(retiring[i]!)
                retiring[i] = nil
            }
            if let s = spare?.graph, !spareFits(frames: maxFrames) {
                doomed.append(s)
                spare = nil
            }
            drainLogs(newest)
            return (doomed, maxFrames > 0 && spare == nil ? (settings, generation, maxFrames) : nil)
        }
        for graph in doomed { drainLogs(graph) }
        doomed.removeAll()
        guard let (s, built, frames) = job else { return }
        guard let graph = try? build(s, quiet: true) else { return }
        graph.engine.prepare(sampleRate: sampleRate, maxFrames: frames)
        control.withLock {
            guard spare == nil, built == generation, frames == maxFrames else { return }
            spare = (graph, built, frames)
        }
    }

    /// Loads `path` and hands it to the audio thread (or, inactive, makes it
    /// the font of the next activation). The old font keeps playing on failure.
    public func loadSoundFont(_ path: String) throws(PluginSettings.Problem) {
        try control.withLock { () throws(PluginSettings.Problem) in
            var next = settings
            next.soundFont = path
            next.parameters = loadParameters()
            // (a graph still waiting for the audio thread takes the font
            // from its slot at its first call)
            if active, let graph = newest, let slot = graph.soundFontSlot {
                let unit: SoundFontUnit
                do { unit = try GraphBuilder.liveSoundFont(graph.settings, fonts: [path], rate: sampleRate) } catch {
                    throw PluginSettings.Problem(Self.hostWording(String(describing: error)))
                }
                for w in unit.fontWarnings { log(1, Self.hostWording(w)) }
                // The slot takes one replacement at a time: wait (up to 10 s
                // of the host's process calls) for the last one to finish.
                var waited = 0
                while !slot.offer(unit) {
                    guard waited < 1000 else {
                        throw PluginSettings.Problem("SoundFont \(path): the previous SoundFont change has not finished (is the host processing?); try again")
                    }
                    usleep(10_000)
                    waited += 1
                }
                drainLogs(graph)
            } else {
                install(try build(next))
            }
            settings = next
            generation += 1
            loader.requestUpkeep()
            log(0, "SoundFont: \(path)")
        }
    }

    /// `loadSoundFont`, its failure logged: 0 when loaded, else -1. What an
    /// LV2 worker and the loader thread both call.
    public func loadSoundFontLogging(_ path: String) -> Int32 {
        do { try loadSoundFont(path) } catch {
            logLine(2, error.description)
            return -1
        }
        return 0
    }

    /// Asks the loader thread for the font at `path` (UTF-8, no NUL) and
    /// returns at once: lock- and allocation-free, so the audio thread may
    /// ask. The newest request wins. False when the path is empty or longer
    /// than `SoundFontLoader.pathCapacity` bytes, or another thread is asking at the same moment.
    public func requestSoundFont(_ path: UnsafeBufferPointer<UInt8>) -> Bool {
        loader.request(path)
    }

    public func requestSoundFont(_ path: String) -> Bool {
        var p = path
        return p.withUTF8 { requestSoundFont($0) }
    }

    /// Called on the loader thread after each of its loads, once its result can be taken.
    public func setSoundFontListener(_ listener: (@Sendable (Int32) -> Void)?) {
        loader.setListener(listener)
    }

    /// The newest load the loader finished since the last call: its status
    /// (0: loaded), the path asked for and the font in use after it. Lock-
    /// and allocation-free when `body` is; one thread at a time.
    public func takeSoundFontResult<T>(_ body: (_ status: Int32, _ requested: UnsafeBufferPointer<UInt8>,
                                                 _ inUse: UnsafeBufferPointer<UInt8>) -> T) -> T? {
        loader.takeResult(body)
    }

    /// Stops the loader thread (a load in hand finishes first); later requests are refused.
    public func stopLoader() {
        loader?.stop()
    }

    /// Waits until the loader has dealt with every request made before this call.
    public func finishSoundFontRequests() {
        loader.finishRequests()
    }

    /// Voices sounding in the current graph (for benchmarks; read it from
    /// the thread that processes, or while none does).
    public var activeVoices: Int { current?.takeUnretainedValue().engine.statistics.activeVoices ?? 0 }

    public var soundFontPath: String { control.withLock { settings.soundFont } }

    func currentFontAndPresets() -> (String, PresetBank) { control.withLock { (settings.soundFont, settings.presets) } }

    /// The settings, with the font of any request made before this call.
    public func saveState() -> String {
        loader.finishRequests()
        return control.withLock {
            var s = settings
            s.parameters = loadParameters()
            return s.json()
        }
    }

    /// Restores a saved state: a new graph from it, swapped in whole. A
    /// font that is gone (a moved project, a renamed file) or does not load
    /// costs only the font: every other setting is restored, the default
    /// font plays until the user chooses one, and the host's log names the
    /// path the state asked for.
    public func restoreState(_ json: String, soundFontOverride: String?) throws(PluginSettings.Problem) {
        // a font asked for before the state loads first: the state replaces it
        loader.finishRequests()
        var restored = try PluginSettings(json: json, soundFontOverride: soundFontOverride, bundleDirectory: bundleDirectory)
        try control.withLock { () throws(PluginSettings.Problem) in
            let graph: EngineGraph
            if let tried = restored.missingSoundFont {
                log(1, "the saved SoundFont is not found (looked for \(tried.joined(separator: ", "))); the other settings are restored, and \(defaultSoundFont) plays until you choose a SoundFont in the plugin")
                restored.soundFont = defaultSoundFont
                restored.missingSoundFont = nil
                graph = try build(restored)
            } else {
                do throws(PluginSettings.Problem) { graph = try build(restored) } catch {
                    guard restored.soundFont != defaultSoundFont else { throw error }
                    log(1, "the saved SoundFont \(restored.soundFont) does not load: \(error.description); the other settings are restored, and \(defaultSoundFont) plays until you choose a SoundFont in the plugin")
                    restored.soundFont = defaultSoundFont
                    graph = try build(restored)
                }
            }
            storeParameters(restored.parameters)
            // the state's channel settings replace what the host's MIDI set
            if active { forgetRequested.store(true, ordering: .releasing) } else { channelState.forgetAll() }
            install(graph)
            settings = restored
            generation += 1
            loader.requestUpkeep()
        }
    }

    /// Takes `other`'s channel state (a core rebuilt at a new rate). Neither may be processing.
    public func copyChannelState(from other: PluginInstance) {
        control.withLock { channelState.copy(from: other.channelState) }
    }

    // MARK: parameters (any thread)

    public func setParameter(_ p: PluginParameter, _ value: Double) {
        let v = p.clamp(value).bitPattern
        switch p {
        case .gain: gainBits.store(v, ordering: .releasing)
        case .reverb: reverbBits.store(v, ordering: .releasing)
        case .chorus: chorusBits.store(v, ordering: .releasing)
        case .delay: delayBits.store(v, ordering: .releasing)
        case .ceiling: ceilingBits.store(v, ordering: .releasing)
        }
    }

    public func parameter(_ p: PluginParameter) -> Double {
        let b: UInt64
        switch p {
        case .gain: b = gainBits.load(ordering: .acquiring)
        case .reverb: b = reverbBits.load(ordering: .acquiring)
        case .chorus: b = chorusBits.load(ordering: .acquiring)
        case .delay: b = delayBits.load(ordering: .acquiring)
        case .ceiling: b = ceilingBits.load(ordering: .acquiring)
        }
        return Double(bitPattern: b)
    }

    /// The host's tempo (any thread); applied at the next process call.
    public func setTempo(beatsPerMinute bpm: Double) {
        guard bpm.isFinite, (10...1000).contains(bpm) else { return }
        tempoBits.store(bpm.bitPattern, ordering: .releasing)
    }

    private func storeParameters(_ values: [Double]) {
        for p in PluginParameter.allCases { setParameter(p, values[p.rawValue]) }
    }

    private func loadParameters() -> [Double] {
        PluginParameter.allCases.map { parameter($0) }
    }

    // MARK: audio thread

    /// Renders `frames` frames into `left`/`right`, with `count` raw MIDI
    /// events at their offsets. Allocates nothing, takes no lock.
    public func process(frames: Int, left: UnsafeMutablePointer<Float>, right: UnsafeMutablePointer<Float>,
                        events: UnsafePointer<spinet_midi_event>?, count: Int) {
        guard processing.load(ordering: .acquiring) else {   // not active: a host out of contract
            left.update(repeating: 0, count: frames)
            right.update(repeating: 0, count: frames)
            return
        }
        // a graph built off this thread: take it, hand the old one back
        if let graph = graphs.take() {
            if let old = current { graphs.retire(old) }
            current = graph
            for i in 0..<Self.parameterCount { applied[i] = .nan }
            appliedTempo = 0
        }
        guard let current, frames > 0 else { return }
        current._withUnsafeGuaranteedRef { graph in
            let engine = graph.engine
            guard engine.maxFrames > 0 else {
                left.update(repeating: 0, count: frames)
                right.update(repeating: 0, count: frames)
                return
            }
            applyParameters(engine)
            var n = 0
            if forgetRequested.exchange(false, ordering: .acquiring) { channelState.forgetAll() }
            if replayPending {
                replayPending = false
                n = replayChannelState()
            }
            if let events {
                for i in 0..<count {
                    let e = events[i]
                    guard let data = e.data, case .event(let event) = RawMIDIEvent(data, count: Int(e.size), offset: Int(e.offset))
                    else { continue }   // clock and other system bytes: the host gives the tempo
                    guard n < Self.eventCapacity else { droppedEvents.add(count - i, ordering: .relaxed); break }
                    scratch[n] = event
                    n += 1
                    switch event.kind {
                    case .message(let m): channelState.remember(m)
                    case .sysEx(let bytes): channelState.remember(sysEx: bytes)
                    }
                }
            }
            engine.render(frames: frames, left: left, right: right, events: UnsafeBufferPointer(start: scratch, count: n))
        }
        rendered.store(true, ordering: .relaxed)
    }

    /// Writes the remembered channel state to the call's first events
    /// (ChannelState's replay order); returns how many.
    private func replayChannelState() -> Int {
        var n = 0
        let scratch = self.scratch
        channelState.replay { m in
            guard n < Self.eventCapacity else { return }
            scratch[n] = CallbackEvent(offset: 0, m)
            n += 1
        }
        return n
    }

    @inline(__always)
    private func applyParameters(_ engine: Engine) {
        let tempo = Double(bitPattern: tempoBits.load(ordering: .acquiring))
        if tempo != appliedTempo && tempo > 0 {
            appliedTempo = tempo
            engine.setTempo(beatsPerMinute: tempo)
        }
        let gain = Double(bitPattern: gainBits.load(ordering: .acquiring))
        if gain != applied[0] {
            applied[0] = gain
            engine.setGain(dB: gain)
        }
        let r = Double(bitPattern: reverbBits.load(ordering: .acquiring))
        let c = Double(bitPattern: chorusBits.load(ordering: .acquiring))
        let d = Double(bitPattern: delayBits.load(ordering: .acquiring))
        if r != applied[1] || c != applied[2] || d != applied[3] {
            applied[1] = r; applied[2] = c; applied[3] = d
            engine.sendEffects?.setReturnLevels(reverb: Float(r), chorus: Float(c), delay: Float(d))
        }
        let ceiling = Double(bitPattern: ceilingBits.load(ordering: .acquiring))
        if ceiling != applied[4] {
            applied[4] = ceiling
            engine.masterBus.setCeiling(dBFS: ceiling)
        }
    }
}
