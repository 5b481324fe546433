import Foundation
import Testing
import SpinetMIDI
import SpinetTestSupport

@Suite("spinet render --mute/--solo")
struct MuteSoloCommandTests {
    /// Channel 1 plays a note from 0.5 s to 1.0 s, channel 2 from 2.0 s to 2.5 s.
    static func twoChannels() -> [UInt8] {
        var w = MIDIFileWriter(format: 0, ticksPerQuarter: 480)   // 120 bpm: 960 ticks a second
        w.addTrack([
            (480, .message(.noteOn(channel: 0, key: 60, velocity: 110))),
            (960, .message(.noteOff(channel: 0, key: 60, velocity: 0))),
            (1920, .message(.noteOn(channel: 1, key: 67, velocity: 110))),
            (2400, .message(.noteOff(channel: 1, key: 67, velocity: 0))),
        ])
        return w.bytes()
    }

    /// dBFS RMS of the left channel in the notes' windows [0.55, 0.95] s and [2.05, 2.45] s.
    static func levels(_ extra: [String], in dir: URL, _ name: String) throws -> (first: Float, second: Float) {
        let input = try write(twoChannels(), to: dir, "two.mid")
        let out = dir.appendingPathComponent(name).path
        let r = try SpinetCommand.run(["render", input, "-o", out, "--soundfont", font, "--quiet", "--force"] + extra)
        #expect(r.status == 0, "\(r.stderr)")
        let x = try WAVFile(data: Data(contentsOf: URL(fileURLWithPath: out))).channel(0)
        func db(_ a: Double, _ b: Double) -> Float {
            SignalAnalysis.dBFS(SignalAnalysis.rms(x[min(Int(a * 48000), x.count)..<min(Int(b * 48000), x.count)]))
        }
        return (db(0.55, 0.95), db(2.05, 2.45))
    }

    @Test func muteAndSoloSilenceChannels() throws {
        let dir = try SpinetCommand.temporaryDirectory("mute-solo")
        let all = try Self.levels([], in: dir, "all.wav")
        #expect(all.first > -40 && all.second > -40, "\(all)")
        let muted = try Self.levels(["--mute", "2"], in: dir, "mute.wav")
        #expect(abs(muted.first - all.first) < 0.5, "\(muted) vs \(all)")
        #expect(muted.second < all.second - 40, "\(muted) vs \(all)")
        let solo = try Self.levels(["--solo", "2"], in: dir, "solo.wav")
        #expect(solo.first < all.first - 40, "\(solo) vs \(all)")
        #expect(abs(solo.second - all.second) < 0.5, "\(solo) vs \(all)")
    }

    @Test(arguments: [["--mute", "17"], ["--solo", "x"], ["--mute", "1,,2"], ["--solo", "0"]])
    func badChannelsAreRefusedBeforeAnyWork(extra: [String]) throws {
        let dir = try SpinetCommand.temporaryDirectory("mute-solo-bad")
        let input = try write(Self.twoChannels(), to: dir, "two.mid")
        let r = try SpinetCommand.run(["render", input, "-o", dir.appendingPathComponent("x.wav").path, "--soundfont", font] + extra)
        #expect(r.status == 1)
        #expect(r.stderr.contains(extra[0]) && r.stderr.split(separator: "\n").count == 1, "\(r.stderr)")
        #expect(!listing(dir).contains { $0.hasSuffix(".wav") })
    }
}
