import CJACK
import Foundation
import Glibc
import Testing
import SpinetEngine
import SpinetJACK

/// Every JACK test, one at a time: each starts its own server, and two
/// servers at once on a 2-core machine make cycles late.
@Suite("JACK", .serialized, .enabled(if: JACKTestServer.isInstalled, JACKTestServer.skipReason))
struct JACKTests {}

/// A private jackd for one test (SpinetJACK's `JACKServerProcess`: the
/// dummy driver, -S, no real-time scheduling), under a name of its own,
/// started and stopped by process id.
final class JACKTestServer {
    static let jackd: String? = JACKServerProcess.installedJackd
    static var isInstalled: Bool { jackd != nil }
    static let skipReason: Comment = "jackd is not installed (scripts/install-deps.sh installs jackd2); the JACK tests are skipped"

    /// The server's name: `spinet-test-UID-SLOT`, the first of a few slots
    /// no other test run is using. Not one name per test: jackd2 keeps at
    /// most 8 servers in its shared registry and frees a dead server's entry
    /// (a jackd that had to be killed) only when a server of the same name
    /// starts again, so names are reused to heal such leaks.
    var name: String { process?.name ?? existing }
    private static let slots = 4
    private var process: JACKServerProcess?
    private let existing: String

    /// PipeWire's one "server" (its name is not used), for the test clients.
    static var pipeWire: JACKTestServer { JACKTestServer(existing: "default") }

    private init(existing: String) {
        self.existing = existing
    }

    init() {
        existing = ""
    }

    deinit {
        stop()
        if let log = process?.log, log != "/dev/null" { unlink(log) }
    }

    /// Starts jackd (again under the same name, after `stop`) and waits until a client can connect.
    func start(rate: Int = 48000, period: Int = 128) throws {
        if process == nil {
            let log = NSTemporaryDirectory() + "/spinet-jackd-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).log"
            process = JACKServerProcess(executable: Self.jackd!, log: log)
        }
        defer { for line in process!.failedStarts { print("JACKTestServer: \(line)") } }
        try process!.start(rate: rate, period: period, names: (0..<Self.slots).map { "spinet-test-\(getuid())-\($0)" })
    }

    /// Stops (SIGSTOP) jackd: a server that no longer answers, so that every libjack call to it waits.
    func freeze() { process?.freeze() }
    func thaw() { process?.thaw() }

    /// Starts jackd again under its name, frozen the moment its socket exists (see `JACKServerProcess.startFrozen`).
    func startFrozen(rate: Int = 48000, period: Int = 128) throws -> Bool {
        try process!.startFrozen(rate: rate, period: period)
    }

    /// SIGTERM (then SIGKILL after 5 s), and waits for the process to end.
    func stop() {
        process?.stop()
    }
}

/// A plain JACK client for tests: a MIDI sender and an audio recorder in
/// one type, made with libjack directly (not with SpinetJACK).
///
/// Use two of them around Spinet, a sender and a recorder, so the graph
/// runs sender → Spinet → recorder in one cycle.
final class JACKTestClient: @unchecked Sendable {
    struct Note {
        /// Process cycles after `arm` in which it is sent, and the offset in that cycle.
        var cycle: Int
        var offset: Int
        var bytes: [UInt8]
    }

    let client: OpaquePointer
    let name: String
    private var midiOut: OpaquePointer?
    private var audioIn: [OpaquePointer] = []

    private struct State {
        var armed = false
        var cycle = 0
        var notes: [Note] = []
        /// Indices of `notes` in the order they are sent (JACK MIDI events
        /// must be written in time order).
        var order: [Int] = []
        /// Absolute frame each note was sent at (nil: not yet).
        var sentFrames: [Int?] = []
        var recording: [Float] = []
        var recordingCapacity = 0
        var recordingStart: Int = -1
        var cyclesSeen = 0
        var lastPeriod = 0
        var stallMicroseconds = 0
        var stallCycles = 0
        /// Each cycle the transport rolled in: its start frame and the transport's frame then.
        var rolling: [(frame: Int, transportFrame: Int)] = []
    }
    private let state = Locked(State())

    init(name: String, server: String, midiOut: Bool = false, audioIn: Int = 0) throws {
        var status = jack_status_t(rawValue: 0)
        guard let c = JACKLibrary.serialized({ spinet_jack_client_open(name, server, 1, &status) }) else {
            throw JACKError("test client \(name) did not open (status \(status.rawValue))")
        }
        client = c
        self.name = name
        if midiOut { self.midiOut = jack_port_register(c, "midi_out", JACK_DEFAULT_MIDI_TYPE, UInt(JackPortIsOutput.rawValue), 0) }
        for i in 0..<audioIn {
            self.audioIn.append(jack_port_register(c, "in_\(i + 1)", JACK_DEFAULT_AUDIO_TYPE, UInt(JackPortIsInput.rawValue), 0)!)
        }
        Self.install(c, Unmanaged.passUnretained(self).toOpaque())
        jack_activate(c)
    }

    deinit {
        jack_deactivate(client)
        JACKLibrary.serialized { _ = jack_client_close(client) }
    }

    nonisolated static func install(_ c: OpaquePointer, _ context: UnsafeMutableRawPointer) {
        jack_set_process_callback(c, { frames, arg in
            Unmanaged<JACKTestClient>.fromOpaque(arg!).takeUnretainedValue().process(frames)
        }, context)
    }

    private func process(_ nframes: jack_nframes_t) -> Int32 {
        let start = Int(jack_last_frame_time(client))
        let n = Int(nframes)
        let midiBuffer = midiOut.flatMap { jack_port_get_buffer($0, nframes) }
        if let midiBuffer { jack_midi_clear_buffer(midiBuffer) }
        let input = audioIn.first.flatMap { jack_port_get_buffer($0, nframes) }?.assumingMemoryBound(to: Float.self)
        let stall = state.withLock { s -> Int in
            guard s.stallCycles > 0 else { return 0 }
            s.stallCycles -= 1
            return s.stallMicroseconds
        }
        if stall > 0 { usleep(UInt32(stall)) }
        var position = jack_position_t()
        let rolling = jack_transport_query(client, &position) == JackTransportRolling
        state.withLock { s in
            s.cyclesSeen += 1
            s.lastPeriod = n
            if rolling && s.armed && s.rolling.count < 100_000 { s.rolling.append((start, Int(position.frame))) }
            guard s.armed else { return }
            if let midiBuffer {
                for i in s.order {
                    let note = s.notes[i]
                    guard note.cycle == s.cycle && note.offset < n else { continue }
                    note.bytes.withUnsafeBufferPointer { b in
                        _ = jack_midi_event_write(midiBuffer, jack_nframes_t(note.offset), b.baseAddress, b.count)
                    }
                    s.sentFrames[i] = start + note.offset
                }
            }
            if let input {
                if s.recordingStart < 0 { s.recordingStart = start }
                let room = s.recordingCapacity - s.recording.count
                if room > 0 { s.recording.append(contentsOf: UnsafeBufferPointer(start: input, count: min(room, n))) }
            }
            s.cycle += 1
        }
        return 0
    }

    /// Starts sending `notes` (cycle 0 = the next cycle) and/or recording up to `frames` frames.
    func arm(notes: [Note] = [], recordFrames: Int = 0) {
        state.withLock { s in
            s.notes = notes
            s.order = notes.indices.sorted { (notes[$0].cycle, notes[$0].offset, $0) < (notes[$1].cycle, notes[$1].offset, $1) }
            s.sentFrames = Array(repeating: nil, count: notes.count)
            s.recording = []
            s.recording.reserveCapacity(recordFrames)
            s.recordingCapacity = recordFrames
            s.recordingStart = -1
            s.cycle = 0
            s.armed = true
        }
    }

    /// Sleeps in the process callback of the next `cycles` cycles (an xrun).
    func stall(microseconds: Int, cycles: Int) {
        state.withLock { s in s.stallMicroseconds = microseconds; s.stallCycles = cycles }
    }

    var sentFrames: [Int?] { state.withLock { $0.sentFrames } }
    var rollingCycles: [(frame: Int, transportFrame: Int)] { state.withLock { $0.rolling } }

    /// The JACK transport: start, stop, locate (to a frame).
    func transportStart() { jack_transport_start(client) }
    func transportStop() { jack_transport_stop(client) }
    func transportLocate(_ frame: Int) { _ = jack_transport_locate(client, jack_nframes_t(frame)) }
    var allSent: Bool { state.withLock { s in s.armed && !s.sentFrames.contains { $0 == nil } } }
    var recordingFull: Bool { state.withLock { $0.recording.count >= $0.recordingCapacity } }
    /// The recording and the absolute frame of its first sample.
    var recording: (samples: [Float], start: Int) { state.withLock { ($0.recording, $0.recordingStart) } }
    var cyclesSeen: Int { state.withLock { $0.cyclesSeen } }
    var lastPeriod: Int { state.withLock { $0.lastPeriod } }

    func port(_ short: String) -> String { "\(name):\(short)" }

    func connect(_ source: String, _ destination: String) throws {
        let rc = jack_connect(client, source, destination)
        guard rc == 0 || rc == EEXIST else { throw JACKError("cannot connect \(source) to \(destination) (\(rc))") }
    }

    func connections(of port: String) -> [String] {
        guard let p = jack_port_by_name(client, port), let list = jack_port_get_all_connections(client, p) else { return [] }
        defer { jack_free(UnsafeMutableRawPointer(mutating: list)) }
        var result: [String] = []
        var i = 0
        while let s = list[i] { result.append(String(cString: s)); i += 1 }
        return result
    }
}

/// Waits until `condition` holds (polling), at most `seconds`.
@discardableResult
func waitFor(_ seconds: Double, _ condition: () -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if condition() { return true }
        usleep(10_000)
    }
    return condition()
}
