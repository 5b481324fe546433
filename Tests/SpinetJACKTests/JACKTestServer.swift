import CJACK
import Foundation
import Glibc
import Synchronization
import Testing
import SpinetJACK

/// Every JACK test, one at a time: each starts its own server, and two
/// servers at once on a 2-core machine make cycles late.
@Suite("JACK", .serialized, .enabled(if: JACKTestServer.isInstalled, JACKTestServer.skipReason))
struct JACKTests {}

/// A private jackd for one test: the dummy driver (no sound card),
/// synchronous mode (-S: on a loaded 2-core machine the default
/// asynchronous mode misses cycles), a 5 s client timeout (a client slowed
/// down by a sanitizer or a busy machine is waited for, not thrown out), no
/// real-time scheduling, a server name of its own. Started and stopped by
/// process id.
final class JACKTestServer {
    static let jackd: String? = ["/usr/bin/jackd", "/usr/local/bin/jackd"].first { access($0, X_OK) == 0 }
    static var isInstalled: Bool { jackd != nil }
    static let skipReason: Comment = "jackd is not installed (scripts/install-deps.sh installs jackd2); the JACK tests are skipped"

    /// The server's name: `spinet-test-UID-SLOT`, the first of a few slots
    /// no other test run is using. Not one name per test: jackd2 keeps at
    /// most 8 servers in its shared registry and frees a dead server's entry
    /// (a jackd that had to be killed) only when a server of the same name
    /// starts again, so names are reused to heal such leaks.
    private(set) var name: String
    private(set) var pid: pid_t = 0
    private(set) var log: String
    private static let slots = 4

    /// PipeWire's one "server" (its name is not used), for the test clients.
    static var pipeWire: JACKTestServer { JACKTestServer(existing: "default") }

    private init(existing: String) {
        name = existing
        log = "/dev/null"
    }

    init() {
        name = ""
        log = "/dev/null"
    }

    deinit {
        stop()
        if log != "/dev/null" { unlink(log) }
    }

    /// Starts jackd and waits until a client can connect.
    func start(rate: Int = 48000, period: Int = 128) throws {
        precondition(pid == 0)
        func jackd(_ name: String) -> [String] {
            [Self.jackd!, "-n", name, "--no-realtime", "-S", "-t", "5000", "-d", "dummy", "-r", "\(rate)", "-p", "\(period)"]
        }
        // jackd runs under a small shell that ends it when this test process
        // dies (a crash must not leave servers behind: jackd2 runs at most 8
        // at once), and on our SIGTERM; either way SIGTERM first, then
        // SIGKILL after 3 s (a jackd whose clients died can hang in its
        // shutdown), returning once it is gone.
        let watch = """
            end() { kill $j 2>/dev/null; n=0; while kill -0 $j 2>/dev/null && [ $n -lt 30 ]; do sleep 0.1; n=$((n+1)); done; kill -9 $j 2>/dev/null; wait $j; exit 0; }
            trap end TERM
            "$@" & j=$!
            while kill -0 \(getpid()) 2>/dev/null && kill -0 $j 2>/dev/null; do sleep 0.2 & wait $!; done
            end
            """
        // A restart keeps the name (clients come back to it); a first start
        // takes the first slot free, trying each one a few times ("server
        // already active" just after the previous server of that name ended).
        let names = name.isEmpty ? (0..<Self.slots).map { "spinet-test-\(getuid())-\($0)" } : [name]
        for candidate in names {
            for attempt in 0..<3 {
                log = NSTemporaryDirectory() + "/\(candidate)-\(getpid()).log"
                unlink(log)
                var environment = ProcessInfo.processInfo.environment
                environment["JACK_NO_AUDIO_RESERVATION"] = "1"
                environment["JACK_DEFAULT_SERVER"] = candidate
                name = candidate
                pid = try spawn(["/bin/sh", "-c", watch, "jackd"] + jackd(candidate), environment: environment, output: log)
                if waitUntilReady(seconds: 10) { return }
                let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
                stop()
                if text.contains("Too many servers already active") {
                    throw JACKError("jackd: too many JACK servers already run on this machine (jackd2 allows 8); stop leftover ones")
                }
                usleep(UInt32(200_000 * (attempt + 1)))
            }
        }
        throw JACKError("jackd did not start; see \(log)")
    }

    /// The jackd process (a child of the watching shell), 0 when none.
    var jackdPID: pid_t {
        guard pid > 0, let text = try? String(contentsOfFile: "/proc/\(pid)/task/\(pid)/children", encoding: .utf8) else { return 0 }
        return text.split(separator: " ").first.flatMap { pid_t(String($0)) } ?? 0
    }

    /// Stops (SIGSTOP) or continues (SIGCONT) jackd: a server that no longer
    /// answers, so that every libjack call to it waits.
    func freeze() { if case let j = jackdPID, j > 0 { kill(j, SIGSTOP) } }
    func thaw() { if case let j = jackdPID, j > 0 { kill(j, SIGCONT) } }

    /// Starts jackd again under its name and freezes it the moment its
    /// socket exists, before it answers anyone: a client opening then
    /// connects and waits for a reply that never comes. Returns false when
    /// the socket did not appear within 10 s.
    func startFrozen(rate: Int = 48000, period: Int = 128) throws -> Bool {
        precondition(pid == 0 && !name.isEmpty, "start it normally first")
        let socket = "/dev/shm/jack_\(name)_\(getuid())_0"
        unlink(socket)
        var environment = ProcessInfo.processInfo.environment
        environment["JACK_NO_AUDIO_RESERVATION"] = "1"
        environment["JACK_DEFAULT_SERVER"] = name
        let arguments = [Self.jackd!, "-n", name, "--no-realtime", "-S", "-t", "5000", "-d", "dummy", "-r", "\(rate)", "-p", "\(period)"]
        // stopped by this process when it dies (see `start`), even frozen
        let watch = """
            end() { kill -CONT $j 2>/dev/null; kill $j 2>/dev/null; sleep 0.5; kill -9 $j 2>/dev/null; wait $j; exit 0; }
            trap end TERM
            "$@" & j=$!
            while kill -0 \(getpid()) 2>/dev/null && kill -0 $j 2>/dev/null; do sleep 0.2 & wait $!; done
            end
            """
        pid = try spawn(["/bin/sh", "-c", watch, "jackd"] + arguments, environment: environment, output: log)
        let deadline = Date().addingTimeInterval(10)
        var st = stat()
        while Date() < deadline {
            if jackdPID > 0, stat(socket, &st) == 0, st.st_mode & S_IFMT == S_IFSOCK {
                freeze()
                return true
            }
            usleep(500)
        }
        return false
    }

    private func waitUntilReady(seconds: Double) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            var status: Int32 = 0
            if waitpid(pid, &status, WNOHANG) == pid { pid = 0; return false }   // it exited
            if let ports = try? JACKPorts.list(server: name), ports.contains(where: { $0.name == "system:playback_1" }) { return true }
            usleep(50_000)
        }
        return false
    }

    /// SIGTERM (then SIGKILL after 5 s), and waits for the process to end.
    func stop() {
        guard pid > 0 else { return }
        thaw()      // a frozen jackd would not end on SIGTERM
        let began = Date()
        kill(pid, SIGTERM)
        var status: Int32 = 0
        let deadline = Date().addingTimeInterval(5)
        while waitpid(pid, &status, WNOHANG) == 0 {
            if Date() > deadline { kill(pid, SIGKILL); waitpid(pid, &status, 0); break }
            usleep(10_000)
        }
        pid = 0
        if Date().timeIntervalSince(began) > 2 { print("JACK test server \(name) did not stop on SIGTERM within 2 s: killed") }
        // Semaphores of clients that did not close before the server went
        // (libjack leaves them in /dev/shm).
        if let names = try? FileManager.default.contentsOfDirectory(atPath: "/dev/shm") {
            for n in names where n.hasPrefix("jack_sem.") && n.contains("_\(name)_") { unlink("/dev/shm/" + n) }
        }
    }

    private func spawn(_ arguments: [String], environment: [String: String], output: String) throws -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_APPEND, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // No signal blocked in the child (the test thread blocks some).
        var none = sigset_t()
        sigemptyset(&none)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK))
        let argv = arguments.map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for p in argv + envp { free(p) } }
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, arguments[0], &actions, &attributes, argv, envp)
        guard rc == 0 else { throw JACKError("cannot start \(arguments[0]): \(String(cString: strerror(rc)))") }
        return pid
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
    private let state = Mutex(State())

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
