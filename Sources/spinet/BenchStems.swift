import FoundationEssentials
import Glibc
import SpinetSoundFont
import SpinetSupport

extension Bench {
    /// `spinet bench --stems`: what `--stems` costs. Each file is rendered
    /// on one thread, plainly and with `--stems`, alternating, `--runs`
    /// times each; the table gives the least CPU time (user and system) of
    /// each, the least being the run the machine disturbed least, and their
    /// ratio. Stems run every stem's own effects and write a file per stem.
    func stemsReport(files: [String], font: String) throws {
        let me = SoundFontLocator.executablePath()
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("spinet-bench-stems-\(getpid())")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        let out = scratch.appendingPathComponent("mix.wav").path, stemDirectory = scratch.appendingPathComponent("stems").path

        let header = "file                              music  stems     plain   --stems   ratio"
        Self.printTableHead(font: font, about: "CPU time (user + system) on one thread, the least of \(runs) alternated runs of each.",
                            columns: header)
        var totalPlain = 0.0, totalStems = 0.0
        for file in files {
            let render = ["render", file, "-o", out, "--force", "--quiet", "--soundfont", font, "--rate", "\(rate)", "--threads", "1"]
            var plain: [Measurement] = [], stems: [Measurement] = []
            var stemCount = 0
            for _ in 0..<runs {
                plain.append(try Self.measure(me, render))
                try? FileManager.default.removeItem(atPath: stemDirectory)
                stems.append(try Self.measure(me, render + ["--stems", stemDirectory]))
                stemCount = (try? FileManager.default.contentsOfDirectory(atPath: stemDirectory).count) ?? 0
            }
            let name = Self.rowName(file)
            if let failed = (plain + stems).first(where: { $0.exitStatus != 0 }) {
                print(name + "  spinet render failed (exit status \(failed.exitStatus))")
                continue
            }
            let music = musicSeconds(file)
            let p = plain.map(\.cpuSeconds).min()!, s = stems.map(\.cpuSeconds).min()!
            totalPlain += p
            totalStems += s
            print(name + formatted(" %6.1fs %6ld %8.2fs %8.2fs %6.2fx", music, stemCount, p, s, s / p))
        }
        print(String(repeating: "-", count: header.count))
        if totalPlain > 0 {
            print(formatted("all files                                      %8.2fs %8.2fs %6.2fx", totalPlain, totalStems, totalStems / totalPlain))
        }
    }
}
