import Dispatch
import Glibc
import SpinetEffects
import SpinetEngine
import SpinetFile
import SpinetMIDI
import SpinetSettings
import SpinetSoundFont
import SpinetSupport
import SpinetSynth

/// One MIDI file rendered offline to its outputs, from reading it to the
/// commit: what `spinet render` does for a single file and for each file
/// of a batch (so both give the same bytes), once its options are checked.
/// `LiveSession` is its live counterpart.
///
/// `run` reads the file, checks it (its length, its notes, `--mute` and
/// `--solo`), builds the graph, opens the writers (the mix, and the stems
/// once their names are known), renders (through the loudness spool with
/// `--normalize`), then writes the notes and commits every output together
/// (see `OutputTransaction`). Whatever fails or is stopped leaves none of them.
public final class OfflineSession {
    /// The MIDI file's path (`-`: standard input).
    public let input: String
    public let outputs: OutputTransaction
    public let format: AudioFileFormat
    public let settings: RenderSettings
    public let stemRequest: StemOutputs?
    /// Say which SoundFont plays, and its damage (once per batch, not per file).
    public let announceSoundFont: Bool
    public let progress: RenderProgress
    /// Prints a warning or a note (one line each).
    public let log: (String) -> Void

    /// - Parameter outputs: the mix (and the notes, `--notes`) planned and
    ///   begun; the stems are planned here, once their names are known.
    public init(input: String, outputs: OutputTransaction, format: AudioFileFormat, settings: RenderSettings,
                stems: StemOutputs? = nil, announceSoundFont: Bool, progress: RenderProgress, log: @escaping (String) -> Void) {
        self.input = input
        self.outputs = outputs
        self.format = format
        self.settings = settings
        self.stemRequest = stems
        self.announceSoundFont = announceSoundFont
        self.progress = progress
        self.log = log
    }

    /// Renders the file; throws a `RigError` (its `exitStatus` 128 + the
    /// signal when stopped) and leaves no output then.
    public func run() throws(RigError) -> FileRender {
        do {
            return try renderOnce()
        } catch {
            outputs.discard()
            // A signal in any phase (reading, rendering, the second pass, the commit) ends as an interruption.
            if ProcessSignals.stopRequested.load(ordering: .relaxed) { throw Self.interrupted() }
            throw (error as? RigError) ?? RigError(String(describing: error))
        }
    }

    /// "interrupted; no output written", with 128 + the signal as the status.
    public static func interrupted() -> RigError {
        RigError("\(ProcessSignals.interruptDescription()); no output written", exitStatus: ProcessSignals.exitStatus())
    }

    /// The name the messages give the input.
    private var inputName: String { input == "-" ? "standard input" : input }

    private func renderOnce() throws -> FileRender {
        let schedule = try read()
        let rf64 = try check(schedule)
        let (graph, fonts) = try build(schedule)
        let labeler = Self.noteLabeler(settings: settings, fonts: fonts, synth: graph.synth, synthChannels: graph.synthChannels)
        let stemNames = stemRequest == nil ? []
            : Self.stemNames(graph.stemChannels, labels: labeler.labels(schedule), extension: format.rawValue)
        let writers = try openWriters(rf64: rf64, stemNames: stemNames)
        let (report, seconds, loudness) = try render(graph, schedule: schedule, writers: writers)
        warnClippedStems(writers)
        try commit(writers, stemChannels: graph.stemChannels) { stemOf, json in
            // each sounded note's stem: its channel's file
            NoteLabeler.text(labeler.labels(schedule), sampleRate: self.settings.rate, json: json,
                             stem: { n in n.sounded ? stemOf[n.port * 16 + n.channel - 1] ?? "" : "" })
        }
        return FileRender(report: report, seconds: seconds, loudness: loudness,
                          note: rf64 ? " (RF64: the render could pass the 4 GB a WAV header can hold)" : "",
                          stems: stemNames,
                          split: graph.plan.map { plan in
                              let threads = graph.settings.engine.offlineRenderThreads
                              return ", \(plan.partitions) partition\(plan.partitions == 1 ? "" : "s") on \(threads) thread\(threads == 1 ? "" : "s")"
                          } ?? "")
    }

    /// 1. The MIDI file, and its warnings (each once).
    private func read() throws -> MIDISchedule {
        // (a FIFO or standard input may keep the read waiting: a signal ends it at once)
        let file = try rigged("\(inputName): ") {
            try ProcessSignals.stoppingAtOnce { try input == "-" ? MIDIFile(fileDescriptor: STDIN_FILENO) : MIDIFile(path: input) }
        }
        let schedule = file.schedule(sampleRate: settings.rate)
        // The schedule carries the file's warnings (and only those).
        let warnings = schedule.warnings
        if !settings.quiet {
            for w in warnings.prefix(5) { log("spinet: warning: \(inputName): \(w.description)") }
            if warnings.count > 5 { log("spinet: warning: \(inputName): \(warnings.count - 5) more warnings") }
        }
        return schedule
    }

    /// 2. Whether there is music to render; returns whether the output needs RF64.
    private func check(_ schedule: MIDISchedule) throws -> Bool {
        let rate = settings.rate
        let hours = Double(schedule.endFrame) / Double(rate) / 3600
        guard hours <= 24 else {
            throw RigError(inputName + formatted(" lasts %.0f hours (a damaged delta time or End of Track?); Spinet renders at most 24 hours", min(hours, 1e12)))
        }
        let hasNotes = schedule.events.contains { if case .message(let m) = $0.kind { return m.isNoteOn } else { return false } }
        guard hasNotes else {
            throw RigError("\(inputName) has no notes to play (\(schedule.events.count) events, none a note-on); nothing rendered")
        }
        // The longest the output can be (the music, the tail cap, its fade and
        // the latency, with a second to spare) decides RF64 over WAV, or refuses AIFF.
        let out = outputs.file(.mix)!
        let musicEnd = max(schedule.endFrame, schedule.events.last?.frame ?? 0)
        let rf64 = try rigged {
            let options = OfflineRenderer.Options()
            let (sum, overflow) = musicEnd.addingReportingOverflow(Int64((options.tailCap + options.fadeSeconds + 1) * Double(rate)))
            let maxFrames = overflow ? Int64.max : sum   // saturating, as the renderer's own tail cap
            return try AudioFileWriter.needsRF64(format: format, sampleFormat: settings.sampleFormat, maxFrames: maxFrames, name: out.displayName)
                && out.isSeekable   // a WAV stream already marks its sizes unknown
        }
        try Self.checkMuteAndSolo(schedule, input: inputName, settings: settings, log: log)
        return rf64
    }

    /// 3. The SoundFont(s), loaded before any audio work, and the engine, driven offline.
    private func build(_ schedule: MIDISchedule) throws -> (EngineGraph, [String]) {
        let fonts = try Self.fontsOrDefault(settings.soundFonts)
        let graph = try GraphBuilder.offline(settings.graph, fonts: fonts, schedule: schedule, sampleRate: Double(settings.rate),
                                             partitions: settings.partitions)
        if announceSoundFont && !settings.quiet { log("SoundFont: \(fonts.joined(separator: ", "))") }
        // Every unit loaded the same fonts: say once what of them is damaged,
        // even with --quiet (the render lacks instruments).
        if announceSoundFont { for w in graph.soundFonts.first?.fontWarnings ?? [] { log("spinet: warning: \(w)") } }
        return (graph, fonts)
    }

    /// The open audio files of one render: the mix and, with `--stems`, one
    /// file per stem channel, each through its own temporary file.
    private final class Writers {
        let mix: AudioFileWriter
        let stems: [AudioFileWriter]
        let stemNames: [String]
        /// A stem may pass full scale where the stems cancel in the mix: in
        /// 16 or 24 bits it clips there, which the summary warns about.
        var stemPeaks: [Float]

        init(mix: AudioFileWriter, stems: [AudioFileWriter], stemNames: [String]) {
            self.mix = mix
            self.stems = stems
            self.stemNames = stemNames
            stemPeaks = [Float](repeating: 0, count: stems.count)
        }

        func writeStem(_ i: Int, _ l: UnsafePointer<Float>, _ r: UnsafePointer<Float>, _ n: Int) throws {
            stemPeaks[i] = SamplePeak.update(stemPeaks[i], left: l, right: r, frames: n)
            try stems[i].write(left: l, right: r, frames: n)
        }
    }

    /// Frames each output gathers before a write (64 KB of 16-bit stereo):
    /// few large writes, not one of a few kilobytes per block.
    static let writeBatchFrames = 16384

    /// 4. The writers: the mix's, then the stems' (planned and begun now that their names are known).
    private func openWriters(rf64: Bool, stemNames: [String]) throws -> Writers {
        let out = outputs.file(.mix)!, s = settings
        let dither = DitherNoise()   // the same for every file: computed once a block
        let batch = Self.writeBatchFrames
        let mix = try rigged {
            try AudioFileWriter(path: out.writePath, fileDescriptor: out.fileDescriptor,
                                format: format, sampleFormat: s.sampleFormat, sampleRate: s.rate,
                                rf64: rf64, name: out.displayName, dither: dither, batchFrames: batch)
        }
        var stems: [AudioFileWriter] = []
        if let stemRequest {
            try rigged {
                for name in stemNames {
                    try outputs.plan(stemRequest.directory + "/" + name, option: "--stems", role: .stem, format: format,
                                     replace: stemRequest.replace)
                }
                try outputs.begin()
                for file in outputs.files(.stem) {
                    stems.append(try AudioFileWriter(path: file.writePath, fileDescriptor: file.fileDescriptor, format: format,
                                                     sampleFormat: s.sampleFormat, sampleRate: s.rate, rf64: rf64, name: file.displayName,
                                                     dither: dither, batchFrames: batch))
                }
            }
        }
        return Writers(mix: mix, stems: stems, stemNames: stemNames)
    }

    /// 5. The render itself, straight to the writers or, with `--normalize`,
    /// through the spool and then to them. Returns the report, the wall time
    /// and what `--normalize` did.
    private func render(_ graph: EngineGraph, schedule: MIDISchedule, writers: Writers)
            throws -> (RenderReport, Double, LoudnessNormalizer.Result?) {
        let s = settings, rate = s.rate
        let renderer = OfflineRenderer(engine: graph.engine, queue: graph.inputs[0], schedule: schedule)
        graph.engine.prepare(sampleRate: Double(rate), maxFrames: renderer.options.blockFrames)
        progress.start(musicSeconds: Double(schedule.endFrame) / Double(rate))
        let start = DispatchTime.now()
        func elapsed() -> Double { Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9 }
        let normalizer = try rigged { try s.normalize.map { try LoudnessNormalizer(sampleRate: rate, target: $0, stems: writers.stems.count) } }
        let shouldStop = { ProcessSignals.stopRequested.load(ordering: .relaxed) }
        var report: RenderReport
        do {
            report = try renderer.run(
                sink: { l, r, n in
                    if let normalizer { try normalizer.append(left: l, right: r, frames: n) } else { try writers.mix.write(left: l, right: r, frames: n) }
                },
                stemSink: writers.stems.isEmpty ? nil : { i, l, r, n in
                    if let normalizer { try normalizer.appendStem(i, left: l, right: r, frames: n) } else { try writers.writeStem(i, l, r, n) }
                },
                progress: { self.progress.update($0) },
                shouldStop: shouldStop)
        } catch let e as AudioFileError {
            progress.finish()
            outputs.discard()
            if writers.mix.readerClosed { throw RigError("", exitStatus: 0) }   // e.g. `| head -c 100`
            throw RigError(e.description)
        } catch let e as LoudnessNormalizer.Failure {
            progress.finish()
            throw RigError(e.description)
        }
        progress.finish()
        var seconds = elapsed()
        for line in Set(SoundFontUnit.drainRenderThreadMessages()).sorted() where !s.quiet {
            log("spinet: FluidSynth: \(line)")
        }
        // (a signal after the last block still stops it: the exit status says so)
        if report.interrupted || shouldStop() { throw Self.interrupted() }
        // Silent means inaudible, not exactly 0: below the renderer's silence
        // threshold (-90 dBFS, the 16-bit LSB); effects can leave a residue far below it.
        if report.peakDBFS < renderer.options.silenceDBFS {
            throw RigError("the render of \(inputName) is silent (no SoundFont preset for its programs, or every volume at 0); no output written")
        }
        guard let normalizer else { return (report, seconds, nil) }
        let loudness: LoudnessNormalizer.Result
        do {
            var peak: Float = 0
            loudness = try normalizer.finish(sink: { l, r, n in
                peak = SamplePeak.update(peak, left: l, right: r, frames: n)
                try writers.mix.write(left: l, right: r, frames: n)
            }, stemSink: writers.stems.isEmpty ? nil : writers.writeStem, shouldStop: shouldStop)
            report.peak = peak
            if abs(loudness.output - normalizer.target) > 0.1, !s.quiet {
                log("spinet: warning: \(inputName): --normalize " + formatted("%g", normalizer.target)
                    + formatted(": the limiter's ceiling holds this render at %.1f LUFS (%+.1f dB of gain)", loudness.output, loudness.gainDB))
            }
            seconds = elapsed()
        } catch is LoudnessNormalizer.Interrupted {
            throw Self.interrupted()
        }
        return (report, seconds, loudness)
    }

    /// A stem that passes full scale clips in 16 or 24 bits: say so.
    private func warnClippedStems(_ writers: Writers) {
        guard settings.sampleFormat != .float32 && !settings.quiet else { return }
        for (name, peak) in zip(writers.stemNames, writers.stemPeaks) where peak > 1 {
            log("spinet: warning: \(inputName): stem \(name) peaks at " + formatted("%+.2f dBFS", 20 * log10(Double(peak)))
                + " (it cancels against other stems in the mix) and clips in \(settings.sampleFormat.rawValue) bits; use --bits 32f, or a lower --gain")
        }
    }

    /// 6. Closes the files, writes the notes (`notesText(stemOf, json)`:
    /// each note names its channel's stem file; JSON for a `.json` name) and
    /// commits: the stems, the notes, the mix last (see `OutputTransaction`).
    private func commit(_ writers: Writers, stemChannels: [Int],
                        notesText: (_ stemOf: [Int: String], _ json: Bool) -> String) throws {
        do {
            try writers.mix.close()
            for w in writers.stems { try w.close() }
            if let notes = outputs.file(.notes) {
                var stemOf: [Int: String] = [:]
                for (c, name) in zip(stemChannels, writers.stemNames) { stemOf[c] = name }
                let body = notesText(stemOf, notes.target.lowercased().hasSuffix(".json"))
                try rigged("--notes: ") { try notes.writeText(body) }
            }
            try outputs.commit(shouldStop: { ProcessSignals.stopRequested.load(ordering: .relaxed) })
        } catch is OutputTransaction.Interrupted {
            throw Self.interrupted()
        }
    }

    /// Runs `body`; an error it throws becomes a `RigError` whose message is
    /// the error's one-line description (`prefix` first). A `RigError` passes as it is.
    private func rigged<T>(_ prefix: String = "", _ body: () throws -> T) throws -> T {
        do { return try body() } catch let e as RigError { throw e } catch { throw RigError(prefix + String(describing: error)) }
    }
}

extension OfflineSession {
    /// The note labeler of a render (`--notes`, and the instrument names of `--stems`).
    public static func noteLabeler(settings s: RenderSettings, fonts: [String], synth: OscillatorSynth, synthChannels: Set<Int>) -> NoteLabeler {
        var labeler = NoteLabeler()
        labeler.synthChannels = synthChannels
        labeler.mutedChannels = Set(s.mutedChannels)
        labeler.soloChannels = Set(s.soloChannels)
        labeler.synthBank = Int(OscillatorSynth.spinetPresetBank)
        labeler.grid = SoundFontUnit.grid
        let fontNames = SoundFontPresetNames(fonts: fonts)
        let bank = s.presetBank
        labeler.instrumentName = { channel, b, program, onSynth in
            guard onSynth else { return program.map { fontNames.name(bank: b, program: $0) ?? "" } ?? fontNames.name(bank: b, program: 0) ?? "" }
            if let program, let p = bank.presets.first(where: { $0.program == program }) { return p.name }
            return synth.presetName(channel: channel) ?? ""
        }
        return labeler
    }

    /// The file name of each stem: `NN-Instrument.ext` (two-digit channel;
    /// `P.NN-` on port P > 1), the instrument of the channel's first sounded
    /// note, as the notes file names it.
    public static func stemNames(_ channels: [Int], labels: [NoteLabel], extension ext: String) -> [String] {
        var first: [Int: String] = [:]
        for n in labels where n.sounded {
            let c = n.port * 16 + n.channel - 1
            if first[c] == nil { first[c] = n.instrument }
        }
        return channels.map { c in
            let number = (c < 16 ? "" : "\(c / 16 + 1).") + formatted("%02ld", c % 16 + 1)
            return number + "-" + stemInstrumentName(first[c] ?? "") + "." + ext
        }
    }

    /// An instrument name fit for a file name: no slash, no control
    /// character, no leading dot, trimmed, at most 100 bytes ("Channel" when empty).
    public static func stemInstrumentName(_ name: String) -> String {
        var out = ""
        for ch in name.unicodeScalars {
            if ch == "/" || ch == "\\" || ch.value < 0x20 || ch.value == 0x7F { out.unicodeScalars.append("_") } else { out.unicodeScalars.append(ch) }
        }
        out = out.trimmingSpaces
        while out.hasPrefix(".") { out.removeFirst() }
        while out.utf8.count > 100 { out.removeLast() }
        return out.isEmpty ? "Channel" : out
    }

    /// `--mute`/`--solo` against the channels that play notes in this file:
    /// a channel named on port 1 that plays nothing there but does on another
    /// port (drums on port 2) is pointed out, and a render they would leave
    /// silent is an error before any work.
    public static func checkMuteAndSolo(_ schedule: MIDISchedule, input: String, settings s: RenderSettings,
                                 log: (String) -> Void) throws {
        guard !s.mutedChannels.isEmpty || !s.soloChannels.isEmpty else { return }
        var playing = Set<Int>()
        for e in schedule.events {
            if case .message(let m) = e.kind, m.isNoteOn, let c = m.channel { playing.insert(Int(c)) }
        }
        func name(_ c: Int) -> String { c < 16 ? "\(c + 1)" : "\(c / 16 + 1).\(c % 16 + 1)" }
        for (option, channels) in [("--solo", s.soloChannels), ("--mute", s.mutedChannels)] {
            for c in Set(channels).sorted() where c < 16 && !playing.contains(c) {
                let elsewhere = playing.filter { $0 % 16 == c && $0 >= 16 }.sorted()
                if !elsewhere.isEmpty && !s.quiet {
                    log("spinet: warning: \(input): \(option) \(c + 1) names channel \(c + 1) of port 1, which plays no notes; "
                        + "this file plays it on port \(elsewhere.map { "\($0 / 16 + 1)" }.joined(separator: ", ")): use "
                        + elsewhere.map { "\(option) \(name($0))" }.joined(separator: " or "))
                }
            }
        }
        let muted = Set(s.mutedChannels), solo = Set(s.soloChannels)
        let heard = playing.filter { !muted.contains($0) && (solo.isEmpty || solo.contains($0)) }
        if heard.isEmpty && !playing.isEmpty {
            let list = playing.sorted().map(name).joined(separator: ", ")
            let why = solo.isEmpty ? "--mute silences" : (muted.isEmpty ? "--solo leaves out" : "--mute and --solo silence")
            throw RigError("nothing to hear in \(input): \(why) every channel that plays notes (\(list)); nothing rendered")
        }
    }

    /// `fonts`, or the default SoundFont when none is given; an error saying
    /// how to get one when there is none.
    public static func fontsOrDefault(_ fonts: [String]) throws -> [String] {
        // Checked before anything opens a font: open() on a FIFO blocks.
        for font in fonts {
            if let problem = RegularFile.problem(font, hint: "a SoundFont is an .sf2 or .sf3 file") { throw RigError(problem) }
        }
        if !fonts.isEmpty { return fonts }
        guard let found = SoundFontLocator.defaultSoundFont() else {
            throw RigError("no SoundFont found; pass one with --soundfont PATH, or install one (sudo apt-get install fluid-soundfont-gm)")
        }
        if let problem = RegularFile.problem(found, hint: "a SoundFont is an .sf2 or .sf3 file (check $SPINET_SOUNDFONT)") { throw RigError(problem) }
        return [found]
    }
}

/// The options every file of a render shares (the render command fills them once its options are checked).
public struct RenderSettings: Sendable {
    public var rate: Int
    public var sampleFormat: SampleFormat
    /// Empty: the default font, looked up once the MIDI file has been read.
    public var soundFonts: [String]
    public var channelAssignments: [String]
    /// The first this many of `channelAssignments` came from the config file.
    public var configChannelCount = 0
    /// `config PATH: "channels":`, for their errors.
    public var configLabel = ""
    public var presetBank: PresetBank
    public var polyphony: Int
    /// Render threads for one file.
    public var threads: Int
    /// A forced partition count (nil: each file's music decides; see `RenderPlan`).
    public var partitions: Int?
    /// Files rendered at once (a batch's --jobs): the voice memory budget covers them all.
    public var concurrentFiles = 1
    public var gain: Double
    public var fluidEffects: Bool
    public var quiet: Bool
    /// Global channels muted and soloed (`--mute`, `--solo`, the config file).
    public var mutedChannels: [Int] = []
    public var soloChannels: [Int] = []
    /// Spinet's effects and the EQ (FluidSynth's effects are `fluidEffects`).
    public var effects = EffectChoices()
    /// --normalize: the integrated loudness to bring each output to, in LUFS.
    public var normalize: Double?
    /// --stems: stems besides the mix.
    public var stems = false
    /// Files the render reads besides the MIDI file (fonts, presets, config): never the output.
    public var filesInUse: [FileInUse] = []

    public init(rate: Int, sampleFormat: SampleFormat, soundFonts: [String], channelAssignments: [String],
                presetBank: PresetBank, polyphony: Int, threads: Int, gain: Double, fluidEffects: Bool, quiet: Bool) {
        self.rate = rate
        self.sampleFormat = sampleFormat
        self.soundFonts = soundFonts
        self.channelAssignments = channelAssignments
        self.presetBank = presetBank
        self.polyphony = polyphony
        self.threads = threads
        self.gain = gain
        self.fluidEffects = fluidEffects
        self.quiet = quiet
    }
}

extension RenderSettings {
    /// What the graph builder makes of these settings (ports and render
    /// threads are decided per file).
    public var graph: GraphSettings {
        var sound = SoundChoices()
        sound.gainDB = gain
        sound.mutedChannels = mutedChannels
        sound.soloChannels = soloChannels
        sound.effects = effects
        sound.effects.fluidEffects = fluidEffects
        sound.polyphony = polyphony
        sound.presets = presetBank
        sound.channelAssignments = channelAssignments
        sound.configChannelCount = configChannelCount
        sound.configLabel = configLabel
        var g = GraphSettings(sound)
        g.renderThreads = threads
        g.concurrentRenders = concurrentFiles
        g.stems = stems
        return g
    }
}

/// What one file's render did.
public struct FileRender: Sendable {
    public var report: RenderReport
    /// Wall time of the render itself.
    public var seconds: Double
    /// What --normalize measured and did.
    public var loudness: LoudnessNormalizer.Result? = nil
    /// Appended to the summary line (RF64).
    public var note = ""
    /// The stems' file names (--stems).
    public var stems: [String] = []
    /// ", P partitions on T threads": how the plan split the file.
    public var split = ""
}

/// Where `--stems` writes one file's stems.
public struct StemOutputs: Sendable {
    public var directory: String
    /// Replace existing stems even without --force: --skip-existing redoes
    /// an input whose mix is missing, and the stems a stopped commit left.
    public var replace: Bool

    public init(directory: String, replace: Bool) {
        self.directory = directory
        self.replace = replace
    }
}

/// Follows one file's render: `start` once its length is known, `update`
/// with the fraction of the music done, `finish` when the render loop ends.
public protocol RenderProgress: AnyObject {
    func start(musicSeconds: Double)
    func update(_ fraction: Double)
    func finish()
}

