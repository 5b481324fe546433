import Foundation
import Glibc
import Testing
import SpinetMIDI
import SpinetTestSupport

// Everything `spinet render` writes (the mix, the stems, the notes file, the
// report) goes through one transaction: checked together before any work,
// written to temporary files, committed stems, notes, mix last, every write
// error reported, `-` for standard output where the format allows.

@Suite("spinet render: one output transaction", .serialized)
struct OutputTransactionTests {
    /// Sixteen channels, each a held chord for `seconds`: sixteen stems per file.
    static func sixteenChannels(seconds: Int) -> [UInt8] {
        var w = MIDIFileWriter(format: 0, ticksPerQuarter: 480)
        var e: [(tick: Int64, event: TrackEvent.Kind)] = []
        let end = Int64(seconds * 960)
        for c in 0..<16 {
            let ch = UInt8(c)
            if c != 9 { e.append((Int64(0), TrackEvent.Kind.message(.programChange(channel: ch, program: UInt8(c * 7))))) }
            var t: Int64 = 0
            while t < end {
                e.append((t, .message(.noteOn(channel: ch, key: UInt8(48 + c), velocity: 90))))
                e.append((t + 400, .message(.noteOff(channel: ch, key: UInt8(48 + c), velocity: 0))))
                t += 480
            }
        }
        w.addTrack(e.sorted { $0.tick < $1.tick })
        return w.bytes()
    }

    /// Temporary files (`.NAME.spinet-XXXXXX`) anywhere under `dir`.
    static func temporaryFiles(_ dir: URL) -> [String] {
        let all = FileManager.default.enumerator(atPath: dir.path)?.compactMap { $0 as? String } ?? []
        return all.filter { ($0 as NSString).lastPathComponent.contains(".spinet-") }
    }

    static func bytes(_ path: String) -> Data? { FileManager.default.contents(atPath: path) }

    // MARK: no target is an input

    /// `--report` naming a file the batch reads is refused before any work:
    /// the file keeps its bytes and no output folder is made. Every kind of
    /// input: a MIDI file, a SoundFont named, the default SoundFont, the
    /// preset file, the config file, the --from list; and the batch's own
    /// output, which is a target too.
    @Test(arguments: ["midi", "font", "default-font", "presets", "config", "list", "output"])
    func theReportNeverReplacesAnInputOrAnOutput(_ what: String) throws {
        let dir = try SpinetCommand.temporaryDirectory("report-\(what)")
        defer { try? FileManager.default.removeItem(at: dir) }
        let a = try write(DatasetTests.piece(key: 0), to: dir, "a.mid")
        let b = try write(DatasetTests.piece(key: 5), to: dir, "b.mid")
        let ownFont = dir.appendingPathComponent("font.sf2").path
        try FileManager.default.copyItem(atPath: font, toPath: ownFont)
        let presets = try write(Array(#"{"base": "empty", "presets": []}"#.utf8), to: dir, "presets.json")
        let config = try write(Array("{}".utf8), to: dir, "config.json")
        let list = try write(Array((b + "\n").utf8), to: dir, "list.txt")
        var args = ["render", a, "--from", list, "-o", dir.appendingPathComponent("out").path + "/", "--quiet",
                    "--presets", presets, "--config", config]
        var env: [String: String] = [:]
        if what == "default-font" { env["SPINET_SOUNDFONT"] = ownFont } else { args += ["--soundfont", ownFont] }
        let target: String
        switch what {
        case "midi": target = a
        case "font", "default-font": target = ownFont
        case "presets": target = presets
        case "config": target = config
        case "list": target = list
        default: target = dir.appendingPathComponent("out/b.wav").path
        }
        let before = Self.bytes(target)
        let r = try SpinetCommand.run(args + ["--report", target], environment: env)
        #expect(r.status == 1, "\(what): \(r.stderr)")
        #expect(r.stderr.contains("--report") && r.stderr.contains(target), "\(what): \(r.stderr)")
        #expect(r.stderr.split(separator: "\n").count == 1, "\(r.stderr)")
        #expect(Self.bytes(target) == before, "\(what): \(target) was changed")
        #expect(!FileManager.default.fileExists(atPath: dir.appendingPathComponent("out").path), "no work before the check")
    }

    /// The notes file may not be the mix (by its name, or a hard link to
    /// it) nor a stem, even with --force: the audio stays as it was.
    @Test(arguments: ["same-name", "hard-link", "stem"])
    func theNotesNeverReplaceTheAudio(_ shape: String) throws {
        let dir = try SpinetCommand.temporaryDirectory("notes-audio-\(shape)")
        defer { try? FileManager.default.removeItem(at: dir) }
        let input = try write(DatasetTests.piece(key: 0), to: dir, "a.mid")
        let mix = dir.appendingPathComponent("a.wav").path
        let first = try SpinetCommand.run(["render", input, "-o", mix, "--soundfont", font, "--quiet"])
        try #require(first.status == 0, "\(first.stderr)")
        let audio = Self.bytes(mix)
        var args = ["render", input, "-o", mix, "--soundfont", font, "--quiet", "--force"]
        switch shape {
        case "same-name": args += ["--notes", mix]
        case "hard-link":
            let link = dir.appendingPathComponent("link.csv").path
            try #require(Glibc.link(mix, link) == 0)
            args += ["--notes", link]
        default:
            let stems = dir.appendingPathComponent("stems")
            args += ["--stems", stems.path, "--notes", stems.appendingPathComponent("01-Piano 1.wav").path]
        }
        let r = try SpinetCommand.run(args)
        #expect(r.status == 1, "\(shape): \(r.stderr)")
        #expect(r.stderr.contains("same file"), "\(shape): \(r.stderr)")
        #expect(Self.bytes(mix) == audio, "\(shape): the audio was replaced")
        #expect(Self.temporaryFiles(dir).isEmpty)
        #expect(!FileManager.default.fileExists(atPath: dir.appendingPathComponent("stems/01-Piano 1.wav").path))
    }

    // MARK: names up to NAME_MAX

    /// Output names of 241 to 255 bytes work (the temporary name is cut to
    /// fit, not the output's): the mix, the notes, a stems folder, and a
    /// batch's outputs; 256 bytes is refused in one line before any work.
    @Test(arguments: [241, 250, 255])
    func longOutputNamesWork(_ length: Int) throws {
        let dir = try SpinetCommand.temporaryDirectory("long-\(length)")
        defer { try? FileManager.default.removeItem(at: dir) }
        let input = try write(DatasetTests.piece(key: 0), to: dir, "a.mid")
        let stem = String(repeating: "é", count: (length - 4) / 2) + String(repeating: "x", count: (length - 4) % 2)
        #expect((stem + ".wav").utf8.count == length)
        let mix = dir.appendingPathComponent(stem + ".wav").path
        let notes = dir.appendingPathComponent(stem + ".csv").path
        let stems = dir.appendingPathComponent(stem + ".stm").path
        let r = try SpinetCommand.run(["render", input, "-o", mix, "--notes", notes, "--stems", stems, "--soundfont", font, "--quiet"])
        #expect(r.status == 0, "\(length): \(r.stderr)")
        #expect(FileManager.default.fileExists(atPath: mix) && FileManager.default.fileExists(atPath: notes))
        #expect(listing(URL(fileURLWithPath: stems)) == ["01-Piano 1.wav"])
        // a batch: inputs whose output names are `length` bytes
        let batchIn = dir.appendingPathComponent("in")
        try FileManager.default.createDirectory(at: batchIn, withIntermediateDirectories: true)
        let long = try write(DatasetTests.piece(key: 3), to: batchIn, stem + ".mid")
        let other = try write(DatasetTests.piece(key: 4), to: batchIn, "b.mid")
        let out = dir.appendingPathComponent("out")
        let b = try SpinetCommand.run(["render", long, other, "-o", out.path + "/", "--notes", dir.appendingPathComponent("notes").path + "/",
                                       "--soundfont", font, "--quiet"])
        #expect(b.status == 0, "\(b.stderr)")
        #expect(Set(listing(out)) == [stem + ".wav", "b.wav"])
        #expect(Self.temporaryFiles(dir).isEmpty)
    }

    @Test func aNameLongerThanAFileNameCanBeIsRefusedBeforeAnyWork() throws {
        let dir = try SpinetCommand.temporaryDirectory("long-256")
        defer { try? FileManager.default.removeItem(at: dir) }
        let input = try write(DatasetTests.piece(key: 0), to: dir, "a.mid")
        for (option, ext) in [("-o", ".wav"), ("--notes", ".csv")] {
            let name = String(repeating: "n", count: 256 - 4) + ext
            var args = ["render", input, "--soundfont", font, "--quiet"]
            args += option == "-o" ? ["-o", dir.appendingPathComponent(name).path]
                                   : ["-o", dir.appendingPathComponent("a.wav").path, "--notes", dir.appendingPathComponent(name).path]
            let r = try SpinetCommand.run(args)
            #expect(r.status == 1, "\(option): \(r.stderr)")
            #expect(r.stderr.contains("255") && r.stderr.contains(option), "\(r.stderr)")
            #expect(listing(dir) == ["a.mid"])
        }
    }

    // MARK: write errors and standard output

    /// A report or notes file that cannot be written (/dev/full: a full
    /// disk) is an error, with a non-zero exit; the notes' failure leaves no
    /// output at all.
    @Test func aFullDiskForTheReportOrTheNotesIsAnError() throws {
        let dir = try SpinetCommand.temporaryDirectory("dev-full")
        defer { try? FileManager.default.removeItem(at: dir) }
        let inputs = try DatasetTests.folder(dir, count: 2)
        let out = dir.appendingPathComponent("out")
        let r = try SpinetCommand.run(["render"] + inputs + ["-o", out.path + "/", "--report", "/dev/full", "--soundfont", font, "--quiet"])
        #expect(r.status == 1, "\(r.stderr)")
        #expect(r.stderr.contains("--report /dev/full") && r.stderr.contains("No space left"), "\(r.stderr)")

        let mix = dir.appendingPathComponent("one.wav")
        let n = try SpinetCommand.run(["render", inputs[0], "-o", mix.path, "--notes", "/dev/full", "--soundfont", font, "--quiet"])
        #expect(n.status == 1, "\(n.stderr)")
        #expect(n.stderr.contains("/dev/full") && n.stderr.contains("No space left"), "\(n.stderr)")
        #expect(!FileManager.default.fileExists(atPath: mix.path), "all or nothing: the notes failed, so no mix")
    }

    /// `--notes -` writes the CSV to standard output and `--report -` the
    /// JSON Lines; no file named `-` is made. Two outputs on standard output
    /// at once are refused before any work.
    @Test func dashIsStandardOutputForTheNotesAndTheReport() throws {
        let dir = try SpinetCommand.temporaryDirectory("dash")
        defer { try? FileManager.default.removeItem(at: dir) }
        let inputs = try DatasetTests.folder(dir, count: 2)
        let n = try SpinetCommand.run(["render", inputs[0], "-o", "one.wav", "--notes", "-", "--soundfont", font, "--quiet"], in: dir)
        #expect(n.status == 0, "\(n.stderr)")
        let csv = String(decoding: n.stdout, as: UTF8.self).split(separator: "\n")
        #expect(csv.first?.hasPrefix("onset_frame,offset_frame") == true && csv.count == 4, "\(csv)")
        #expect(!FileManager.default.fileExists(atPath: dir.appendingPathComponent("-").path))

        let r = try SpinetCommand.run(["render"] + inputs + ["-o", "out/", "--report", "-", "--soundfont", font, "--quiet"], in: dir)
        #expect(r.status == 0, "\(r.stderr)")
        let lines = String(decoding: r.stdout, as: UTF8.self).split(separator: "\n")
        #expect(lines.count == 2)
        for line in lines {
            let row = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
            #expect(row?["status"] as? String == "rendered")
        }
        #expect(!FileManager.default.fileExists(atPath: dir.appendingPathComponent("-").path))

        let both = try SpinetCommand.run(["render", inputs[0], "-o", "-", "--notes", "-", "--soundfont", font, "--quiet"], in: dir)
        #expect(both.status == 1 && both.stderr.contains("standard output"), "\(both.stderr)")
        #expect(both.stdout.isEmpty)
    }

    // MARK: the README's examples in a fresh folder

    /// The xargs example names `--report renders/...` in a folder that does
    /// not exist yet: -o creates it first, then the report is opened.
    @Test func theReportMayGoIntoTheOutputFolderItCreates() throws {
        let dir = try SpinetCommand.temporaryDirectory("fresh")
        defer { try? FileManager.default.removeItem(at: dir) }
        let inputs = try DatasetTests.folder(dir, count: 2)
        let r = try SpinetCommand.run(["render"] + inputs + ["-o", "renders/", "--report", "renders/shard-0.jsonl", "--soundfont", font, "--quiet"],
                                      in: dir)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(Set(listing(dir.appendingPathComponent("renders"))) == ["piece0.wav", "piece1.wav", "shard-0.jsonl"])
        #expect(try DatasetTests.rows(dir.appendingPathComponent("renders/shard-0.jsonl")).count == 2)
    }

    // MARK: resume

    /// What a kill between the stems' commit and the mix's leaves (stems and
    /// notes, no mix) is resumed by --skip-existing: the input is rendered
    /// again, its stems and notes replaced, and the result is the same as a
    /// clean render. An input whose mix is there is skipped, its side files untouched.
    @Test func stemsAndNotesWithoutTheirMixAreRedoneBySkipExisting() throws {
        let dir = try SpinetCommand.temporaryDirectory("resume-stems")
        defer { try? FileManager.default.removeItem(at: dir) }
        let inputs = try DatasetTests.folder(dir, count: 2, notes: 4)
        let args = ["-o", "out/", "--stems", "stems/", "--notes", "notes/", "--soundfont", font, "--quiet", "--jobs", "1"]
        let clean = try SpinetCommand.run(["render"] + inputs + args, in: dir)
        try #require(clean.status == 0, "\(clean.stderr)")
        let stem0 = dir.appendingPathComponent("stems/piece0/01-Piano 1.wav").path
        let reference = try #require(Self.bytes(stem0))
        let skippedStem = dir.appendingPathComponent("stems/piece1/01-Piano 1.wav").path
        let skippedBefore = try #require(Self.bytes(skippedStem))
        // the state a kill before the mix's rename leaves: stems and notes (here stale ones), no mix
        try FileManager.default.removeItem(at: dir.appendingPathComponent("out/piece0.wav"))
        try Data("stale".utf8).write(to: URL(fileURLWithPath: stem0))
        try Data("stale".utf8).write(to: dir.appendingPathComponent("notes/piece0.csv"))
        let resumed = try SpinetCommand.run(["render"] + inputs + args + ["--skip-existing", "--report", "out/resume.jsonl"], in: dir)
        #expect(resumed.status == 0, "\(resumed.stderr)")
        #expect(Self.bytes(stem0) == reference, "the stem was rendered again")
        #expect(Self.bytes(skippedStem) == skippedBefore)
        #expect(FileManager.default.fileExists(atPath: dir.appendingPathComponent("out/piece0.wav").path))
        let notes = try String(contentsOf: dir.appendingPathComponent("notes/piece0.csv"), encoding: .utf8)
        #expect(notes.hasPrefix("onset_frame"))
        let rows = try DatasetTests.rows(dir.appendingPathComponent("out/resume.jsonl"))
        #expect(rows.map { $0["status"] as? String }.sorted { ($0 ?? "") < ($1 ?? "") } == ["rendered", "skipped"])
        // a requeued run writes its report anew
        let again = try SpinetCommand.run(["render"] + inputs + args + ["--skip-existing", "--report", "out/resume.jsonl"], in: dir)
        #expect(again.status == 0, "\(again.stderr)")
        #expect(try DatasetTests.rows(dir.appendingPathComponent("out/resume.jsonl")).allSatisfy { $0["status"] as? String == "skipped" })
    }

    // MARK: signals in every phase

    /// A signal while the input is still being read (a FIFO no writer has
    /// opened) ends the render at once with 128 + the signal, no file left.
    @Test(arguments: [SIGTERM, SIGINT])
    func aSignalWhileReadingTheInputEndsTheRender(_ signal: Int32) throws {
        let dir = try SpinetCommand.temporaryDirectory("signal-parse")
        defer { try? FileManager.default.removeItem(at: dir) }
        let fifo = dir.appendingPathComponent("in.mid").path
        try #require(mkfifo(fifo, 0o600) == 0)
        let r = try SpinetCommand.run(["render", fifo, "-o", dir.appendingPathComponent("x.wav").path, "--soundfont", font],
                                      timeout: 30, interruptAfter: 1.0, signal: signal)
        #expect(!r.timedOut, "the signal was ignored while reading")
        #expect(r.status == 128 + signal, "\(r.stderr)")
        #expect(r.stderr.contains("interrupted"), "\(r.stderr)")
        #expect(listing(dir) == ["in.mid"])
    }

    /// SIGTERM during --normalize's second pass (the playback that writes
    /// the output) stops it: nothing committed, no temporary file, 143.
    @Test func aSignalDuringTheNormalizePassStopsIt() throws {
        let dir = try SpinetCommand.temporaryDirectory("signal-normalize")
        defer { try? FileManager.default.removeItem(at: dir) }
        let input = try write(arpeggio(seconds: 120), to: dir, "long.mid")
        let out = dir.appendingPathComponent("long.wav")
        // Sent once the output's temporary file grows: only the last playback writes it.
        let r = try SpinetCommand.run(["render", input, "-o", out.path, "--normalize", "-23", "--dry", "--soundfont", font, "--quiet"],
                                      timeout: 300, interruptAfter: 0.1, signal: SIGTERM, interruptWhen: {
                                          listing(dir).contains { name in
                                              guard name.hasPrefix(".long.wav.spinet-") else { return false }
                                              var st = stat()
                                              return stat(dir.appendingPathComponent(name).path, &st) == 0 && st.st_size > 1 << 16
                                          }
                                      })
        #expect(!r.timedOut)
        #expect(r.status == 143, "\(r.stderr)")
        #expect(r.stderr.contains("interrupted"), "\(r.stderr)")
        #expect(listing(dir) == ["long.mid"])
    }

    /// More temporary files than any fixed table held (5 files x 17: a mix
    /// and 16 stems each), then two signals at once (the second removes
    /// every temporary file and exits): none is left.
    @Test(.timeLimit(.minutes(5)))
    func aSecondSignalRemovesEveryTemporaryFileHoweverMany() throws {
        let dir = try SpinetCommand.temporaryDirectory("signal-many")
        defer { try? FileManager.default.removeItem(at: dir) }
        let piece = Self.sixteenChannels(seconds: 600)
        let inputs = try (0..<5).map { try write(piece, to: dir, "song\($0).mid") }
        let started = try Started(["render"] + inputs + ["-o", dir.appendingPathComponent("out").path + "/",
                                                          "--stems", dir.appendingPathComponent("stems").path + "/",
                                                          "--soundfont", font, "--quiet", "--jobs", "5"])
        var most = 0
        let start = Date()
        while started.process.isRunning && Date().timeIntervalSince(start) < 200 {
            most = Self.temporaryFiles(dir).count
            if most >= 80 { break }
            usleep(50_000)
        }
        #expect(most >= 80, "only \(most) temporary files at once")
        kill(started.process.processIdentifier, SIGTERM)
        kill(started.process.processIdentifier, SIGINT)
        let (status, stderr) = started.finish(timeout: 60)
        #expect(status == 143 || status == 130, "\(stderr)")
        #expect(Self.temporaryFiles(dir).isEmpty, "left \(Self.temporaryFiles(dir).count) temporary files")
    }

    // MARK: text outputs

    /// A copy of the test font whose piano (bank 0, program 0) is named `name` (at most 20 bytes).
    static func fontWithPianoNamed(_ name: [UInt8], in dir: URL) throws -> String {
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: font)))
        let tag = Array("phdr".utf8)
        let at = try #require((0..<(bytes.count - 4)).first { Array(bytes[$0..<($0 + 4)]) == tag })
        let size = Int(bytes[at + 4]) | Int(bytes[at + 5]) << 8 | Int(bytes[at + 6]) << 16 | Int(bytes[at + 7]) << 24
        var record = at + 8
        while record + 38 <= at + 8 + size {
            let program = Int(bytes[record + 20]) | Int(bytes[record + 21]) << 8
            let bank = Int(bytes[record + 22]) | Int(bytes[record + 23]) << 8
            if program == 0 && bank == 0 {
                bytes.replaceSubrange(record..<(record + 20), with: name + [UInt8](repeating: 0, count: 20 - name.count))
                break
            }
            record += 38
        }
        let path = dir.appendingPathComponent("named.sf2").path
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return path
    }

    /// RFC 4180 CSV: fields split on commas outside quotes, records on line breaks outside quotes.
    static func csvRecords(_ text: String) -> [[String]] {
        var records: [[String]] = [], field = "", record: [String] = [], quoted = false
        var scalars = Array(text.unicodeScalars)[...]
        while let u = scalars.popFirst() {
            if quoted {
                if u == "\"" {
                    if scalars.first == "\"" { scalars.removeFirst(); field.unicodeScalars.append("\"") } else { quoted = false }
                } else { field.unicodeScalars.append(u) }
            } else if u == "\"" { quoted = true
            } else if u == "," { record.append(field); field = ""
            } else if u == "\n" { record.append(field); records.append(record); record = []; field = ""
            } else { field.unicodeScalars.append(u) }
        }
        return records
    }

    /// A SoundFont preset name holding CR LF (one Swift Character), a lone
    /// CR, a comma, a quote and other control characters stays one CSV field
    /// of one row, and one JSON string, byte for byte.
    @Test(arguments: [Array("Pi\r\nano".utf8), Array("a\rb,\"c\"".utf8), [0x41, 0x01, 0x0B, 0x1F, 0x7F, 0x42], Array("x\n\ny".utf8)])
    func controlCharactersInAPresetNameStayInTheirField(_ name: [UInt8]) throws {
        let dir = try SpinetCommand.temporaryDirectory("csv-control")
        defer { try? FileManager.default.removeItem(at: dir) }
        let named = try Self.fontWithPianoNamed(name, in: dir)
        let input = try write(DatasetTests.piece(key: 0), to: dir, "a.mid")
        let r = try SpinetCommand.run(["render", input, "-o", "a.wav", "--notes", "a.csv", "--soundfont", named, "--quiet"], in: dir)
        #expect(r.status == 0, "\(r.stderr)")
        let records = Self.csvRecords(try String(contentsOf: dir.appendingPathComponent("a.csv"), encoding: .utf8))
        #expect(records.count == 4, "a header and three notes: \(records)")
        #expect(records.allSatisfy { $0.count == 13 }, "\(records)")
        #expect(records.dropFirst().allSatisfy { $0[10] == String(decoding: name, as: UTF8.self) }, "\(records)")

        let j = try SpinetCommand.run(["render", input, "-o", "b.wav", "--notes", "b.json", "--soundfont", named, "--quiet"], in: dir)
        #expect(j.status == 0, "\(j.stderr)")
        let text = try Data(contentsOf: dir.appendingPathComponent("b.json"))
        #expect(!text.contains { $0 < 0x20 && $0 != 0x0A } && !text.contains(0x7F), "every control character escaped")
        let rows = try JSONSerialization.jsonObject(with: text) as? [[String: Any]]
        #expect(rows?.count == 3 && rows!.allSatisfy { $0["instrument"] as? String == String(decoding: name, as: UTF8.self) })
    }

    /// An input path with CR LF, C1 controls and the line separators gives
    /// one JSON Lines row each, every control character escaped.
    @Test func controlCharactersInAPathStayOnTheirReportLine() throws {
        let dir = try SpinetCommand.temporaryDirectory("jsonl-control")
        defer { try? FileManager.default.removeItem(at: dir) }
        let names = ["a\r\nb.mid", "c\u{85}d\u{2028}e\u{2029}.mid", "f\u{1}\u{7F}g.mid"]
        let inputs = try names.enumerated().map { try write(DatasetTests.piece(key: $0.offset), to: dir, $0.element) }
        let r = try SpinetCommand.run(["render"] + inputs + ["-o", "out/", "--report", "r.jsonl", "--soundfont", font, "--quiet"], in: dir)
        #expect(r.status == 0, "\(r.stderr)")
        let data = try Data(contentsOf: dir.appendingPathComponent("r.jsonl"))
        let text = String(decoding: data, as: UTF8.self)
        #expect(!text.unicodeScalars.contains { ($0.value < 0x20 && $0 != "\n") || (0x7F...0x9F).contains($0.value) || $0.value == 0x2028 || $0.value == 0x2029 })
        let lines = text.split(separator: "\n")
        #expect(lines.count == 3)
        let rows = try lines.map { try JSONSerialization.jsonObject(with: Data($0.utf8)) as! [String: Any] }
        #expect(Set(rows.compactMap { $0["input"] as? String }) == Set(inputs))
    }
}
