import ArgumentParser
import FoundationEssentials
import Glibc
import SpinetSupport
import SpinetALSA
import SpinetFile
import SpinetHost
import SpinetJACK
import SpinetRig
import SpinetSettings
import SpinetMIDI
import SpinetSoundFont

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
        Spinet says so and exits with status 1. \
        With --driver jack, Spinet is the JACK client --name (also under PipeWire: \
        pw-jack spinet play --driver jack) with audio outputs out_L and out_R and MIDI \
        inputs midi_in (midi_in_N for --ports N), each event played at its exact frame; \
        the server decides the rate and period, and a new rate is followed, also with \
        --midi alsa (a --record take stops there). If the \
        server goes away, Spinet waits and comes back with the same ports and connections. \
        \n\nWith MIDI files (spinet play song.mid ...; - reads one from standard input), \
        Spinet plays them in order through the live output, each event at its exact frame \
        on the audio timeline, as spinet render places it (with --dry, the same samples \
        but for the first 64 frames of some notes; see docs/playing.md), \
        while the live inputs stay open; each file starts from a reset and ends when its \
        music has ended and its sound has died away, and play then exits 0 (1 if a file \
        could not be read: it is named and skipped). --loop repeats the list without a \
        gap; --start TIME begins the first file there, with the programs, controllers, \
        pedals, pitch bend, RPNs and tempo the music has at that point (notes struck \
        before it are not struck again). On a terminal: space pauses (every note is \
        released) and resumes, left/right seek 5 s (Shift: 30 s), n and p go to the \
        next and previous file, q quits. With --driver jack --transport, the player \
        follows the JACK transport (start, stop, locate).
        """
    )

    @Argument(help: ArgumentHelp("MIDI files to play in order (- reads one from standard input); without any, play waits for MIDI input.", valueName: "file"))
    var files: [String] = []

    @Flag(help: "Repeat the files without a gap until stopped.")
    var loop = false

    @Option(help: ArgumentHelp("Begin the first file at this time (seconds, or M:SS), with the state its music has there.", valueName: "time"))
    var start: String?

    @Flag(help: "With --driver jack and files: follow the JACK transport (start, stop, locate).")
    var transport = false

    @Option(name: .customLong("soundfont"), help: ArgumentHelp("A SoundFont (.sf2/.sf3); repeat to stack fonts, later ones over earlier ones.", valueName: "path"))
    var soundFonts: [String] = []

    @Option(help: "The sequencer or JACK client name (keep it stable: DAWs and sessions save connections by name).")
    var name = "Spinet"

    @Option(help: ArgumentHelp("Audio out: alsa (an ALSA PCM device, --device) or jack (a client of a JACK server, or of PipeWire's pipewire-jack).", valueName: "driver"))
    var driver = "alsa"

    @Option(name: .customLong("jack-connect"), help: ArgumentHelp("With --driver jack: where out_L and out_R go: auto (the first two physical playback ports), none, or PORT,PORT (see `spinet ports`). MIDI inputs are left to you or the session manager.", valueName: "ports"))
    var jackConnect = "auto"

    @Option(help: ArgumentHelp("MIDI in: alsa (the sequencer) or jack (JACK MIDI ports; with --driver jack, the default).", valueName: "source"))
    var midi: String?

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

    @OptionGroup var channelOptions: ChannelOptions

    @OptionGroup var effectOptions: EffectsOptions

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

    /// Seconds a JACK open, activation or close may take before libjack
    /// counts as stuck and play ends (see `JACKLibrary.bounded`).
    @Option(name: .customLong("jack-deadline"), help: .hidden)
    var jackDeadline = JACKLibrary.defaultDeadline

    func run() throws {
        try reportingFailures(play)
    }

    private func say(_ line: String) {
        if !quiet { printError(line) }
    }

    private func play() throws {
        // Before any device or file is opened. SIGHUP reloads the SoundFont;
        // every other stopping signal fades out and ends play, Ctrl-C with
        // status 0, the others with 128 + the signal.
        LiveSession.installSignalHandlers()
        let settings = try orFailure { try SpinetConfig.load(explicitPath: config) }
        let soundFonts = self.soundFonts.isEmpty ? settings.soundFonts : self.soundFonts
        // 1. Options, checked before any device is touched.
        guard (8000...192000).contains(rate) else { throw Failure("--rate \(rate) is out of range; use 8000 to 192000 Hz") }
        guard (16...8192).contains(period) else { throw Failure("--period \(period) is out of range; use 16 to 8192 frames") }
        if let p = periods, !(2...16).contains(p) { throw Failure("--periods \(p) is out of range; use 2 to 16") }
        guard (1...16).contains(ports) else { throw Failure("--ports \(ports) is out of range; use 1 to 16") }
        guard (0...99).contains(priority) else { throw Failure("--priority \(priority) is out of range; use 1 to 99, or 0 for none") }
        guard (0...1000).contains(safety) else { throw Failure("--safety \(safety) is out of range; use 0 to 1000 ms") }
        guard (1...65535).contains(polyphony) else { throw Failure("--polyphony \(polyphony) is out of range; use 1 to 65535") }
        // Two players at once: a SoundFont switched while playing loads beside the one playing.
        try orFailure { try GraphBuilder.checkVoiceMemory(polyphony, players: 2, why: "the one playing, and a switched SoundFont's loading beside it") }
        guard MIDIClockTempo.range.contains(tempo) else {
            throw Failure("--tempo \(tempo) is out of range; use \(Int(MIDIClockTempo.range.lowerBound)) to \(Int(MIDIClockTempo.range.upperBound)) bpm")
        }
        guard ["alsa", "jack"].contains(driver) else { throw Failure("--driver \(driver) is not known; use alsa or jack") }
        let midiSource = midi ?? (driver == "jack" ? "jack" : "alsa")
        guard ["alsa", "jack"].contains(midiSource) else { throw Failure("--midi \(midiSource) is not known; use alsa or jack") }
        guard midiSource == "alsa" || driver == "jack" else { throw Failure("--midi jack needs --driver jack (JACK MIDI comes with the JACK client)") }
        // (an ALSA sequencer client takes any name but an empty one)
        if driver == "jack" || name.isEmpty, let problem = JACKClient.Configuration.nameProblem(name) { throw Failure(problem) }
        let jackConnection = try orFailure { try JACKConnect(parsing: jackConnect) }
        let player = try filePlayer()
        try Render.checkGain(gain)
        if self.soundFonts.isEmpty { try Render.checkConfigFonts(settings) }
        let fx = try effectOptions.resolve(config: settings)
        let (mutedChannels, soloChannels) = try channelOptions.mutedAndSoloed(config: settings, ports: ports)
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

        // 2. MIDI in: the sequencer client and the sources to connect (JACK
        // MIDI comes with the JACK client, below).
        var sequencer: SequencerClient?
        if midiSource == "alsa" { do {
            let s = try SequencerClient(name: name, ports: ports)
            if let targets = connectTargets {
                s.connectMode = targets.isEmpty ? .none : .sources(try s.resolve(targets))
            }
            sequencer = s
        } catch {
            // The benchmark aid runs without MIDI (e.g. on a machine without snd-seq).
            guard benchNotes > 0 else { throw Failure(error.description) }
            say("spinet: warning: \(error.description); playing without MIDI input")
        } }

        // 3. Audio out: the device (or the JACK server) decides the rate and period.
        let output: any AudioDevice
        var midiInput: (any MIDIInput)? = sequencer
        if driver == "jack" {
            var jackConfig = JACKClient.Configuration()
            jackConfig.name = name
            jackConfig.midiPorts = midiSource == "jack" ? ports : 0
            jackConfig.connect = jackConnection
            jackConfig.callDeadline = jackDeadline
            let client = try orFailure { try JACKClient(jackConfig, graph: nil) }
            output = client
            midiInput = midiSource == "jack" ? JACKMIDIInput(client) : sequencer.map { JACKNoticesAlongside($0, client) }
        } else {
            var pcmConfig = PCMOutput.Configuration()
            pcmConfig.device = device
            pcmConfig.sampleRate = rate
            pcmConfig.periodFrames = period
            pcmConfig.periods = periods
            let pcm = try orFailure { try PCMOutput(pcmConfig) }
            if pcm.sampleRate != rate {
                say("spinet: note: \(device) runs at \(pcm.sampleRate) Hz, not \(rate) Hz")
            }
            output = pcm
        }

        // 4. The graph, its SoundFont loaded before anything plays: one input
        // queue for the sequencer thread, one for this thread.
        let fonts = try Render.fontsOrDefault(soundFonts)
        var sound = SoundChoices()
        sound.gainDB = gain
        sound.mutedChannels = mutedChannels
        sound.soloChannels = soloChannels
        sound.effects = fx.choices
        sound.polyphony = polyphony
        sound.presets = try channelOptions.presetBank(config: settings)
        sound.channelAssignments = channelOptions.assignments(config: settings)
        sound.configChannelCount = settings.channels.count
        sound.configLabel = settings.label("channels")
        let graph = try orFailure { try GraphBuilder.live(GraphSettings(sound, ports: ports), fonts: fonts, rate: Double(output.sampleRate),
                                                          inputCapacities: [8192, 1024] + (player != nil ? [FilePlayerSetup.queueCapacity] : [])) }
        say("SoundFont: \(fonts.joined(separator: ", "))")
        for w in graph.soundFonts[0].fontWarnings { printError("spinet: warning: \(w)") }     // even with --quiet

        // 5. Recording, if asked.
        var recorder: Recorder?
        if let record, let (container, bits) = recordFormat {
            recorder = try orFailure { try Recorder(target: record, force: force, format: container, sampleFormat: bits, sampleRate: output.sampleRate) }
        }

        // 6. Play until stopped.
        var session = LiveSession.Options()
        session.safetyMilliseconds = safety
        session.priority = priority
        session.tempo = tempo
        session.quiet = quiet
        session.statusLine = isatty(STDERR_FILENO) == 1
        session.duration = duration
        session.benchNotes = benchNotes
        player?.attach(to: output, transport: transport, keys: !files.contains("-"))
        defer { player?.finish() }
        // Standard input carries a file or the keys: no SoundFont paths there.
        session.readsStandardInput = player == nil || (!files.contains("-") && player?.keys == nil)
        let live = LiveSession(graph: graph, device: output, midi: midiInput, fonts: fonts, recorder: recorder,
                               options: session, log: printError)
        live.player = player?.player
        let status = try orFailure { try live.run() }
        if status != 0 { throw Failure("", status: status) }
        if player?.skipped == true { throw Failure("", status: 1) }
    }
}
