import CJACK
import Foundation
import Glibc
import Synchronization
import Testing
import SpinetEngine
import SpinetJACK
import SpinetMIDI
import SpinetSynth

/// A synth-only graph: Spinet's oscillator synth ("saw", no release tail)
/// on every channel. It starts each note on its exact frame.
func sawGraph(ports: Int = 1, polyphony: Int = 64) -> JACKClient.GraphBuilder {
    { _ in
        var saw = PresetBank.factory.preset(named: "saw")!
        saw.program = 0
        saw.release = 0
        var config = Engine.Configuration()
        config.ports = ports
        let engine = Engine(configuration: config)
        engine.routeAll(to: engine.add(OscillatorSynth(presets: try PresetBank(presets: [saw]), polyphony: polyphony)))
        return engine
    }
}

func spinetConfiguration(_ server: JACKTestServer, name: String = "Spinet", connect: JACKConnect = .none, ports: Int = 1) -> JACKClient.Configuration {
    var c = JACKClient.Configuration()
    c.name = name
    c.server = server.name
    c.connect = connect
    c.midiPorts = ports
    c.reconnectInterval = 0.2
    return c
}

/// A private server started at `rate` and `period`, and Spinet's client on
/// it (`spinetConfiguration`) playing `graph` (default: `sawGraph`),
/// started. The caller stops the client (`defer { spinet.stop() }`, which
/// here would run at this function's return); the server stops when the
/// last reference to it goes.
func runningSpinet(rate: Int = 48000, period: Int = 128, connect: JACKConnect = .none, name: String = "Spinet", ports: Int = 1,
                   graph: JACKClient.GraphBuilder? = nil) throws -> (server: JACKTestServer, spinet: JACKClient) {
    let server = JACKTestServer()
    try server.start(rate: rate, period: period)
    let spinet = try JACKClient(spinetConfiguration(server, name: name, connect: connect, ports: ports), graph: graph ?? sawGraph(ports: ports))
    try spinet.start()
    return (server, spinet)
}

/// Sender → Spinet → recorder, sends notes at the given cycle offsets and
/// returns, per note, how many frames after its send frame the sound began
/// (nil: no clean onset found).
func onsetDelays(server: JACKTestServer, spinet: String = "Spinet", offsets: [Int], midiPort: String = "midi_in",
                 tag: String = "", spacing: Int = 24) throws -> [Int?] {
    let sender = try JACKTestClient(name: "sender\(tag)", server: server.name, midiOut: true)
    let recorder = try JACKTestClient(name: "recorder\(tag)", server: server.name, audioIn: 1)
    try sender.connect(sender.port("midi_out"), "\(spinet):\(midiPort)")
    try recorder.connect("\(spinet):out_L", recorder.port("in_1"))
    usleep(100_000)
    // One note every 24 cycles: on at its offset, off 4 cycles later; the
    // saw with release 0 is silent (exact zeros) long before the next note.
    var notes: [JACKTestClient.Note] = []
    for (i, offset) in offsets.enumerated() {
        let key = UInt8(48 + i)
        notes.append(.init(cycle: 8 + spacing * i, offset: offset, bytes: [0x90, key, 100]))
        notes.append(.init(cycle: 12 + spacing * i, offset: 0, bytes: [0x80, key, 0]))
    }
    let period = max(recorder.lastPeriod, 1)
    recorder.arm(recordFrames: (spacing * offsets.count + 40) * period)
    sender.arm(notes: notes)
    #expect(waitFor(20) { sender.allSent && recorder.recordingFull }, "notes not sent or recording not full")
    let (samples, start) = recorder.recording
    return sender.sentFrames.enumerated().filter { $0.offset % 2 == 0 }.map { _, frame -> Int? in
        guard let frame else { return nil }
        let from = frame - start
        guard from >= 0 && from < samples.count else { return nil }
        guard let first = samples[from...].firstIndex(where: { $0 != 0 }) else { return nil }
        return first - from
    }
}

extension JACKTests {
@Suite("JACK client against a real jackd")
struct JACKClientTests {
    @Test func aMissingServerIsOneClearError() {
        var c = JACKClient.Configuration()
        c.server = "spinet-no-such-server-\(getpid())"
        #expect(throws: JACKError("no JACK server running; start one (jackd, or PipeWire's pipewire-jack)")) {
            _ = try JACKClient(c, graph: sawGraph())
        }
        #expect(throws: JACKError.noServer) { _ = try JACKPorts.list(server: c.server) }
    }

    /// Notes sent at offsets 0, 1, 37, 63, 64, 100 and 127 of their cycles
    /// sound exactly the engine's latency (the limiter's look-ahead) after
    /// their frame, at 128 and at 64 frames a period.
    @Test(arguments: [128, 64])
    func notesLandOnTheirExactFrame(period: Int) throws {
        let (server, spinet) = try runningSpinet(period: period)
        defer { spinet.stop() }
        let latency = spinet.latencyFrames
        #expect(latency > 0)
        let offsets = [0, 1, 37, 63, 64, 100, 127].filter { $0 < period }
        let delays = try onsetDelays(server: server, offsets: offsets)
        print("JACK onsets at \(period) frames, offsets \(offsets): delays \(delays.map { $0.map(String.init) ?? "none" }) (latency \(latency))")
        #expect(delays == offsets.map { _ in latency })
        #expect(spinet.engine?.statistics.lateEvents == 0)
        #expect(spinet.engine?.statistics.droppedEvents == 0)
        #expect(spinet.midiEventsReceived == 2 * offsets.count)
    }

    /// After `jack_bufsize 256` the client follows (no new engine: it was
    /// prepared for 8192 frames) and notes still land exactly.
    @Test func aBufferSizeChangeKeepsNotesExact() throws {
        let (server, spinet) = try runningSpinet(period: 128)
        defer { spinet.stop() }
        let engineBefore = spinet.engine.map(ObjectIdentifier.init)
        let control = try JACKTestClient(name: "bufsize", server: server.name)
        #expect(jack_set_buffer_size(control.client, 256) == 0)
        #expect(waitFor(5) { spinet.periodFrames == 256 })
        usleep(100_000)
        let offsets = [0, 1, 37, 63, 64, 100, 127, 200, 255]
        let delays = try onsetDelays(server: server, offsets: offsets)
        print("JACK onsets after jack_bufsize 256: delays \(delays.map { $0.map(String.init) ?? "none" })")
        #expect(delays == offsets.map { _ in spinet.latencyFrames })
        #expect(spinet.engine.map(ObjectIdentifier.init) == engineBefore)
    }

    /// The server goes away and comes back at another rate: Spinet says so,
    /// opens its client again by itself with the same ports and connections,
    /// builds its graph at the new rate, and notes land exactly again.
    @Test func theClientComesBackWhenTheServerRestartsAtAnotherRate() throws {
        let (server, spinet) = try runningSpinet(rate: 48000, period: 128, connect: .auto)
        defer { spinet.stop() }
        let before = try JACKPorts.list(server: server.name)
        #expect(before.first { $0.name == "Spinet:out_L" }?.connections == ["system:playback_1"])
        #expect(before.first { $0.name == "Spinet:out_R" }?.connections == ["system:playback_2"])
        _ = spinet.takeNotices()

        server.stop()
        #expect(waitFor(5) { spinet.isWaitingForServer })
        try server.start(rate: 44100, period: 128)
        #expect(waitFor(10) { !spinet.isWaitingForServer && spinet.sampleRate == 44100 })
        // The physical ports may appear just after the server answers: re-made within a second.
        waitFor(2) { (try? JACKPorts.list(server: server.name))?.first { $0.name == "Spinet:out_R" }?.connections.isEmpty == false }
        let after = try JACKPorts.list(server: server.name)
        #expect(after.first { $0.name == "Spinet:out_L" }?.connections == ["system:playback_1"])
        #expect(after.first { $0.name == "Spinet:out_R" }?.connections == ["system:playback_2"])
        #expect(after.contains { $0.name == "Spinet:midi_in" && $0.isMIDI && $0.isInput })
        #expect(spinet.engine?.sampleRate == 44100)
        let notices = spinet.takeNotices()
        print("JACK notices: \(notices)")
        #expect(notices.contains { $0.hasPrefix("the JACK server went away") })
        #expect(notices.contains { $0.hasPrefix("the JACK server is back") })

        let offsets = [0, 1, 37, 63, 64, 100, 127]
        let delays = try onsetDelays(server: server, offsets: offsets)
        print("JACK onsets after a restart at 44.1 kHz: delays \(delays.map { $0.map(String.init) ?? "none" })")
        #expect(delays == offsets.map { _ in spinet.latencyFrames })
    }

    /// The server goes away after the client opened and before it is
    /// activated (while a host loads its SoundFont): starting is not an
    /// error; the client waits for the server, as for one lost later, and
    /// comes back with its ports, connected as configured.
    @Test func aServerLostWhileStartingIsWaitedFor() throws {
        let server = JACKTestServer()
        try server.start()
        let spinet = try JACKClient(spinetConfiguration(server, connect: .auto), graph: sawGraph())
        defer { spinet.stop() }
        server.stop()
        try spinet.start()
        #expect(waitFor(5) { spinet.isWaitingForServer })
        #expect(spinet.failure == nil)
        try server.start()
        #expect(waitFor(10) { !spinet.isWaitingForServer })
        #expect(waitFor(2) { (try? JACKPorts.list(server: server.name))?.first { $0.name == "Spinet:out_R" }?.connections.isEmpty == false })
        let ports = try JACKPorts.list(server: server.name)
        #expect(ports.first { $0.name == "Spinet:out_L" }?.connections == ["system:playback_1"])
        #expect(ports.first { $0.name == "Spinet:out_R" }?.connections == ["system:playback_2"])
        #expect(ports.contains { $0.name == "Spinet:midi_in" && $0.isMIDI && $0.isInput })
        #expect(spinet.takeNotices().contains { $0.hasPrefix("the JACK server is back") })
        let delays = try onsetDelays(server: server, offsets: [0, 64])
        #expect(delays == [spinet.latencyFrames, spinet.latencyFrames])
    }

    /// A note held when the server went away is released when it is back:
    /// the output decays to silence instead of droning on.
    @Test func heldNotesAreReleasedWhenTheServerComesBack() throws {
        let (server, spinet) = try runningSpinet()
        defer { spinet.stop() }
        do {
            let sender = try JACKTestClient(name: "holder", server: server.name, midiOut: true)
            try sender.connect(sender.port("midi_out"), "Spinet:midi_in")
            usleep(50_000)
            sender.arm(notes: [.init(cycle: 2, offset: 0, bytes: [0x90, 60, 100])])
            #expect(waitFor(5) { sender.allSent })
            usleep(50_000)
            #expect(spinet.engine?.statistics.activeVoices == 1)
        }
        server.stop()
        #expect(waitFor(5) { spinet.isWaitingForServer })
        try server.start()
        #expect(waitFor(10) { !spinet.isWaitingForServer })
        #expect(waitFor(2) { spinet.engine?.statistics.activeVoices == 0 }, "the held note still sounds")
    }

    /// `auto` takes the first two physical playback ports; named ports are
    /// checked (they must exist and be audio inputs); MIDI inputs are never
    /// connected by Spinet.
    @Test func autoConnectAndNamedPorts() throws {
        let server = JACKTestServer()
        try server.start()
        do {
            let spinet = try JACKClient(spinetConfiguration(server, connect: .ports(["system:playback_2", "system:playback_1"])), graph: sawGraph())
            try spinet.start()
            let ports = try JACKPorts.list(server: server.name)
            #expect(ports.first { $0.name == "Spinet:out_L" }?.connections == ["system:playback_2"])
            #expect(ports.first { $0.name == "Spinet:out_R" }?.connections == ["system:playback_1"])
            #expect(ports.first { $0.name == "Spinet:midi_in" }?.connections == [])
            spinet.stop()
        }
        #expect(throws: JACKError("--jack-connect: no JACK port 'system:nope'; see `spinet ports`")) {
            _ = try JACKClient(spinetConfiguration(server, connect: .ports(["system:nope"])), graph: sawGraph())
        }
        #expect(throws: JACKError("--jack-connect: 'system:capture_1' is not an audio input port; name playback or track inputs")) {
            _ = try JACKClient(spinetConfiguration(server, connect: .ports(["system:capture_1"])), graph: sawGraph())
        }
        do {
            let spinet = try JACKClient(spinetConfiguration(server, connect: .none), graph: sawGraph())
            try spinet.start()
            let ports = try JACKPorts.list(server: server.name)
            #expect(ports.first { $0.name == "Spinet:out_L" }?.connections == [])
            spinet.stop()
        }
        #expect(try JACKConnect(parsing: "auto") == .auto)
        #expect(try JACKConnect(parsing: "NONE") == JACKConnect.none)
        #expect(try JACKConnect(parsing: "a:b, c:d") == .ports(["a:b", "c:d"]))
        #expect(throws: JACKError.self) { try JACKConnect(parsing: "a,b,c") }
    }

    /// Port names, the lister, a name already taken.
    @Test func portsAndNames() throws {
        let (server, spinet) = try runningSpinet(name: "Synth A", ports: 3)
        defer { spinet.stop() }
        let ports = try JACKPorts.list(server: server.name)
        let ours = ports.filter { $0.client == "Synth A" }
        #expect(ours.map(\.shortName) == ["out_L", "out_R", "midi_in_1", "midi_in_2", "midi_in_3"])
        #expect(ours.filter(\.isAudio).allSatisfy { !$0.isInput && !$0.isPhysical })
        #expect(ours.filter(\.isMIDI).allSatisfy { $0.isInput })
        #expect(ports.contains { $0.name == "system:playback_1" && $0.isPhysical && $0.isInput && $0.isAudio })
        #expect(throws: JACKError("a JACK client named 'Synth A' is already running; choose another --name")) {
            _ = try JACKClient(spinetConfiguration(server, name: "Synth A"), graph: sawGraph())
        }
        // The second port's channel 1 is global channel 17: a note there lands exactly too.
        let delays = try onsetDelays(server: server, spinet: "Synth A", offsets: [5, 77], midiPort: "midi_in_2")
        #expect(delays == [spinet.latencyFrames, spinet.latencyFrames])
    }

    /// The engine's latency (the limiter's look-ahead) is reported on the
    /// outputs, for DAWs to compensate.
    @Test func latencyIsReportedOnTheOutputs() throws {
        let (server, spinet) = try runningSpinet()
        defer { spinet.stop() }
        let probe = try JACKTestClient(name: "latency", server: server.name)
        jack_recompute_total_latencies(probe.client)
        usleep(100_000)
        var range = jack_latency_range_t()
        let port = try #require(jack_port_by_name(probe.client, "Spinet:out_L"))
        jack_port_get_latency_range(port, JackCaptureLatency, &range)
        #expect(Int(range.min) == spinet.latencyFrames && Int(range.max) == spinet.latencyFrames)
        #expect(spinet.latencyFrames == 72, "1.5 ms at 48 kHz")
    }

    /// Freewheeling (a DAW's bounce) runs cycles as fast as they go; notes
    /// still land exactly, since nothing depends on the wall clock.
    @Test func freewheelingKeepsNotesExact() throws {
        let (server, spinet) = try runningSpinet()
        defer { spinet.stop() }
        let control = try JACKTestClient(name: "wheel", server: server.name)
        #expect(jack_set_freewheel(control.client, 1) == 0)
        #expect(waitFor(5) { spinet.isFreewheeling })
        let offsets = [0, 1, 37, 63, 64, 100, 127]
        let delays = try onsetDelays(server: server, offsets: offsets)
        #expect(jack_set_freewheel(control.client, 0) == 0)
        #expect(waitFor(5) { !spinet.isFreewheeling })
        print("JACK onsets while freewheeling: delays \(delays.map { $0.map(String.init) ?? "none" })")
        #expect(delays == offsets.map { _ in spinet.latencyFrames })
    }
}
}

@testable import SpinetJACK

extension JACKTests {
@Suite("JACK client: graph swaps, xruns, stopping")
struct JACKClientLifecycleTests {
    /// A new sample rate (PipeWire changes it while running; jackd2 cannot,
    /// so the rate callback is called here by hand): the supervisor builds a
    /// graph at the new rate off the process thread, the process thread
    /// takes it by pointer at the start of a cycle, and the old graph is
    /// released off the process thread. Back at 48 kHz, notes land exactly.
    @Test func aRateChangeSwapsInAGraphBuiltOffTheProcessThread() throws {
        let server = JACKTestServer()
        try server.start()
        let builtOn = BuildLog()
        let saw = sawGraph()
        let spinet = try JACKClient(spinetConfiguration(server), graph: { rate in
            builtOn.add(rate: rate, thread: pthread_self())
            return try saw(rate)
        })
        try spinet.start()
        defer { spinet.stop() }
        weak var first = spinet.engine
        #expect(first?.sampleRate == 48000)
        _ = spinet.takeNotices()

        spinet.serverRateChanged(to: 44100)
        #expect(waitFor(5) { spinet.engine?.sampleRate == 44100 })
        #expect(waitFor(5) { first == nil }, "the 48 kHz graph was not released")
        #expect(spinet.takeNotices().contains { $0.hasPrefix("the JACK server now runs at 44100 Hz") })

        spinet.serverRateChanged(to: 48000)
        #expect(waitFor(5) { spinet.engine?.sampleRate == 48000 })
        usleep(50_000)
        let offsets = [0, 1, 37, 63, 64, 100, 127]
        let delays = try onsetDelays(server: server, offsets: offsets)
        #expect(delays == offsets.map { _ in 72 })
        #expect(builtOn.rates == [48000, 44100, 48000])
        #expect(builtOn.threads.count == 3 && builtOn.threads[1] != builtOn.threads[0], "rebuilt on the supervisor, not the control thread")
    }

    /// A client that overruns the cycle makes an xrun; Spinet counts it.
    @Test func xrunsAreCounted() throws {
        let (server, spinet) = try runningSpinet()
        defer { spinet.stop() }
        let slow = try JACKTestClient(name: "slow", server: server.name)
        let t0 = Date()
        slow.stall(microseconds: 20_000, cycles: 3)
        #expect(waitFor(5) { spinet.xruns > 0 })
        print("JACK xruns: \(spinet.xruns), counted \(Date().timeIntervalSince(t0)) s after the stall began")
        // Clients close before their server stops (a client closing after
        // its server is gone waits for libjack's timeout).
        withExtendedLifetime(slow) {}
        spinet.stop()
        server.stop()
    }

    /// `stop` fades out before it closes: the last sound before silence is
    /// quiet, not cut off mid-wave.
    @Test func stoppingFadesOut() throws {
        let server = JACKTestServer()
        try server.start()
        let spinet = try JACKClient(spinetConfiguration(server), graph: sawGraph())
        try spinet.start()
        let sender = try JACKTestClient(name: "player", server: server.name, midiOut: true)
        let recorder = try JACKTestClient(name: "tape", server: server.name, audioIn: 1)
        try sender.connect(sender.port("midi_out"), "Spinet:midi_in")
        try recorder.connect("Spinet:out_L", recorder.port("in_1"))
        usleep(50_000)
        sender.arm(notes: [.init(cycle: 1, offset: 0, bytes: [0x90, 45, 127])])
        #expect(waitFor(5) { sender.allSent })
        recorder.arm(recordFrames: 48000)
        usleep(200_000)
        spinet.stop()
        usleep(50_000)
        let samples = recorder.recording.samples
        let peak = samples.prefix(4800).map(abs).max() ?? 0
        let last = try #require(samples.lastIndex { $0 != 0 })
        let tail = samples[max(0, last - 9)...last].map(abs).max() ?? 1
        print("JACK stop: peak \(peak), largest of the last 10 samples before silence \(tail)")
        #expect(peak > 0.1)
        #expect(tail < peak / 50, "the sound was cut, not faded")
    }

    @Test func midiClockSetsTheTempoFromFrames() {
        var clock = MIDIClockTempo()
        var tempo: Double?
        // 120 bpm at 48 kHz: a quarter note is 24000 frames, a tick 1000.
        for i in 0...24 { tempo = clock.tick(atFrame: Int64(5000 + i * 1000), sampleRate: 48000) ?? tempo }
        #expect(tempo == 120)
        clock.restart()
        #expect(clock.tick(atFrame: 0, sampleRate: 48000) == nil)
    }
}
}

final class BuildLog: @unchecked Sendable {
    private let lock = NSLock()
    private var entries: [(Int, pthread_t)] = []
    func add(rate: Int, thread: pthread_t) { lock.lock(); entries.append((rate, thread)); lock.unlock() }
    var rates: [Int] { lock.lock(); defer { lock.unlock() }; return entries.map(\.0) }
    var threads: [pthread_t] { lock.lock(); defer { lock.unlock() }; return entries.map(\.1) }
}

/// Records what the hooks were told (process thread: atomics only).
final class RecordingHooks: JACKCycleHooks, @unchecked Sendable {
    let lastFrame = Atomic<Int64>(-1)
    let lastLag = Atomic<Int64>(0)
    let maxLag = Atomic<Int64>(0)
    let minLag = Atomic<Int64>(.max)
    let framesAdvanceMismatches = Atomic<Int>(0)
    let calls = Atomic<Int>(0)
    let soundingFrames = Atomic<Int>(0)
    private var expectedNext: Int64 = -1

    override func cycleStarts(engineFrame: Int64, frames: Int, nanoseconds: Int64) {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        let now = Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
        let lag = now - nanoseconds
        lastLag.store(lag, ordering: .relaxed)
        if calls.load(ordering: .relaxed) > 10 {
            if abs(lag) > maxLag.load(ordering: .relaxed) { maxLag.store(abs(lag), ordering: .relaxed) }
            if lag < minLag.load(ordering: .relaxed) { minLag.store(lag, ordering: .relaxed) }
        }
        if expectedNext >= 0 && engineFrame != expectedNext { framesAdvanceMismatches.add(1, ordering: .relaxed) }
        expectedNext = engineFrame + Int64(frames)
        lastFrame.store(engineFrame, ordering: .relaxed)
        calls.add(1, ordering: .relaxed)
    }

    override func cycleRendered(left: UnsafePointer<Float>, right: UnsafePointer<Float>, frames: Int) {
        var n = 0
        for i in 0..<frames where left[i] != 0 { n += 1 }
        soundingFrames.add(n, ordering: .relaxed)
    }
}

extension JACKTests.JACKClientLifecycleTests {
    /// The hooks see each cycle's engine frame (contiguous) and its start
    /// on CLOCK_MONOTONIC (jack_frames_to_time: the same clock), then the
    /// rendered audio.
    @Test func hooksSeeTheTimelineAndTheRenderedAudio() throws {
        let server = JACKTestServer()
        try server.start()
        let spinet = try JACKClient(spinetConfiguration(server), graph: sawGraph())
        let hooks = RecordingHooks()
        spinet.hooks = hooks
        try spinet.start()
        defer { spinet.stop() }
        let sender = try JACKTestClient(name: "hooked", server: server.name, midiOut: true)
        try sender.connect(sender.port("midi_out"), "Spinet:midi_in")
        usleep(50_000)
        sender.arm(notes: [.init(cycle: 1, offset: 0, bytes: [0x90, 60, 100])])
        #expect(waitFor(5) { sender.allSent })
        usleep(200_000)
        let lag = hooks.minLag.load(ordering: .relaxed)
        print("JACK hooks: \(hooks.calls.load(ordering: .relaxed)) cycles; the callback ran \(Double(lag) / 1e6) to \(Double(hooks.maxLag.load(ordering: .relaxed)) / 1e6) ms after its cycle's start on CLOCK_MONOTONIC")
        #expect(hooks.calls.load(ordering: .relaxed) > 50)
        #expect(hooks.framesAdvanceMismatches.load(ordering: .relaxed) == 0)
        // Same clock: the earliest callback comes soon after its cycle's
        // start (a loaded machine runs the dummy driver late by several
        // periods); jackd2's own clock, CLOCK_MONOTONIC_RAW, was a quarter
        // second off CLOCK_MONOTONIC here after hours of NTP slew.
        #expect(lag >= -1_000_000 && lag < 100_000_000, "the cycle start is not on CLOCK_MONOTONIC")
        #expect(hooks.soundingFrames.load(ordering: .relaxed) > 1000)
    }
}

extension JACKTests.JACKClientLifecycleTests {
    /// Without reconnecting, a server that goes away ends play with one line.
    @Test func withoutReconnectingTheServerGoingAwayIsAFailure() throws {
        let server = JACKTestServer()
        try server.start()
        var config = spinetConfiguration(server)
        config.reconnect = false
        let spinet = try JACKClient(config, graph: sawGraph())
        try spinet.start()
        defer { spinet.stop() }
        #expect(spinet.failure == nil)
        server.stop()
        #expect(waitFor(5) { spinet.failure == "the JACK server went away; stopped" })
    }
}

extension JACKTests.JACKClientLifecycleTests {
    /// The way the rig's LiveSession drives it: the host builds and prepares
    /// the engine at the server's rate for its period and starts the client
    /// with it. Notes land
    /// exactly. A rate change cannot be followed without a builder: silence
    /// and one line, and sound again when the rate is back.
    @Test func anEngineTheHostPreparedPlaysExactly() throws {
        let server = JACKTestServer()
        try server.start()
        let spinet = try JACKClient(spinetConfiguration(server), graph: nil)
        let engine = try sawGraph()(spinet.sampleRate)
        engine.prepare(sampleRate: Double(spinet.sampleRate), maxFrames: spinet.periodFrames)
        try spinet.start(engine: engine)
        defer { spinet.stop() }
        let offsets = [0, 1, 37, 63, 64, 100, 127]
        #expect(try onsetDelays(server: server, offsets: offsets, tag: "-1") == offsets.map { _ in 72 })

        spinet.serverRateChanged(to: 44100)
        #expect(waitFor(2) { spinet.takeNotices().contains { $0.contains("now runs at 44100 Hz and Spinet's graph cannot follow") } })
        let silent = try onsetDelays(server: server, offsets: [5], tag: "-2")
        #expect(silent == [nil])
        #expect(spinet.eventsNotPlayed >= 1)
        spinet.serverRateChanged(to: 48000)
        #expect(try onsetDelays(server: server, offsets: offsets, tag: "-3") == offsets.map { _ in 72 })
        #expect(spinet.engine === engine)
    }
}

extension JACKTests.JACKClientLifecycleTests {
    /// A source disconnected from a MIDI input leaves no note hanging: the
    /// notes held on that port are released; the other port's are not.
    @Test func aDisconnectedSourceLeavesNoNoteHanging() throws {
        let (server, spinet) = try runningSpinet(ports: 2)
        defer { spinet.stop() }
        let a = try JACKTestClient(name: "keyboard-a", server: server.name, midiOut: true)
        let b = try JACKTestClient(name: "keyboard-b", server: server.name, midiOut: true)
        try a.connect(a.port("midi_out"), "Spinet:midi_in_1")
        try b.connect(b.port("midi_out"), "Spinet:midi_in_2")
        usleep(50_000)
        a.arm(notes: [.init(cycle: 1, offset: 0, bytes: [0x90, 60, 100]), .init(cycle: 1, offset: 1, bytes: [0x91, 64, 100])])
        b.arm(notes: [.init(cycle: 1, offset: 0, bytes: [0x90, 67, 100])])
        #expect(waitFor(5) { a.allSent && b.allSent })
        #expect(waitFor(2) { spinet.engine?.statistics.activeVoices == 3 })
        #expect(jack_disconnect(a.client, a.port("midi_out"), "Spinet:midi_in_1") == 0)
        #expect(waitFor(2) { spinet.engine?.statistics.activeVoices == 1 }, "port 1's notes still sound")
        usleep(100_000)
        #expect(spinet.engine?.statistics.activeVoices == 1, "port 2's note was released too")
    }
}
