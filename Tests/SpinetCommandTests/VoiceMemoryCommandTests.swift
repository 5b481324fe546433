import Foundation
import Glibc
import Testing
import SpinetMIDI
import SpinetTestSupport

// `--polyphony` times the SoundFont players a render runs (one per stem)
// is what FluidSynth preallocates: beyond the budget (4 GB at 10,900 bytes
// a voice) a render is refused before any work.

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

    /// Refused at once (no player loaded, nothing written: the folder holds
    /// only the input), status 1, one line naming the polyphony, the
    /// players, the memory, the limit and the largest polyphony that fits.
    @Test(arguments: [(12, 65535, "8.0", 32836), (7, 65535, "4.7", 56290), (12, 32837, "4.1", 32836)])
    func beyondTheBudgetIsRefusedBeforeAnyWork(stems: Int, polyphony: Int, gigabytes: String, largest: Int) throws {
        let dir = try SpinetCommand.temporaryDirectory("voice-memory")
        defer { try? FileManager.default.removeItem(at: dir) }
        let input = try Self.file(channels: stems, in: dir)
        let started = Date()
        let r = try SpinetCommand.run(["render", input.path, "-o", dir.appendingPathComponent("mix.wav").path,
                                       "--stems", dir.appendingPathComponent("stems").path,
                                       "--soundfont", font, "--polyphony", "\(polyphony)"])
        let seconds = Date().timeIntervalSince(started)
        #expect(r.status == 1)
        #expect(r.stderr == "spinet: --polyphony \(polyphony) on \(stems) SoundFont players (one per stem) needs about \(gigabytes) GB "
                + "of voice memory (each preallocates all its voices); the limit is 4 GB; use --polyphony \(largest) or less\n")
        #expect(seconds < 10, "refused after \(seconds) s")
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path) == [input.lastPathComponent])
    }

    /// The largest polyphony the message names fits; a polyphony well within
    /// the budget renders the mix and every stem.
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
