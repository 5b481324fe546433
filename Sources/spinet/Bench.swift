import ArgumentParser
import Foundation
import Glibc
import SpinetFile
import SpinetMIDI

struct Bench: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Render MIDI files with Spinet and with FluidSynth, side by side, and compare.",
        discussion: """
        Each file is rendered --runs times by each renderer, alternating, on the \
        same SoundFont at the same rate (`fluidsynth -ni -F OUT -r RATE FONT FILE`, \
        Debian's fluidsynth). The table gives the median wall time, the ratio \
        (FluidSynth's time / Spinet's: above 1 means Spinet is faster) and the \
        peak resident memory of each. With no files it uses demo/spinet-demo.mid \
        and, where installed, the OpenMSX set (apt-get install openttd-openmsx).
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

    func run() throws {
        try reportingFailures(bench)
    }

    static let openMSX = "/usr/share/games/openttd/baseset/openmsx"

    private func bench() throws {
        guard runs >= 1 else { throw Failure("--runs must be at least 1") }
        let files = try collectFiles()
        guard !files.isEmpty else { throw Failure("no MIDI files to render; pass files or directories") }
        guard let font = soundFont ?? SoundFontLocator.defaultSoundFont() else {
            throw Failure("no SoundFont found; pass one with --soundfont PATH")
        }
        guard let peer = Self.which(fluidsynth) else {
            throw Failure("\(fluidsynth) not found; install it (sudo apt-get install fluidsynth) or pass --fluidsynth PATH")
        }
        let me = SoundFontLocator.executablePath()
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("spinet-bench-\(getpid())")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        let out = scratch.appendingPathComponent("out.wav").path

        print("SoundFont: \(font)")
        print("Machine: \(Self.machine())")
        print("Each figure is the median of \(runs) runs; renderers alternate.\n")
        let header = "file                              music    spinet  fluidsynth   ratio  spinet RSS  fluid RSS"
        print(header)
        print(String(repeating: "-", count: header.count))
        var totalSpinet = 0.0, totalPeer = 0.0, totalMusic = 0.0
        var ratios: [Double] = []
        for file in files {
            let music = (try? MIDIFile(path: file)).map { Double($0.schedule(sampleRate: rate).endFrame) / Double(rate) } ?? 0
            var spinetRuns: [Measurement] = [], peerRuns: [Measurement] = []
            for _ in 0..<runs {
                spinetRuns.append(try Self.measure(me, ["render", file, "-o", out, "--force", "--quiet", "--soundfont", font, "--rate", "\(rate)"]))
                peerRuns.append(try Self.measure(peer, ["-ni", "-q", "-F", out, "-r", "\(rate)", font, file]))
            }
            let s = Self.median(spinetRuns.map(\.seconds)), p = Self.median(peerRuns.map(\.seconds))
            let sRSS = spinetRuns.map(\.maxRSSKB).max() ?? 0, pRSS = peerRuns.map(\.maxRSSKB).max() ?? 0
            let failed = spinetRuns.contains { $0.status != 0 } ? " (spinet failed)" : peerRuns.contains { $0.status != 0 } ? " (fluidsynth failed)" : ""
            totalSpinet += s; totalPeer += p; totalMusic += music
            ratios.append(p / s)
            let name = URL(fileURLWithPath: file).lastPathComponent
            print(String(format: "%-32@ %6.1fs %8.2fs %10.2fs %6.2fx %8.1f MB %8.1f MB%@",
                         String(name.prefix(32)) as NSString, music, s, p, p / s, Double(sRSS) / 1024, Double(pRSS) / 1024, failed))
        }
        print(String(repeating: "-", count: header.count))
        let geo = exp(ratios.map { log($0) }.reduce(0, +) / Double(ratios.count))
        print(String(format: "aggregate (%d files)               %6.0fs %8.2fs %10.2fs %6.2fx   (geometric mean of ratios %.2fx)",
                     files.count, totalMusic, totalSpinet, totalPeer, totalPeer / totalSpinet, geo))
        print(String(format: "speed: Spinet %.1fx real time, FluidSynth %.1fx real time",
                     totalMusic / totalSpinet, totalMusic / totalPeer))
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
            var isDir: ObjCBool = false
            guard FileManager.default.fileExists(atPath: p, isDirectory: &isDir) else {
                throw Failure("\(p): no such file or directory")
            }
            if isDir.boolValue {
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
    }

    /// Runs a command with its output discarded; wall time and peak RSS from wait4.
    static func measure(_ program: String, _ arguments: [String]) throws -> Measurement {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        let argv = ([program] + arguments).map { strdup($0) } + [nil]
        defer { for p in argv { free(p) } }
        var pid: pid_t = 0
        let start = DispatchTime.now().uptimeNanoseconds
        let rc = posix_spawn(&pid, program, &actions, nil, argv, environ)
        guard rc == 0 else { throw Failure("cannot run \(program): \(String(cString: strerror(rc)))") }
        var status: Int32 = 0
        var usage = rusage()
        while wait4(pid, &status, 0, &usage) < 0 && errno == EINTR {}
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        return Measurement(seconds: seconds, maxRSSKB: usage.ru_maxrss, status: status)
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
            .map { $0.split(separator: ":", maxSplits: 1).last.map { $0.trimmingCharacters(in: .whitespaces) } ?? "" } ?? "unknown CPU"
        return "\(cpu ?? "unknown CPU"), \(ProcessInfo.processInfo.activeProcessorCount) cores"
    }
}
