import Foundation
import Glibc
import Testing
import SpinetMIDI
import SpinetTestSupport

// Messages a user can act on: values out of range are refused before any
// work, a config file's errors name the file and the key, echoed values are
// cut short, contradictory options are refused, and a render that --mute or
// --solo would leave silent says so (and points at the port that plays).

@Suite("spinet: messages a user can act on")
struct MessageTests {
    /// One line on standard error, exit 1, no output file.
    static func refused(_ arguments: [String], in dir: URL, containing texts: [String],
                        sourceLocation: SourceLocation = #_sourceLocation) throws {
        let r = try SpinetCommand.run(arguments)
        #expect(r.status == 1, "\(arguments.prefix(8)): \(r.stderr.prefix(500))", sourceLocation: sourceLocation)
        let lines = r.stderr.split(separator: "\n")
        #expect(lines.count == 1, "\(r.stderr.prefix(2000))", sourceLocation: sourceLocation)
        for text in texts {
            #expect(r.stderr.contains(text), "wanted \"\(text)\" in: \(r.stderr.prefix(500))", sourceLocation: sourceLocation)
        }
        #expect(!listing(dir).contains { $0.hasSuffix(".wav") }, sourceLocation: sourceLocation)
    }

    @Test(arguments: ["1000", "inf", "nan", "-1000", "-inf"])
    func aGainOutOfRangeIsRefused(gain: String) throws {
        let dir = try SpinetCommand.temporaryDirectory("msg-gain")
        let input = try write(MuteSoloCommandTests.twoChannels(), to: dir, "two.mid")
        try Self.refused(["render", input, "-o", dir.appendingPathComponent("x.wav").path, "--soundfont", font, "--gain", gain],
                         in: dir, containing: ["--gain", "out of range"])
    }

    @Test func configErrorsNameTheFileAndTheKey() throws {
        let dir = try SpinetCommand.temporaryDirectory("msg-config")
        let input = try write(MuteSoloCommandTests.twoChannels(), to: dir, "two.mid")
        let out = dir.appendingPathComponent("x.wav").path
        let cases: [(String, String)] = [
            (#"{"rate": 1}"#, "rate"),
            (#"{"soundfonts": ["/no/such/font.sf2"]}"#, "soundfonts"),
            (#"{"mute": ["99"]}"#, "mute"),
            (#"{"channels": ["4=piano"]}"#, "channels"),
        ]
        for (json, key) in cases {
            let config = dir.appendingPathComponent("config-\(key).json")
            try Data(json.utf8).write(to: config)
            var arguments = ["render", input, "-o", out, "--config", config.path]
            if key != "soundfonts" { arguments += ["--soundfont", font] }
            try Self.refused(arguments, in: dir, containing: ["config \(config.path): \"\(key)\":"])
            // the fix is in the file, not an option that was never given
            let r = try SpinetCommand.run(arguments)
            #expect(!r.stderr.contains("--rate") && !r.stderr.contains("--mute") && !r.stderr.contains("--channel")
                    && !r.stderr.contains("pass one with --soundfont"), "\(r.stderr)")
        }
    }

    @Test func echoedValuesAreCutShort() throws {
        let dir = try SpinetCommand.temporaryDirectory("msg-echo")
        let input = try write(MuteSoloCommandTests.twoChannels(), to: dir, "two.mid")
        let out = dir.appendingPathComponent("x.wav").path
        let digits = String(repeating: "9", count: 100_000)
        // Spinet's own checks, the option parser's, and a config file's value.
        let config = dir.appendingPathComponent("config.json")
        try Data(#"{"channels": ["4=synth:\#(String(repeating: "x", count: 300_000))"]}"#.utf8).write(to: config)
        for arguments in [["--highpass", digits], ["--rate", digits], ["--config", config.path]] {
            let r = try SpinetCommand.run(["render", input, "-o", out, "--soundfont", font] + arguments)
            #expect(r.status != 0)
            #expect(r.stderr.utf8.count < 2500, "\(arguments[0]): \(r.stderr.utf8.count) bytes of error")
            #expect(r.stderr.contains("bytes)"), "the cut says how long the value was: \(r.stderr.prefix(400))")
        }
    }

    @Test func anErrorThatEchoesALineBreakStaysOneLine() throws {
        let dir = try SpinetCommand.temporaryDirectory("msg-newline")
        let input = try write(MuteSoloCommandTests.twoChannels(), to: dir, "two.mid")
        let config = dir.appendingPathComponent("config.json")
        try Data(#"{"x\ny\rz": 1}"#.utf8).write(to: config)
        try Self.refused(["render", input, "-o", dir.appendingPathComponent("x.wav").path, "--soundfont", font, "--config", config.path],
                         in: dir, containing: ["x\\ny\\rz"])
    }

    @Test func contradictoryEffectOptionsAreRefused() throws {
        let dir = try SpinetCommand.temporaryDirectory("msg-fx")
        let input = try write(MuteSoloCommandTests.twoChannels(), to: dir, "two.mid")
        let out = dir.appendingPathComponent("x.wav").path
        try Self.refused(["render", input, "-o", out, "--soundfont", font, "--effects", "fluidsynth", "--reverb", "hall"],
                         in: dir, containing: ["--effects fluidsynth", "--reverb hall"])
        try Self.refused(["render", input, "-o", out, "--soundfont", font, "--dry", "--chorus", "wide"],
                         in: dir, containing: ["--dry", "--chorus wide"])
        let config = dir.appendingPathComponent("config.json")
        try Data(#"{"effects": "fluidsynth", "delay": "eighth"}"#.utf8).write(to: config)
        try Self.refused(["render", input, "-o", out, "--soundfont", font, "--config", config.path],
                         in: dir, containing: ["config \(config.path)", "\"delay\""])
        // The command line wins over the file: no contradiction.
        let r = try SpinetCommand.run(["render", input, "-o", out, "--soundfont", font, "--config", config.path, "--effects", "fluidsynth", "--quiet"])
        #expect(r.status == 0, "\(r.stderr)")
    }

    /// Drums on channel 10 of port 2 (the SMF port meta-event), a piano on channel 1 of port 1.
    static func drumsOnPortTwo() -> [UInt8] {
        var w = MIDIFileWriter(format: 1, ticksPerQuarter: 480)
        w.addTrack([(0, .tempo(microsecondsPerQuarter: 500_000))])
        // (the writer puts the port meta-event before a track's messages: channel = port * 16 + channel)
        w.addTrack([(0, .message(.noteOn(channel: 0, key: 60, velocity: 100))),
                    (960, .message(.noteOff(channel: 0, key: 60, velocity: 0)))])
        w.addTrack([(0, .message(.noteOn(channel: 16 + 9, key: 38, velocity: 120))),
                    (960, .message(.noteOff(channel: 16 + 9, key: 38, velocity: 0)))])
        return w.bytes()
    }

    @Test func muteAndSoloSayWhyARenderWouldBeSilentAndWhichPortPlays() throws {
        let dir = try SpinetCommand.temporaryDirectory("msg-solo")
        let two = try write(MuteSoloCommandTests.twoChannels(), to: dir, "two.mid")
        let out = dir.appendingPathComponent("x.wav").path
        try Self.refused(["render", two, "-o", out, "--soundfont", font, "--mute", "1,2"], in: dir, containing: ["--mute", "1, 2"])
        try Self.refused(["render", two, "-o", out, "--soundfont", font, "--solo", "5"], in: dir, containing: ["--solo"])

        let ports = try write(Self.drumsOnPortTwo(), to: dir, "ports.mid")
        let r = try SpinetCommand.run(["render", ports, "-o", out, "--soundfont", font, "--solo", "10"])
        #expect(r.status == 1)
        #expect(r.stderr.contains("--solo 2.10"), "names the port that plays channel 10: \(r.stderr)")
        let ok = try SpinetCommand.run(["render", ports, "-o", out, "--soundfont", font, "--solo", "2.10", "--quiet"])
        #expect(ok.status == 0, "\(ok.stderr)")
        let muted = try SpinetCommand.run(["render", ports, "-o", out, "--soundfont", font, "--mute", "10", "--force"])
        #expect(muted.status == 0, "\(muted.stderr)")
        #expect(muted.stderr.contains("--mute 2.10"), "\(muted.stderr)")
    }

    @Test func portsSaysWhenThereIsNoSoundCard() throws {
        let cards = (try? String(contentsOfFile: "/proc/asound/cards", encoding: .utf8)) ?? ""
        let noCard = !cards.contains("]:")
        let r = try SpinetCommand.run(["ports"])
        if noCard {
            #expect(r.status == 1, "\(r.stderr)")
            #expect(r.stderr.contains("no sound card found"), "\(r.stderr)")
        } else {
            #expect(r.status == 0, "\(r.stderr)")
            #expect(!r.stderr.contains("no sound card found"))
        }
    }
}
