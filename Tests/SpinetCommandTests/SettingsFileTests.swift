import Foundation
import Glibc
import Testing
import SpinetTestSupport

// Settings files through the binary: the config file, preset files and
// --from lists are read with a bound, accept a UTF-8 byte order mark, and a
// problem with a font the config names is said naming the file and the key;
// a --from list names each input once, however it is spelled.

@Suite("spinet: settings files")
struct SettingsFileTests {
    static let bom = "\u{FEFF}"

    /// A sparse file of `size` bytes (no disk used).
    static func sparse(_ dir: URL, _ name: String, size: Int) throws -> String {
        let path = dir.appendingPathComponent(name).path
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        try #require(fd >= 0)
        #expect(ftruncate(fd, off_t(size)) == 0)
        close(fd)
        return path
    }

    /// A 1 GB config or preset file was read whole (3 GB of memory) before it
    /// failed at line 1; now it is refused from its size, with the limit in
    /// the message, at any size over the limit.
    @Test(.measuresMemory, arguments: [1 << 30, (4 << 20) + 1, 64 << 20])
    func aHugeSettingsFileIsRefusedBeforeItIsRead(size: Int) throws {
        let dir = try SpinetCommand.temporaryDirectory("settings-huge")
        defer { try? FileManager.default.removeItem(at: dir) }
        let input = try write(arpeggio(seconds: 1), to: dir, "a.mid")
        let huge = try Self.sparse(dir, "huge.json", size: size)
        let out = dir.appendingPathComponent("a.wav").path
        for option in ["--config", "--presets"] {
            let arguments = ["render", input, "-o", out, "--soundfont", font, option, huge]
            let r = try SpinetCommand.run(arguments, timeout: 60)
            #expect(r.status == 1)
            #expect(errorLines(r).count == 1 && r.stderr.contains(huge) && r.stderr.contains("larger than 4 MB"), "\(option): \(r.stderr.prefix(400))")
            let peak = peakMemory(arguments)
            #expect(peak.status == 1 && peak.bytes < 200 << 20, "\(option) of \(size) bytes: peak \(peak.bytes >> 20) MB")
            #expect(!FileManager.default.fileExists(atPath: out))
        }
    }

    /// A byte order mark (which some editors write) is accepted at the start
    /// of a config file, a preset file and a --from list.
    @Test func aByteOrderMarkIsAccepted() throws {
        let dir = try SpinetCommand.temporaryDirectory("settings-bom")
        defer { try? FileManager.default.removeItem(at: dir) }
        let input = try write(arpeggio(seconds: 1), to: dir, "a.mid")
        let config = dir.appendingPathComponent("config.json")
        try Data((Self.bom + #"{"rate": 44100, "channels": ["1=synth:bell"]}"#).utf8).write(to: config)
        let presets = dir.appendingPathComponent("presets.json")
        try Data((Self.bom + #"{"presets": [{"name": "bell", "from": "saw-lead", "program": 20}]}"#).utf8).write(to: presets)
        let r = try SpinetCommand.run(["render", input, "-o", dir.appendingPathComponent("a.wav").path, "--soundfont", font,
                                       "--config", config.path, "--presets", presets.path, "--quiet"])
        #expect(r.status == 0, "\(r.stderr)")
        let wav = try Data(contentsOf: dir.appendingPathComponent("a.wav"))
        #expect(wav.count > 44 && wav[24..<28].elementsEqual([0x44, 0xAC, 0, 0]), "the config's rate (44100) was used")
        // a list whose first line is a path: the mark is not part of it
        let list = dir.appendingPathComponent("list.txt")
        try Data((Self.bom + "a.mid\r\n").utf8).write(to: list)
        let batch = try SpinetCommand.run(["render", "--from", list.path, "-o", "out/", "--soundfont", font, "--quiet"], in: dir)
        #expect(batch.status == 0, "\(batch.stderr)")
        #expect(listing(dir.appendingPathComponent("out")) == ["a.wav"])
    }

    /// A font named in the config file that cannot be used: the message names
    /// the config file and its key, in `render` and in `play` (before any
    /// device is opened), for every way a font can be unusable.
    @Test func aBadConfigFontNamesTheFileAndTheKey() throws {
        let dir = try SpinetCommand.temporaryDirectory("settings-font")
        defer { try? FileManager.default.removeItem(at: dir) }
        let input = try write(arpeggio(seconds: 1), to: dir, "a.mid")
        let text = try write(Array("not a font\n".utf8), to: dir, "text.sf2")
        let empty = try write([], to: dir, "empty.sf2")
        let truncated = try write(Array(try Data(contentsOf: URL(fileURLWithPath: font)).prefix(5000)), to: dir, "truncated.sf2")
        let fifo = dir.appendingPathComponent("fifo.sf2").path
        #expect(mkfifo(fifo, 0o600) == 0)
        let folder = dir.appendingPathComponent("fonts.sf2").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let missing = dir.appendingPathComponent("missing.sf2").path
        for bad in [text, empty, truncated, fifo, folder, missing] {
            let config = dir.appendingPathComponent("config.json")
            // a good font first: each font of the list is checked
            try Data(#"{"soundfonts": [\#(jsonString(font)), \#(jsonString(bad))]}"#.utf8).write(to: config)
            for command in [["render", input, "-o", dir.appendingPathComponent("a.wav").path], ["play", "--driver", "alsa"]] {
                let r = try SpinetCommand.run(command + ["--config", config.path], timeout: 30)
                #expect(!r.timedOut && r.status == 1, "\(command[0]) \(bad): \(r.stderr.prefix(300))")
                let lines = r.stderr.split(separator: "\n")
                #expect(lines.count == 1 && lines[0].hasPrefix("spinet: config \(config.path): \"soundfonts\": \(bad)"),
                        "\(command[0]) \(bad): \(r.stderr.prefix(400))")
            }
        }
        #expect(!FileManager.default.fileExists(atPath: dir.appendingPathComponent("a.wav").path))
    }

    private func jsonString(_ s: String) -> String {
        "\"" + s.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
    }

    /// `./a.mid`, `a.mid`, `x/../a.mid` and the absolute path are one input
    /// (the README: a path given twice is rendered once); two names of one
    /// folder too. The first spelling is kept.
    @Test func oneFileUnderSeveralSpellingsIsOneInput() throws {
        let dir = try SpinetCommand.temporaryDirectory("settings-spellings")
        defer { try? FileManager.default.removeItem(at: dir) }
        try FileManager.default.createDirectory(at: dir.appendingPathComponent("x"), withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: dir.appendingPathComponent("songs"), withIntermediateDirectories: true)
        _ = try write(arpeggio(seconds: 1), to: dir, "a.mid")
        _ = try write(arpeggio(seconds: 1), to: dir.appendingPathComponent("songs"), "b.mid")
        try FileManager.default.createSymbolicLink(atPath: dir.appendingPathComponent("link").path, withDestinationPath: "songs")
        let spellings = ["a.mid", "./a.mid", "x/../a.mid", dir.path + "/a.mid", ".//a.mid", "songs/b.mid", "link/b.mid",
                         "x/../songs/./b.mid", dir.path + "/songs/../a.mid"]
        for order in [spellings, spellings.reversed()] {
            let list = dir.appendingPathComponent("list.txt")
            try Data(order.joined(separator: "\n").utf8).write(to: list)
            let out = dir.appendingPathComponent("out")
            try? FileManager.default.removeItem(at: out)
            let r = try SpinetCommand.run(["render", "--from", list.path, "-o", "out/", "--soundfont", font], in: dir)
            #expect(r.status == 0, "\(r.stderr)")
            #expect(r.stderr.contains("2 of 2 files rendered"), "\(r.stderr)")
            #expect(listing(out) == ["a.wav", "b.wav"])
            // the same with the paths on the command line
            try? FileManager.default.removeItem(at: out)
            let named = try SpinetCommand.run(["render"] + order + ["-o", "out/", "--soundfont", font, "--quiet"], in: dir)
            #expect(named.status == 0, "\(named.stderr)")
            #expect(listing(out) == ["a.wav", "b.wav"])
        }
    }

    /// A folder in a --from list is named as a folder: one line with the
    /// list, the line and the fix, before any work.
    @Test(arguments: ["songs", "songs/", "./songs", "link"])
    func aFolderInAListIsNamedAsAFolder(entry: String) throws {
        let dir = try SpinetCommand.temporaryDirectory("settings-folder")
        defer { try? FileManager.default.removeItem(at: dir) }
        try FileManager.default.createDirectory(at: dir.appendingPathComponent("songs"), withIntermediateDirectories: true)
        _ = try write(arpeggio(seconds: 1), to: dir, "a.mid")
        _ = try write(arpeggio(seconds: 1), to: dir.appendingPathComponent("songs"), "b.mid")
        try FileManager.default.createSymbolicLink(atPath: dir.appendingPathComponent("link").path, withDestinationPath: "songs")
        let list = dir.appendingPathComponent("list.txt")
        try Data("a.mid\n\n\(entry)\n".utf8).write(to: list)
        let r = try SpinetCommand.run(["render", "--from", "list.txt", "-o", "out/", "--soundfont", font], in: dir)
        #expect(r.status == 1)
        #expect(errorLines(r) == ["spinet: --from list.txt: line 3: \(entry) is a directory, not a MIDI file; list the files in it (find \(entry) -name '*.mid' >> list.txt)"],
                "\(r.stderr)")
        #expect(!FileManager.default.fileExists(atPath: dir.appendingPathComponent("out").path) || listing(dir.appendingPathComponent("out")).isEmpty)
        // named on the command line among other inputs: named as a folder too
        let named = try SpinetCommand.run(["render", "a.mid", entry, "-o", "out/", "--soundfont", font], in: dir)
        #expect(named.status == 1)
        #expect(errorLines(named) == ["spinet: \(entry) is a directory, not a MIDI file; name the files in it (\(entry.hasSuffix("/") ? entry : entry + "/")*.mid)"], "\(named.stderr)")
    }
}
