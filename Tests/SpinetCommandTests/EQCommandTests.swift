import Foundation
import Testing
import SpinetTestSupport

@Suite("spinet render: master EQ and effect settings")
struct EQCommandTests {
    /// The first note's level (dBFS RMS) rendered with these options.
    static func level(_ extra: [String], in dir: URL, _ name: String) throws -> Float {
        try MuteSoloCommandTests.levels(["--dry"] + extra, in: dir, name).first
    }

    @Test func theHighPassAndShelvesChangeTheLevel() throws {
        let dir = try SpinetCommand.temporaryDirectory("eq")
        let plain = try Self.level([], in: dir, "plain.wav")
        #expect(plain > -40)
        // middle C's fundamental and first harmonics sit far below 2 kHz
        let highPassed = try Self.level(["--highpass", "2000"], in: dir, "hp.wav")
        #expect(highPassed < plain - 10, "\(highPassed) vs \(plain)")
        let boosted = try Self.level(["--low-shelf", "+6@2000"], in: dir, "low.wav")
        #expect(boosted > plain + 4, "\(boosted) vs \(plain)")
        let highCut = try Self.level(["--high-shelf", "-12dB@10000Hz"], in: dir, "high.wav")
        #expect(abs(highCut - plain) < 1.5, "\(highCut) vs \(plain)")
    }

    @Test func theConfigFileSetsTheEQAndTheOptionWins() throws {
        let dir = try SpinetCommand.temporaryDirectory("eq-config")
        let config = dir.appendingPathComponent("config.json")
        try Data(#"{"highpass": 2000, "reverb": "hall"}"#.utf8).write(to: config)
        let plain = try Self.level([], in: dir, "plain.wav")
        let fromConfig = try Self.level(["--config", config.path], in: dir, "config.wav")
        #expect(fromConfig < plain - 10, "\(fromConfig) vs \(plain)")
        let overridden = try Self.level(["--config", config.path, "--highpass", "off"], in: dir, "off.wav")
        #expect(abs(overridden - plain) < 0.01, "\(overridden) vs \(plain)")
    }

    @Test(arguments: [["--highpass", "5"], ["--highpass", "loud"], ["--low-shelf", "+30"], ["--low-shelf", "3@5000"],
                      ["--high-shelf", "x"], ["--high-shelf", "-3@100"], ["--effects", "studio"], ["--reverb", "cathedral"]])
    func badSettingsAreRefusedBeforeAnyWork(extra: [String]) throws {
        let dir = try SpinetCommand.temporaryDirectory("eq-bad")
        let input = try write(MuteSoloCommandTests.twoChannels(), to: dir, "two.mid")
        let r = try SpinetCommand.run(["render", input, "-o", dir.appendingPathComponent("x.wav").path, "--soundfont", font] + extra)
        #expect(r.status == 1)
        #expect(r.stderr.contains("\(extra[0]) \(extra[1])") && r.stderr.split(separator: "\n").count == 1, "\(r.stderr)")
        #expect(!listing(dir).contains { $0.hasSuffix(".wav") })
    }

    @Test func aBadConfigSettingNamesTheFileAndTheKey() throws {
        let dir = try SpinetCommand.temporaryDirectory("eq-bad-config")
        let config = dir.appendingPathComponent("config.json")
        try Data(#"{"low-shelf": "lots"}"#.utf8).write(to: config)
        let input = try write(MuteSoloCommandTests.twoChannels(), to: dir, "two.mid")
        let r = try SpinetCommand.run(["render", input, "-o", dir.appendingPathComponent("x.wav").path, "--soundfont", font, "--config", config.path])
        #expect(r.status == 1)
        #expect(r.stderr.contains("config \(config.path): \"low-shelf\":") && r.stderr.split(separator: "\n").count == 1, "\(r.stderr)")
    }
}
