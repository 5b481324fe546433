import FoundationEssentials
import Glibc
import Dispatch
import SpinetEngine
import SpinetSupport
import Synchronization
import SpinetFile
import SpinetRig
import SpinetMIDI
import SpinetSoundFont

/// Batch mode of `spinet render`: many inputs, one output directory, several
/// files rendered at once.
///
/// Everything that can be checked is checked before any audio work: the
/// options, where each output goes (two inputs may not share one), existing
/// outputs, the SoundFont(s) and the output directory. Then `--jobs` worker
/// threads take the files, the most estimated work first, and each renders its file with
/// `Render.renderFile`, the same function as a single render: a fresh engine
/// and fresh synths per file, streamed to a temporary file and renamed at the
/// end. A file that fails is reported and skipped; Ctrl-C stops every render
/// and removes every temporary file.
extension Render {
    func renderBatch() throws {
        // 1. Options.
        var settings = try settings(batch: true)
        // The inputs: those named, and those of --from, then this job's shard of them.
        // (--from - may keep the read waiting: a signal ends it at once)
        let named: [String]
        do { named = try ProcessSignals.stoppingAtOnce { try dataset.inputs(named: self.inputs) } } catch is ProcessSignals.Stopped {
            throw Self.interruptedFailure()
        }
        let inputs = try dataset.shard.map { try $0.pick(named) } ?? named
        if output == "-" {
            throw Failure("-o - streams a single render; with several inputs, name a directory for the outputs: -o DIR/")
        }
        let container: AudioFileFormat
        if let format {
            guard let f = AudioFileFormat(rawValue: format.lowercased()) else {
                throw Failure("--format \(format) is not supported; use wav, flac, ogg, aiff or mp3")
            }
            container = f
        } else {
            container = .wav
        }
        try orFailure { try AudioFileWriter.validate(format: container, sampleFormat: settings.sampleFormat, sampleRate: settings.rate) }
        let jobCount = jobs ?? RenderCores.available
        guard (1...Self.maxJobs).contains(jobCount) else {
            throw Failure("--jobs \(jobCount) is out of range; use 1 to \(Self.maxJobs)")
        }
        // Every file rendered at once preallocates its players' voices: the
        // budget is for them all. Checked here for the one player every
        // render has at least; each file's own count (one per partition)
        // is checked as it starts, with the same total.
        settings.concurrentFiles = min(jobCount, max(inputs.count, 1))
        try orFailure { try GraphBuilder.checkVoiceMemory(settings.polyphony, players: 1, why: "at least one per file",
                                                         renders: settings.concurrentFiles) }
        if dataset.notes == "-" {
            throw Failure("--notes - : in batch mode --notes names a directory (DIR/NAME.csv per input), not standard output")
        }
        if dataset.skipExisting && force {
            throw Failure("--skip-existing keeps existing outputs and --force replaces them; drop one of them")
        }

        // 2. Where each output goes: each name is made from its input's, so
        // every input must be a regular file (not standard input, a FIFO or a device).
        for input in inputs where Self.isStream(input) {
            let name = input == "-" ? "standard input (-)" : input
            throw Failure("\(name) is not a regular file (standard input, a FIFO or a device); batch mode names each output after its input, so render it alone with -o FILE")
        }
        var directory: String?
        if let output {
            var dir = output
            while dir.count > 1 && dir.hasSuffix("/") { dir.removeLast() }
            var st = stat()
            if stat(dir, &st) == 0 {
                guard (st.st_mode & S_IFMT) == S_IFDIR else {
                    throw Failure("\(output) is not a directory; with several inputs, -o names the directory for the outputs")
                }
            } else if !output.hasSuffix("/") && AudioFileFormat(pathExtension: URL(fileURLWithPath: dir).pathExtension) != nil {
                // `spinet render a.mid b.mid -o out.wav` is more likely a slip than a wish for a directory named out.wav.
                throw Failure("with several inputs, -o names a directory, and \(output) looks like an audio file; end it with / to make a directory of that name")
            }
            directory = dir
        }
        let targets = inputs.map { Self.batchOutput(for: $0, directory: directory, format: container) }
        var owners: [String: String] = [:]
        for (input, target) in zip(inputs, targets) {
            let key = URL(fileURLWithPath: target).standardizedFileURL.path
            if let first = owners[key] {
                throw Failure("\(first) and \(input) would both be rendered to \(target); rename one, or render them in separate batches")
            }
            owners[key] = input
        }
        // No output may be a file the batch reads (a MIDI file, a font, the
        // preset, config or --from list), a directory, a socket or a disk; a
        // device or FIFO is written through (see `OutputFile`).
        let inUse = FilesInUse(inputs.map { FileInUse(path: $0, role: "a MIDI file of this batch") } + settings.filesInUse
            + Self.defaultFontInUse(settings)
            + [dataset.from.flatMap { $0 == "-" ? nil : FileInUse(path: $0, role: "the --from list of this batch") }].compactMap { $0 })
        var existing: [String] = []
        // --skip-existing: an output that is there is complete (the mix is
        // renamed into place last, after its stems and notes: see
        // `OutputTransaction`), so its input is skipped; that is no error.
        var skipped = Set<Int>()
        for (i, target) in targets.enumerated() {
            let check: OutputFile.Check
            do { check = try OutputFile.check(target, inUse: inUse) } catch {
                if isDirectory(target) == true { throw Failure("\(target) is a directory; the render of a file cannot replace it") }
                throw Failure(error.description)
            }
            if check.state == .existingFile {
                if dataset.skipExisting { skipped.insert(i) } else { existing.append(target) }
            }
        }
        if let first = existing.first, !force {
            let more = existing.count > 1 ? " (and \(existing.count - 1) more)" : ""
            throw Failure("\(first) already exists\(more); pass --force to overwrite")
        }
        // Every target of the batch, checked together before any work: the
        // report, each mix (a skipped one too: nothing else may name it)
        // and each notes file. An input --skip-existing redoes (its mix is
        // missing) may replace the notes and stems a stopped run left.
        let notesDirectory = dataset.notes.map(Self.withoutTrailingSlashes)
        let stemsDirectory = dataset.stems.map(Self.withoutTrailingSlashes)
        let plan = OutputTransaction(force: force, inUse: inUse)
        try orFailure {
            if let path = dataset.report { try plan.plan(path, option: "--report", role: .report, replace: dataset.skipExisting) }
            for (i, target) in targets.enumerated() {
                try plan.plan(target, option: "-o", role: .mix, replace: skipped.contains(i))
                if let notesDirectory, !skipped.contains(i) {
                    try plan.plan(Self.notesTarget(for: inputs[i], directory: notesDirectory), option: "--notes", role: .notes,
                                  replace: dataset.skipExisting)
                }
            }
        }

        // 3. The SoundFont(s): loaded once here, so a bad font is one error
        // before any work. This synth is kept to the end: FluidSynth keeps a
        // font's sample data while a synth uses it, and shares that one copy
        // with the synths each file's render creates.
        let fonts = try Render.fontsOrDefault(settings.soundFonts)
        settings.soundFonts = fonts
        var fontOptions = SoundFontOptions()
        fontOptions.polyphony = settings.polyphony
        fontOptions.fluidEffects = settings.fluidEffects
        fontOptions.programs = []       // it plays nothing: its presets would only take memory
        let fontHolder = try orFailure { try SoundFontUnit(fonts: fonts, sampleRate: Double(settings.rate), options: fontOptions) }
        defer { withExtendedLifetime(fontHolder) {} }

        // 4. The output directories, in order (-o, --notes, --stems, the
        // report's): created if missing, and proven writable. Then the report.
        try orFailure {
            if let directory { try OutputTransaction.makeFolder(directory) }
            if let notesDirectory { try OutputTransaction.makeFolder(notesDirectory) }
            if let stemsDirectory { try OutputTransaction.makeFolder(stemsDirectory) }
            try plan.makeFolders()
        }
        for dir in [notesDirectory, stemsDirectory].compactMap({ $0 }) { try Self.checkWritable(dir) }
        var checked = Set<String>()
        for target in targets {
            let dir = URL(fileURLWithPath: target).deletingLastPathComponent().path
            if checked.insert(dir).inserted { try Self.checkWritable(dir) }
        }
        let report = try dataset.report.map { try BatchReport(path: $0, replace: force || dataset.skipExisting) }
        for i in skipped.sorted() { report?.add(input: inputs[i], outputs: [targets[i]], status: "skipped") }

        // 5. Each file's length, for the progress display, and its plan's
        // estimated work, for the order: the most work first, so that no
        // long file starts last while the other workers sit idle
        // (`RenderPlan.batchOrder`). A file that cannot be read counts as
        // nothing here and fails with its reason when its turn comes.
        let rate = settings.rate
        let pricing = GraphBuilder.NotePricing(fonts: fonts)
        var estimates: [Double] = []
        var plans: [RenderPlan] = []
        for input in inputs {
            let schedule = (try? MIDIFile(path: input))?.schedule(sampleRate: rate)
            let seconds = schedule.map { Double($0.endFrame) / Double(rate) } ?? 0
            let readable = seconds <= 24 * 3600 ? schedule : nil
            estimates.append(readable == nil ? 0 : seconds)
            plans.append(readable.map { pricing.plan($0, partitions: settings.partitions, polyphony: settings.polyphony) }
                         ?? RenderPlan(groups: [[]], work: [0], musicFrames: 0, sampleRate: rate))
        }
        let waiting = inputs.indices.filter { !skipped.contains($0) }
        let order = RenderPlan.batchOrder(waiting.map { plans[$0] }).map { waiting[$0] }

        // 6. The renders.
        if !quiet { printError("SoundFont: \(fonts.joined(separator: ", "))") }
        for w in fontHolder.fontWarnings { printError("spinet: warning: \(w)") }     // even with --quiet
        let workers = min(jobCount, inputs.count)
        let display = BatchDisplay(enabled: !quiet && isatty(STDERR_FILENO) == 1, files: inputs.count,
                                   totalSeconds: estimates.reduce(0, +), workers: workers)
        let batch = BatchState(order: order)
        let job = BatchJob(inputs: inputs, targets: targets, estimates: estimates, container: container,
                           jobs: jobCount, threadsGiven: threads != nil,
                           settings: settings, force: force, redo: dataset.skipExisting, inUse: inUse, report: report,
                           notesDirectory: notesDirectory, stemsDirectory: stemsDirectory)
        let start = DispatchTime.now()
        let group = DispatchGroup()
        var threads: [NativeThread] = []
        for slot in 0..<workers {
            group.enter()
            threads.append(NativeThread(name: "spinet-job-\(slot)", stackSize: 8 << 20) {
                job.work(slot: slot, batch: batch, display: display)
                group.leave()
            })
        }
        while group.wait(timeout: .now() + .milliseconds(100)) == .timedOut {
            display.draw()
        }
        for t in threads { t.join() }
        display.finish()
        let wall = Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9

        // 7. The outcome.
        let reportError = report?.finish()
        let (rendered, failed, interrupted) = batch.outcome
        if interrupted {
            if let reportError { printError("spinet: " + reportError) }
            throw Failure("\(ProcessSignals.interruptDescription()); \(rendered.count) of \(inputs.count) files were rendered in full and kept, no partial file left",
                          status: ProcessSignals.exitStatus())
        }
        if !quiet {
            printError(Self.batchSummary(files: inputs.count, rendered: rendered, failed: failed, skipped: skipped.count,
                                         wall: wall, jobs: workers))
        }
        if let reportError { throw Failure(reportError) }
        if !failed.isEmpty { throw Failure("", status: 1) }
    }

    /// `DIR/NAME.EXT` for `x/NAME.mid`; without a directory, beside the input.
    static func batchOutput(for input: String, directory: String?, format: AudioFileFormat) -> String {
        let url = URL(fileURLWithPath: input)
        let name = url.deletingPathExtension().lastPathComponent + "." + format.rawValue
        guard let directory else { return url.deletingLastPathComponent().appendingPathComponent(name).path }
        return directory == "/" ? "/" + name : directory + "/" + name
    }

    /// A batch's side-output directory (--notes, --stems) as named, without trailing slashes.
    static func withoutTrailingSlashes(_ path: String) -> String {
        var dir = path
        while dir.count > 1 && dir.hasSuffix("/") { dir.removeLast() }
        return dir
    }

    /// `DIR/NAME.csv`: an input's notes file in batch mode.
    static func notesTarget(for input: String, directory: String) -> String {
        directory + "/" + URL(fileURLWithPath: input).deletingPathExtension().lastPathComponent + ".csv"
    }

    /// Creates and removes a file in `dir`, the way each render will.
    static func checkWritable(_ dir: String) throws {
        var template = Array("\(dir)/.spinet-check-XXXXXX".utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        if fd < 0 {
            throw Failure("cannot write to the output directory \(dir): \(String(cString: strerror(errno)))")
        }
        close(fd)
        template.withUnsafeBufferPointer { _ = unlink($0.baseAddress!) }
    }

    /// The batch's last line: files, music, wall time, speed, failures.
    static func batchSummary(files: Int, rendered: [FileRender], failed: [String], skipped: Int = 0, wall: Double, jobs: Int) -> String {
        let music = rendered.reduce(0.0) { $0 + Double($1.report.musicFrames) / Double($1.report.sampleRate) }
        let audio = rendered.reduce(0.0) { $0 + Double($1.report.outputFrames) / Double($1.report.sampleRate) }
        let speed = wall > 0 ? audio / wall : 0
        let failures = failed.isEmpty ? "no failures" : "\(failed.count) failed (\(failed.joined(separator: ", ")))"
        let skips = skipped > 0 ? " (\(skipped) skipped: already rendered)" : ""
        return "Batch: \(rendered.count) of \(files) files rendered\(skips), \(clock(music)) of music"
            + formatted(" in %.2f s on %ld jobs (%.1fx real time); ", wall, jobs, speed) + failures
    }
}

/// What the workers share: the files to take, in order, and what became of them.
final class BatchState: Sendable {
    private let order: [Int]
    private let next = Atomic<Int>(0)
    private let results = Locked<(rendered: [FileRender], failed: [String], interrupted: Bool)>(([], [], false))

    init(order: [Int]) {
        self.order = order
    }

    /// The index of the next input to render and how many inputs are left
    /// to start (it included), or nil when none is left or the batch was interrupted.
    func take() -> (index: Int, remaining: Int)? {
        if ProcessSignals.stopRequested.load(ordering: .relaxed) { return nil }
        let i = next.add(1, ordering: .relaxed).oldValue
        return i < order.count ? (order[i], order.count - i) : nil
    }

    func rendered(_ r: FileRender) { results.withLock { $0.rendered.append(r) } }
    func failed(_ input: String) { results.withLock { $0.failed.append(input) } }
    func interrupted() { results.withLock { $0.interrupted = true } }

    var outcome: (rendered: [FileRender], failed: [String], interrupted: Bool) {
        results.withLock { r in (r.rendered, r.failed, r.interrupted || ProcessSignals.stopRequested.load(ordering: .relaxed)) }
    }
}

/// One batch's inputs and options, read by every worker.
struct BatchJob: Sendable {
    var inputs: [String]
    var targets: [String]
    var estimates: [Double]
    var container: AudioFileFormat
    /// --jobs: the threads the batch keeps busy.
    var jobs: Int
    /// --threads was given: every file renders on that many.
    var threadsGiven: Bool
    var settings: RenderSettings
    var force: Bool
    /// --skip-existing: an input rendered here had no mix, so the notes and
    /// stems a stopped run left for it are replaced.
    var redo: Bool
    var inUse: FilesInUse
    var report: BatchReport?
    /// `--notes DIR`: one CSV per input.
    var notesDirectory: String?
    /// `--stems DIR`: DIR/NAME/ per input.
    var stemsDirectory: String?

    /// A worker's loop: render files until none is left.
    func work(slot: Int, batch: BatchState, display: BatchDisplay) {
        while let (i, remaining) = batch.take() {
            let input = inputs[i]
            var settings = settings
            if !threadsGiven { settings.threads = RenderPlan.batchThreads(jobs: jobs, remaining: remaining) }
            let progress = BatchDisplay.FileProgress(display: display, slot: slot, estimate: estimates[i])
            do {
                let outputs = OutputTransaction(force: force, inUse: inUse)
                var notes: String?
                try orFailure {
                    try outputs.plan(targets[i], option: "-o", role: .mix, format: container)
                    if let notesDirectory {
                        notes = Render.notesTarget(for: input, directory: notesDirectory)
                        try outputs.plan(notes!, option: "--notes", role: .notes, replace: redo)
                    }
                    try outputs.begin()
                }
                let stems = stemsDirectory.map {
                    StemOutputs(directory: $0 + "/" + URL(fileURLWithPath: input).deletingPathExtension().lastPathComponent, replace: redo)
                }
                let r = try Render.renderFile(input, outputs: outputs, format: container, settings: settings, stems: stems,
                                              announceSoundFont: false, progress: progress, log: display.print)
                batch.rendered(r)
                report?.add(input: input, outputs: [targets[i]] + (notes.map { [$0] } ?? []), status: "rendered", render: r,
                            stems: r.stems.map { stems!.directory + "/" + $0 })
                display.fileDone(slot: slot, estimate: estimates[i])
                if !settings.quiet {
                    display.print("\(input): " + Render.summary(r.report, seconds: r.seconds, target: targets[i], loudness: r.loudness,
                                                                 split: r.split) + r.note)
                }
            } catch let f as Failure where f.status > 128 {   // stopped by a signal
                batch.interrupted()
                report?.add(input: input, outputs: [], status: "interrupted", error: "interrupted; no output written")
                display.fileDone(slot: slot, estimate: 0)
            } catch {
                let message = (error as? Failure)?.message ?? "\(error)"
                batch.failed(input)
                report?.add(input: input, outputs: [], status: "failed", error: message)
                display.fileDone(slot: slot, estimate: estimates[i])
                // Every error line names its file.
                display.print("spinet: " + (message.contains(input) ? message : "\(input): \(message)"))
            }
        }
    }
}

/// The batch's one progress line on a terminal (music done / total, files
/// done / total), and the lines printed above it. Thread-safe: the workers
/// report and print, the main thread redraws.
final class BatchDisplay: Sendable {
    private struct State {
        var doneSeconds = 0.0
        var filesDone = 0
        /// Seconds of music done in the file each worker is rendering.
        var current: [Double]
        var drawn = false
    }
    let enabled: Bool
    let files: Int
    let totalSeconds: Double
    private let state: Locked<State>

    init(enabled: Bool, files: Int, totalSeconds: Double, workers: Int) {
        self.enabled = enabled
        self.files = files
        self.totalSeconds = totalSeconds
        state = Locked(State(current: Array(repeating: 0, count: workers)))
    }

    /// One line on standard error, above the progress line.
    func print(_ line: String) {
        state.withLock { s in
            let clear = s.drawn ? "\r\u{1B}[K" : ""
            writeStandardError((clear + line + "\n"))
            if s.drawn { draw(&s) }
        }
    }

    func update(slot: Int, seconds: Double) {
        state.withLock { $0.current[slot] = seconds }
    }

    /// A worker's file is finished (rendered or not): its whole length counts as done.
    func fileDone(slot: Int, estimate: Double) {
        state.withLock { s in
            s.current[slot] = 0
            s.doneSeconds += estimate
            s.filesDone += 1
        }
    }

    func draw() {
        guard enabled else { return }
        state.withLock { draw(&$0) }
    }

    private func draw(_ s: inout State) {
        guard enabled else { return }
        let done = min(totalSeconds, s.doneSeconds + s.current.reduce(0, +))
        let fraction = totalSeconds > 0 ? done / totalSeconds : Double(s.filesDone) / Double(max(files, 1))
        let line = "\r" + ProgressBar.bar(fraction) + "  " + Render.clock(done) + " / " + Render.clock(totalSeconds)
            + " of music, \(s.filesDone)/\(files) files\u{1B}[K"
        writeStandardError(line)
        s.drawn = true
    }

    func finish() {
        state.withLock { s in
            guard s.drawn else { return }
            writeStandardError("\r\u{1B}[K")
            s.drawn = false
        }
    }

    /// One file's render, reported into the batch's display.
    final class FileProgress: RenderProgress {
        let display: BatchDisplay
        let slot: Int
        let estimate: Double

        init(display: BatchDisplay, slot: Int, estimate: Double) {
            self.display = display
            self.slot = slot
            self.estimate = estimate
        }

        func start(musicSeconds: Double) {}
        func update(_ fraction: Double) { display.update(slot: slot, seconds: fraction * estimate) }
        func finish() {}
    }
}
