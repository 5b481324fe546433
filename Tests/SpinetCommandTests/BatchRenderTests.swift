import Foundation
import Glibc
import Testing
import SpinetMIDI
import SpinetTestSupport

/// `spinet render a.mid b.mid c.mid -o DIR/`: many files, several at once,
/// each one the same bytes as a render of it alone.
@Suite("spinet render: batch mode", .serialized)
struct BatchRenderTests {
    /// Three short, different files in `dir`: their paths.
    func threeSongs(in dir: URL) throws -> [String] {
        [try write(arpeggio(seconds: 1, program: 0), to: dir, "a.mid"),
         try write(arpeggio(seconds: 2, program: 24), to: dir, "b.mid"),
         try write(arpeggio(seconds: 1, channel: 3, program: 40), to: dir, "c.kar")]
    }

    @Test func aBatchRendersEveryFileAsARenderOfItAloneWould() throws {
        let dir = try SpinetCommand.temporaryDirectory("batch")
        defer { try? FileManager.default.removeItem(at: dir) }
        let songs = try threeSongs(in: dir)
        // The output directory does not exist yet: the batch creates it.
        let out = dir.appendingPathComponent("renders/new")
        let r = try SpinetCommand.run(["render"] + songs + ["-o", out.path + "/", "--soundfont", font, "--jobs", "2", "--format", "wav"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(listing(out) == ["a.wav", "b.wav", "c.wav"])

        // One line per file, named, and a last line for the batch.
        let lines = r.stderr.split(separator: "\n").map(String.init)
        #expect(lines.first == "SoundFont: \(font)", "\(r.stderr)")
        for song in songs {
            #expect(lines.contains { $0.hasPrefix("\(song): Rendered ") }, "no summary for \(song): \(r.stderr)")
        }
        #expect(lines.last?.hasPrefix("Batch: 3 of 3 files rendered") == true && lines.last?.contains("no failures") == true, "\(r.stderr)")
        #expect(lines.count == 5, "\(r.stderr)")

        // The same bytes as single renders, on one render thread and on the default count.
        let single = dir.appendingPathComponent("single")
        try FileManager.default.createDirectory(at: single, withIntermediateDirectories: false)
        for song in songs {
            let name = URL(fileURLWithPath: song).deletingPathExtension().lastPathComponent + ".wav"
            let batch = try Data(contentsOf: out.appendingPathComponent(name))
            #expect(batch.count > 48000 * 4, "\(name): \(batch.count) bytes")
            for threads in [["--threads", "1"], []] {
                let target = single.appendingPathComponent(name)
                let s = try SpinetCommand.run(["render", song, "-o", target.path, "--soundfont", font, "--quiet", "--force"] + threads)
                #expect(s.status == 0, "\(s.stderr)")
                #expect(try Data(contentsOf: target) == batch, "\(name) \(threads): the batch render differs from a single render")
            }
        }
    }

    /// The file with the most estimated work starts first (a dense 4 s
    /// file before a light 10 s one), and once fewer files are left than
    /// jobs, the last files take the jobs' threads (up to one per
    /// partition); every output has the bytes of the file rendered alone.
    @Test func theMostWorkGoesFirstAndTheLastFilesTakeTheIdleJobs() throws {
        let dir = try SpinetCommand.temporaryDirectory("batch-order")
        defer { try? FileManager.default.removeItem(at: dir) }
        let long = try write(arpeggio(seconds: 10), to: dir, "long.mid")
        let dense = try write(denseSong(seconds: 4, channels: 2), to: dir, "dense.mid")
        var outputs: [String: [Data]] = [:]
        for jobs in ["1", "4"] {
            let out = dir.appendingPathComponent("jobs\(jobs)")
            let r = try SpinetCommand.run(["render", long, dense, "-o", out.path + "/", "--soundfont", font, "--jobs", jobs])
            #expect(r.status == 0, "\(r.stderr)")
            let lines = r.stderr.split(separator: "\n").map(String.init).filter { $0.contains(": Rendered ") }
            #expect(lines.count == 2, "\(r.stderr)")
            guard lines.count == 2 else { continue }
            if jobs == "1" {
                // one job: one after the other, in the batch's order, each on one thread
                #expect(lines[0].hasPrefix("\(dense): ") && lines[1].hasPrefix("\(long): "), "\(r.stderr)")
                #expect(lines.allSatisfy { $0.contains(" on 1 thread)") }, "\(r.stderr)")
            } else {
                // four jobs, two files: the dense one starts with two files left (2 threads, if
                // there are 2 cores), the light one on its 1 partition
                let denseLine = lines.first { $0.hasPrefix("\(dense): ") } ?? ""
                let threads = min(2, ProcessInfo.processInfo.activeProcessorCount)
                #expect(denseLine.contains(" partitions on \(threads) thread\(threads == 1 ? "" : "s"))"), "\(r.stderr)")
                #expect(lines.contains { $0.hasPrefix("\(long): ") && $0.contains("1 partition on 1 thread)") }, "\(r.stderr)")
            }
            for name in ["dense.wav", "long.wav"] { outputs[name, default: []].append(try Data(contentsOf: out.appendingPathComponent(name))) }
        }
        for (song, name) in [(dense, "dense.wav"), (long, "long.wav")] {
            let target = dir.appendingPathComponent("single-" + name)
            let s = try SpinetCommand.run(["render", song, "-o", target.path, "--soundfont", font, "--quiet"])
            #expect(s.status == 0, "\(s.stderr)")
            let single = try Data(contentsOf: target)
            #expect(single.count > 48000 * 4 * 4)
            #expect(outputs[name]?.count == 2 && outputs[name]!.allSatisfy { $0 == single }, "\(name): a batch render differs from the render alone")
        }
    }

    /// `-o DIR` naming an existing directory means batch mode, even for one file.
    @Test func oneInputIntoADirectoryIsABatchOfOne() throws {
        let dir = try SpinetCommand.temporaryDirectory("batch-one")
        defer { try? FileManager.default.removeItem(at: dir) }
        let song = try write(arpeggio(seconds: 1), to: dir, "tune.mid")
        let r = try SpinetCommand.run(["render", song, "-o", dir.path, "--soundfont", font, "--quiet", "--format", "flac"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stderr.isEmpty, "\(r.stderr)")
        #expect(listing(dir) == ["tune.flac", "tune.mid"])
        #expect(try Data(contentsOf: dir.appendingPathComponent("tune.flac")).prefix(4) == Data("fLaC".utf8))
    }

    @Test func twoInputsWithOneBaseNameAreRefusedBeforeAnyWork() throws {
        let dir = try SpinetCommand.temporaryDirectory("batch-names")
        defer { try? FileManager.default.removeItem(at: dir) }
        for sub in ["x", "y"] {
            try FileManager.default.createDirectory(at: dir.appendingPathComponent(sub), withIntermediateDirectories: false)
        }
        let first = try write(arpeggio(), to: dir, "x/song.mid")
        let second = try write(arpeggio(), to: dir, "y/song.mid")
        let other = try write(arpeggio(), to: dir, "other.mid")
        let out = dir.appendingPathComponent("out")
        let r = try SpinetCommand.run(["render", other, first, second, "-o", out.path + "/", "--soundfont", font])
        #expect(r.status == 1)
        #expect(r.stderr.split(separator: "\n").count == 1, "\(r.stderr)")
        #expect(r.stderr.contains(first) && r.stderr.contains(second) && r.stderr.contains("song.wav"), "\(r.stderr)")
        #expect(!FileManager.default.fileExists(atPath: out.path), "the output directory was created: \(listing(dir))")
    }

    @Test func anExistingOutputIsRefusedBeforeAnyWorkUnlessForced() throws {
        let dir = try SpinetCommand.temporaryDirectory("batch-force")
        defer { try? FileManager.default.removeItem(at: dir) }
        let songs = try threeSongs(in: dir)
        let out = dir.appendingPathComponent("out")
        try FileManager.default.createDirectory(at: out, withIntermediateDirectories: false)
        try Data("keep me".utf8).write(to: out.appendingPathComponent("b.wav"))
        let r = try SpinetCommand.run(["render"] + songs + ["-o", out.path, "--soundfont", font])
        #expect(r.status == 1)
        #expect(r.stderr.split(separator: "\n").count == 1, "\(r.stderr)")
        #expect(r.stderr.contains(out.appendingPathComponent("b.wav").path) && r.stderr.contains("--force"), "\(r.stderr)")
        // Nothing was rendered: not even the files that had no output yet.
        #expect(listing(out) == ["b.wav"])
        #expect(try Data(contentsOf: out.appendingPathComponent("b.wav")) == Data("keep me".utf8))

        let forced = try SpinetCommand.run(["render"] + songs + ["-o", out.path, "--soundfont", font, "--force", "--quiet"])
        #expect(forced.status == 0, "\(forced.stderr)")
        #expect(listing(out) == ["a.wav", "b.wav", "c.wav"])
        #expect(try Data(contentsOf: out.appendingPathComponent("b.wav")).prefix(4) == Data("RIFF".utf8))
    }

    /// A damaged file and a file without notes among good ones: the good ones
    /// are rendered, each bad one gets its line, and the status is 1.
    @Test func badFilesAreReportedAndSkipped() throws {
        let dir = try SpinetCommand.temporaryDirectory("batch-bad")
        defer { try? FileManager.default.removeItem(at: dir) }
        let good1 = try write(arpeggio(seconds: 1), to: dir, "first.mid")
        let broken = try write(Array("MThd".utf8) + [0, 0, 0, 6, 0, 1], to: dir, "broken.mid")
        var w = MIDIFileWriter(format: 0, ticksPerQuarter: 96)
        w.addTrack([(0, .message(.controlChange(channel: 0, controller: 7, value: 100)))])
        let noNotes = try write(w.bytes(), to: dir, "no-notes.mid")
        let good2 = try write(arpeggio(seconds: 1, program: 11), to: dir, "last.mid")
        let missing = dir.appendingPathComponent("missing.mid").path
        let out = dir.appendingPathComponent("out")
        let r = try SpinetCommand.run(["render", good1, broken, noNotes, missing, good2, "-o", out.path + "/", "--soundfont", font, "--jobs", "2"])
        #expect(r.status == 1, "\(r.stderr)")
        #expect(listing(out) == ["first.wav", "last.wav"])
        for name in ["first.wav", "last.wav"] {
            let wav = try WAVFile(data: Data(contentsOf: out.appendingPathComponent(name)))
            #expect(wav.frames > 48000 && (wav.samples.map { abs($0) }.max() ?? 0) > 0.01, "\(name)")
        }
        let errors = r.stderr.split(separator: "\n").filter { $0.hasPrefix("spinet: ") }
        #expect(errors.count == 3, "\(r.stderr)")
        #expect(errors.contains { $0.contains(broken) && $0.contains("byte") }, "\(r.stderr)")
        #expect(errors.contains { $0.contains(noNotes) && $0.contains("no notes") }, "\(r.stderr)")
        #expect(errors.contains { $0.contains(missing) }, "\(r.stderr)")
        #expect(r.stderr.contains("Batch: 2 of 5 files rendered") && r.stderr.contains("3 failed"), "\(r.stderr)")
    }

    @Test func standardOutputTakesOneRenderOnly() throws {
        let dir = try SpinetCommand.temporaryDirectory("batch-stdout")
        defer { try? FileManager.default.removeItem(at: dir) }
        let songs = try threeSongs(in: dir)
        let r = try SpinetCommand.run(["render", songs[0], songs[1], "-o", "-", "--soundfont", font])
        #expect(r.status == 1)
        #expect(r.stdout.isEmpty)
        #expect(r.stderr.split(separator: "\n").count == 1 && r.stderr.contains("-o -") && r.stderr.contains("directory"), "\(r.stderr)")
        #expect(listing(dir) == ["a.mid", "b.mid", "c.kar"])
    }

    /// Options checked before any work: one line each, nothing created.
    @Test(arguments: [
        (["--soundfont", "/nonexistent/font.sf2"], "/nonexistent/font.sf2"),
        (["--soundfont", font, "--jobs", "0"], "--jobs 0"),
        (["--soundfont", font, "--format", "flac", "--bits", "32f"], "FLAC"),
        (["--soundfont", font, "--reverb", "cathedral"], "--reverb cathedral"),
    ])
    func badBatchOptionsFailBeforeAnyWork(extra: [String], named: String) throws {
        let dir = try SpinetCommand.temporaryDirectory("batch-options")
        defer { try? FileManager.default.removeItem(at: dir) }
        let songs = try threeSongs(in: dir)
        let r = try SpinetCommand.run(["render"] + songs + ["-o", dir.appendingPathComponent("out").path + "/"] + extra)
        #expect(r.status == 1, "\(r.stderr)")
        #expect(r.stderr.split(separator: "\n").count == 1 && r.stderr.contains(named), "\(r.stderr)")
        #expect(listing(dir) == ["a.mid", "b.mid", "c.kar"])
    }

    /// With several inputs, `-o song.wav` is almost certainly a slip.
    @Test func anAudioFileNameIsNotTakenForADirectory() throws {
        let dir = try SpinetCommand.temporaryDirectory("batch-wavname")
        defer { try? FileManager.default.removeItem(at: dir) }
        let songs = try threeSongs(in: dir)
        let r = try SpinetCommand.run(["render", songs[0], songs[1], "-o", dir.appendingPathComponent("both.wav").path, "--soundfont", font])
        #expect(r.status == 1)
        #expect(r.stderr.split(separator: "\n").count == 1 && r.stderr.contains("both.wav") && r.stderr.contains("end it with /"), "\(r.stderr)")
        #expect(listing(dir) == ["a.mid", "b.mid", "c.kar"])
    }

    /// A read-only output directory (a read-only tmpfs, so root is kept out too).
    @Test func anUnwritableDirectoryIsOneLineBeforeAnyWork() throws {
        try withReadOnlyDirectory("batch-readonly") { dir, locked in
            let songs = try threeSongs(in: dir)
            for (target, text) in [(locked.path, "cannot write to the output directory"), (locked.appendingPathComponent("sub").path + "/", "cannot create the output directory")] {
                let r = try SpinetCommand.run(["render"] + songs + ["-o", target, "--soundfont", font])
                #expect(r.status == 1)
                #expect(r.stderr.split(separator: "\n").count == 1 && r.stderr.contains(text) && r.stderr.contains(locked.path), "\(r.stderr)")
                #expect(r.stderr.contains("Read-only file system") || r.stderr.contains("Permission denied"), "\(r.stderr)")
            }
            #expect(listing(locked).isEmpty)
        }
    }

    /// Ctrl-C stops every render: exit 130, no output and no temporary file.
    @Test func ctrlCStopsEveryRenderAndLeavesNoFile() throws {
        let dir = try SpinetCommand.temporaryDirectory("batch-interrupt")
        defer { try? FileManager.default.removeItem(at: dir) }
        let long = arpeggio(seconds: 1800)
        let songs = try ["one.mid", "two.mid", "three.mid"].map { try write(long, to: dir, $0) }
        let out = dir.appendingPathComponent("out")
        let r = try SpinetCommand.run(["render"] + songs + ["-o", out.path + "/", "--soundfont", font, "--jobs", "2"],
                                      timeout: 60, interruptAfter: 1.5)
        #expect(!r.timedOut)
        #expect(r.status == 130, "\(r.stderr)")
        #expect(r.stderr.contains("interrupted"), "\(r.stderr)")
        #expect(listing(out).isEmpty, "left \(listing(out))")
    }

    /// Any stopping signal (here the terminal closing, and a service
    /// manager's SIGTERM) stops the batch like Ctrl-C, with 128 + the
    /// signal: a finished output stays, no partial or temporary file does.
    @Test(arguments: [SIGHUP, SIGTERM])
    func aStoppingSignalKeepsFinishedFilesOnly(_ signal: Int32) throws {
        let dir = try SpinetCommand.temporaryDirectory("batch-signal-\(signal)")
        defer { try? FileManager.default.removeItem(at: dir) }
        let long = arpeggio(seconds: 1800)
        let songs = try ["one.mid", "two.mid"].map { try write(long, to: dir, $0) } + [write(arpeggio(), to: dir, "short.mid")]
        let out = dir.appendingPathComponent("out")
        // Sent once the short file is done and both long ones are being rendered.
        let r = try SpinetCommand.run(["render"] + songs + ["-o", out.path + "/", "--soundfont", font, "--jobs", "3"],
                                      timeout: 120, interruptAfter: 0.5, signal: signal, interruptWhen: {
                                          let files = listing(out)
                                          return files.contains("short.wav") && files.filter { $0.contains(".spinet-") }.count == 2
                                      })
        #expect(!r.timedOut)
        #expect(r.status == 128 + signal, "\(r.stderr)")
        #expect(r.stderr.contains("interrupted"), "\(r.stderr)")
        #expect(listing(out) == ["short.wav"], "left \(listing(out))")
    }
}
