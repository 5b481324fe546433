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
}
