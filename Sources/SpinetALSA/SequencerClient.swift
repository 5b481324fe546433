import CALSA
import Glibc
import Synchronization
import SpinetEngine
import SpinetHost
import SpinetMIDI
import SpinetSupport

/// Spinet's MIDI input: an ALSA sequencer client with one input port per
/// 16 channels, and the thread that reads it.
///
/// The client keeps its name ("Spinet" unless told otherwise) so a DAW can
/// save its connections. Each input port is writable and subscribable, of
/// type MIDI generic + synthesizer + application. A hidden port (no export)
/// listens to System:Announce for keyboards plugged in later.
///
/// The sequencer thread sleeps in `poll` on the sequencer and a wake-up
/// descriptor, then drains every waiting event. Each event is stamped by
/// the kernel with the real time of Spinet's queue when it reached the port
/// (the clock at read when there is no stamp), turned into engine events at
/// `arrival + latency` (`LiveTiming`) and pushed to the engine's input
/// queue, which never blocks. It also keeps track of the notes each source
/// holds, to release them when the source goes away.
///
/// Threads: `init`, `sources`, `resolve`, `connect` and `start` on the
/// control thread; then the sequencer thread owns the ALSA handle until `stop`.
public final class SequencerClient: @unchecked Sendable {
    /// Which sources to connect from.
    public enum Connect: Sendable, Equatable {
        /// Every MIDI source but Midi Through and Spinet itself, now and when plugged in later.
        case auto
        case none
        /// These sources (resolved by `resolve`); reconnected when they come back.
        case sources([MIDIPort])
    }

    public struct Statistics: Sendable {
        /// Events that reached the input ports (MIDI; not the System
        /// announcements about ports and connections).
        public var received: Int
        /// Times the kernel's input pool overflowed (-ENOSPC): events were lost there.
        public var overflows: Int
        /// Events the kernel could not deliver to Spinet (its own count).
        public var kernelLost: Int
        /// SysEx messages longer than the bound, dropped.
        public var sysExTooLong: Int
        /// SysEx messages cut off before their F7 (by a status byte or a new
        /// F0: a sender that never finished one), dropped.
        public var sysExUnfinished: Int
        /// Notes and pedals released because their source went away.
        public var released: Int
        /// Sources connected now.
        public var connected: Int
        /// Events whose arrival time came from the kernel's queue stamp (the
        /// others were timed when read).
        public var kernelStamped: Int
    }

    public let name: String
    /// The sources `start(queue:timeline:timing:priority:tempo:)` (the
    /// `MIDIInput` entry) connects from. Set before starting.
    public var connectMode: Connect = .auto
    public let portCount: Int
    public let clientID: UInt8
    /// The largest SysEx message passed on, F0 and F7 included.
    public let maxSysExBytes: Int
    private var seq: OpaquePointer?
    private let controlPort: Int32
    private var queueID: Int32 = -1
    private var wakeFD: Int32 = -1      // read end of the wake-up pipe
    private var wakeWriteFD: Int32 = -1
    private var thread: NativeThread?
    private let stopRequested = Atomic<Bool>(false)
    /// A new engine's queue and timing to push to (`follow`), for the
    /// sequencer thread to take up; `followRequested` says one is waiting.
    private let nextTarget = Locked<(queue: EventQueue, timing: LiveTiming)?>(nil)
    private let followRequested = Atomic<Bool>(false)
    private let notices = Locked<[String]>([])

    private let receivedCount = Atomic<Int>(0)
    private let overflowCount = Atomic<Int>(0)
    private let kernelLostCount = Atomic<Int>(0)
    private let tooLongCount = Atomic<Int>(0)
    private let unfinishedCount = Atomic<Int>(0)
    private let releasedCount = Atomic<Int>(0)
    private let connectedCount = Atomic<Int>(0)
    private let stampedCount = Atomic<Int>(0)

    // sequencer-thread state
    private var mode: Connect = .none
    private var connected: Set<SequencerAddress> = []
    private var held: HeldNotes
    private var sysEx: SysExAssembler
    private var sysExAbandonedSeen = 0
    private var calibration = QueueClockCalibration()
    private var pendingOffs: [(due: Int64, message: MIDIMessage, source: SequencerAddress)] = []
    private var clock = MIDIClockTempo()
    /// The source whose clock Spinet follows, and when its last tick came.
    private var clockSource: SequencerAddress?
    private var lastClockTick: Int64 = 0
    private var onTempo: (@Sendable (Double) -> Void)?

    /// Opens the sequencer and creates the client and its ports.
    /// - Parameters:
    ///   - inputPool: events the kernel may hold for Spinet (the kernel's
    ///     limit is 2000; the default is 200).
    public init(name: String = "Spinet", ports: Int = 1, inputPool: Int = 2000, maxSysExBytes: Int = 65536) throws(ALSAError) {
        precondition(ports >= 1 && ports <= 16)
        ALSA.quietErrors()
        self.name = name
        portCount = ports
        self.maxSysExBytes = maxSysExBytes
        if access("/dev/snd/seq", F_OK) != 0 {
            throw ALSAError("no ALSA sequencer (/dev/snd/seq is missing): the kernel module snd-seq is not loaded; load it with 'sudo modprobe snd-seq'")
        }
        var handle: OpaquePointer?
        let rc = snd_seq_open(&handle, "default", Int32(SND_SEQ_OPEN_DUPLEX), Int32(SND_SEQ_NONBLOCK))
        guard rc >= 0, let seq = handle else {
            if rc == -EACCES || rc == -EPERM {
                throw ALSAError("cannot open the ALSA sequencer /dev/snd/seq: \(ALSA.text(rc)); add your user to the 'audio' group and log in again")
            }
            throw ALSAError("cannot open the ALSA sequencer /dev/snd/seq: \(ALSA.text(rc)); is the kernel module snd-seq loaded? ('sudo modprobe snd-seq')")
        }
        func fail(_ what: String, _ code: Int32) -> ALSAError {
            snd_seq_close(seq)
            return ALSAError("ALSA sequencer: \(what): \(ALSA.text(code))")
        }
        var err = snd_seq_set_client_name(seq, name)
        if err < 0 { throw fail("cannot name the client '\(name)'", err) }
        clientID = UInt8(snd_seq_client_id(seq))

        // Room for bursts: the kernel's pool and alsa-lib's read buffer.
        if snd_seq_set_client_pool_input(seq, inputPool) < 0 {
            _ = snd_seq_set_client_pool_input(seq, 1000)
        }
        _ = snd_seq_set_input_buffer_size(seq, max(inputPool, 500) * MemoryLayout<snd_seq_event_t>.size)

        // A queue whose real time stamps every event as it reaches a port.
        queueID = snd_seq_alloc_named_queue(seq, "\(name) timestamps")

        // The input ports are made by `start`, once the synth can sound:
        // nothing can be sent to Spinet before then.
        var pinfo: OpaquePointer?
        snd_seq_port_info_malloc(&pinfo)
        defer { snd_seq_port_info_free(pinfo) }
        // The announcement listener: not for others to see or connect.
        controlPort = Int32(ports)
        snd_seq_port_info_set_port(pinfo, controlPort)
        snd_seq_port_info_set_port_specified(pinfo, 1)
        snd_seq_port_info_set_name(pinfo, "Announcements")
        snd_seq_port_info_set_capability(pinfo, UInt32(SND_SEQ_PORT_CAP_WRITE | SND_SEQ_PORT_CAP_NO_EXPORT))
        snd_seq_port_info_set_type(pinfo, UInt32(SND_SEQ_PORT_TYPE_APPLICATION))
        snd_seq_port_info_set_timestamping(pinfo, 0)
        err = snd_seq_create_port(seq, pinfo)
        if err < 0 { throw fail("cannot create its announcement port", err) }

        self.seq = seq
        held = HeldNotes(channels: ports * 16)
        sysEx = SysExAssembler(maxBytes: maxSysExBytes)
        pendingOffs.reserveCapacity(256)
    }

    deinit {
        stop()
        sysEx.deallocate()
    }

    /// The addresses of the input ports, "128:0" etc.
    public var inputAddresses: [SequencerAddress] {
        (0..<portCount).map { SequencerAddress(client: clientID, port: UInt8($0)) }
    }

    // MARK: control thread, before start

    /// Every port of every client, as the sequencer lists them now.
    public func ports() -> [MIDIPort] {
        guard let seq else { return [] }
        return SequencerPorts.all(seq)
    }

    /// Resolves `--connect` targets; throws naming the first unknown one.
    public func resolve(_ targets: [String]) throws(ALSAError) -> [MIDIPort] {
        let all = ports()
        var out: [MIDIPort] = []
        for t in targets {
            guard let p = SequencerPorts.resolve(t, among: all) else {
                let exists = all.contains { "\($0.address)" == t || $0.name == t }
                throw ALSAError(exists
                    ? "--connect \(t): that port is not a MIDI source (nothing can be read from it); list sources with 'spinet ports'"
                    : "--connect \(t): no such MIDI source; list sources with 'spinet ports'")
            }
            if p.address.client == clientID {
                throw ALSAError("--connect \(t): that is Spinet itself")
            }
            out.append(p)
        }
        return out
    }

    /// Starts listening: starts the time-stamp queue, creates the input
    /// ports, connects the sources `connect` names, subscribes to
    /// System:Announce, and starts the sequencer thread, which pushes to
    /// `queue` (no other thread may push to it). Returns the sources
    /// connected. `priority` > 0 asks for SCHED_FIFO. `tempo` gets the
    /// tempo of the MIDI clock a source sends (see `MIDIClockTempo`), on
    /// the sequencer thread, whenever it changes.
    ///
    /// Call it once the audio runs and `timeline` has its first anchor. The
    /// ports appear only here, so whatever a DAW sends as soon as it sees
    /// them is stamped by a running queue and mapped to a frame still to be
    /// rendered, and sounds. (Events that reached a port earlier would all
    /// carry the stopped queue's time 0 and, with no anchor, frame 0: a
    /// note and its note-off at the same frame, never heard.)
    @discardableResult
    public func start(connect: Connect, queue: EventQueue, timeline: AudioTimeline, timing: LiveTiming,
                      priority: Int32, tempo: (@Sendable (Double) -> Void)? = nil) throws(ALSAError) -> [MIDIPort] {
        guard let seq, thread == nil else { return [] }
        mode = connect
        onTempo = tempo
        let err = snd_seq_connect_from(seq, controlPort, Int32(SND_SEQ_CLIENT_SYSTEM), Int32(SND_SEQ_PORT_SYSTEM_ANNOUNCE))
        if err < 0 {
            post("cannot follow System:Announce (\(ALSA.text(err))): keyboards plugged in later will not be connected")
        }
        if queueID >= 0 {
            _ = snd_seq_control_queue(seq, queueID, Int32(SND_SEQ_EVENT_START.rawValue), 0, nil)
            _ = snd_seq_drain_output(seq)
            calibrate(seq)
        }
        try createInputPorts(seq)
        var made: [MIDIPort] = []
        switch connect {
        case .none:
            break
        case .auto:
            for p in SequencerPorts.all(seq) where p.autoConnectExclusion(selfClient: clientID) == nil {
                if connectFrom(seq, p.address) { made.append(p) }
            }
        case .sources(let list):
            for p in list {
                let e = snd_seq_connect_from(seq, 0, Int32(p.address.client), Int32(p.address.port))
                if e < 0 && e != -EBUSY {
                    throw ALSAError("--connect \(p.address) (\(p.name)): \(ALSA.text(e))")
                }
                connected.insert(p.address)
                made.append(p)
            }
        }
        connectedCount.store(connected.count, ordering: .relaxed)

        var pair: [Int32] = [-1, -1]
        if pipe(&pair) == 0 {
            wakeFD = pair[0]
            wakeWriteFD = pair[1]
            _ = fcntl(wakeFD, F_SETFL, O_NONBLOCK)
        }
        thread = NativeThread(name: "spinet-midi", priority: priority) { [self] in
            self.run(seq: seq, queue: queue, timeline: timeline, timing: timing)
        }
        return made
    }

    /// One input port per 16 channels, each stamping what reaches it with
    /// the time-stamp queue's real time.
    private func createInputPorts(_ seq: OpaquePointer) throws(ALSAError) {
        var pinfo: OpaquePointer?
        snd_seq_port_info_malloc(&pinfo)
        defer { snd_seq_port_info_free(pinfo) }
        for p in 0..<portCount {
            snd_seq_port_info_set_port(pinfo, Int32(p))
            snd_seq_port_info_set_port_specified(pinfo, 1)
            let portName = portCount == 1 ? "Input" : "Input \(p + 1) (channels \(p * 16 + 1)-\(p * 16 + 16))"
            snd_seq_port_info_set_name(pinfo, portName)
            snd_seq_port_info_set_capability(pinfo, UInt32(SND_SEQ_PORT_CAP_WRITE | SND_SEQ_PORT_CAP_SUBS_WRITE))
            snd_seq_port_info_set_type(pinfo, UInt32(SND_SEQ_PORT_TYPE_MIDI_GENERIC | SND_SEQ_PORT_TYPE_SYNTHESIZER | SND_SEQ_PORT_TYPE_APPLICATION))
            snd_seq_port_info_set_midi_channels(pinfo, 16)
            if queueID >= 0 {
                snd_seq_port_info_set_timestamping(pinfo, 1)
                snd_seq_port_info_set_timestamp_real(pinfo, 1)
                snd_seq_port_info_set_timestamp_queue(pinfo, queueID)
            }
            let err = snd_seq_create_port(seq, pinfo)
            if err < 0 { throw ALSAError("ALSA sequencer: cannot create input port \(p): \(ALSA.text(err))") }
        }
    }

    /// From now on, push to `queue` with `timing` (the engine the audio
    /// renders changed: a new sample rate), counting frames afresh from the
    /// timeline's next anchors. The sequencer thread takes it up before the
    /// next events it reads; those it read before go to the old queue (whose
    /// engine no longer plays). Connections, held notes and the MIDI clock
    /// stay. Control thread, after `start`.
    public func follow(queue: EventQueue, timing: LiveTiming) {
        nextTarget.withLock { $0 = (queue, timing) }
        followRequested.store(true, ordering: .releasing)
        var one: UInt8 = 1
        if wakeWriteFD >= 0 { _ = write(wakeWriteFD, &one, 1) }
    }

    /// Scheduling the sequencer thread got.
    public var scheduling: ThreadScheduling? { thread?.scheduling }

    /// Stops the thread and closes the client (the kernel removes its
    /// connections). Idempotent.
    public func stop() {
        if let t = thread {
            stopRequested.store(true, ordering: .releasing)
            var one: UInt8 = 1
            _ = write(wakeWriteFD, &one, 1)
            t.join()
            thread = nil
        }
        if wakeFD >= 0 { close(wakeFD); wakeFD = -1 }
        if wakeWriteFD >= 0 { close(wakeWriteFD); wakeWriteFD = -1 }
        if let s = seq { snd_seq_close(s); seq = nil }
    }

    // MARK: reporting (any thread)

    public var statistics: Statistics {
        Statistics(received: receivedCount.load(ordering: .relaxed),
                   overflows: overflowCount.load(ordering: .relaxed),
                   kernelLost: kernelLostCount.load(ordering: .relaxed),
                   sysExTooLong: tooLongCount.load(ordering: .relaxed),
                   sysExUnfinished: unfinishedCount.load(ordering: .relaxed),
                   released: releasedCount.load(ordering: .relaxed),
                   connected: connectedCount.load(ordering: .relaxed),
                   kernelStamped: stampedCount.load(ordering: .relaxed))
    }

    /// Lines for the user (connections made and lost, overflows), oldest first.
    public func takeNotices() -> [String] {
        notices.withLock { n in
            let out = n
            n.removeAll()
            return out
        }
    }

    private func post(_ line: String) {
        notices.withLock { $0.append(line) }
    }

    // MARK: the sequencer thread

    private func run(seq: OpaquePointer, queue firstQueue: EventQueue, timeline: AudioTimeline, timing firstTiming: LiveTiming) {
        var queue = firstQueue
        var timing = firstTiming
        let n = Int(snd_seq_poll_descriptors_count(seq, Int16(POLLIN)))
        var fds = [pollfd](repeating: pollfd(), count: n + 1)
        fds.withUnsafeMutableBufferPointer { b in
            _ = snd_seq_poll_descriptors(seq, b.baseAddress, UInt32(n), Int16(POLLIN))
        }
        fds[n] = pollfd(fd: wakeFD, events: Int16(POLLIN), revents: 0)
        var lastFrame: Int64 = 0
        var lastHousekeeping = monotonicNanoseconds()

        while !stopRequested.load(ordering: .acquiring) {
            // Sleep until input, a stop request, a timed note-off or housekeeping.
            var timeout: Int32 = 1000
            let now = monotonicNanoseconds()
            for p in pendingOffs {
                timeout = min(timeout, Int32(max(0, min(1000, (p.due - now) / 1_000_000 + 1))))
            }
            let r = fds.withUnsafeMutableBufferPointer { poll($0.baseAddress, nfds_t($0.count), timeout) }
            if r < 0 && errno != EINTR { break }
            if stopRequested.load(ordering: .acquiring) { break }
            if fds[n].revents & Int16(POLLIN) != 0 {
                var drained = [UInt8](repeating: 0, count: 16)
                while drained.withUnsafeMutableBytes({ read(wakeFD, $0.baseAddress, $0.count) }) > 0 {}
            }
            if followRequested.exchange(false, ordering: .acquiring), let next = nextTarget.withLock({ t in
                defer { t = nil }
                return t
            }) {
                // A new engine: its frames start again from its own anchors.
                queue = next.queue
                timing = next.timing
                lastFrame = 0
            }

            // Drain every waiting event.
            while true {
                var evp: UnsafeMutablePointer<snd_seq_event_t>?
                let rc = snd_seq_event_input(seq, &evp)
                if rc == -EAGAIN { break }
                if rc == -ENOSPC {
                    let total = overflowCount.add(1, ordering: .relaxed).newValue
                    if total == 1 || total.isMultiple(of: 100) {
                        post("MIDI input overflowed: the kernel dropped events (\(total) overflow\(total == 1 ? "" : "s") so far)")
                    }
                    continue
                }
                if rc < 0 {
                    if rc != -EINTR { post("reading the sequencer failed: \(ALSA.text(rc))") }
                    break
                }
                guard let ev = evp else { continue }
                handle(ev, seq: seq, queue: queue, timeline: timeline, timing: timing, lastFrame: &lastFrame)
            }

            // Timed note-offs (SND_SEQ_EVENT_NOTE) that are due.
            if !pendingOffs.isEmpty {
                let t = monotonicNanoseconds()
                var i = 0
                while i < pendingOffs.count {
                    if pendingOffs[i].due <= t {
                        let p = pendingOffs.remove(at: i)
                        held.observe(p.message, from: p.source)
                        push(p.message, at: frame(for: p.due, timeline, timing, &lastFrame), queue)
                    } else {
                        i += 1
                    }
                }
            }

            let t = monotonicNanoseconds()
            if t - lastHousekeeping > 1_000_000_000 {
                lastHousekeeping = t
                calibrate(seq)
                var info: OpaquePointer?
                snd_seq_client_info_malloc(&info)
                if snd_seq_get_client_info(seq, info) >= 0 {
                    kernelLostCount.store(Int(snd_seq_client_info_get_event_lost(info)), ordering: .relaxed)
                }
                snd_seq_client_info_free(info)
            }
        }
    }

    /// Sequencer thread. One event.
    private func handle(_ evp: UnsafeMutablePointer<snd_seq_event_t>, seq: OpaquePointer, queue: EventQueue,
                        timeline: AudioTimeline, timing: LiveTiming, lastFrame: inout Int64) {
        let ev = evp.pointee
        let source = SequencerAddress(ev.source)
        let toInput = ev.dest.client == clientID && Int(ev.dest.port) < portCount
        let port = toInput ? ev.dest.port : 0
        // MIDI, not the System announcements the hidden port listens to
        // (a connection made, a port that appeared or changed).
        if toInput { receivedCount.add(1, ordering: .relaxed) }
        switch SequencerDecoder.decode(ev, port: port) {
        case .messages(let batch):
            guard toInput else { return }
            let f = frame(for: arrival(evp), timeline, timing, &lastFrame)
            if batch[0] != .systemReset {
                sysEx.interrupt(source)
                reportUnfinishedSysEx()
            }
            for i in 0..<batch.count {
                held.observe(batch[i], from: source)
                push(batch[i], at: f, queue)
            }
        case .timedNote(let on, let off, let ms):
            guard toInput else { return }
            let t = arrival(evp)
            held.observe(on, from: source)
            push(on, at: frame(for: t, timeline, timing, &lastFrame), queue)
            if pendingOffs.count < 256 {
                pendingOffs.append((due: t + Int64(ms) * 1_000_000, message: off, source: source))
            } else {
                held.observe(off, from: source)
                push(off, at: frame(for: t, timeline, timing, &lastFrame), queue)
            }
        case .sysEx:
            guard toInput, let bytes = spinet_seq_ev_ext_ptr(evp) else { return }
            let piece = UnsafeBufferPointer(start: bytes, count: Int(spinet_seq_ev_ext_len(evp)))
            let f = frame(for: arrival(evp), timeline, timing, &lastFrame)
            let outcome = sysEx.add(piece, from: source) { message in
                queue.pushSysEx(frame: f, message)
            }
            reportUnfinishedSysEx()
            if case .tooLong(let total) = outcome {
                let n = tooLongCount.add(1, ordering: .relaxed).newValue
                if n <= 3 { post("dropped a SysEx message of \(total) bytes from \(source) (the limit is \(maxSysExBytes))") }
            }
        case .subscribed(let sender, let dest):
            guard dest.client == clientID, Int(dest.port) < portCount else { return }
            if !connected.contains(sender) {
                connected.insert(sender)
                connectedCount.store(connected.count, ordering: .relaxed)
                post("MIDI input from \(describe(seq, sender))")
            }
        case .unsubscribed(let sender, let dest):
            guard dest.client == clientID, Int(dest.port) < portCount else { return }
            let p = Int(dest.port)
            release(sender, channels: (p * 16)..<(p * 16 + 16), reason: "disconnected", timeline, timing, queue, &lastFrame)
            if connected.remove(sender) != nil {
                connectedCount.store(connected.count, ordering: .relaxed)
            }
        case .portStarted(let a), .portChanged(let a):
            considerNewPort(seq, a)
        case .portExited(let a):
            release(a, channels: nil, reason: "went away", timeline, timing, queue, &lastFrame)
            sysEx.forget(a)
            if connected.remove(a) != nil { connectedCount.store(connected.count, ordering: .relaxed) }
        case .clientExited(let c):
            let gone = connected.filter { $0.client == c }
            for a in gone { connected.remove(a) }
            connectedCount.store(connected.count, ordering: .relaxed)
            var n = 0
            held.release(client: c) { m in
                n += 1
                push(m, at: frame(for: monotonicNanoseconds(), timeline, timing, &lastFrame), queue)
            }
            if n > 0 {
                releasedCount.add(n, ordering: .relaxed)
                post("client \(c) went away: released \(n) held note\(n == 1 ? "" : "s")/pedal\(n == 1 ? "" : "s")")
            }
            sysEx.forget(client: c)
        case .clock:
            guard toInput else { return }
            let t = arrival(evp)
            // one clock at a time: another source's ticks count once the
            // followed one has been silent for a while
            if let s = clockSource, s != source, t - lastClockTick <= MIDIClockTempo.gap { return }
            if clockSource != source {
                clockSource = source
                clock.restart()
            }
            lastClockTick = t
            let first = clock.tempo == nil
            if let bpm = clock.tick(at: t) {
                onTempo?(bpm)
                if first { post("following the MIDI clock of \(describe(seq, source)): " + formatted("%.1f bpm", bpm)) }
            }
        case .transport:
            guard toInput, clockSource == nil || clockSource == source else { return }
            clock.restart()
        case .clientStarted, .ignored:
            return
        }
    }

    /// Counts SysEx messages the assembler abandoned unfinished; the first
    /// few are reported (a sender stuck in a SysEx would otherwise leave no
    /// trace but the silence of its settings).
    private func reportUnfinishedSysEx() {
        let k = sysEx.abandoned - sysExAbandonedSeen
        guard k > 0, let last = sysEx.lastAbandoned else { return }
        sysExAbandonedSeen = sysEx.abandoned
        let n = unfinishedCount.add(k, ordering: .relaxed).newValue
        if n - k < 3 {
            post("dropped an unfinished SysEx message of \(last.totalBytes) bytes from \(last.source) (no F7 before the next status byte)")
        }
    }

    private func release(_ source: SequencerAddress, channels: Range<Int>?, reason: String,
                         _ timeline: AudioTimeline, _ timing: LiveTiming, _ queue: EventQueue, _ lastFrame: inout Int64) {
        let f = frame(for: monotonicNanoseconds(), timeline, timing, &lastFrame)
        let n = held.release(source, channels: channels) { m in push(m, at: f, queue) }
        if n > 0 {
            releasedCount.add(n, ordering: .relaxed)
        }
        // Other programs' ports come and go all the time: only report Spinet's own sources.
        guard n > 0 || connected.contains(source) else { return }
        post("MIDI input from \(source) \(reason)\(n > 0 ? "; released \(n) held note\(n == 1 ? "" : "s")/pedal\(n == 1 ? "" : "s")" : "")")
    }

    /// A port appeared or changed: connect it if the mode wants it.
    private func considerNewPort(_ seq: OpaquePointer, _ a: SequencerAddress) {
        guard !connected.contains(a), a.client != clientID, let p = SequencerPorts.port(seq, a) else { return }
        switch mode {
        case .none:
            return
        case .auto:
            guard p.autoConnectExclusion(selfClient: clientID) == nil else { return }
        case .sources(let list):
            // A named source that comes back (a keyboard switched off and on).
            guard p.isSource, list.contains(where: { $0.clientName == p.clientName && $0.portName == p.portName }) else { return }
        }
        if connectFrom(seq, a) {
            post("MIDI input from \(a) (\(p.name)) (plugged in)")
        }
    }

    private func connectFrom(_ seq: OpaquePointer, _ a: SequencerAddress) -> Bool {
        let e = snd_seq_connect_from(seq, 0, Int32(a.client), Int32(a.port))
        if e < 0 && e != -EBUSY {
            post("cannot connect from \(a): \(ALSA.text(e))")
            return false
        }
        connected.insert(a)
        connectedCount.store(connected.count, ordering: .relaxed)
        return true
    }

    private func describe(_ seq: OpaquePointer, _ a: SequencerAddress) -> String {
        SequencerPorts.port(seq, a).map { "\(a) (\($0.name))" } ?? "\(a)"
    }

    // MARK: timing (sequencer thread)

    /// When the event reached Spinet's port, in CLOCK_MONOTONIC ns.
    private func arrival(_ ev: UnsafeMutablePointer<snd_seq_event_t>) -> Int64 {
        let now = monotonicNanoseconds()
        if queueID >= 0, spinet_seq_ev_is_real_time(ev) != 0, Int32(ev.pointee.queue) == queueID {
            let t = ev.pointee.time.time
            let q = Int64(t.tv_sec) * 1_000_000_000 + Int64(t.tv_nsec)
            // Trust the stamp unless it is in the future or implausibly old.
            if let m = calibration.monotonic(forQueue: q), m <= now + 1_000_000, m > now - 2_000_000_000 {
                stampedCount.add(1, ordering: .relaxed)
                return m
            }
        }
        return now
    }

    @inline(__always)
    private func frame(for arrival: Int64, _ timeline: AudioTimeline, _ timing: LiveTiming, _ lastFrame: inout Int64) -> Int64 {
        guard let anchor = timeline.read() else { return 0 }
        // Never earlier than an event already queued: the queue is FIFO.
        let f = max(timing.frame(forArrival: arrival, anchor: anchor), lastFrame)
        lastFrame = f
        return f
    }

    @inline(__always)
    private func push(_ m: MIDIMessage, at frame: Int64, _ queue: EventQueue) {
        queue.push(EngineEvent(frame: frame, m))
    }

    /// Measures the queue clock against CLOCK_MONOTONIC (a few tries; the
    /// narrowest bracket wins).
    private func calibrate(_ seq: OpaquePointer) {
        guard queueID >= 0 else { return }
        var status: OpaquePointer?
        snd_seq_queue_status_malloc(&status)
        defer { snd_seq_queue_status_free(status) }
        calibration.beginRound()
        for _ in 0..<5 {
            let before = monotonicNanoseconds()
            guard snd_seq_get_queue_status(seq, queueID, status) >= 0, let rt = snd_seq_queue_status_get_real_time(status) else { return }
            let after = monotonicNanoseconds()
            calibration.add(queue: Int64(rt.pointee.tv_sec) * 1_000_000_000 + Int64(rt.pointee.tv_nsec), before: before, after: after)
        }
    }
}
