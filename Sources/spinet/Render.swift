import ArgumentParser
import FoundationEssentials
import Glibc
import Dispatch
import SpinetSupport
import Synchronization
import SpinetEffects
import SpinetEngine
import SpinetFile
import SpinetRig
import SpinetSettings
import SpinetMIDI
import SpinetSoundFont
import SpinetSynth

struct Render: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Render MIDI files to audio files, faster than real time.",
        discussion: """
        The output format follows the extension (.wav, .flac, .ogg, .aiff, .mp3) \
        or --format. `-o -` writes a WAV stream to standard output. The render \
        ends when the music has ended and its sound has decayed below -90 dBFS \
        (sound that never decays is faded out 10 s after the music ends).

        Batch mode: with several inputs, or with -o naming a directory (one that \
        exists, or any name ending in /), every input is rendered to \
        DIR/NAME.wav (the extension follows --format; without -o, beside its \
        input). --jobs files render at once, the most work first, each on one \
        render thread until fewer files are left than jobs (the last files then \
        share the idle jobs' threads) unless --threads says otherwise, and each \
        file's bytes are the same as a render of it alone. Existing outputs are refused before any work \
        unless --force. A file that fails is named and skipped, and the exit \
        status is 1 once the others are done. With --stems DIR, each input's \
        stems go to DIR/NAME/ (NAME: the input's name without its extension).
        """
    )

    @Argument(help: ArgumentHelp("The Standard MIDI File(s) to render (.mid, .midi, .kar, .rmi; - reads standard input, with -o).", valueName: "input"))
    var inputs: [String] = []

    @Option(name: .shortAndLong, help: ArgumentHelp("Output file, or - for standard output (default: the input's name with .wav; required for standard input, a FIFO or a device). In batch mode, the directory for the outputs (created if missing).", valueName: "output"))
    var output: String?

    @Option(name: .customLong("soundfont"), help: ArgumentHelp("A SoundFont (.sf2/.sf3); repeat to stack fonts, later ones over earlier ones.", valueName: "path"))
    var soundFonts: [String] = []

    @Option(help: "Sample rate in Hz (22050-192000, default 48000).")
    var rate: Int?

    @Option(help: ArgumentHelp("A JSON config file (default: $XDG_CONFIG_HOME/spinet/config.json, if present).", valueName: "path"))
    var config: String?

    @Option(help: "Sample format: 16 (with TPDF dither), 24 or 32f.")
    var bits: String = "16"

    @Option(parsing: .unconditional, help: "Master gain in dB, before the limiter (e.g. --gain -6).")
    var gain: Double = 0

    @Option(help: "Container format: wav, flac, ogg, aiff or mp3 (default: from the output's extension; wav in batch mode).")
    var format: String?

    @Option(help: "The most SoundFont voices sounding at once (per render thread).")
    var polyphony: Int = 256

    @Option(help: "Render threads for one file (default: one per core; in batch mode 1, and more for the last files when fewer are left than --jobs). A file uses at most one per core and one per partition: light files 1, dense ones up to \(RenderPlan.maxPartitions), as its music needs. The output is the same for any count.")
    var threads: Int?

    @Option(help: "Split each file into this many partitions (a FluidSynth player each) instead of the number its music calls for. 1 renders what `spinet play FILE` plays, sample for sample. The output changes with the count: FluidSynth starts each voice from what its voice slot played before.")
    var partitions: Int?

    @Option(help: "Batch mode: files rendered at once (default: one per core, at most \(Render.maxJobs)).")
    var jobs: Int?

    /// Render threads for one file when --threads is not given (outside
    /// batch mode): one per core. The file's plan (`RenderPlan`) caps them:
    /// its channels are split into as many partitions, each with its own
    /// FluidSynth, as its estimated work calls for, whatever the thread
    /// count or the machine: FluidSynth's output depends on which notes
    /// share a synth (voice history), so a split made from the file alone
    /// keeps every render of it byte-identical on any number of threads.
    static var defaultThreads: Int { RenderCores.available }

    /// The most files a batch renders at once.
    static let maxJobs = 64

    @OptionGroup var channelOptions: ChannelOptions

    @OptionGroup var effectOptions: EffectsOptions

    @Flag(help: "Overwrite existing output files.")
    var force = false

    @Flag(name: .shortAndLong, help: "No progress bar and no summary.")
    var quiet = false

    @OptionGroup var dataset: DatasetOptions

    func run() throws {
        // Before any file is made: from here on a stopping signal only asks the work to stop.
        ProcessSignals.installStopHandlers()
        try reportingFailures {
            guard !inputs.isEmpty || dataset.from != nil else {
                throw Failure("no input; name MIDI files (or - for standard input), or a list of them with --from LIST")
            }
            if dataset.asksForBatch && !isBatch {
                throw Failure("\(dataset.batchOptionGiven) renders a batch: -o names a directory (end it with /) or is left out, not the file \(output ?? "")")
            }
            try isBatch ? renderBatch() : renderSingle()
        }
    }

    /// Several inputs, a list or a shard of one, or `-o` naming a directory
    /// (an existing one, or any name ending in /).
    var isBatch: Bool {
        if inputs.count > 1 || (dataset.asksForBatch && output == nil) { return true }
        guard let output, output != "-" else { return false }
        var st = stat()
        return output.hasSuffix("/") || (stat(output, &st) == 0 && (st.st_mode & S_IFMT) == S_IFDIR)
    }

    /// The options every file of a render shares, checked before any work.
    func settings(batch: Bool) throws -> RenderSettings {
        let file = try orFailure { try SpinetConfig.load(explicitPath: config) }
        let rate = self.rate ?? file.rate ?? 48000
        guard (22050...192000).contains(rate) else {
            let label = self.rate != nil ? "--rate" : file.label("rate")
            throw Failure("\(label) \(rate) is out of range; use 22050 to 192000 Hz")
        }
        guard let sampleFormat = SampleFormat(rawValue: bits) else {
            throw Failure("--bits \(bits) is not supported; use 16, 24 or 32f")
        }
        guard (1...65535).contains(polyphony) else {
            throw Failure("--polyphony \(polyphony) is out of range; use 1 to 65535")
        }
        try Self.checkGain(gain)
        let fx = try effectOptions.resolve(config: file)
        let threadCount = threads ?? (batch ? 1 : Self.defaultThreads)
        guard (1...64).contains(threadCount) else { throw Failure("--threads \(threadCount) is out of range; use 1 to 64") }
        if let partitions, !(1...RenderPlan.maxPartitions * 2).contains(partitions) {
            throw Failure("--partitions \(partitions) is out of range; use 1 to \(RenderPlan.maxPartitions * 2)")
        }
        var s = RenderSettings(rate: rate, sampleFormat: sampleFormat,
                               soundFonts: soundFonts.isEmpty ? file.soundFonts : soundFonts,
                               channelAssignments: channelOptions.assignments(config: file),
                               presetBank: try channelOptions.presetBank(config: file),
                               polyphony: polyphony, threads: threadCount, gain: gain,
                               fluidEffects: fx.fluidEffects, quiet: quiet)
        (s.mutedChannels, s.soloChannels) = try channelOptions.mutedAndSoloed(config: file)
        s.partitions = partitions
        s.configChannelCount = file.channels.count
        s.configLabel = file.label("channels")
        if soundFonts.isEmpty { try Self.checkConfigFonts(file) }
        s.effects = fx.choices
        if let stems = dataset.stems {
            if stems == "-" { throw Failure("--stems - : stems are files in a directory; name one with --stems DIR") }
            if fx.fluidEffects {
                throw Failure("--stems needs Spinet's effects: FluidSynth's own reverb and chorus run on its internal mix, which no stem has; use --effects spinet (or drop --effects fluidsynth)")
            }
            s.stems = true
        }
        if let target = dataset.normalize {
            guard (-70.0...0.0).contains(target) else {
                throw Failure("--normalize \(target) is out of range; use an integrated loudness from -70 to 0 LUFS (e.g. -23 for EBU R128 broadcast, -14 for streaming)")
            }
            guard output != "-" else { throw Failure("--normalize measures the whole render before writing it; it cannot stream to standard output (-o -)") }
            s.normalize = target
        }
        s.filesInUse = s.soundFonts.map { FileInUse(path: $0, role: "a SoundFont in use") }
            + [channelOptions.presetFile(config: file).map { FileInUse(path: $0, role: "the preset file in use") },
               file.path.map { FileInUse(path: $0, role: "the config file in use") }].compactMap { $0 }
        // The --channel options, checked once here; port numbers are checked
        // again for each file, against the ports it uses.
        _ = try Self.applyAssignments(s.channelAssignments, to: OscillatorSynth(presets: s.presetBank, polyphony: 1), ports: 16,
                                      configCount: s.configChannelCount, configLabel: s.configLabel)
        return s
    }

    /// `fonts`, or the default SoundFont when none is given (see `OfflineSession.fontsOrDefault`).
    static func fontsOrDefault(_ fonts: [String]) throws -> [String] {
        try orFailure { try OfflineSession.fontsOrDefault(fonts) }
    }

    /// One input to one output file (or standard output).
    private func renderSingle() throws {
        let settings = try settings(batch: false)
        let input = inputs[0]
        if output == nil, let problem = Self.noDerivedName(input) { throw Failure(problem) }
        let chosen = try format.map { format in
            guard let f = AudioFileFormat(rawValue: format.lowercased()) else {
                throw Failure("--format \(format) is not supported; use wav, flac, ogg, aiff or mp3")
            }
            return f
        }
        let target = output ?? Self.defaultOutput(for: input, format: chosen ?? .wav)
        let named = target == "-" ? nil : AudioFileFormat(pathExtension: URL(fileURLWithPath: target).pathExtension)
        let container: AudioFileFormat
        if let chosen {
            if let named, named != chosen {
                throw Failure("\(target) is named as \(named.rawValue.uppercased()) but --format asks for \(chosen.rawValue); rename the output or drop --format")
            }
            container = chosen
        } else if target == "-" || Self.isDeviceOrFIFO(target) {
            container = .wav   // a stream, as `-o -`: /dev/null, a named pipe
        } else if let named {
            container = named
        } else {
            throw Failure("cannot tell the audio format of \(target) from its extension; use .wav, .flac, .ogg, .aiff or .mp3, or pass --format")
        }
        try orFailure { try AudioFileWriter.validate(format: container, sampleFormat: settings.sampleFormat, sampleRate: settings.rate) }
        // Every output of the render, checked together before any work (the
        // stems once their names are known), and committed together.
        let outputs = OutputTransaction(force: force, inUse: FilesInUse([FileInUse(path: input, role: "the MIDI file being rendered")]
                                                                         + settings.filesInUse + Self.defaultFontInUse(settings)))
        try orFailure {
            try outputs.plan(target, option: "-o", role: .mix, format: container)
            if let path = dataset.notes { try outputs.plan(path, option: "--notes", role: .notes) }
            try outputs.begin()
        }
        let bar = ProgressBar(enabled: !quiet && isatty(STDERR_FILENO) == 1)
        let stems = dataset.stems.map { StemOutputs(directory: $0, replace: false) }
        let result = try Self.renderFile(input, outputs: outputs, format: container, settings: settings, stems: stems,
                                         announceSoundFont: true, progress: bar, log: printError)
        if !quiet {
            printError(Self.summary(result.report, seconds: result.seconds, target: target, loudness: result.loudness, split: result.split)
                       + result.note)
        }
    }

    /// Renders one MIDI file to one output: the work of `spinet render` for a
    /// single file and for each file of a batch, so both give the same bytes.
    /// Throws a `Failure`; `log` prints warnings and notes (one line each).
    /// `outputs`: the mix (and the notes, `--notes`) planned and begun; the
    /// stems are planned here, once their names are known, and all of them
    /// are committed together (see `OutputTransaction`). Whatever fails or
    /// is stopped leaves none of them.
    static func renderFile(_ input: String, outputs: OutputTransaction, format container: AudioFileFormat, settings s: RenderSettings,
                           stems stemRequest: StemOutputs? = nil,
                           announceSoundFont: Bool, progress: RenderProgress, log: @escaping (String) -> Void) throws -> FileRender {
        try orFailure {
            try OfflineSession(input: input, outputs: outputs, format: container, settings: s, stems: stemRequest,
                               announceSoundFont: announceSoundFont, progress: progress, log: log).run()
        }
    }

    /// "interrupted; no output written", with 128 + the signal as the status.
    static func interruptedFailure() -> Failure {
        let e = OfflineSession.interrupted()
        return Failure(e.description, status: e.exitStatus)
    }

    /// A named effect preset, `none`, or the default when the option is absent.
    static func preset<P>(_ name: String?, default value: P, named: (String) -> P?, option: String, choices: [String]) throws -> P? {
        guard let name else { return value }
        if name == "none" { return nil }
        guard let p = named(name) else {
            throw Failure("\(option) \(name) is not known; use \((choices + ["none"]).joined(separator: ", "))")
        }
        return p
    }

    /// The master gain, in dB: finite and within what can still be heard
    /// (below -96 dB nothing reaches 16 bits; above +40 dB only the limiter is left).
    static let gainRange = -96.0...40.0

    static func checkGain(_ gain: Double) throws {
        guard gainRange.contains(gain) else {
            throw Failure("--gain \(gain) is out of range; use \(Int(gainRange.lowerBound)) to \(Int(gainRange.upperBound)) (dB)")
        }
    }

    /// The config file's SoundFonts exist and are files: an error names the
    /// config file and its key, where the fix is.
    static func checkConfigFonts(_ file: SpinetConfig) throws {
        for font in file.soundFonts {
            if let problem = file.fontProblem(font) { throw Failure(problem) }
        }
    }

    /// Applies `--channel` options; returns the channels that play the synth.
    static func applyAssignments(_ texts: [String], to synth: OscillatorSynth, ports: Int,
                                 configCount: Int = 0, configLabel: String = "") throws -> Set<Int> {
        try orFailure { try GraphBuilder.applyAssignments(texts, to: synth, ports: ports, configCount: configCount, configLabel: configLabel) }
    }

    /// Why no output name can be derived from `input` (nil: it can): standard
    /// input has no name, and a FIFO's or a device's name (`/dev/stdin`)
    /// gives none a file should have.
    static func noDerivedName(_ input: String) -> String? {
        if input == "-" {
            return "reading standard input (-) needs an output: pass -o FILE, or -o - to stream WAV to standard output"
        }
        if isStream(input) {
            return "\(input) is not a regular file (standard input, a FIFO or a device), so no output name can be made from it: pass -o FILE, or -o - to stream WAV to standard output"
        }
        return nil
    }

    /// Standard input, a FIFO, a device, or a name under /dev or /proc
    /// (`/dev/stdin` is a regular file when the shell redirects one to it).
    static func isStream(_ input: String) -> Bool {
        input == "-" || (!RegularFile.isRegular(input) && access(input, F_OK) == 0)
            || (input.hasPrefix("/dev/") && !input.hasPrefix("/dev/shm/")) || input.hasPrefix("/proc/")
    }

    static func defaultOutput(for input: String, format: AudioFileFormat = .wav) -> String {
        let url = URL(fileURLWithPath: input)
        return url.deletingPathExtension().appendingPathExtension(format.rawValue).path
    }

    /// An existing character device or FIFO (followed through links): written through, never replaced.
    static func isDeviceOrFIFO(_ path: String) -> Bool {
        var st = stat()
        return stat(path, &st) == 0 && ((st.st_mode & S_IFMT) == S_IFCHR || (st.st_mode & S_IFMT) == S_IFIFO)
    }

    /// The default SoundFont, when no font is named: the output may not replace it either.
    static func defaultFontInUse(_ s: RenderSettings) -> [FileInUse] {
        guard s.soundFonts.isEmpty, let font = SoundFontLocator.defaultSoundFont() else { return [] }
        return [FileInUse(path: font, role: "the SoundFont in use")]
    }

    static func clock(_ seconds: Double) -> String {
        let s = max(0, seconds)
        let m = Int(s / 60)
        return formatted("%ld:%04.1f", m, s - Double(m * 60))
    }

    /// `split`: how the render was split (`FileRender.split`).
    static func summary(_ r: RenderReport, seconds: Double, target: String, loudness: LoudnessNormalizer.Result? = nil,
                        split: String = "") -> String {
        let rate = Double(r.sampleRate)
        let music = Double(r.musicFrames) / rate
        let total = Double(r.outputFrames) / rate
        let speed = seconds > 0 ? total / seconds : 0
        let tail = max(0, total - music)
        let peak = r.peak > 0 ? formatted("%.1f dBFS", r.peakDBFS) : "silent"
        let capped = r.tailCapped ? " (sound did not decay: faded out)" : ""
        let dest = target == "-" ? "standard output" : target
        return "Rendered \(clock(music)) of music + " + formatted("%.1f s tail", tail) + capped
            + formatted(" in %.2f s (%.1fx real time", seconds, speed) + split + ")"
            + "; peak \(peak), \(r.peakVoices) voices at most, \(r.droppedEvents) events dropped"
            + (r.delayedEvents > 0 ? ", \(r.delayedEvents) delayed by a flood" : "")
            + (r.skippedSysEx > 0 ? ", \(r.skippedSysEx) SysEx \(r.skippedSysEx == 1 ? "message" : "messages") over 64 KB skipped" : "")
            + (loudness.map { formatted("; loudness %.1f LUFS, %+.1f dB to %.1f LUFS", $0.measured, $0.gainDB, $0.output) } ?? "")
            + " -> \(dest)"
    }
}

/// A one-line progress bar on a terminal, redrawn at most ten times a second.
final class ProgressBar: RenderProgress {
    let enabled: Bool
    private(set) var totalSeconds = 0.0
    private var lastDraw: UInt64 = 0
    private var drawn = false

    init(enabled: Bool) {
        self.enabled = enabled
    }

    func start(musicSeconds: Double) {
        totalSeconds = musicSeconds
    }

    func update(_ fraction: Double) {
        guard enabled else { return }
        let now = DispatchTime.now().uptimeNanoseconds
        if now - lastDraw < 100_000_000 && fraction < 1 { return }
        lastDraw = now
        let line = "\r" + Self.bar(fraction) + "  " + Render.clock(fraction * totalSeconds) + " / " + Render.clock(totalSeconds)
        writeStandardError(line)
        drawn = true
    }

    func finish() {
        guard enabled, drawn else { return }
        writeStandardError("\r\u{1B}[K")
    }

    /// `[#####-----]  50%`
    static func bar(_ fraction: Double) -> String {
        let width = 30
        let f = min(max(fraction, 0), 1)
        let filled = Int(f * Double(width))
        return "[" + String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled) + "] "
            + formatted("%3ld%%", Int(f * 100))
    }
}
