import ArgumentParser
import FoundationEssentials
import Glibc
import Dispatch
import SpinetSupport
import Synchronization
import SpinetEffects
import SpinetEngine
import SpinetFile
import SpinetMIDI
import SpinetSoundFont
import SpinetSynth

/// Set by SIGINT/SIGTERM; the render loop polls it.
let interruptRequested = Atomic<Bool>(false)

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
        input). --jobs files render at once, each on one render thread unless \
        --threads says otherwise, and each file's bytes are the same as a \
        render of it alone. Existing outputs are refused before any work \
        unless --force. A file that fails is named and skipped, and the exit \
        status is 1 once the others are done.
        """
    )

    @Argument(help: ArgumentHelp("The Standard MIDI File(s) to render (.mid, .midi, .kar, .rmi).", valueName: "input"))
    var inputs: [String]

    @Option(name: .shortAndLong, help: ArgumentHelp("Output file, or - for standard output (default: the input's name with .wav). In batch mode, the directory for the outputs (created if missing).", valueName: "output"))
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

    @Option(help: "Render threads for one file (default: one per core, at most \(Render.partitions); 1 in batch mode). The output is the same for any count.")
    var threads: Int?

    @Option(help: "Batch mode: files rendered at once (default: one per core, at most \(Render.maxJobs)).")
    var jobs: Int?

    /// The MIDI channels are always split into this many groups, each with its
    /// own FluidSynth, whatever the thread count: FluidSynth's output depends
    /// on which notes share a synth (voice history), so a fixed split keeps
    /// every render of a file byte-identical on any number of threads. A
    /// channel that is most of a song's work (a busy drum track) is shared
    /// by the groups, each key's notes taking turns (`ChannelPartition.lanes`).
    static let partitions = 2

    /// Render threads for one file when --threads is not given (outside batch mode).
    static var defaultThreads: Int { min(ProcessInfo.processInfo.activeProcessorCount, partitions) }

    /// Each file of a batch being rendered holds one temporary output file.
    static let maxJobs = OutputFile.maxPending

    @Option(name: .customLong("channel"), help: ArgumentHelp("Which instrument a channel plays: N=synth[:PRESET] or N=soundfont (N 1-16, PORT.N, or all); repeatable. A Bank Select of 126 with a Program Change in the file also picks Spinet's synth.", valueName: "assignment"))
    var channelAssignments: [String] = []

    @Option(help: ArgumentHelp("A JSON file of synth presets (see Sources/SpinetSynth/PRESETS.md).", valueName: "path"))
    var presets: String?

    @OptionGroup var effectOptions: EffectsOptions

    @Option(help: ArgumentHelp("Channels to silence: numbers 1-16 (or PORT.N) separated by commas; repeatable.", valueName: "channels"))
    var mute: [String] = []

    @Option(help: ArgumentHelp("Channels to hear alone (every other one is muted): numbers 1-16 (or PORT.N) separated by commas; repeatable.", valueName: "channels"))
    var solo: [String] = []

    @Flag(help: "Overwrite existing output files.")
    var force = false

    @Flag(name: .shortAndLong, help: "No progress bar and no summary.")
    var quiet = false

    func run() throws {
        try reportingFailures { try isBatch ? renderBatch() : renderSingle() }
    }

    /// Several inputs, or `-o` naming a directory (an existing one, or any name ending in /).
    var isBatch: Bool {
        if inputs.count > 1 { return true }
        guard let output, output != "-" else { return false }
        var st = stat()
        return output.hasSuffix("/") || (stat(output, &st) == 0 && (st.st_mode & S_IFMT) == S_IFDIR)
    }

    /// The options every file of a render shares, checked before any work.
    func settings(batch: Bool) throws -> RenderSettings {
        let file: SpinetConfig
        do { file = try SpinetConfig.load(explicitPath: config) } catch { throw Failure(error.description) }
        let rate = self.rate ?? file.rate ?? 48000
        guard (22050...192000).contains(rate) else {
            throw Failure("--rate \(rate) is out of range; use 22050 to 192000 Hz")
        }
        guard let sampleFormat = SampleFormat(rawValue: bits) else {
            throw Failure("--bits \(bits) is not supported; use 16, 24 or 32f")
        }
        guard (1...65535).contains(polyphony) else {
            throw Failure("--polyphony \(polyphony) is out of range; use 1 to 65535")
        }
        let fx = try effectOptions.resolve(config: file)
        let threadCount = threads ?? (batch ? 1 : Self.defaultThreads)
        guard (1...64).contains(threadCount) else { throw Failure("--threads \(threadCount) is out of range; use 1 to 64") }
        var s = RenderSettings(rate: rate, sampleFormat: sampleFormat,
                               soundFonts: soundFonts.isEmpty ? file.soundFonts : soundFonts,
                               channelAssignments: file.channels + channelAssignments,
                               presetBank: try Self.presetBank(self.presets ?? file.presets),
                               polyphony: polyphony, threads: threadCount, gain: gain,
                               fluidEffects: fx.fluidEffects, quiet: quiet)
        s.mutedChannels = try Self.channelLists(file.mute + mute, option: "--mute")
        s.soloChannels = try Self.channelLists(file.solo + solo, option: "--solo")
        s.spinetEffects = fx.spinetEffects
        s.reverb = fx.reverb
        s.chorus = fx.chorus
        s.delay = fx.delay
        s.equalizer = fx.equalizer
        s.filesInUse = s.soundFonts.map { FileInUse(path: $0, role: "a SoundFont in use") }
            + [(self.presets ?? file.presets).map { FileInUse(path: $0, role: "the preset file in use") },
               file.path.map { FileInUse(path: $0, role: "the config file in use") }].compactMap { $0 }
        // The --channel options, checked once here; port numbers are checked
        // again for each file, against the ports it uses.
        _ = try Self.applyAssignments(s.channelAssignments, to: OscillatorSynth(presets: s.presetBank, polyphony: 1), ports: 16)
        return s
    }

    /// `fonts`, or the default SoundFont when none is given; an error saying
    /// how to get one when there is none.
    static func fontsOrDefault(_ fonts: [String]) throws -> [String] {
        if !fonts.isEmpty { return fonts }
        guard let found = SoundFontLocator.defaultSoundFont() else {
            throw Failure("no SoundFont found; pass one with --soundfont PATH, or install one (sudo apt-get install fluid-soundfont-gm)")
        }
        return [found]
    }

    /// The channels of `--mute`/`--solo` values (and the config file's).
    static func channelLists(_ texts: [String], option: String) throws -> [Int] {
        var channels: [Int] = []
        for text in texts {
            do { channels += try ChannelAssignment.channelList(text, option: option) } catch { throw Failure(error.description) }
        }
        return channels
    }

    /// One input to one output file (or standard output).
    private func renderSingle() throws {
        let settings = try settings(batch: false)
        let input = inputs[0]
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
        do {
            try AudioFileWriter.validate(format: container, sampleFormat: settings.sampleFormat, sampleRate: settings.rate)
        } catch {
            throw Failure(error.description)
        }
        let out: OutputFile
        do {
            out = try OutputFile(target: target, force: force, format: container,
                                 inUse: [FileInUse(path: input, role: "the MIDI file being rendered")] + settings.filesInUse
                                     + Self.defaultFontInUse(settings))
        } catch {
            throw Failure(error.description)
        }
        installInterruptHandlers()
        let bar = ProgressBar(enabled: !quiet && isatty(STDERR_FILENO) == 1)
        let result = try Self.renderFile(input, to: out, format: container, settings: settings,
                                         announceSoundFont: true, progress: bar, log: printError)
        if !quiet {
            printError(Self.summary(result.report, seconds: result.seconds, target: target) + result.note)
        }
    }

    /// Renders one MIDI file to one output: the work of `spinet render` for a
    /// single file and for each file of a batch, so both give the same bytes.
    /// Throws a `Failure`; `log` prints warnings and notes (one line each).
    static func renderFile(_ input: String, to out: OutputFile, format container: AudioFileFormat, settings s: RenderSettings,
                           announceSoundFont: Bool, progress: RenderProgress, log: (String) -> Void) throws -> FileRender {
        let rate = s.rate
        // 1. The MIDI file.
        let file: MIDIFile
        do {
            file = try MIDIFile(path: input)
        } catch {
            throw Failure("\(input): \(error.description)")
        }
        let schedule = file.schedule(sampleRate: rate)
        let allWarnings = file.warnings + schedule.warnings
        if !s.quiet {
            for w in allWarnings.prefix(5) { log("spinet: warning: \(input): \(w.description)") }
            if allWarnings.count > 5 { log("spinet: warning: \(input): \(allWarnings.count - 5) more warnings") }
        }
        let hours = Double(schedule.endFrame) / Double(rate) / 3600
        guard hours <= 24 else {
            throw Failure(input + formatted(" lasts %.0f hours (a damaged delta time or End of Track?); Spinet renders at most 24 hours", min(hours, 1e12)))
        }
        let hasNotes = schedule.events.contains { if case .message(let m) = $0.kind { return m.isNoteOn } else { return false } }
        guard hasNotes else {
            throw Failure("\(input) has no notes to play (\(schedule.events.count) events, none a note-on); nothing rendered")
        }
        // The longest the output can be (the music, the tail cap, its fade and
        // the latency, with a second to spare) decides RF64 over WAV, or refuses AIFF.
        let musicEnd = max(schedule.endFrame, schedule.events.last?.frame ?? 0)
        let rf64: Bool
        do {
            let options = OfflineRenderer.Options()
            let (sum, overflow) = musicEnd.addingReportingOverflow(Int64((options.tailCap + options.fadeSeconds + 1) * Double(rate)))
            let maxFrames = overflow ? Int64.max : sum   // saturating, as the renderer's own tail cap
            rf64 = try AudioFileWriter.needsRF64(format: container, sampleFormat: s.sampleFormat, maxFrames: maxFrames, name: out.displayName)
                && out.isSeekable   // a WAV stream already marks its sizes unknown
        } catch {
            throw Failure(error.description)
        }

        // 2. The SoundFont(s), loaded before any audio work.
        let fonts = try Render.fontsOrDefault(s.soundFonts)
        var maxChannel = 0
        for e in schedule.events {
            if case .message(let m) = e.kind, let c = m.channel { maxChannel = max(maxChannel, Int(c)) }
        }
        let ports = maxChannel / 16 + 1
        var options = SoundFontOptions()
        options.polyphony = s.polyphony
        options.fluidEffects = s.fluidEffects
        let synth = OscillatorSynth(presets: s.presetBank, polyphony: 256)
        let synthChannels = try Self.applyAssignments(s.channelAssignments, to: synth, ports: ports)
        // Split by what the notes cost in this font: its layers, releases and
        // sample lengths. (The model is gone before FluidSynth loads the font.)
        // A channel that is most of the work (a busy drum track) is split:
        // each key's notes take turns between the synthesizers.
        let balanced: [[ChannelPartition.Lane]] = {
            let models = fonts.reversed().compactMap { VoiceCostModel(path: $0) }
            let noteCost: ChannelPartition.NoteCost = { bank, program, drum, key, velocity, held in
                models.lazy.compactMap { $0.cost(bank: bank, program: program, drum: drum, key: key, velocity: velocity, held: held) }.first
            }
            // every loaded font's classes: a preset may come from any of them
            let exclusiveKeys: ChannelPartition.ExclusiveKeys = { bank, program, drum in
                models.flatMap { $0.exclusiveKeys(bank: bank, program: program, drum: drum) }
            }
            return ChannelPartition.lanes(schedule, channels: ports * 16, parts: Self.partitions,
                                          noteCost: models.isEmpty ? nil : noteCost,
                                          exclusiveKeys: models.count == fonts.count ? exclusiveKeys : nil)
        }()
        var laneGroups = balanced
            .map { $0.filter { !synthChannels.contains($0.channel) } }.filter { !$0.isEmpty }
        if laneGroups.isEmpty { laneGroups = [[]] }   // the SoundFont player stays for Bank Select switches back
        let groups = laneGroups.map { lanes in lanes.map(\.channel) }
        let plays = ChannelPartition.playing(schedule, channels: ports * 16)
        var units: [SoundFontUnit] = []
        do {
            // FluidSynth shares one copy of the sample data between its synths.
            for channels in groups {
                // only the channels that play get an output of their own
                options.soundingChannels = channels.filter { plays[$0] }
                // only the presets the group's Program Changes can reach (a
                // channel's messages only ever reach its own group's unit)
                let members = Set(channels)
                options.programs = Set(schedule.events.compactMap { e -> Int? in
                    guard case .message(.programChange(let c, let program)) = e.kind, members.contains(Int(c)) else { return nil }
                    return Int(program)
                })
                units.append(try SoundFontUnit(fonts: fonts, sampleRate: Double(rate), channels: ports * 16, options: options))
            }
        } catch {
            throw Failure(error.description)
        }
        if announceSoundFont && !s.quiet { log("SoundFont: \(fonts.joined(separator: ", "))") }

        // 3. The engine, driven offline.
        var config = Engine.Configuration()
        config.ports = ports
        config.gainDB = s.gain
        config.offlineRenderThreads = min(s.threads, groups.count)
        config.mutedChannels = s.mutedChannels
        config.soloChannels = s.soloChannels
        if s.spinetEffects {
            config.reverb = s.reverb
            config.chorus = s.chorus
            config.delay = s.delay
        }
        config.equalizer = s.equalizer
        let engine = Engine(configuration: config)
        // a split channel: its home unit first, then its guests
        var splits: [Int: (units: [Int], fixedKeys: [Int])] = [:]
        for (unit, lanes) in zip(units, laneGroups) {
            let index = engine.add(unit)
            for lane in lanes {
                switch lane.share {
                case .whole: engine.route(channel: lane.channel, to: index)
                case .home(let keys): splits[lane.channel, default: ([], [])].units.insert(index, at: 0)
                                      splits[lane.channel]!.fixedKeys = keys
                case .guest: splits[lane.channel, default: ([], [])].units.append(index)
                }
            }
        }
        for (channel, split) in splits.sorted(by: { $0.key < $1.key }) {
            engine.route(channel: channel, takingTurns: split.units, fixedKeys: split.fixedKeys)
        }
        // The synth joins only if something can play it: a silent unit would
        // still be rendered, mixed and given its wavetables (1.5 MB) each render.
        let bankSelectsSynth = schedule.events.contains { e in
            guard case .message(.controlChange(_, MIDIController.bankSelectMSB, let value)) = e.kind else { return false }
            return OscillatorSynth.bankSelectsSpinetPresets(msb: value)
        }
        if !synthChannels.isEmpty || bankSelectsSynth {
            let synthIndex = engine.add(synth)
            for c in synthChannels { engine.route(channel: c, to: synthIndex) }
            engine.routeBank(msb: OscillatorSynth.spinetPresetBank, to: synthIndex)
        }
        let queue = engine.addInput(capacity: 16384)
        let renderer = OfflineRenderer(engine: engine, queue: queue, schedule: schedule)
        engine.prepare(sampleRate: Double(rate), maxFrames: renderer.options.blockFrames)

        let writer: AudioFileWriter
        do {
            writer = try AudioFileWriter(path: out.writePath, fileDescriptor: out.fileDescriptor,
                                         format: container, sampleFormat: s.sampleFormat, sampleRate: rate,
                                         rf64: rf64, name: out.displayName)
        } catch {
            throw Failure(error.description)
        }

        progress.start(musicSeconds: Double(schedule.endFrame) / Double(rate))
        let start = DispatchTime.now()
        let report: RenderReport
        do {
            report = try renderer.run(
                sink: { l, r, n in try writer.write(left: l, right: r, frames: n) },
                progress: { progress.update($0) },
                shouldStop: { interruptRequested.load(ordering: .relaxed) })
        } catch let e as AudioFileError {
            progress.finish()
            out.discard()
            if writer.readerClosed { throw Failure("", status: 0) }   // e.g. `| head -c 100`
            throw Failure(e.description)
        }
        progress.finish()
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9
        for line in Set(SoundFontUnit.drainRenderThreadMessages()).sorted() where !s.quiet {
            log("spinet: FluidSynth: \(line)")
        }
        if report.interrupted {
            out.discard()
            throw Failure("interrupted; no output written", status: 130)
        }
        // Silent means inaudible, not exactly 0: below the renderer's silence
        // threshold (-90 dBFS, the 16-bit LSB); effects can leave a residue far below it.
        if report.peakDBFS < renderer.options.silenceDBFS {
            out.discard()
            throw Failure("the render of \(input) is silent (no SoundFont preset for its programs, or every volume at 0); no output written")
        }
        do {
            try writer.close()
            try out.commit()
        } catch {
            out.discard()
            throw Failure(error.description)
        }
        return FileRender(report: report, seconds: seconds, note: rf64 ? " (RF64: the render could pass the 4 GB a WAV header can hold)" : "")
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

    /// Spinet's oscillator synth, with the factory presets or a preset file.
    static func makeSynth(presets: String?, polyphony: Int) throws -> OscillatorSynth {
        OscillatorSynth(presets: try presetBank(presets), polyphony: polyphony)
    }

    /// The factory presets, or those of a preset file.
    static func presetBank(_ path: String?) throws -> PresetBank {
        guard let path else { return .factory }
        do { return try PresetBank(jsonFile: path) } catch { throw Failure(error.description) }
    }

    /// Applies `--channel` options; returns the channels that play the synth.
    static func applyAssignments(_ texts: [String], to synth: OscillatorSynth, ports: Int) throws -> Set<Int> {
        var synthChannels = Set<Int>()
        for text in texts {
            let a: ChannelAssignment
            do { a = try ChannelAssignment(parsing: text, ports: max(ports, 1)) } catch { throw Failure(error.description) }
            for c in a.channels {
                switch a.instrument {
                case .soundFont:
                    synthChannels.remove(c)
                case .synth(let preset):
                    synthChannels.insert(c)
                    if let preset {
                        do {
                            try synth.setPreset(preset, channel: c)
                        } catch {
                            throw Failure("--channel \(text): \(error.description)")
                        }
                    }
                }
            }
        }
        return synthChannels
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

    static func summary(_ r: RenderReport, seconds: Double, target: String) -> String {
        let rate = Double(r.sampleRate)
        let music = Double(r.musicFrames) / rate
        let total = Double(r.outputFrames) / rate
        let speed = seconds > 0 ? total / seconds : 0
        let tail = max(0, total - music)
        let peak = r.peak > 0 ? formatted("%.1f dBFS", r.peakDBFS) : "silent"
        let capped = r.tailCapped ? " (sound did not decay: faded out)" : ""
        let dest = target == "-" ? "standard output" : target
        return "Rendered \(clock(music)) of music + " + formatted("%.1f s tail", tail) + capped
            + formatted(" in %.2f s (%.1fx real time)", seconds, speed)
            + "; peak \(peak), \(r.peakVoices) voices at most, \(r.droppedEvents) events dropped -> \(dest)"
    }
}

/// The options every file of a render shares (see `Render.settings(batch:)`).
struct RenderSettings: Sendable {
    var rate: Int
    var sampleFormat: SampleFormat
    /// Empty: the default font, looked up once the MIDI file has been read.
    var soundFonts: [String]
    var channelAssignments: [String]
    var presetBank: PresetBank
    var polyphony: Int
    /// Render threads for one file.
    var threads: Int
    var gain: Double
    var fluidEffects: Bool
    var quiet: Bool
    var spinetEffects = false
    /// Global channels muted and soloed (`--mute`, `--solo`, the config file).
    var mutedChannels: [Int] = []
    var soloChannels: [Int] = []
    var reverb: ReverbPreset?
    var chorus: ChorusPreset?
    var delay: DelayPreset?
    var equalizer: Equalizer.Parameters?
    /// Files the render reads besides the MIDI file (fonts, presets, config): never the output.
    var filesInUse: [FileInUse] = []
}

/// What one file's render did.
struct FileRender: Sendable {
    var report: RenderReport
    /// Wall time of the render itself.
    var seconds: Double
    /// Appended to the summary line (RF64).
    var note = ""
}

/// Follows one file's render: `start` once its length is known, `update`
/// with the fraction of the music done, `finish` when the render loop ends.
protocol RenderProgress: AnyObject {
    func start(musicSeconds: Double)
    func update(_ fraction: Double)
    func finish()
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

/// SIGINT/SIGTERM ask the render loop to stop (it removes its temporary
/// file); a second signal removes temporary files and exits at once.
func installInterruptHandlers() {
    signal(SIGPIPE, SIG_IGN)
    var action = sigaction()
    action.__sigaction_handler.sa_handler = { _ in
        if interruptRequested.exchange(true, ordering: .relaxed) {
            OutputFile.unlinkPendingFromSignalHandler()
            _exit(130)
        }
    }
    sigemptyset(&action.sa_mask)
    sigaction(SIGINT, &action, nil)
    sigaction(SIGTERM, &action, nil)
    // A process inherits its parent's blocked-signal mask; a launcher that
    // blocks SIGINT must not make Ctrl-C (or `kill -INT`) do nothing here.
    var unblock = sigset_t()
    sigemptyset(&unblock)
    sigaddset(&unblock, SIGINT)
    sigaddset(&unblock, SIGTERM)
    pthread_sigmask(SIG_UNBLOCK, &unblock, nil)
}
