import Foundation
import Glibc
import Testing
import SpinetMIDI
import SpinetTestSupport

// `--polyphony` times the SoundFont players a render runs is what
// FluidSynth preallocates: beyond the budget (4 GB at 10,900 bytes a voice)
// a render is refused before any work. A single render's plan keeps its
// players within the budget (`RenderPlan`); a batch counts every file it
// renders at once.

@Suite("spinet render --polyphony: the voice memory budget", .serialized)
struct VoiceMemoryCommandTests {
    /// A second of one note on each of `channels` channels (none the drum channel).
    static func file(channels: Int, in dir: URL) throws -> URL {
        var w = MIDIFileWriter(format: 0, ticksPerQuarter: 480)
        var e: [(tick: Int64, event: TrackEvent.Kind)] = []
        for c in (0..<16).filter({ $0 != 9 }).prefix(channels) {
            e.append((0, .message(.noteOn(channel: UInt8(c), key: UInt8(48 + c), velocity: 90))))
            e.append((960, .message(.noteOff(channel: UInt8(c), key: UInt8(48 + c), velocity: 0))))
        }
        w.addTrack(e)
        let url = dir.appendingPathComponent("chan\(channels).mid")
        try Data(w.bytes()).write(to: url)
        return url
    }

    /// Stems add no player: each channel's stem is that channel's output of
    /// the players a plain render runs, so 12 stems at the most voices a
    /// player may have render on the one player a light file's plan gives
    /// (about 0.7 GB of voices; one player per stem would be 8.0 GB, over
    /// the budget), and every stem is written.
    @Test(arguments: [(12, 65535), (7, 65535)])
    func stemsAtTheMostVoicesRenderOnThePlainRendersPlayers(stems: Int, polyphony: Int) throws {
        let dir = try SpinetCommand.temporaryDirectory("voice-memory")
        defer { try? FileManager.default.removeItem(at: dir) }
        let input = try Self.file(channels: stems, in: dir)
        let r = try SpinetCommand.run(["render", input.path, "-o", dir.appendingPathComponent("mix.wav").path,
                                       "--stems", dir.appendingPathComponent("stems").path,
                                       "--soundfont", font, "--polyphony", "\(polyphony)"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stderr.contains("1 partition on 1 thread"), "\(r.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.appendingPathComponent("stems").path).count == stems)
    }

    /// A polyphony well within the budget renders the mix and every stem.
    @Test func withinTheBudgetItRenders() throws {
        let dir = try SpinetCommand.temporaryDirectory("voice-memory-ok")
        defer { try? FileManager.default.removeItem(at: dir) }
        let input = try Self.file(channels: 3, in: dir)
        let r = try SpinetCommand.run(["render", input.path, "-o", dir.appendingPathComponent("mix.wav").path,
                                       "--stems", dir.appendingPathComponent("stems").path,
                                       "--soundfont", font, "--polyphony", "4096", "-q"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(FileManager.default.fileExists(atPath: dir.appendingPathComponent("mix.wav").path))
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.appendingPathComponent("stems").path).count == 3)
    }

    /// A batch renders `--jobs` files at once, each with its players: the
    /// budget is for all of them. Refused before any work (no output folder),
    /// naming --jobs; the same files one at a time fit.
    @Test func aBatchCountsEveryFileRenderedAtOnce() throws {
        let dir = try SpinetCommand.temporaryDirectory("voice-memory-jobs")
        defer { try? FileManager.default.removeItem(at: dir) }
        var inputs: [String] = []
        for n in 1...8 {
            let url = try Self.file(channels: n, in: dir)
            inputs.append(url.path)
        }
        let out = dir.appendingPathComponent("out")
        let started = Date()
        let r = try SpinetCommand.run(["render"] + inputs + ["-o", out.path + "/", "--jobs", "8", "--soundfont", font,
                                                              "--polyphony", "65535"])
        #expect(r.status == 1)
        #expect(r.stderr.contains("--polyphony 65535 on 8 SoundFont players") && r.stderr.contains("8 files rendered at once"),
                "\(r.stderr)")
        #expect(r.stderr.contains("use --polyphony 49254 or less"), "\(r.stderr)")
        #expect(Date().timeIntervalSince(started) < 10)
        #expect(!FileManager.default.fileExists(atPath: out.path), "nothing made before the refusal")
        // one file at a time, a plain render: 2 players of 65535 voices (1.4 GB) fit
        let one = try SpinetCommand.run(["render", inputs[0], "-o", dir.appendingPathComponent("one.wav").path, "--jobs", "1",
                                         "--soundfont", font, "--polyphony", "20000", "-q"])
        #expect(one.status == 0, "\(one.stderr)")
    }
}
