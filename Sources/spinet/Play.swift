import ArgumentParser
import FoundationEssentials
import Glibc
import SpinetSupport
import SpinetALSA
import SpinetEngine
import SpinetFile
import SpinetHost
import SpinetRig
import SpinetSettings
import SpinetMIDI
import SpinetSoundFont
import SpinetSynth
import Synchronization

struct Play: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Play live: a synthesizer that keyboards and DAWs reach over the ALSA sequencer.",
        discussion: """
        Spinet appears as the sequencer client "Spinet" (see `aconnect -l`) with one \
        input port per 16 channels. With --connect auto it connects every MIDI source \
        but Midi Through, also keyboards plugged in later. Each event is played at its \
        arrival time plus a fixed latency (periods x period + --safety, plus the \
        limiter's 1.5 ms look-ahead), printed at start. The input ports appear once the \
        audio runs. Ctrl-C fades out and exits 0; SIGTERM, SIGQUIT, SIGUSR1, SIGUSR2 \
        and SIGALRM fade out and exit with 128 + the signal number. \
        To switch SoundFont while playing, type its path (and Enter) on standard input, \
        or send SIGHUP to reload the current one: notes already sounding ring on. \
        A source disconnected by hand (aconnect -d or -x) has its held notes released \
        and stays disconnected until connected again. If the audio device disappears, \
        Spinet says so and exits with status 1.
        """
    )

    @Option(name: .customLong("soundfont"), help: ArgumentHelp("A SoundFont (.sf2/.sf3); repeat to stack fonts, later ones over earlier ones.", valueName: "path"))
    var soundFonts: [String] = []

    @Option(help: "The sequencer client name (keep it stable: DAWs save connections by name).")
    var name = "Spinet"

    @Option(help: "Input ports, 16 MIDI channels each (1-16).")
    var ports = 1

    @Option(help: ArgumentHelp("MIDI sources to connect from: auto (all but Midi Through, also later ones), none, or CLIENT:PORT,... by number or name (see `spinet ports`).", valueName: "sources"))
    var connect = "auto"

    @Option(help: "ALSA playback device: default, hw:CARD,DEV for the lowest latency, plughw:..., pipewire (see `spinet ports`).")
    var device = "default"

    @Option(help: "Sample rate in Hz (the device may choose a close one).")
    var rate = 48000

    @Option(help: ArgumentHelp("Frames per period (16-8192).", valueName: "frames"))
    var period = 128

    @Option(help: ArgumentHelp("Periods in the device buffer (2-16; default 2 for hw: devices, 3 for others).", valueName: "n"))
    var periods: Int?

    @Option(help: ArgumentHelp("Latency added for the MIDI thread's reaction time, in milliseconds.", valueName: "ms"))
    var safety = 1.0

    @Option(help: ArgumentHelp("Also write what is played to a file (.wav, .flac, .ogg, .aiff, .mp3).", valueName: "file"))
    var record: String?

    @Option(name: .customLong("record-bits"), help: "Sample format of --record: 16 (with TPDF dither), 24 or 32f.")
    var recordBits = "16"

    @Flag(help: "Overwrite an existing --record file.")
    var force = false

    @Option(parsing: .unconditional, help: "Master gain in dB, before the limiter (e.g. --gain -6).")
    var gain: Double = 0

    @Option(name: .customLong("channel"), help: ArgumentHelp("Which instrument a channel plays: N=synth[:PRESET] or N=soundfont (N 1-16, PORT.N, or all); repeatable. Bank Select 126 + Program Change from the keyboard or DAW also picks Spinet's synth.", valueName: "assignment"))
    var channelAssignments: [String] = []

    @Option(help: ArgumentHelp("A JSON file of synth presets (see Sources/SpinetSynth/PRESETS.md).", valueName: "path"))
    var presets: String?

    @OptionGroup var effectOptions: EffectsOptions

    @Option(help: ArgumentHelp("Channels to silence: numbers 1-16 (or PORT.N) separated by commas; repeatable.", valueName: "channels"))
    var mute: [String] = []

    @Option(help: ArgumentHelp("Channels to hear alone (every other one is muted): numbers 1-16 (or PORT.N) separated by commas; repeatable.", valueName: "channels"))
    var solo: [String] = []

    @Option(help: ArgumentHelp("A JSON config file for soundfonts, channels and presets (default: $XDG_CONFIG_HOME/spinet/config.json, if present).", valueName: "path"))
    var config: String?

    @Option(help: "The most SoundFont voices sounding at once.")
    var polyphony = 256

    @Option(help: ArgumentHelp("Tempo of the tempo-synced delay (20-400 bpm) until a MIDI clock arrives: a DAW or drum machine sending clock sets it from then on.", valueName: "bpm"))
    var tempo: Double = 120

    @Option(help: "Real-time priority (SCHED_FIFO) of the audio thread, 1-99; 0 for normal scheduling.")
    var priority = 70

    @Flag(name: .shortAndLong, help: "No status line and no messages but errors.")
    var quiet = false

    /// Measuring aid: holds this many organ notes from the start (no MIDI needed).
    @Option(name: .customLong("bench-notes"), help: .hidden)
    var benchNotes = 0

    /// Measuring aid: stop after this many seconds.
    @Option(name: .customLong("duration"), help: .hidden)
    var duration: Double?

    func run() throws {
        try reportingFailures(play)
    }

    private func say(_ line: String) {
        if !quiet { printError(line) }
    }

    private func play() throws {
        // Before any device or file is opened. SIGHUP reloads the SoundFont
        // (see SoundFontRequests); every other stopping signal fades out and
        // ends play, Ctrl-C with status 0, the others with 128 + the signal.
        installInterruptHandlers(hangUp: false)
        signal(SIGHUP, { _ in soundFontReloadRequested.store(true, ordering: .relaxed) })
        var hangUp = sigset_t()
        sigemptyset(&hangUp)
        sigaddset(&hangUp, SIGHUP)
        pthread_sigmask(SIG_UNBLOCK, &hangUp, nil)   // even if the launcher blocked it
        let settings: SpinetConfig
        do { settings = try SpinetConfig.load(explicitPath: config) } catch { throw Failure(error.description) }
        let soundFonts = self.soundFonts.isEmpty ? settings.soundFonts : self.soundFonts
        let channelAssignments = settings.channels + self.channelAssignments
        let presets = self.presets ?? settings.presets
        // 1. Options, checked before any device is touched.
        guard (8000...192000).contains(rate) else { throw Failure("--rate \(rate) is out of range; use 8000 to 192000 Hz") }
        guard (16...8192).contains(period) else { throw Failure("--period \(period) is out of range; use 16 to 8192 frames") }
        if let p = periods, !(2...16).contains(p) { throw Failure("--periods \(p) is out of range; use 2 to 16") }
        guard (1...16).contains(ports) else { throw Failure("--ports \(ports) is out of range; use 1 to 16") }
        guard (0...99).contains(priority) else { throw Failure("--priority \(priority) is out of range; use 1 to 99, or 0 for none") }
        guard (0...1000).contains(safety) else { throw Failure("--safety \(safety) is out of range; use 0 to 1000 ms") }
        guard (1...65535).contains(polyphony) else { throw Failure("--polyphony \(polyphony) is out of range; use 1 to 65535") }
        guard MIDIClockTempo.range.contains(tempo) else {
            throw Failure("--tempo \(tempo) is out of range; use \(Int(MIDIClockTempo.range.lowerBound)) to \(Int(MIDIClockTempo.range.upperBound)) bpm")
        }
        try Render.checkGain(gain)
        if self.soundFonts.isEmpty { try Render.checkConfigFonts(settings) }
        let fx = try effectOptions.resolve(config: settings)
        var mutedChannels: [Int] = [], soloChannels: [Int] = []
        do {
            for text in settings.mute { mutedChannels += try ChannelAssignment.channelList(text, ports: ports, option: settings.label("mute")) }
            for text in mute { mutedChannels += try ChannelAssignment.channelList(text, ports: ports, option: "--mute") }
            for text in settings.solo { soloChannels += try ChannelAssignment.channelList(text, ports: ports, option: settings.label("solo")) }
            for text in solo { soloChannels += try ChannelAssignment.channelList(text, ports: ports, option: "--solo") }
        } catch {
            throw Failure(error.description)
        }
        let connectTargets: [String]?
        switch connect.lowercased() {
        case "auto": connectTargets = nil
        case "none": connectTargets = []
        default:
            connectTargets = connect.split(separator: ",").map { String($0).trimmingSpaces }.filter { !$0.isEmpty }
            if connectTargets!.isEmpty { throw Failure("--connect '\(connect)' names no source; use auto, none or CLIENT:PORT,...") }
        }
        var recordFormat: (AudioFileFormat, SampleFormat)?
        if let record {
            guard record != "-" else { throw Failure("--record needs a file name (standard output is not supported)") }
            guard let bits = SampleFormat(rawValue: recordBits) else { throw Failure("--record-bits \(recordBits) is not supported; use 16, 24 or 32f") }
            guard let container = AudioFileFormat(pathExtension: URL(fileURLWithPath: record).pathExtension) else {
                throw Failure("cannot tell the audio format of \(record) from its extension; use .wav, .flac, .ogg, .aiff or .mp3")
            }
            recordFormat = (container, bits)
        }

        // 2. MIDI in: the sequencer client and the sources to connect.
        var sequencer: SequencerClient?
        var connectMode = SequencerClient.Connect.auto
        do {
            let s = try SequencerClient(name: name, ports: ports)
            if let targets = connectTargets {
                connectMode = targets.isEmpty ? .none : .sources(try s.resolve(targets))
            }
            sequencer = s
        } catch {
            // The benchmark aid runs without MIDI (e.g. on a machine without snd-seq).
            guard benchNotes > 0 else { throw Failure(error.description) }
            say("spinet: warning: \(error.description); playing without MIDI input")
        }

        // 3. Audio out: the device decides the rate and period.
        var pcmConfig = PCMOutput.Configuration()
        pcmConfig.device = device
        pcmConfig.sampleRate = rate
        pcmConfig.periodFrames = period
        pcmConfig.periods = periods
        let output: PCMOutput
        do {
            output = try PCMOutput(pcmConfig)
        } catch {
            throw Failure(error.description)
        }
        if output.sampleRate != rate {
            say("spinet: note: \(device) runs at \(output.sampleRate) Hz, not \(rate) Hz")
        }

        // 4. The SoundFont, loaded before anything plays.
        let fonts = try Render.fontsOrDefault(soundFonts)
        var options = SoundFontOptions()
        options.polyphony = polyphony
        options.fluidEffects = fx.fluidEffects
        let unit: SoundFontUnit
        do {
            unit = try SoundFontUnit(fonts: fonts, sampleRate: Double(output.sampleRate), channels: ports * 16, options: options)
        } catch {
            throw Failure(error.description)
        }
        say("SoundFont: \(fonts.joined(separator: ", "))")
        for w in unit.fontWarnings { printError("spinet: warning: \(w)") }     // even with --quiet

        // 5. Recording, if asked.
        var recorder: Recorder?
        if let record, let (container, bits) = recordFormat {
            do {
                recorder = try Recorder(target: record, force: force, format: container, sampleFormat: bits, sampleRate: output.sampleRate)
            } catch {
                throw Failure(error.description)
            }
        }

        // 6. The engine: one input queue for the sequencer thread, one for this thread.
        var graphSettings = GraphSettings()
        graphSettings.engine.ports = ports
        graphSettings.engine.gainDB = gain
        graphSettings.engine.mutedChannels = mutedChannels
        graphSettings.engine.soloChannels = soloChannels
        graphSettings.engine.reverb = fx.reverb
        graphSettings.engine.chorus = fx.chorus
        graphSettings.engine.delay = fx.delay
        graphSettings.engine.equalizer = fx.equalizer
        graphSettings.soundFont = options
        graphSettings.presets = try Render.presetBank(presets)
        graphSettings.channelAssignments = channelAssignments
        graphSettings.configChannelCount = settings.channels.count
        graphSettings.configLabel = settings.label("channels")
        let graph = try orFailure { try GraphBuilder.live(graphSettings, soundFont: unit, inputCapacities: [8192, 1024]) }
        let engine = graph.engine, slot = graph.soundFontSlot!
        let midiQueue = graph.inputs[0], controlQueue = graph.inputs[1]
        engine.prepare(sampleRate: Double(output.sampleRate), maxFrames: output.periodFrames)
        engine.setTempo(beatsPerMinute: tempo)

        let sampleRate = Double(output.sampleRate)
        let safetyFrames = Int((safety / 1000 * sampleRate).rounded())
        let timing = LiveTiming(sampleRate: sampleRate, periodFrames: output.periodFrames, periods: output.periods, safetyFrames: safetyFrames)
        let totalLatency = Int(timing.latencyFrames) + engine.latencyFrames
        let timeline = AudioTimeline()

        let memoryProblem = priority > 0 ? lockMemory() : nil

        // 7. Start: the audio first, then MIDI. The input ports appear only
        // once the audio thread has published where its frames meet the
        // clock, so a note a DAW sends the moment it sees them is played at
        // its arrival plus the latency, like any later one.
        if benchNotes > 0 {
            controlQueue.push(EngineEvent(frame: 0, .programChange(channel: 0, program: 19)))
            for i in 0..<benchNotes {
                controlQueue.push(EngineEvent(frame: 0, .noteOn(channel: 0, key: UInt8(24 + i % 96), velocity: 90)))
            }
        }
        recorder?.start()
        let scheduling = output.start(engine: engine, timeline: timeline, ring: recorder?.ring, priority: Int32(priority))
        if let sequencer {
            // The first anchor comes once the device runs (its buffer filled):
            // a few periods. A device that never starts fails within 5 s.
            let deadline = monotonicSeconds() + 10
            while timeline.read() == nil && output.failure == nil && !interruptRequested.load(ordering: .relaxed)
                    && monotonicSeconds() < deadline {
                usleep(1_000)
            }
            let made: [MIDIPort]
            do {
                made = try sequencer.start(connect: connectMode, queue: midiQueue, timeline: timeline, timing: timing,
                                           priority: priority > 0 ? Int32(max(1, priority - 5)) : 0,
                                           tempo: { bpm in engine.setTempo(beatsPerMinute: bpm) })
            } catch {
                output.stop(drain: false)
                throw Failure(error.description)
            }
            let inputs = sequencer.inputAddresses.map(\.description).joined(separator: ", ")
            let from = made.isEmpty ? "no source connected yet" : "connected from " + made.map { "\($0.address) (\($0.name))" }.joined(separator: ", ")
            say("MIDI: client '\(name)' \(sequencer.clientID), input \(inputs); \(from)")
            _ = sequencer.takeNotices()
        }
        say("Audio: \(device), \(output.sampleRate) Hz, \(output.format), \(output.periods) x \(output.periodFrames) frames, \(output.channels) channels")
        say(formatted("Latency: %.1f ms from MIDI in to audio out (%ld x %ld frames buffer + %ld safety + %ld limiter look-ahead = %ld frames at %ld Hz)",
                   Double(totalLatency) * 1000 / sampleRate, output.periods, output.periodFrames, safetyFrames,
                   engine.latencyFrames, totalLatency, output.sampleRate))
        if case .refused(let e) = scheduling {
            say("spinet: warning: the audio thread has no real-time priority (\(String(cString: strerror(e)))), so sound may click when the machine is busy. "
                + "To allow it: add '@audio - rtprio 95' and '@audio - memlock unlimited' to /etc/security/limits.d/audio.conf, "
                + "join the group (sudo usermod -aG audio $USER) and log in again; or pass --priority 0 to run without it.")
        } else if let m = memoryProblem {
            say("spinet: warning: cannot lock memory (\(m)): the audio thread may wait for paging; raise 'memlock' in /etc/security/limits.d/audio.conf")
        }

        // SoundFont switching: a path on standard input, or SIGHUP to reload the current fonts.
        let requests = SoundFontRequests(current: fonts)
        var loadedFonts = fonts

        // 8. Run until Ctrl-C (or the device fails): status line, notices.
        let status = StatusLine(enabled: !quiet && isatty(STDERR_FILENO) == 1)
        let start = monotonicSeconds()
        var lastStatus = 0.0
        var lastXruns = 0
        var lastDropped = 0
        var failure: String?
        var fluidMessages = Set<String>()
        while !interruptRequested.load(ordering: .relaxed) {
            usleep(20_000)
            if let f = output.failure { failure = f; break }
            let now = monotonicSeconds()
            if let d = duration, now - start >= d { break }
            for line in sequencer?.takeNotices() ?? [] where !quiet { status.print(line) }
            if let next = requests.take(reloading: loadedFonts) {
                // Loaded here, off the render thread; the render thread swaps it in.
                do {
                    let newUnit = try SoundFontUnit(fonts: next, sampleRate: sampleRate, channels: ports * 16, options: options)
                    while !slot.offer(newUnit) && !interruptRequested.load(ordering: .relaxed) { usleep(20_000) }
                    loadedFonts = next
                    if !quiet { status.print("SoundFont: switched to \(next.joined(separator: ", ")) (notes sounding ring on)") }
                    for w in newUnit.fontWarnings { status.print("warning: \(w)") }
                } catch {
                    status.print("cannot switch SoundFont: \(error.description)")
                }
            }
            for line in SoundFontUnit.drainRenderThreadMessages() where !quiet {
                // The render thread may raise the same complaint thousands of times: say it once.
                if fluidMessages.insert(line).inserted { status.print("FluidSynth: \(line) (said once)") }
            }
            guard now - lastStatus >= 0.5 else { continue }
            lastStatus = now
            let load = output.takeIntervalLoad()
            let dropped = droppedEvents(engine, sequencer)
            if status.enabled {
                status.show(formatted("voices %3ld | load %5.1f%% (peak %5.1f%%) | xruns %ld | dropped %ld | late %ld",
                                   engine.statistics.activeVoices, load.mean * 100, load.peak * 100,
                                   output.xruns, dropped, engine.statistics.lateEvents))
            } else if !quiet && (output.xruns != lastXruns || dropped != lastDropped) {
                printError("spinet: \(output.xruns) xrun\(output.xruns == 1 ? "" : "s"), \(dropped) MIDI event\(dropped == 1 ? "" : "s") dropped so far")
            }
            lastXruns = output.xruns
            lastDropped = dropped
        }

        // 9. Stop: fade out (no click), play out what is queued, close.
        let fadeFrames = Int(0.02 * sampleRate)
        engine.requestFadeOut(frames: fadeFrames)
        let fadeDeadline = monotonicSeconds() + 0.15
        while failure == nil && !engine.isFadedOut && monotonicSeconds() < fadeDeadline { usleep(2_000) }
        if failure == nil {
            // The faded block is at most a buffer ahead of the device. Keep
            // writing silence for a whole buffer more (plus a period and the
            // limiter's delay line): by then the fade has been played and every
            // frame left in the ring is zero, so stopping cannot click, on any
            // device, even one that plays past the last frame written.
            let frames = output.bufferFrames + output.periodFrames + engine.latencyFrames
            usleep(UInt32(Double(frames) / sampleRate * 1e6) + 2_000)
        }
        output.stop(drain: false)
        sequencer?.stop()
        status.finish()
        let elapsed = monotonicSeconds() - start
        var recordLine = ""
        if let recorder {
            do {
                let frames = try recorder.finish()
                let lost = recorder.ring.lostFrames
                recordLine = formatted("; recorded %.1f s to ", Double(frames) / sampleRate) + recorder.target
                    + (lost > 0 ? " (\(lost) frames lost: the disk was too slow)" : "")
            } catch {
                failure = failure ?? error.description
            }
        }
        if let failure { throw Failure(failure) }
        let total = output.totalLoad
        let stats = engine.statistics
        let seqStats = sequencer?.statistics
        let dropped = droppedEvents(engine, sequencer)
        var why = ""
        if dropped > 0 {
            why = " (engine queue or SoundFont flood backlog full \(stats.droppedEvents); never a note-off, pedal release or All Notes Off; kernel pool overflowed \(seqStats?.overflows ?? 0) times, "
                + "kernel lost \(seqStats?.kernelLost ?? 0), SysEx too long \(seqStats?.sysExTooLong ?? 0), "
                + "SysEx unfinished \(seqStats?.sysExUnfinished ?? 0))"
        }
        say(formatted("Played %.1f s: render load %.1f%% mean, %.1f%% peak of a %ld-frame period; %ld voices at most; %ld xruns; %ld MIDI events (%ld stamped by the kernel), %ld dropped",
                      elapsed, total.mean * 100, total.peak * 100, output.periodFrames, stats.peakVoices, output.xruns,
                      seqStats?.received ?? 0, seqStats?.kernelStamped ?? 0, dropped)
            + "\(why), \(stats.lateEvents) late; \(seqStats?.released ?? 0) held notes released\(recordLine)")
        // Ctrl-C is how a player ends play: 0. A signal from elsewhere (a
        // service manager's SIGTERM, SIGQUIT, ...) is told apart: 128 + it.
        let stoppedBy = interruptSignal.load(ordering: .relaxed)
        if stoppedBy != 0 && stoppedBy != SIGINT { throw Failure("", status: 128 + stoppedBy) }
    }

    /// Events lost anywhere on the way in: the engine queue was full, the
    /// kernel could not deliver, the kernel pool overflowed (at least one each
    /// time), or a SysEx message was too long or never finished.
    private func droppedEvents(_ engine: Engine, _ sequencer: SequencerClient?) -> Int {
        let s = sequencer?.statistics
        return engine.statistics.droppedEvents + (s?.kernelLost ?? 0) + (s?.overflows ?? 0) + (s?.sysExTooLong ?? 0)
            + (s?.sysExUnfinished ?? 0)
    }
}

/// Requests to switch SoundFont: a line on standard input naming a file
/// (several separated by commas stack), or SIGHUP to reload the current ones.
final class SoundFontRequests: @unchecked Sendable {
    private let lines = Mutex<[String]>([])

    init(current: [String]) {
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
        if soundFontReloadRequested.exchange(false, ordering: .relaxed) { return current }
        return nil
    }
}

/// Set by SIGHUP.
let soundFontReloadRequested = Atomic<Bool>(false)

private func monotonicSeconds() -> Double {
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
        printError("spinet: \(line)")
    }

    func finish() {
        guard enabled, shown else { return }
        writeStandardError("\r\u{1B}[K")
        shown = false
    }
}
