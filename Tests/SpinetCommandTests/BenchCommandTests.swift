import Foundation
import Testing
import SpinetTestSupport

@Suite("spinet bench")
struct BenchCommandTests {
    /// The file table has Spinet's time on every core and on one thread,
    /// and the last line compares them (the peer here is /bin/true: only
    /// Spinet's figures are checked).
    @Test func theFileTableComparesSpinetsThreads() throws {
        let dir = try SpinetCommand.temporaryDirectory("bench")
        defer { try? FileManager.default.removeItem(at: dir) }
        let input = try write(arpeggio(seconds: 4), to: dir, "arpeggio.mid")
        let r = try SpinetCommand.run(["bench", "--files-only", "--runs", "1", "--fluidsynth", "/bin/true", "--soundfont", font, input])
        #expect(r.status == 0, "\(r.stderr)")
        let lines = String(decoding: r.stdout, as: UTF8.self).split(separator: "\n").map(String.init)
        let row = try #require(lines.first { $0.hasPrefix("arpeggio.mid") })
        // music, spinet, fluidsynth, ratio, RSS MB x2, one thread: the last column is seconds
        let oneThread = try #require(row.split(separator: " ").last.flatMap { Double($0.dropLast()) })
        #expect(oneThread > 0 && row.hasSuffix("s"))
        let threads = try #require(lines.first { $0.hasPrefix("threads: Spinet ") })
        let ratio = try #require(threads.split(separator: " ").last.flatMap { Double($0.dropLast()) })
        #expect(ratio > 0.2 && ratio < 10, "\(threads)")
    }

    /// `bench --plan`: one row per file with its partitions, serial share
    /// and the speedups on 2 to 32 cores (never down as cores grow, never
    /// above the cores), then the batch row; nothing rendered.
    @Test func thePlanTableHasARowPerFileAndSaneSpeedups() throws {
        let dir = try SpinetCommand.temporaryDirectory("bench-plan")
        defer { try? FileManager.default.removeItem(at: dir) }
        let light = try write(arpeggio(seconds: 4), to: dir, "light.mid")
        let dense = try write(denseSong(seconds: 6, channels: 8), to: dir, "dense.mid")
        let r = try SpinetCommand.run(["bench", "--plan", "--soundfont", font, light, dense])
        #expect(r.status == 0, "\(r.stderr)")
        let lines = String(decoding: r.stdout, as: UTF8.self).split(separator: "\n").map(String.init)
        #expect(lines.contains { $0.hasPrefix("file") && $0.contains("parts") && $0.contains("serial") && $0.contains("32") })
        var rows: [String: [Substring]] = [:]
        for name in ["light.mid", "dense.mid", "batch (2 files)"] {
            let matching = lines.filter { $0.hasPrefix(name) }
            #expect(matching.count == 1, "\(name): \(lines)")
            rows[name] = matching.first.map { $0.dropFirst(name.count).split(separator: " ") } ?? []
        }
        for (name, row) in rows {
            // music, voices, parts, serial %, five speedups
            #expect(row.count >= 9, "\(name): \(row)")
            guard row.count >= 9 else { continue }
            let parts = Int(row[2]) ?? 0
            let serial = Double(row[3].dropLast()) ?? -1
            #expect(parts >= 1 && serial > 0 && serial < 100, "\(name): \(row)")
            var last = 1.0
            for (cores, cell) in zip([2, 4, 8, 16, 32], row[4..<9]) {
                let s = Double(cell.dropLast()) ?? 0
                #expect(cell.hasSuffix("x") && s >= last - 0.005 && s <= Double(cores) + 0.005, "\(name), \(cores) cores: \(row)")
                last = s
            }
        }
        #expect(rows["light.mid"].map { $0.count > 2 ? $0[2] : "" } == "1")
        #expect(rows["light.mid"].map { $0.count > 8 ? $0[4...8].allSatisfy { $0 == "1.00x" } : false } == true)
        let denseParts = rows["dense.mid"].flatMap { $0.count > 2 ? Int($0[2]) : nil } ?? 0
        #expect(denseParts > 2)
        // the dense file's speedup on 8 cores is well above one
        #expect(rows["dense.mid"].flatMap { $0.count > 6 ? Double($0[6].dropLast()) : nil } ?? 0 > 2)
        // one partition's work per column: as many numbers as partitions
        #expect(rows["dense.mid"].map { $0.count - 9 } == denseParts)
    }

    /// `bench --stems`: a row per file with its stem count and the CPU time
    /// of the plain and the --stems render on one thread; the stems cost
    /// more than the plain render (their effects and files), and less than
    /// a render per stem.
    @Test func theStemsTableComparesStemsWithThePlainRender() throws {
        let dir = try SpinetCommand.temporaryDirectory("bench-stems")
        defer { try? FileManager.default.removeItem(at: dir) }
        let dense = try write(denseSong(seconds: 6, channels: 8), to: dir, "dense.mid")
        let r = try SpinetCommand.run(["bench", "--stems", "--runs", "1", "--soundfont", font, dense])
        #expect(r.status == 0, "\(r.stderr)")
        let lines = String(decoding: r.stdout, as: UTF8.self).split(separator: "\n").map(String.init)
        let row = try #require(lines.first { $0.hasPrefix("dense.mid") }).dropFirst("dense.mid".count).split(separator: " ")
        // music, stems, plain, --stems, ratio
        try #require(row.count == 5, "\(row)")
        #expect(Int(row[1]) == 8, "\(row)")
        let plain = Double(row[2].dropLast()) ?? 0, stems = Double(row[3].dropLast()) ?? 0, ratio = Double(row[4].dropLast()) ?? 0
        #expect(plain > 0 && stems > plain, "\(row)")
        #expect(ratio > 1 && ratio < 8 && abs(ratio - stems / plain) < 0.05 * ratio, "\(row)")
        #expect(lines.contains { $0.hasPrefix("all files") })
    }
}
