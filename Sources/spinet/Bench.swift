import ArgumentParser
import FoundationEssentials
import Glibc
import Dispatch
import SpinetSupport
import SpinetEffects
import SpinetEngine
import SpinetFile
import SpinetRig
import SpinetMIDI
import SpinetSoundFont
import SpinetSynth

struct Bench: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Render MIDI files with Spinet and with FluidSynth, side by side, and compare.",
        discussion: """
        Each file is rendered --runs times by each renderer, alternating, on the \
        same SoundFont at the same rate (`fluidsynth -ni -F OUT -r RATE FONT FILE`, \
        Debian's fluidsynth). The table gives the median wall time, the ratio \
        (FluidSynth's time / Spinet's: above 1 means Spinet is faster) and the \
        peak resident memory of each. Spinet also renders each file on one \
        thread (--threads 1, in the same alternation): the last line compares \
        its own speed on every core with one. With no files it uses \
        demo/spinet-demo.mid and, where installed, the OpenMSX set (apt-get \
        install openttd-openmsx).
        """
    )

    @Argument(help: "MIDI files or directories of them.")
    var paths: [String] = []

    @Option(name: .customLong("soundfont"), help: ArgumentHelp("The SoundFont both renderers use.", valueName: "path"))
    var soundFont: String?

    @Option(help: "Renders per file and renderer (the median counts).")
    var runs: Int = 3

    @Option(help: "Sample rate in Hz.")
    var rate: Int = 48000

    @Option(help: "The peer to compare with.")
    var fluidsynth: String = "fluidsynth"

    @Flag(help: "Only the live figures (render-callback time per period, startup), not the file renders.")
    var realtimeOnly = false

    @Flag(help: "Only the file renders.")
    var filesOnly = false

    @Flag(help: ArgumentHelp("Only the render plans: each file's partitions, their estimated work, the serial share and the speedup the plan allows on 2 to 32 cores; then the files as a batch. Nothing is rendered unless --measure."))
    var plan = false

    @Flag(help: ArgumentHelp("With --plan: render each file with --threads 1, 2 and 16 (and the old fixed 2 partitions) to check the model here: wall and CPU times, the bytes compared."))
    var measure = false

    @Flag(help: ArgumentHelp("Only the stems figure: each file rendered on one thread, plainly and with --stems, alternating; the least CPU time of each and their ratio."))
    var stems = false

    @Option(help: "A large SoundFont for the startup figure.")
    var largeSoundFont: String = "/usr/share/sounds/sf2/FluidR3_GM.sf2"

    @Flag(help: ArgumentHelp("Only the JACK figures: the process callback's time per cycle (p50, p99, max % of the period) with 256 voices sounding, at 64 and 128 frames, each under a private jackd (dummy driver) that the bench starts and stops."))
    var jack = false

    @Option(help: ArgumentHelp("With --jack: cycles measured at each period.", valueName: "n"))
    var jackCycles: Int = 5000

    @Option(help: ArgumentHelp("With --jack: the private server's name.", valueName: "name"))
    var jackServer: String = "spinet-bench-\(getuid())"

    func run() throws {
        try reportingFailures {
            // the renders below are --quiet: say once here what of the font is damaged
            if let font = soundFont ?? SoundFontLocator.defaultSoundFont(), let d = SoundFontDiagnosis(path: font) {
                if d.nothingUsable { throw Failure("SoundFont \(font): \(d.refusal)") }
                if let w = d.warning { printError("spinet: warning: \(w)") }
            }
            if jack {
                guard let font = soundFont ?? SoundFontLocator.defaultSoundFont() else {
                    throw Failure("no SoundFont found; pass one with --soundfont PATH")
                }
                guard jackCycles >= 1 else { throw Failure("--jack-cycles must be at least 1") }
                try JACKBench.run(font: font, rate: rate, periods: [64, 128], cycles: jackCycles, server: jackServer, voices: 256)
                return
            }
            if plan {
                let (files, font) = try filesAndFont(to: "plan")
                try planReport(files: files, font: font)
                return
            }
            if measure { throw Failure("--measure goes with --plan") }
            if stems {
                let (files, font) = try filesAndFont(to: "render")
                try stemsReport(files: files, font: font)
                return
            }
            if !realtimeOnly { try bench() }
            if !filesOnly { try realtimeFigures() }
        }
    }

    /// Render-callback time per period with 256 voices sounding, and the time
    /// from nothing to the first rendered block.
    private func realtimeFigures() throws {
        guard let font = soundFont ?? SoundFontLocator.defaultSoundFont() else {
            throw Failure("no SoundFont found; pass one with --soundfont PATH")
        }
        print("\nRender callback, one SoundFont unit and Spinet's effects (play's default), 256 voices sounding, \(rate) Hz (time per period as % of the period):")
        print("period   p50      p99      max      (over 2000 periods)")
        for period in [64, 128, 256] {
            let stats = try Self.callbackTimes(font: font, rate: rate, period: period, voices: 256, periods: 2000)
            print(formatted("%5ld  %6.1f%%  %6.1f%%  %6.1f%%   voices %ld", period, stats.p50, stats.p99, stats.max, stats.voices))
        }
        print("\nThe plugin core (LV2 and CLAP) against play's graph, the same load, 128-frame periods:")
        let live = try Self.callbackTimes(font: font, rate: rate, period: 128, voices: 256, periods: 2000)
        let plugin = try Self.pluginCallbackTimes(font: font, rate: rate, period: 128, voices: 256, periods: 2000)
        for (name, s) in [("spinet play's graph", live), ("plugin instance    ", plugin)] {
            print("  " + name + formatted("  p50 %5.1f%%  p99 %5.1f%%  max %5.1f%%  voices %ld  CPU per voice %.1f ns per frame",
                            s.p50, s.p99, s.max, s.voices, Self.nanosecondsPerVoiceFrame(s, rate: rate)))
        }
        let synth = SynthBenchmark.voicesPerCore(sampleRate: Double(rate), seconds: 2)
        print(formatted("\nOscillator synth (2 oscillators, filter, 2 envelopes, LFO per voice): %.0f voices per core in real time, %.2f ns per voice-sample",
                     synth.voicesPerCore, synth.nsPerVoiceSample))
        let sending = SynthBenchmark.voicesPerCore(sampleRate: Double(rate), seconds: 2, voices: 512, sends: (reverb: 40, chorus: 0, delay: 0))
        print(formatted("  with the default reverb send (CC 91 = 40): %.0f voices per core, %.2f ns per voice-sample",
                     sending.voicesPerCore, sending.nsPerVoiceSample))
        print("\nEffects, CPU time per second of 48 kHz stereo audio (256-frame blocks of noise):")
        for (name, microseconds) in EffectsBenchmark.costPerSecondOfAudio(sampleRate: Double(rate)) {
            print(formatted("%8.0f µs  ", microseconds) + name)
        }
        print("\nWhat the render path must never do (allocate, free, lock, make a system call), counted by spinet-rtcheck:")
        realtimeRules(font: font)
        print("\nStartup to the first rendered block (load + prepare + one 128-frame period):")
        for path in [font, largeSoundFont] where FileManager.default.fileExists(atPath: path) {
            let t0 = DispatchTime.now().uptimeNanoseconds
            let unit = try SoundFontUnit(fonts: [path], sampleRate: Double(rate))
            let engine = Engine()
            engine.routeAll(to: engine.add(unit))
            _ = engine.addInput()
            engine.prepare(sampleRate: Double(rate), maxFrames: 128)
            var l = [Float](repeating: 0, count: 128), r = l
            engine.render(frames: 128, left: &l, right: &r)
            let ms = Double(DispatchTime.now().uptimeNanoseconds - t0) / 1e6
            var st = stat()
            let size = stat(path, &st) == 0 ? Int(st.st_size) / 1_000_000 : 0
            print(formatted("%8.1f ms  ", ms) + "\(path) (\(size) MB)")
        }
    }

    /// Runs spinet-rtcheck (built beside this executable), which counts
    /// allocations, frees, lock calls and system calls per render cycle
    /// with interposed malloc and lock functions that `spinet` itself does
    /// not carry.
    private func realtimeRules(font: String) {
        let here = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
        let checker = here.appendingPathComponent("spinet-rtcheck").path
        guard FileManager.default.isExecutableFile(atPath: checker) else {
            print("  not measured: \(checker) is missing (swift build -c release builds it)")
            return
        }
        fflush(nil)   // flush our buffered lines first: its lines go between ours
        do {
            let status = try Self.run(checker, [font, "--period", "128", "--cycles", "2000"], quiet: false).exitStatus
            if status == 1 { print("  FAILED: the render path allocated, locked or made a system call (above)") }
            else if status != 0 { print("  not measured: spinet-rtcheck exited with status \(status)") }
        } catch {
            print("  not measured: \((error as? Failure)?.message ?? "\(error)")")
        }
    }

    struct CallbackStats { var p50, p99, max: Double; var voices: Int }

    /// `spinet play`'s graph (GraphBuilder.live) with its default effects
    /// (per-channel sends into Spinet's reverb, chorus and delay), room for
    /// `voices` voices twice over: what the live figures measure.
    static func playGraph(font: String, rate: Int, voices: Int) throws -> EngineGraph {
        var settings = GraphSettings()
        settings.soundFont.polyphony = voices * 2
        settings.soundFont.fluidEffects = false
        settings.engine.reverb = .room
        settings.engine.chorus = .subtle
        settings.engine.delay = .eighth
        return try orFailure { try GraphBuilder.live(settings, fonts: [font], rate: Double(rate)) }
    }

    /// Drives the engine like the live callback: one period at a time, notes
    /// held on every channel, timing each render call.
    static func callbackTimes(font: String, rate: Int, period: Int, voices: Int, periods: Int) throws -> CallbackStats {
        let graph = try playGraph(font: font, rate: rate, voices: voices)
        let engine = graph.engine
        let queue = graph.inputs[0]
        engine.prepare(sampleRate: Double(rate), maxFrames: period)
        return try heldNoteTimes(rate: rate, period: period, voices: voices, periods: periods,
                                 send: { m in _ = queue.push(EngineEvent(frame: engine.frameTime, m)) },
                                 activeVoices: { engine.statistics.activeVoices },
                                 render: { l, r in engine.render(frames: period, left: l, right: r) })
    }

    /// The load both live figures put on a graph: Program Changes to
    /// sustained programs (strings, organ, pads) on every channel but the
    /// drums, then one held note per period until `voices` voices sound
    /// (stereo samples take two per note), 50 periods to settle, then
    /// `periods` timed calls of `render`. `send` hands over a message for
    /// the next `render`.
    static func heldNoteTimes(rate: Int, period: Int, voices: Int, periods: Int, send: (MIDIMessage) -> Void,
                              activeVoices: () -> Int,
                              render: (UnsafeMutablePointer<Float>, UnsafeMutablePointer<Float>) -> Void) throws -> CallbackStats {
        let programs: [UInt8] = [48, 49, 19, 16, 89, 90, 52, 50, 48, 0, 19, 49, 89, 16, 52, 91]
        for ch in 0..<16 where ch != 9 { send(.programChange(channel: UInt8(ch), program: programs[ch])) }
        var l = [Float](repeating: 0, count: period), r = l
        return try l.withUnsafeMutableBufferPointer { lp in
            try r.withUnsafeMutableBufferPointer { rp in
                let left = lp.baseAddress!, right = rp.baseAddress!
                var key = 0
                var attempts = 0
                while activeVoices() < voices && attempts < 4 * voices {
                    let n = key / 7
                    let ch = UInt8(n % 15 < 9 ? n % 15 : n % 15 + 1)
                    send(.noteOn(channel: ch, key: UInt8(36 + key % 60), velocity: 90))
                    render(left, right)
                    key += 7
                    attempts += 1
                }
                for _ in 0..<50 { render(left, right) }
                var times: [Double] = []
                times.reserveCapacity(periods)
                var peakVoices = 0
                for _ in 0..<periods {
                    let t0 = DispatchTime.now().uptimeNanoseconds
                    render(left, right)
                    times.append(Double(DispatchTime.now().uptimeNanoseconds - t0))
                    peakVoices = max(peakVoices, activeVoices())
                }
                if times.isEmpty { throw Failure("no periods rendered") }
                let periodNs = Double(period) / Double(rate) * 1e9
                let sorted = times.sorted()
                func pct(_ q: Double) -> Double { sorted[min(sorted.count - 1, Int(q * Double(sorted.count)))] / periodNs * 100 }
                return CallbackStats(p50: pct(0.5), p99: pct(0.99), max: sorted.last! / periodNs * 100, voices: peakVoices)
            }
        }
    }

    static let openMSX = "/usr/share/games/openttd/baseset/openmsx"

    /// The files to `verb` and the SoundFont, or the one-line error that
    /// names what is missing (and --runs checked).
    func filesAndFont(to verb: String) throws -> (files: [String], font: String) {
        guard runs >= 1 else { throw Failure("--runs must be at least 1") }
        let files = try collectFiles()
        guard !files.isEmpty else { throw Failure("no MIDI files to \(verb); pass files or directories") }
        guard let font = soundFont ?? SoundFontLocator.defaultSoundFont() else {
            throw Failure("no SoundFont found; pass one with --soundfont PATH")
        }
        return (files, font)
    }

    /// A table row's first column: the file's name, cut to 32 characters and padded to them.
    static func rowName(_ file: String) -> String {
        String(URL(fileURLWithPath: file).lastPathComponent.prefix(32)).padded(to: 32)
    }

    /// The file's music in seconds at `rate` (0 when it cannot be read).
    func musicSeconds(_ file: String) -> Double {
        (try? MIDIFile(path: file)).map { Double($0.schedule(sampleRate: rate).endFrame) / Double(rate) } ?? 0
    }

    /// The lines above a table: the font, the machine, what the figures
    /// are, the column heads and a rule.
    static func printTableHead(font: String, about: String, columns: String) {
        print("SoundFont: \(font)")
        print("Machine: \(machine())")
        if !about.isEmpty { print(about + "\n") }
        print(columns)
        print(String(repeating: "-", count: columns.count))
    }

    private func bench() throws {
        let (files, font) = try filesAndFont(to: "render")
        guard let peer = Self.which(fluidsynth) else {
            throw Failure("\(fluidsynth) not found; install it (sudo apt-get install fluidsynth) or pass --fluidsynth PATH")
        }
        let me = SoundFontLocator.executablePath()
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("spinet-bench-\(getpid())")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        let out = scratch.appendingPathComponent("out.wav").path

        let header = "file                              music    spinet  fluidsynth   ratio  spinet RSS  fluid RSS  1 thread"
        Self.printTableHead(font: font, about: "Each figure is the median of \(runs) runs; renderers alternate.", columns: header)
        var totalSpinet = 0.0, totalPeer = 0.0, totalMusic = 0.0, totalOne = 0.0
        var ratios: [Double] = []
        for file in files {
            let music = musicSeconds(file)
            var spinetRuns: [Measurement] = [], peerRuns: [Measurement] = [], oneRuns: [Measurement] = []
            let render = ["render", file, "-o", out, "--force", "--quiet", "--soundfont", font, "--rate", "\(rate)"]
            for _ in 0..<runs {
                spinetRuns.append(try Self.measure(me, render))
                peerRuns.append(try Self.measure(peer, ["-ni", "-q", "-F", out, "-r", "\(rate)", font, file]))
                oneRuns.append(try Self.measure(me, render + ["--threads", "1"]))
            }
            let s = Self.median(spinetRuns.map(\.seconds)), p = Self.median(peerRuns.map(\.seconds))
            let one = Self.median(oneRuns.map(\.seconds))
            let sRSS = spinetRuns.map(\.maxRSSKB).max() ?? 0, pRSS = peerRuns.map(\.maxRSSKB).max() ?? 0
            let failed = (spinetRuns + oneRuns).contains { $0.status != 0 } ? " (spinet failed)" : peerRuns.contains { $0.status != 0 } ? " (fluidsynth failed)" : ""
            totalSpinet += s; totalPeer += p; totalMusic += music; totalOne += one
            ratios.append(p / s)
            print(Self.rowName(file) + formatted(" %6.1fs %8.2fs %10.2fs %6.2fx %8.1f MB %8.1f MB %8.2fs",
                                     music, s, p, p / s, Double(sRSS) / 1024, Double(pRSS) / 1024, one) + failed)
        }
        print(String(repeating: "-", count: header.count))
        let geo = exp(ratios.map { log($0) }.reduce(0, +) / Double(ratios.count))
        print(formatted("aggregate (%ld files)               %6.0fs %8.2fs %10.2fs %6.2fx   (geometric mean of ratios %.2fx)",
                     files.count, totalMusic, totalSpinet, totalPeer, totalPeer / totalSpinet, geo))
        print(formatted("speed: Spinet %.1fx real time, FluidSynth %.1fx real time",
                     totalMusic / totalSpinet, totalMusic / totalPeer))
        print(formatted("threads: Spinet %.2fs on one thread, %.2fs on %ld (its default here): %.2fx",
                     totalOne, totalSpinet, Render.defaultThreads, totalOne / totalSpinet))
    }

    private func collectFiles() throws -> [String] {
        var list: [String] = []
        var inputs = paths
        if inputs.isEmpty {
            let demo = URL(fileURLWithPath: SoundFontLocator.executablePath())
                .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
                .appendingPathComponent("demo/spinet-demo.mid").path
            if FileManager.default.fileExists(atPath: demo) { inputs.append(demo) }
            if FileManager.default.fileExists(atPath: Self.openMSX) { inputs.append(Self.openMSX) }
        }
        for p in inputs {
            guard let directory = isDirectory(p) else {
                throw Failure("\(p): no such file or directory")
            }
            if directory {
                let names = (try FileManager.default.contentsOfDirectory(atPath: p)).sorted()
                list += names.filter { ["mid", "midi", "kar", "rmi"].contains(URL(fileURLWithPath: $0).pathExtension.lowercased()) }
                    .map { "\(p)/\($0)" }
            } else {
                list.append(p)
            }
        }
        return list
    }

    struct Measurement {
        var seconds: Double
        var maxRSSKB: Int
        var status: Int32
        /// User and system CPU time of the process and what it waited for.
        var cpuSeconds = 0.0
        /// The exit status, or 128 + the signal that ended it.
        var exitStatus: Int32 { status & 0x7f == 0 ? (status >> 8) & 0xff : 128 + status & 0x7f }
    }

    /// Runs a command with its output discarded; wall time and peak RSS from wait4.
    static func measure(_ program: String, _ arguments: [String]) throws -> Measurement {
        try run(program, arguments, quiet: true)
    }

    /// Runs a command, its output discarded when `quiet` (else on ours),
    /// and waits for it.
    static func run(_ program: String, _ arguments: [String], quiet: Bool) throws -> Measurement {
        var descriptors: [ChildProcess.Descriptor] = [.open(0, path: "/dev/null", flags: O_RDONLY)]
        if quiet { descriptors += [.open(1, path: "/dev/null", flags: O_WRONLY), .open(2, path: "/dev/null", flags: O_WRONLY)] }
        let start = DispatchTime.now().uptimeNanoseconds
        let pid: pid_t
        switch ChildProcess.spawn(program, arguments, descriptors: descriptors) {
        case .success(let p): pid = p
        case .failure(let error): throw Failure("cannot run \(program): \(error)")
        }
        var status: Int32 = 0
        var usage = rusage()
        while wait4(pid, &status, 0, &usage) < 0 && errno == EINTR {}
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        let cpu = Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
        return Measurement(seconds: seconds, maxRSSKB: usage.ru_maxrss, status: status, cpuSeconds: cpu)
    }

    static func median(_ xs: [Double]) -> Double {
        let s = xs.sorted()
        return s.count % 2 == 1 ? s[s.count / 2] : (s[s.count / 2 - 1] + s[s.count / 2]) / 2
    }

    static func which(_ name: String) -> String? {
        if name.contains("/") { return FileManager.default.isExecutableFile(atPath: name) ? name : nil }
        for dir in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":") {
            let p = "\(dir)/\(name)"
            if FileManager.default.isExecutableFile(atPath: p) { return p }
        }
        return nil
    }

    static func machine() -> String {
        let cpu = (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8))?
            .split(separator: "\n").first { $0.hasPrefix("model name") }
            .map { $0.split(separator: ":", maxSplits: 1).last.map { $0.trimmingSpaces } ?? "" } ?? "unknown CPU"
        return "\(cpu), \(ProcessInfo.processInfo.activeProcessorCount) cores"
    }
}
