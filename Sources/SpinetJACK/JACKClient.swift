import CJACK
import Glibc
import Synchronization
import SpinetEngine
import SpinetHost

/// Spinet as a client of a JACK server (jackd, or PipeWire's libjack):
/// audio outputs `out_L` and `out_R`, MIDI inputs `midi_in` (`midi_in_1`,
/// `midi_in_2`, ... for several ports of 16 channels), and a process
/// callback that renders the engine for each cycle with every MIDI event at
/// its exact frame.
///
/// Threads:
/// - the **process thread** (JACK's): `process(frames:)` only. It allocates
///   nothing, takes no lock and logs nothing (`JACKProcess.swift`).
/// - JACK's **notification thread**: the other callbacks; each stores a
///   value or sets a flag and wakes the supervisor.
/// - the **supervisor** thread (Spinet's): builds a new graph when the sample
///   rate changes, releases retired graphs, remembers connections, and when
///   the server goes away, waits for it and opens the client again with the
///   same name, ports, connections and settings.
/// - the **control** thread (the caller): `init`, `start`, `stop`, statistics.
///
/// The graph — an `Engine` with its units — comes from the host's builder,
/// called off the process thread at the server's rate (`GraphBuilder`: the
/// client can then follow a new rate), or is built and prepared by the host
/// and handed to `start(engine:)` (the rig's `LiveSession` way; the host
/// then follows a new rate itself, through `offer(engine:)`).
public final class JACKClient: @unchecked Sendable {
    public struct Configuration: Sendable {
        /// The client name. Keep it stable: sessions save connections by it.
        /// A name already in use is an error, not "Spinet-01".
        public var name = "Spinet"
        /// MIDI input ports, 16 channels each (0: audio only, e.g. when MIDI
        /// comes from the ALSA sequencer).
        public var midiPorts = 1
        /// Where the audio outputs go.
        public var connect: JACKConnect = .auto
        /// The server's name; nil: $JACK_DEFAULT_SERVER, else "default".
        public var server: String? = nil
        /// Frames the engine is prepared for. JACK periods up to this are one
        /// engine render; longer ones are rendered in pieces. Either way a
        /// buffer-size change needs no new engine.
        public var maxFrames = 8192
        /// The most JACK MIDI events one cycle hands the engine (more are
        /// dropped and counted).
        public var eventsPerCycle = 8192
        /// Wait for a server that went away, and open the client again.
        public var reconnect = true
        /// Seconds between attempts to reach a server that went away.
        public var reconnectInterval = 0.5
        /// Seconds an open, activation or close may take before libjack
        /// counts as stuck and Spinet stops (see `JACKLibrary.bounded`).
        public var callDeadline = JACKLibrary.defaultDeadline
        public init() {}

        /// Why `name` cannot be a JACK client name (nil: it can): JACK
        /// refuses an empty name, one longer than `jack_client_name_size()`
        /// allows, and a ':' (it separates client and port in a port's full
        /// name). One line, naming the option; checked before any work.
        public static func nameProblem(_ name: String) -> String? {
            let limit = Int(jack_client_name_size()) - 1
            if name.isEmpty { return "--name is empty; give the client a name (e.g. --name Spinet): sessions and DAWs find it by name" }
            if name.utf8.count > limit {
                return "--name '\(name)' is \(name.utf8.count) bytes long; a JACK client name has at most \(limit)"
            }
            if name.contains(":") { return "--name '\(name)' contains ':', which JACK uses between a client and its port; choose a name without it" }
            return nil
        }
    }

    /// Builds the graph for a sample rate: an `Engine` with its units and
    /// routing, **not yet prepared** (the client prepares it). Called on the control thread when the client opens and
    /// on the supervisor thread when the server comes back at another rate
    /// or changes its rate; never on the process thread. The engine needs
    /// at least `midiPorts` ports of 16 channels.
    public typealias GraphBuilder = @Sendable (_ sampleRate: Int) throws -> Engine

    /// Phases of a process cycle, for `cycleObserver`.
    public enum CyclePhase: Int32, Sendable {
        case begin = 0, engineBegin = 1, engineEnd = 2, end = 3
    }

    public let configuration: Configuration
    /// Nil when the host builds and prepares the engine itself and hands it
    /// to `start(engine:)`: then a new server rate is followed only by a host
    /// that offers a new engine (`hostFollowsRate`, `offer(engine:)`); else
    /// silence and a notice until the rate is back.
    private let buildGraph: GraphBuilder?
    /// Test aid: called on the process thread at each `CyclePhase` (to count
    /// allocations and locks there). Nil in use. Set before `start`.
    public var cycleObserver: (@convention(c) (Int32) -> Void)?
    /// The host's work around each render (timeline, recording); nil: none.
    /// Set before `start`; the client keeps it alive.
    public var hooks: JACKCycleHooks? {
        didSet { hookReference = hooks.map { Unmanaged.passUnretained($0) } }
    }
    /// `hooks`, for the process thread without retain/release.
    var hookReference: Unmanaged<JACKCycleHooks>?

    // MARK: the connection to the server
    // Written by the control or supervisor thread while no process thread
    // runs (before jack_activate, after jack_client_close); read by the
    // process thread.
    var client: OpaquePointer?
    var outLeft: OpaquePointer?
    var outRight: OpaquePointer?
    let midiIn: UnsafeMutablePointer<OpaquePointer?>
    let midiPortCount: Int
    /// Serializes opening, closing and connecting (control and supervisor threads).
    private let connectionLock = Locked<Void>(())

    // MARK: the graph, handed to the process thread by pointer
    /// The graph the process thread renders: an `Unmanaged<JACKGraph>`'s
    /// bits holding one reference, or 0. Stored by the process thread (when
    /// it adopts a pending graph) or by the supervisor while no process
    /// thread runs.
    let currentGraph = Atomic<UInt>(0)
    /// A graph waiting to be adopted at the start of the next cycle, and
    /// the one the process thread gave up, for the supervisor to release.
    let graphs = HandOver<JACKGraph>()
    /// The newest graph, for the control thread (statistics, fade-out).
    private let publishedGraph = Locked<JACKGraph?>(nil)

    // MARK: state the callbacks set
    let serverRate = Atomic<Int>(0)
    let serverPeriod = Atomic<Int>(0)
    let freewheeling = Atomic<Bool>(false)
    let xrunCount = Atomic<Int>(0)
    /// Set by jack_on_shutdown / jack_on_info_shutdown.
    let serverGone = Atomic<Bool>(false)
    /// From the server's going away until the client is back with its connections re-made.
    let awaitingServer = Atomic<Bool>(false)
    /// MIDI ports whose held notes and pedals the process thread should
    /// release (bit k: port k): a port a source was disconnected from, or
    /// every port when the server came back.
    let releaseRequested = Atomic<UInt32>(0)
    /// Monotonic nanoseconds of the last port (dis)connection seen (0: none pending).
    let connectionsChangedAt = Atomic<Int>(0)
    /// Events refused while no graph matched the server's rate.
    let unplayedEvents = Atomic<Int>(0)
    let cycleCount = Atomic<Int>(0)
    let midiReceived = Atomic<Int>(0)

    // render load, in nanoseconds per cycle (process thread writes)
    let intervalSum = Atomic<Int>(0)
    let intervalCount = Atomic<Int>(0)
    let intervalPeak = Atomic<Int>(0)
    let totalSum = Atomic<Int>(0)
    let totalCount = Atomic<Int>(0)
    let totalPeak = Atomic<Int>(0)
    /// Optional per-cycle record for measurements (see `measureCycles`).
    let cycleRecord = Atomic<UInt>(0)        // UnsafeMutablePointer<Int> bits
    let cycleRecordCapacity = Atomic<Int>(0)
    let cycleRecordCount = Atomic<Int>(0)

    // MARK: the supervisor
    private let wakeUp: UnsafeMutablePointer<sem_t>
    private let stopping = Atomic<Bool>(false)
    private var supervisor: NativeThread?
    private let noticeLines = Locked<[String]>([])
    /// Connections of our ports (our short name, the other port's full name).
    private let remembered = Locked<[Connection]>([])
    private var started = false
    private var closed = false
    /// A client libjack would not activate or close was given up (`abandonClient`).
    private var abandoned = false
    /// The outputs were connected as configured once (a server lost while
    /// the client started: not yet, so the client does it when it is back).
    private var outputsConnected = false

    struct Connection: Equatable {
        var port: String
        var other: String
    }

    /// Opens the client (not yet active), builds the graph at the server's
    /// rate with `graph` (when given) and registers the ports. Control thread.
    ///
    /// Without a builder, the host prepares an engine at `sampleRate` for
    /// `periodFrames` and passes it to `start(engine:)`. Either way JACK MIDI
    /// reaches the engine inside the process callback, through
    /// `Engine.render(frames:left:right:events:)`.
    ///
    /// Throws `JACKError.noServer` when no server runs (none is started).
    public init(_ configuration: Configuration, graph: GraphBuilder?) throws(JACKError) {
        precondition((0...16).contains(configuration.midiPorts), "0 to 16 MIDI ports")
        precondition(configuration.maxFrames > 0)
        self.configuration = configuration
        buildGraph = graph
        midiPortCount = configuration.midiPorts
        midiIn = .allocate(capacity: max(configuration.midiPorts, 1))
        midiIn.initialize(repeating: nil, count: max(configuration.midiPorts, 1))
        wakeUp = .allocate(capacity: 1)
        sem_init(wakeUp, 0, 0)
        _ = JACKMessages.silenced
        try connectionLock.withLock { _ throws(JACKError) in
            try open()
            // Named targets are checked now, before anything plays.
            do throws(JACKError) { if let c = client, !serverGone.load(ordering: .acquiring) { try checkTargets(c) } } catch {
                closeClient()
                throw error
            }
        }
    }

    deinit {
        if !closed { close() }
        sem_destroy(wakeUp)
        wakeUp.deallocate()
        midiIn.deallocate()
        if let p = UnsafeMutablePointer<Int>(bitPattern: cycleRecord.load(ordering: .acquiring)) { p.deallocate() }
    }

    // MARK: control thread

    /// The port names, as JACK shows them after `name:`.
    public var audioPortNames: [String] { ["out_L", "out_R"] }
    public var midiPortNames: [String] {
        let n = configuration.midiPorts
        return n == 1 ? ["midi_in"] : (0..<n).map { "midi_in_\($0 + 1)" }
    }

    /// Activates the client (the process callback starts), connects the
    /// audio outputs as configured and starts the supervisor. Control thread.
    /// A named port that does not exist, or is not an audio input, is an
    /// error (the client stays active, unconnected).
    public func start() throws(JACKError) {
        precondition(!started, "start once")
        precondition(currentGraph.load(ordering: .acquiring) != 0 || buildGraph == nil, "no graph")
        started = true
        var problem: JACKError?
        connectionLock.withLock { _ in
            // (no client: the server went away while it opened; the supervisor waits for it)
            guard let client else { return }
            guard let rc = JACKLibrary.bounded("activating the JACK client '\(configuration.name)'", seconds: configuration.callDeadline,
                                               { jack_activate(client) }) else {
                problem = .stuck
                abandonClient()
                return
            }
            if rc != 0 {
                if !serverLost() { problem = JACKError("the JACK server refused to activate the client '\(configuration.name)'") }
                return
            }
            do throws(JACKError) { try connectOutputs(client) } catch {
                if !serverLost() { problem = error }
                return
            }
            outputsConnected = true
            remembered.withLock { $0 = snapshotConnections(client) }
        }
        supervisor = NativeThread(name: "spinet-jack") { [self] in superviseUntilStopped() }
        if let problem { throw problem }
    }

    /// Starts with an engine the host built and prepared: at `sampleRate`,
    /// for at least one frame a call (larger periods are rendered in
    /// pieces), with at least `midiPorts` ports of 16 channels. Control
    /// thread; instead of `start()`, for a client made without a builder.
    public func start(engine: Engine) throws(JACKError) {
        precondition(buildGraph == nil && currentGraph.load(ordering: .acquiring) == 0, "start(engine:) is for a client made without a builder")
        precondition(engine.maxFrames > 0, "prepare the engine first")
        precondition(engine.configuration.ports >= configuration.midiPorts, "the engine needs a port of 16 channels per JACK MIDI input")
        guard Int(engine.sampleRate) == sampleRate else {
            throw JACKError("the engine runs at \(Int(engine.sampleRate)) Hz, the JACK server at \(sampleRate) Hz")
        }
        let graph = JACKGraph(prepared: engine, capacity: configuration.eventsPerCycle)
        currentGraph.store(UInt(bitPattern: Unmanaged.passRetained(graph).toOpaque()), ordering: .releasing)
        publishedGraph.withLock { $0 = graph }
        try start()
    }

    /// Set (before `start(engine:)`) when the host follows rate changes
    /// itself: it watches `sampleRate` and hands a graph built and prepared
    /// at the new rate to `offer(engine:)`. The supervisor then says nothing
    /// about a rate it cannot follow. The process thread stays silent while
    /// no graph matches the server's rate, as always.
    public var hostFollowsRate = false

    /// Hands an engine the host built and prepared (off the process thread)
    /// at the server's new rate to the process thread, which adopts it at the
    /// start of a cycle; the old one is released on the supervisor thread.
    /// Returns false while an earlier one waits to be adopted (try again).
    /// Control thread, after `start(engine:)`, for a client made without a builder.
    public func offer(engine: Engine) -> Bool {
        precondition(buildGraph == nil, "offer(engine:) is for a client made without a builder")
        precondition(engine.maxFrames > 0, "prepare the engine first")
        precondition(engine.configuration.ports >= configuration.midiPorts, "the engine needs a port of 16 channels per JACK MIDI input")
        guard !graphs.isPending else { return false }
        let graph = JACKGraph(prepared: engine, capacity: configuration.eventsPerCycle)
        guard graphs.offerIfEmpty(graph) else { return false }
        publishedGraph.withLock { $0 = graph }
        return true
    }

    /// Fades out (when the server runs), then deactivates and closes the
    /// client and stops the supervisor. Control thread; any number of times.
    public func stop(fadeSeconds: Double = 0.02) {
        guard !closed else { return }
        if started, !serverGone.load(ordering: .acquiring), let graph = publishedGraph.withLock({ $0 }) {
            let rate = Double(graph.sampleRate)
            graph.engine.requestFadeOut(frames: max(1, Int(fadeSeconds * rate)))
            let deadline = Self.now() + Int(max(0.15, 4 * fadeSeconds) * 1e9)
            while !graph.engine.isFadedOut && Self.now() < deadline && !serverGone.load(ordering: .acquiring) {
                usleep(2_000)
            }
            // The faded cycle is on its way out; let the limiter's delay line
            // and two more periods of silence follow it, so closing cannot click.
            let frames = graph.engine.latencyFrames + 2 * max(serverPeriod.load(ordering: .relaxed), 1)
            if !freewheeling.load(ordering: .relaxed) { usleep(UInt32(Double(frames) / rate * 1e6) + 1_000) }
        }
        close()
    }

    private func close() {
        closed = true
        stopping.store(true, ordering: .releasing)
        sem_post(wakeUp)
        supervisor?.join()
        supervisor = nil
        connectionLock.withLock { _ in closeClient() }
        // A client libjack would not close may still call the process
        // callback: its graphs stay (see `abandonClient`).
        guard !abandoned else { return }
        // No process thread runs now: release every graph.
        Self.release(currentGraph.exchange(0, ordering: .acquiringAndReleasing))
        _ = graphs.withdraw()
        graphs.collect()
        publishedGraph.withLock { $0 = nil }
    }

    /// The engine rendering now (the newest graph). Control thread: for
    /// statistics and requests that any thread may make.
    public var engine: Engine? { publishedGraph.withLock { $0?.engine } }

    /// The server's sample rate and period now.
    public var sampleRate: Int { serverRate.load(ordering: .relaxed) }
    public var periodFrames: Int { serverPeriod.load(ordering: .relaxed) }
    public var xruns: Int { xrunCount.load(ordering: .relaxed) }
    public var isFreewheeling: Bool { freewheeling.load(ordering: .relaxed) }
    /// True while the server is away (between its shutdown and our return).
    /// True from the server's going away until the client is back and its
    /// connections are re-made (those to ports that are there).
    public var isWaitingForServer: Bool { awaitingServer.load(ordering: .acquiring) }
    /// Process cycles run since the client opened (across reconnections).
    public var cycles: Int { cycleCount.load(ordering: .relaxed) }
    /// JACK MIDI events received on the MIDI inputs.
    public var midiEventsReceived: Int { midiReceived.load(ordering: .relaxed) }
    /// MIDI events not played: they arrived while no graph matched the
    /// server's rate (a rate change in progress), or beyond the most one
    /// cycle takes (`eventsPerCycle`).
    public var eventsNotPlayed: Int {
        unplayedEvents.load(ordering: .relaxed) + (publishedGraph.withLock { $0?.overflowed.load(ordering: .relaxed) } ?? 0)
    }
    /// The engine's own latency, reported on the output ports.
    public var latencyFrames: Int { engine?.latencyFrames ?? 0 }

    /// Frames from a cycle's start until its first frame is heard: the
    /// largest playback latency of the ports `out_L` is connected to (a
    /// sound card's period and buffer), 0 when unconnected.
    public var playbackLatencyFrames: Int {
        connectionLock.withLock { _ in
            guard let port = outLeft else { return 0 }
            var range = jack_latency_range_t()
            jack_port_get_latency_range(port, JackPlaybackLatency, &range)
            return Int(range.max)
        }
    }

    /// Set when the server went away and `reconnect` is off: play is over.
    public var failure: String? { failureText.withLock { $0 } }
    private let failureText = Locked<String?>(nil)
    /// Records a failure that ends play (one line).
    func fail(_ line: String) { failureText.withLock { $0 = $0 ?? line } }

    /// Lines for the user since the last call (server gone, back, rate
    /// changed, a connection that could not be re-made).
    public func takeNotices() -> [String] {
        noticeLines.withLock { lines in defer { lines = [] }; return lines }
    }

    private func notice(_ line: String) { noticeLines.withLock { $0.append(line) } }

    private var periodNanoseconds: Double {
        let rate = Double(max(sampleRate, 1))
        return Double(max(periodFrames, 1)) * 1e9 / rate
    }

    /// Process load since the previous call (freewheeling cycles left out).
    public func takeIntervalLoad() -> RenderLoad {
        let s = intervalSum.exchange(0, ordering: .relaxed)
        let n = intervalCount.exchange(0, ordering: .relaxed)
        let p = intervalPeak.exchange(0, ordering: .relaxed)
        return RenderLoad(mean: n > 0 ? Double(s) / Double(n) / periodNanoseconds : 0, peak: Double(p) / periodNanoseconds, periods: n)
    }

    /// Process load since the start (the first half second left out).
    public var totalLoad: RenderLoad {
        let n = totalCount.load(ordering: .relaxed)
        return RenderLoad(mean: n > 0 ? Double(totalSum.load(ordering: .relaxed)) / Double(n) / periodNanoseconds : 0,
                          peak: Double(totalPeak.load(ordering: .relaxed)) / periodNanoseconds, periods: n)
    }

    /// Measuring aid: records the process time (nanoseconds) of the next
    /// `count` cycles; `measuredCycles` returns them once all are in (nil
    /// before). Control thread; once.
    public func measureCycles(_ count: Int) {
        precondition(cycleRecord.load(ordering: .relaxed) == 0, "measure once")
        let p = UnsafeMutablePointer<Int>.allocate(capacity: max(count, 1))
        p.initialize(repeating: 0, count: max(count, 1))
        cycleRecordCount.store(0, ordering: .relaxed)
        cycleRecordCapacity.store(count, ordering: .relaxed)
        cycleRecord.store(UInt(bitPattern: p), ordering: .releasing)
    }

    public var measuredCycles: [Int]? {
        let n = cycleRecordCapacity.load(ordering: .relaxed)
        guard cycleRecordCount.load(ordering: .acquiring) >= n,
              let p = UnsafeMutablePointer<Int>(bitPattern: cycleRecord.load(ordering: .acquiring)) else { return nil }
        return Array(UnsafeBufferPointer(start: p, count: n))
    }

    // MARK: opening (control or supervisor thread, under connectionLock)

    /// Opens the client, builds a graph if the rate changed, registers the
    /// ports and callbacks. The client is not active yet.
    private func open() throws(JACKError) {
        guard let (opened, status) = JACKLibrary.open(configuration.name, server: configuration.server, exactName: true,
                                                      seconds: configuration.callDeadline) else { throw .stuck }
        guard let c = opened else {
            throw JACKError.openFailed(name: configuration.name, server: configuration.server, status: status,
                                       seconds: configuration.callDeadline)
        }
        let rate = Int(jack_get_sample_rate(c))
        serverRate.store(rate, ordering: .releasing)
        serverPeriod.store(Int(jack_get_buffer_size(c)), ordering: .relaxed)
        freewheeling.store(false, ordering: .relaxed)
        // No process thread runs: a graph still waiting to be adopted is
        // dropped (the builder makes one at the new rate). One the host
        // offered stays: the host watches the rate and offers again.
        if buildGraph != nil { _ = graphs.withdraw() }
        let current = currentGraph.load(ordering: .acquiring)
        if buildGraph != nil && (current == 0 || Unmanaged<JACKGraph>.fromOpaque(UnsafeRawPointer(bitPattern: current)!).takeUnretainedValue().sampleRate != rate) {
            let graph: JACKGraph
            do {
                graph = try makeGraph(rate: rate)
            } catch {
                _ = JACKLibrary.close(c, deactivate: false, seconds: configuration.callDeadline)
                throw error
            }
            // No process thread runs: install it directly.
            let old = currentGraph.exchange(UInt(bitPattern: Unmanaged.passRetained(graph).toOpaque()), ordering: .acquiringAndReleasing)
            if old != 0 { Unmanaged<JACKGraph>.fromOpaque(UnsafeRawPointer(bitPattern: old)!).release() }
            publishedGraph.withLock { $0 = graph }
        }
        Self.installCallbacks(c, Unmanaged.passUnretained(self).toOpaque())
        client = c
        func register(_ name: String, _ type: String, _ flags: JackPortFlags) throws(JACKError) -> OpaquePointer? {
            if let p = jack_port_register(c, name, type, UInt(flags.rawValue), 0) { return p }
            // The server went away while the client opened: as when it goes
            // away later, the supervisor closes the client and waits for it.
            if serverLost() { return nil }
            closeClient()
            throw JACKError("cannot register the JACK port \(configuration.name):\(name)")
        }
        guard let left = try register("out_L", JACK_DEFAULT_AUDIO_TYPE, JackPortIsOutput),
              let right = try register("out_R", JACK_DEFAULT_AUDIO_TYPE, JackPortIsOutput) else { return }
        outLeft = left
        outRight = right
        for (i, name) in midiPortNames.enumerated() {
            guard let port = try register(name, JACK_DEFAULT_MIDI_TYPE, JackPortIsInput) else { return }
            midiIn[i] = port
        }
    }

    /// After a call failed on a client that opened: whether its server went
    /// away (the shutdown callback said so, or a new client cannot reach
    /// it). If so, it is marked gone and the supervisor told: the client is
    /// then closed and opened again once the server is back, however far
    /// the start had come. Under connectionLock.
    private func serverLost() -> Bool {
        var lost = serverGone.load(ordering: .acquiring)
        if !lost, let (probe, _) = JACKLibrary.open("spinet-probe", server: configuration.server, exactName: false,
                                                    seconds: configuration.callDeadline) {
            if let probe { _ = JACKLibrary.close(probe, deactivate: false, seconds: configuration.callDeadline) } else { lost = true }
        }
        if lost {
            serverGone.store(true, ordering: .releasing)
            wake()
        }
        return lost
    }

    private func makeGraph(rate: Int) throws(JACKError) -> JACKGraph {
        guard let buildGraph else {
            throw JACKError("the JACK server now runs at \(rate) Hz and Spinet's graph cannot follow; silent until the rate is back (or restart Spinet)")
        }
        let engine: Engine
        do {
            engine = try buildGraph(rate)
        } catch {
            throw JACKError("cannot build the graph at \(rate) Hz: \(error); silent until the rate changes again")
        }
        precondition(engine.configuration.ports >= configuration.midiPorts, "the engine needs a port of 16 channels per JACK MIDI input")
        return JACKGraph(engine: engine, sampleRate: rate, maxFrames: configuration.maxFrames, eventsPerCycle: configuration.eventsPerCycle)
    }

    private func closeClient() {
        guard let c = client else { return }
        if !JACKLibrary.close(c, deactivate: !serverGone.load(ordering: .acquiring), seconds: configuration.callDeadline) {
            abandonClient()
            return
        }
        client = nil
        outLeft = nil
        outRight = nil
        for i in 0..<configuration.midiPorts { midiIn[i] = nil }
    }

    /// libjack did not finish a call on the client (`JACKLibrary.bounded`):
    /// the client is given up (never closed: libjack still holds it, and
    /// may yet call its callbacks, so this object and its graphs are kept
    /// for the rest of the process), and play ends with one line.
    private func abandonClient() {
        if !abandoned { _ = Unmanaged.passRetained(self) }
        abandoned = true
        client = nil
        outLeft = nil
        outRight = nil
        for i in 0..<configuration.midiPorts { midiIn[i] = nil }
        fail(JACKError.stuck.description)
    }

    /// Connects the audio outputs as configured (`auto`, `none`, named ports).
    private func connectOutputs(_ c: OpaquePointer) throws(JACKError) {
        let ours = audioPortNames.map { "\(jack_get_client_name(c).map { String(cString: $0) } ?? configuration.name):\($0)" }
        switch configuration.connect {
        case .none:
            return
        case .auto:
            let physical = JACKPorts.ports(of: c, pattern: nil, type: JACK_DEFAULT_AUDIO_TYPE,
                                           flags: UInt(JackPortIsPhysical.rawValue | JackPortIsInput.rawValue))
            guard !physical.isEmpty else {
                notice("no physical playback ports to connect to; connect \(ours.joined(separator: " and ")) by hand")
                return
            }
            for (i, port) in ours.enumerated() where i < physical.count {
                _ = jack_connect(c, port, physical[i].name)
            }
        case .ports(let names):
            try checkTargets(c)
            for (i, port) in ours.enumerated() {
                let target = names[min(i, names.count - 1)]
                let rc = jack_connect(c, port, target)
                if rc != 0 && rc != EEXIST { throw JACKError("cannot connect \(port) to \(target)") }
            }
        }
    }

    /// Named output targets must exist and be audio inputs.
    private func checkTargets(_ c: OpaquePointer) throws(JACKError) {
        guard case .ports(let names) = configuration.connect else { return }
        let all = JACKPorts.ports(of: c, pattern: nil, type: nil, flags: 0)
        for name in names {
            guard let p = all.first(where: { $0.name == name }) else {
                throw JACKError("--jack-connect: no JACK port '\(name)'; see `spinet ports`")
            }
            guard p.isAudio && p.isInput else {
                throw JACKError("--jack-connect: '\(name)' is not an audio input port; name playback or track inputs")
            }
        }
    }

    /// Our ports' connections now.
    private func snapshotConnections(_ c: OpaquePointer) -> [Connection] {
        var result: [Connection] = []
        for name in audioPortNames + midiPortNames {
            let full = "\(jack_get_client_name(c).map { String(cString: $0) } ?? configuration.name):\(name)"
            guard let port = jack_port_by_name(c, full), let list = jack_port_get_all_connections(c, port) else { continue }
            var j = 0
            while let other = list[j] { result.append(Connection(port: name, other: String(cString: other))); j += 1 }
            jack_free(UnsafeMutableRawPointer(mutating: list))
        }
        return result
    }

    /// Re-makes remembered connections; returns the ones still missing.
    private func remake(_ connections: [Connection], _ c: OpaquePointer) -> [Connection] {
        let ourClient = jack_get_client_name(c).map { String(cString: $0) } ?? configuration.name
        var missing: [Connection] = []
        for k in connections {
            let ours = "\(ourClient):\(k.port)"
            let isOutput = audioPortNames.contains(k.port)
            let rc = isOutput ? jack_connect(c, ours, k.other) : jack_connect(c, k.other, ours)
            if rc != 0 && rc != EEXIST { missing.append(k) }
        }
        return missing
    }

    // MARK: the supervisor thread

    private func superviseUntilStopped() {
        var missing: [Connection] = []
        var missingUntil = 0
        var failedRate = 0          // a rate the builder refused: not tried again until the rate changes
        while !stopping.load(ordering: .acquiring) {
            wait(milliseconds: 100)
            if stopping.load(ordering: .acquiring) { break }
            releaseRetired()

            if serverGone.load(ordering: .acquiring) {
                awaitingServer.store(true, ordering: .releasing)
                let kept = remembered.withLock { $0 }
                if let back = reconnect() {
                    connectionLock.withLock { _ in
                        if !outputsConnected {
                            do throws(JACKError) { try connectOutputs(back) } catch { notice(error.description) }
                            outputsConnected = true
                        }
                        missing = remake(kept, back)
                    }
                    missingUntil = Self.now() + 10_000_000_000
                    remembered.withLock { $0 = kept }
                    awaitingServer.store(false, ordering: .releasing)
                } else {
                    return      // stopping
                }
                continue
            }

            // Ports of other clients that come back after us: try again for a while.
            if !missing.isEmpty {
                connectionLock.withLock { _ in
                    if let c = client { missing = remake(missing, c) }
                }
                if Self.now() > missingUntil {
                    for k in missing { notice("could not re-make the connection \(k.port) - \(k.other) (the port did not come back)") }
                    missing = []
                }
            }

            // A rate change (PipeWire can change it while running): build a
            // graph at the new rate here and hand it to the process thread.
            // Compared with the newest graph handed over (published), not the
            // one the process thread plays: between its taking an offer and
            // installing it, neither slot shows the new graph, and a
            // comparison with the current one built a second graph at the
            // same rate.
            let rate = serverRate.load(ordering: .acquiring)
            let newestRate = publishedGraph.withLock { $0?.sampleRate } ?? 0
            if rate > 0 && rate != newestRate && rate != failedRate && !graphs.isPending
                && !(buildGraph == nil && hostFollowsRate) {
                do throws(JACKError) {
                    let graph = try makeGraph(rate: rate)
                    publishedGraph.withLock { $0 = graph }
                    graphs.offer(graph)
                    notice("the JACK server now runs at \(rate) Hz; Spinet follows (notes sounding were cut)")
                } catch {
                    notice(error.description)
                    failedRate = rate
                }
            }

            // Remember connections a quarter second after they changed (not
            // during a server's shutdown, which disconnects everything first).
            let changed = connectionsChangedAt.load(ordering: .acquiring)
            if changed != 0 && Self.now() - changed > 250_000_000 {
                connectionsChangedAt.store(0, ordering: .relaxed)
                connectionLock.withLock { _ in
                    if let c = client, !serverGone.load(ordering: .acquiring) {
                        let now = snapshotConnections(c)
                        remembered.withLock { $0 = now }
                    }
                }
            }
        }
    }

    /// The server went away: say so, close the dead client and try to open
    /// it again until it succeeds (returns the new client) or `stop` is called (nil).
    private func reconnect() -> OpaquePointer? {
        connectionLock.withLock { _ in closeClient() }
        guard configuration.reconnect else {
            fail("the JACK server went away; stopped")
            while !stopping.load(ordering: .acquiring) { wait(milliseconds: 1000) }
            return nil
        }
        notice("the JACK server went away; held notes released; waiting for it to come back")
        while !stopping.load(ordering: .acquiring) {
            wait(milliseconds: Int(configuration.reconnectInterval * 1000))
            if stopping.load(ordering: .acquiring) { return nil }
            releaseRetired()
            var back: OpaquePointer?
            var failure: JACKError?
            connectionLock.withLock { _ in
                // from here a loss the new client reports (while its ports
                // are registered, say) sets it again
                serverGone.store(false, ordering: .releasing)
                do throws(JACKError) {
                    try open()
                } catch {
                    serverGone.store(true, ordering: .releasing)
                    if error != .noServer { failure = error }
                    return
                }
                guard let c = client, !serverGone.load(ordering: .acquiring) else {
                    serverGone.store(true, ordering: .releasing)
                    closeClient()
                    return
                }
                releaseRequested.store(UInt32.max, ordering: .releasing)
                guard let rc = JACKLibrary.bounded("activating the JACK client '\(configuration.name)' again", seconds: configuration.callDeadline,
                                                   { jack_activate(c) }) else {
                    abandonClient()
                    return
                }
                if rc != 0 {
                    failure = JACKError("the JACK server refused to activate the client again")
                    serverGone.store(true, ordering: .releasing)
                    closeClient()
                    return
                }
                back = c
            }
            // libjack is stuck (an open, activation or close that never
            // returned): waiting longer cannot help; play ends with one line.
            if JACKLibrary.stuck != nil {
                fail(JACKError.stuck.description)
                return nil
            }
            if let failure { notice("\(failure.description); trying again") }
            if let c = back {
                notice("the JACK server is back: client '\(configuration.name)' at \(serverRate.load(ordering: .relaxed)) Hz, \(serverPeriod.load(ordering: .relaxed)) frames")
                return c
            }
        }
        return nil
    }

    /// Releases a graph the process thread gave up. Supervisor thread.
    private func releaseRetired() {
        graphs.collect()
    }

    /// Drops the reference a graph slot held (bits 0: none).
    private static func release(_ bits: UInt) {
        if bits != 0 { Unmanaged<JACKGraph>.fromOpaque(UnsafeRawPointer(bitPattern: bits)!).release() }
    }

    private func wait(milliseconds: Int) {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        let ns = Int(ts.tv_nsec) + milliseconds % 1000 * 1_000_000
        ts.tv_sec += milliseconds / 1000 + ns / 1_000_000_000
        ts.tv_nsec = ns % 1_000_000_000
        while sem_timedwait(wakeUp, &ts) != 0 && errno == EINTR {}
    }

    /// Wakes the supervisor (from JACK's threads).
    func wake() { sem_post(wakeUp) }

    static func now() -> Int {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Int(ts.tv_sec) * 1_000_000_000 + Int(ts.tv_nsec)
    }
}
