import Foundation
import Glibc
import Testing
import SpinetMIDI
import SpinetTestSupport

// `spinet render` never damages what is not its output: a device, FIFO or
// socket at the output path, a file the render reads, a file that appears
// during the render, the mode of the file it replaces. The special files
// are made in a private temporary directory (a `mknod` copy of /dev/null,
// a FIFO, a bound Unix socket), so the real /dev/null is never at risk.

/// The type bits of what is at `path` (links followed), or nil.
func fileType(_ path: String) -> mode_t? {
    var st = stat()
    return stat(path, &st) == 0 ? st.st_mode & S_IFMT : nil
}

/// Runs a shell command (for mknod, FIFO readers, concurrent renders).
@discardableResult
func shell(_ script: String, timeout: Double = 400) throws -> SpinetCommand.Result {
    try SpinetCommand.run(["-c", script], timeout: timeout, program: "/bin/sh")
}

/// A process started and not waited for. (Processes started from the tests
/// inherit a mask that blocks most signals, SIGCHLD among them, so a shell
/// there cannot `wait` for its children: the tests start them here.)
final class Started {
    let process = Process()
    let stderrPath: String

    init(_ arguments: [String], program: String = SpinetCommand.executable, stdout: String? = nil) throws {
        stderrPath = FileManager.default.temporaryDirectory.appendingPathComponent("spinet-stderr-\(getpid())-\(UInt32.random(in: 0...UInt32.max))").path
        FileManager.default.createFile(atPath: stderrPath, contents: nil)
        process.executableURL = URL(fileURLWithPath: program)
        process.arguments = arguments
        process.standardInput = FileHandle.nullDevice
        process.standardError = FileHandle(forWritingAtPath: stderrPath)
        if let stdout {
            FileManager.default.createFile(atPath: stdout, contents: nil)
            process.standardOutput = FileHandle(forWritingAtPath: stdout)
        } else {
            process.standardOutput = FileHandle.nullDevice
        }
        try process.run()
    }

    /// Waits (killing it after `timeout` seconds); the exit status and standard error.
    func finish(timeout: Double = 400) -> (status: Int32, stderr: String) {
        let start = Date()
        while process.isRunning && Date().timeIntervalSince(start) < timeout { usleep(10_000) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        let text = (try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? ""
        unlink(stderrPath)
        return (process.terminationStatus, text)
    }
}

/// Single-quoted for the shell.
func quoted(_ s: String) -> String { "'" + s.replacingOccurrences(of: "'", with: "'\\''") + "'" }

@Suite("spinet render: never damage what is not the output", .serialized)
struct OutputSafetyTests {
    static let isRoot = getuid() == 0

    // MARK: devices, FIFOs, sockets, links

    /// A character device is written through, as `> /dev/null` does: never
    /// replaced, no temporary file, with or without --force, any format.
    @Test(.enabled(if: isRoot, "mknod needs root"), arguments: [[String](), ["--force"], ["--force", "--format", "flac"], ["--format", "wav"]])
    func aCharacterDeviceIsWrittenThroughNotReplaced(extra: [String]) throws {
        let dir = try SpinetCommand.temporaryDirectory("chardev")
        defer { try? FileManager.default.removeItem(at: dir) }
        let input = try write(arpeggio(seconds: 1), to: dir, "song.mid")
        let null = dir.appendingPathComponent("null").path
        try #require(try shell("mknod \(quoted(null)) c 1 3").status == 0)
        let r = try SpinetCommand.run(["render", input, "-o", null, "--soundfont", font, "--quiet"] + extra)
        #expect(r.status == 0, "\(extra): \(r.stderr)")
        #expect(fileType(null) == S_IFCHR, "\(extra): the device was replaced")
        #expect(listing(dir) == ["null", "song.mid"], "\(extra)")
    }

    /// A FIFO gets a WAV stream (as `-o -` does), with or without --force; it stays a FIFO.
    @Test(arguments: [[String](), ["--force"]])
    func aFIFOGetsAWAVStreamAndStaysAFIFO(extra: [String]) throws {
        let dir = try SpinetCommand.temporaryDirectory("fifo")
        defer { try? FileManager.default.removeItem(at: dir) }
        let input = try write(arpeggio(seconds: 1), to: dir, "song.mid")
        let fifo = dir.appendingPathComponent("pipe.wav").path
        try #require(mkfifo(fifo, 0o644) == 0)
        let captured = FileManager.default.temporaryDirectory.appendingPathComponent("spinet-fifo-capture-\(getpid()).wav")
        defer { try? FileManager.default.removeItem(at: captured) }
        // The reader, as a shell would start it (killed after 60 s if nothing ever opens the FIFO).
        let reader = try Started([fifo], program: "/bin/cat", stdout: captured.path)
        let r = try SpinetCommand.run(["render", input, "-o", fifo, "--soundfont", font, "--quiet"] + extra)
        _ = reader.finish(timeout: r.status == 0 ? 60 : 1)
        #expect(r.status == 0, "\(extra): \(r.stderr)")
        #expect(fileType(fifo) == S_IFIFO, "\(extra): the FIFO was replaced")
        let wav = try? WAVFile(data: Data(contentsOf: captured))
        #expect((wav?.frames ?? 0) > 48000, "\(extra): no WAV stream came through the FIFO")
        #expect(listing(dir) == ["pipe.wav", "song.mid"], "\(extra)")
    }

    /// A FIFO cannot seek: another format is one line, before opening it (no reader needed).
    @Test func aFIFOTakesOnlyWAV() throws {
        let dir = try SpinetCommand.temporaryDirectory("fifo-flac")
        defer { try? FileManager.default.removeItem(at: dir) }
        let input = try write(arpeggio(seconds: 1), to: dir, "song.mid")
        let fifo = dir.appendingPathComponent("pipe").path
        try #require(mkfifo(fifo, 0o644) == 0)
        let r = try SpinetCommand.run(["render", input, "-o", fifo, "--format", "flac", "--soundfont", font, "--force"], timeout: 60)
        #expect(!r.timedOut)
        #expect(r.status == 1 && r.stderr.contains(fifo) && r.stderr.contains("FIFO") && r.stderr.contains("--format wav"), "\(r.stderr)")
        #expect(r.stderr.split(separator: "\n").count == 1, "\(r.stderr)")
        #expect(fileType(fifo) == S_IFIFO)
    }

    /// A socket is refused in one line, even with --force, and stays.
    @Test func aSocketIsRefusedAndKept() throws {
        let dir = try SpinetCommand.temporaryDirectory("socket")
        defer { try? FileManager.default.removeItem(at: dir) }
        let input = try write(arpeggio(seconds: 1), to: dir, "song.mid")
        let path = dir.appendingPathComponent("sock.wav").path
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        try #require(fd >= 0)
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (i, b) in path.utf8.prefix(raw.count - 1).enumerated() { raw[i] = b }
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        try #require(bound == 0)
        for extra in [["--force"], []] {
            let r = try SpinetCommand.run(["render", input, "-o", path, "--soundfont", font] + extra)
            #expect(r.status == 1 && r.stderr.contains(path) && r.stderr.contains("socket"), "\(extra): \(r.stderr)")
            #expect(r.stderr.split(separator: "\n").count == 1, "\(r.stderr)")
            #expect(fileType(path) == S_IFSOCK, "\(extra): the socket was replaced")
        }
    }

    /// A block device (a node for a loop device that is never opened) is refused, even with --force.
    @Test(.enabled(if: isRoot, "mknod needs root"))
    func aBlockDeviceIsRefusedAndKept() throws {
        let dir = try SpinetCommand.temporaryDirectory("blockdev")
        defer { try? FileManager.default.removeItem(at: dir) }
        let input = try write(arpeggio(seconds: 1), to: dir, "song.mid")
        let disk = dir.appendingPathComponent("disk.wav").path
        try #require(try shell("mknod \(quoted(disk)) b 7 250").status == 0)
        let r = try SpinetCommand.run(["render", input, "-o", disk, "--soundfont", font, "--force"])
        #expect(r.status == 1 && r.stderr.contains(disk) && r.stderr.contains("block device"), "\(r.stderr)")
        #expect(r.stderr.split(separator: "\n").count == 1, "\(r.stderr)")
        #expect(fileType(disk) == S_IFBLK)
        #expect(listing(dir) == ["disk.wav", "song.mid"])
    }

    /// A symbolic link is followed: the file it points to is written (or
    /// created, for a dangling link) and the link stays a link.
    @Test func aSymbolicLinkIsFollowedNotReplaced() throws {
        let dir = try SpinetCommand.temporaryDirectory("symlink")
        defer { try? FileManager.default.removeItem(at: dir) }
        let input = try write(arpeggio(seconds: 1), to: dir, "song.mid")
        let fm = FileManager.default
        try fm.createDirectory(at: dir.appendingPathComponent("real"), withIntermediateDirectories: false)
        // To an existing file, with --force.
        let existing = dir.appendingPathComponent("real/old.wav")
        try Data("old".utf8).write(to: existing)
        let link = dir.appendingPathComponent("old-link.wav").path
        try fm.createSymbolicLink(atPath: link, withDestinationPath: "real/old.wav")
        let r = try SpinetCommand.run(["render", input, "-o", link, "--soundfont", font, "--quiet", "--force"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect((try? fm.destinationOfSymbolicLink(atPath: link)) == "real/old.wav", "the link was replaced")
        #expect(try Data(contentsOf: existing).prefix(4) == Data("RIFF".utf8))
        // Dangling: the render creates the file it names.
        let dangling = dir.appendingPathComponent("new-link.wav").path
        try fm.createSymbolicLink(atPath: dangling, withDestinationPath: "real/new.wav")
        let d = try SpinetCommand.run(["render", input, "-o", dangling, "--soundfont", font, "--quiet"])
        #expect(d.status == 0, "\(d.stderr)")
        #expect((try? fm.destinationOfSymbolicLink(atPath: dangling)) == "real/new.wav", "the link was replaced")
        #expect((try? Data(contentsOf: dir.appendingPathComponent("real/new.wav")).prefix(4)) == Data("RIFF".utf8))
        #expect(listing(dir.appendingPathComponent("real")) == ["new.wav", "old.wav"])
    }

    // MARK: the output is never a file the render reads

    @Test func anOutputThatIsAnInputIsRefused() throws {
        let dir = try SpinetCommand.temporaryDirectory("same-file")
        defer { try? FileManager.default.removeItem(at: dir) }
        let midi = arpeggio(seconds: 1)
        let input = try write(midi, to: dir, "song.mid")
        let fontCopy = dir.appendingPathComponent("font.sf2").path
        try FileManager.default.copyItem(atPath: font, toPath: fontCopy)
        let fontBytes = try Data(contentsOf: URL(fileURLWithPath: fontCopy))
        let config = try write(Array("{}".utf8), to: dir, "config.json")
        let presets = try write(Array("{ \"base\": \"factory\", \"presets\": [] }".utf8), to: dir, "presets.json")
        let hardLink = dir.appendingPathComponent("linked.wav").path
        try #require(link(input, hardLink) == 0)
        let cases: [(output: String, extra: [String], what: String)] = [
            (input, ["--soundfont", font], "MIDI file"),
            (hardLink, ["--soundfont", font], "MIDI file"),
            (fontCopy, ["--soundfont", fontCopy], "SoundFont"),
            (config, ["--soundfont", font, "--config", config], "config file"),
            (presets, ["--soundfont", font, "--presets", presets], "preset file"),
        ]
        for c in cases {
            let r = try SpinetCommand.run(["render", input, "-o", c.output, "--format", "wav", "--force"] + c.extra)
            #expect(r.status == 1 && r.stderr.contains(c.output) && r.stderr.contains(c.what), "\(c.output): \(r.stderr)")
            #expect(r.stderr.split(separator: "\n").count == 1, "\(r.stderr)")
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: input)) == Data(midi))
        #expect(try Data(contentsOf: URL(fileURLWithPath: fontCopy)) == fontBytes)
        #expect(try Data(contentsOf: URL(fileURLWithPath: config)) == Data("{}".utf8))
        #expect(listing(dir) == ["config.json", "font.sf2", "linked.wav", "presets.json", "song.mid"])
    }

    /// In batch mode too, before any work: `tune.wav` (a MIDI file) would be rendered over itself.
    @Test func aBatchOutputThatIsAnInputIsRefusedBeforeAnyWork() throws {
        let dir = try SpinetCommand.temporaryDirectory("same-file-batch")
        defer { try? FileManager.default.removeItem(at: dir) }
        let a = try write(arpeggio(seconds: 1), to: dir, "a.mid")
        let midi = arpeggio(seconds: 1, program: 24)
        let tune = try write(midi, to: dir, "tune.wav")
        let r = try SpinetCommand.run(["render", a, tune, "-o", dir.path, "--soundfont", font, "--force"])
        #expect(r.status == 1 && r.stderr.contains(tune) && r.stderr.contains("MIDI file"), "\(r.stderr)")
        #expect(r.stderr.split(separator: "\n").count == 1, "\(r.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: tune)) == Data(midi))
        #expect(listing(dir) == ["a.mid", "tune.wav"])
    }

    // MARK: the final rename replaces nothing it did not check

    /// A file created at the output path during the render stays; the render
    /// is discarded with one line naming the output; exit 1.
    @Test func aFileThatAppearsDuringTheRenderIsNotReplaced() throws {
        let dir = try SpinetCommand.temporaryDirectory("appears")
        defer { try? FileManager.default.removeItem(at: dir) }
        let input = try write(arpeggio(seconds: 10), to: dir, "song.mid")
        let out = dir.appendingPathComponent("song.wav").path
        // Wait for the temporary file (the render has started), then make the output.
        let render = try Started(["render", input, "-o", out, "--soundfont", font, "--quiet"])
        while render.process.isRunning && !listing(dir).contains(where: { $0.contains(".spinet-") }) { usleep(5_000) }
        try Data("intruder\n".utf8).write(to: URL(fileURLWithPath: out))
        let r = render.finish()
        #expect(r.status == 1, "\(r.stderr)")
        #expect(r.stderr.contains(out) && r.stderr.contains("appeared during the render"), "\(r.stderr)")
        #expect(!r.stderr.contains(".spinet-"), "\(r.stderr)")
        #expect(try String(contentsOfFile: out, encoding: .utf8) == "intruder\n")
        #expect(listing(dir) == ["song.mid", "song.wav"])
    }

    /// Two renders to one path at once: one wins, the other fails (never both exit 0).
    @Test func twoRendersToOnePathDoNotBothSucceed() throws {
        let dir = try SpinetCommand.temporaryDirectory("two-renders")
        defer { try? FileManager.default.removeItem(at: dir) }
        let input = try write(arpeggio(seconds: 4), to: dir, "song.mid")
        let out = dir.appendingPathComponent("song.wav").path
        let renders = try (0..<2).map { _ in try Started(["render", input, "-o", out, "--soundfont", font, "--quiet"]) }
        let results = renders.map { $0.finish() }
        #expect(results.map(\.status).sorted() == [0, 1], "\(results)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: out)).prefix(4) == Data("RIFF".utf8))
        #expect(listing(dir) == ["song.mid", "song.wav"])
    }

    /// --force over an existing file keeps its mode.
    @Test func forceKeepsTheModeOfTheFileItReplaces() throws {
        let dir = try SpinetCommand.temporaryDirectory("mode")
        defer { try? FileManager.default.removeItem(at: dir) }
        let input = try write(arpeggio(seconds: 1), to: dir, "song.mid")
        let out = dir.appendingPathComponent("song.wav").path
        try Data("old".utf8).write(to: URL(fileURLWithPath: out))
        try #require(chmod(out, 0o640) == 0)
        let r = try SpinetCommand.run(["render", input, "-o", out, "--soundfont", font, "--quiet", "--force"])
        #expect(r.status == 0, "\(r.stderr)")
        var st = stat()
        #expect(stat(out, &st) == 0 && st.st_mode & 0o777 == 0o640, "mode \(String(st.st_mode & 0o777, radix: 8))")
        #expect(try Data(contentsOf: URL(fileURLWithPath: out)).prefix(4) == Data("RIFF".utf8))
    }

    // MARK: messages

    /// A write that fails (a file-size limit) names the output, never the temporary file.
    @Test func aFailedWriteNamesTheOutputNotTheTemporaryFile() throws {
        let dir = try SpinetCommand.temporaryDirectory("write-fails")
        defer { try? FileManager.default.removeItem(at: dir) }
        let input = try write(arpeggio(seconds: 2), to: dir, "song.mid")
        let out = dir.appendingPathComponent("song.wav").path
        let render = ([SpinetCommand.executable, "render", input, "-o", out, "--soundfont", font, "--quiet"]).map(quoted).joined(separator: " ")
        let r = try shell("trap '' XFSZ; ulimit -f 64; exec \(render)")
        #expect(r.status == 1, "\(r.stderr)")
        #expect(r.stderr.contains(out) && !r.stderr.contains(".spinet-"), "\(r.stderr)")
        #expect(r.stderr.split(separator: "\n").count == 1, "\(r.stderr)")
        #expect(listing(dir) == ["song.mid"])
    }

    /// Options that contradict each other are refused before the MIDI file
    /// or the font is read (both are broken here, so a later check would name them).
    @Test(arguments: [
        (["-o", "y.wav", "--format", "flac"], "y.wav"),
        (["-o", "y.mp3", "--rate", "192000"], "MP3"),
        (["-o", "y.mp3", "--format", "mp3", "--rate", "96000"], "MP3"),
    ])
    func contradictoryOptionsAreRefusedBeforeAnyWork(extra: [String], named: String) throws {
        let dir = try SpinetCommand.temporaryDirectory("contradiction")
        defer { try? FileManager.default.removeItem(at: dir) }
        let input = try write(Array("not midi".utf8), to: dir, "broken.mid")
        let r = try SpinetCommand.run(["render", input, "--soundfont", "/nonexistent/font.sf2"] + extra, in: dir)
        #expect(r.status == 1 && r.stderr.contains(named) && !r.stderr.contains("broken.mid") && !r.stderr.contains("nonexistent"), "\(extra): \(r.stderr)")
        #expect(r.stderr.split(separator: "\n").count == 1, "\(r.stderr)")
        #expect(listing(dir) == ["broken.mid"])
    }

    @Test func aBatchAtAnMP3RateThatCannotBeIsRefusedBeforeTheFontLoads() throws {
        let dir = try SpinetCommand.temporaryDirectory("contradiction-batch")
        defer { try? FileManager.default.removeItem(at: dir) }
        let a = try write(arpeggio(seconds: 1), to: dir, "a.mid")
        let b = try write(arpeggio(seconds: 1), to: dir, "b.mid")
        let r = try SpinetCommand.run(["render", a, b, "-o", dir.path + "/out/", "--format", "mp3", "--rate", "192000", "--soundfont", "/nonexistent/font.sf2"])
        #expect(r.status == 1 && r.stderr.contains("MP3") && !r.stderr.contains("nonexistent"), "\(r.stderr)")
        #expect(listing(dir) == ["a.mid", "b.mid"])
    }

    /// With --format and no -o, the output is named after the format (not song.wav holding FLAC);
    /// an output with no known extension takes --format as it is.
    @Test func theFormatNamesTheDefaultOutput() throws {
        let dir = try SpinetCommand.temporaryDirectory("format-name")
        defer { try? FileManager.default.removeItem(at: dir) }
        let input = try write(arpeggio(seconds: 1), to: dir, "song.mid")
        let r = try SpinetCommand.run(["render", input, "--format", "flac", "--soundfont", font, "--quiet"])
        #expect(r.status == 0, "\(r.stderr)")
        let plain = try SpinetCommand.run(["render", input, "-o", dir.appendingPathComponent("take").path, "--format", "flac", "--soundfont", font, "--quiet"])
        #expect(plain.status == 0, "\(plain.stderr)")
        #expect(listing(dir) == ["song.flac", "song.mid", "take"])
        #expect(try Data(contentsOf: dir.appendingPathComponent("take")).prefix(4) == Data("fLaC".utf8))
    }

    // MARK: sizes and determinism

    /// AIFF's sizes are 32 bits: a render that can pass 4 GB (50 minutes at
    /// 192 kHz in 32-bit float) is refused at once, before the font is loaded.
    @Test func anAIFFThatCouldPass4GBIsRefusedBeforeAnyWork() throws {
        let dir = try SpinetCommand.temporaryDirectory("aiff-4gb")
        defer { try? FileManager.default.removeItem(at: dir) }
        var w = MIDIFileWriter(format: 0, ticksPerQuarter: 1)   // 120 bpm: 2 ticks a second
        w.addTrack([(0, .message(.noteOn(channel: 0, key: 60, velocity: 100))), (1, .message(.noteOff(channel: 0, key: 60, velocity: 0)))],
                   endTick: 50 * 60 * 2)
        let input = try write(w.bytes(), to: dir, "long.mid")
        let r = try SpinetCommand.run(["render", input, "-o", dir.appendingPathComponent("long.aiff").path, "--bits", "32f",
                                       "--rate", "192000", "--soundfont", "/nonexistent/font.sf2"], timeout: 60)
        #expect(!r.timedOut)
        #expect(r.status == 1 && r.stderr.contains("long.aiff") && r.stderr.contains("AIFF") && r.stderr.contains(".wav"), "\(r.stderr)")
        #expect(r.stderr.split(separator: "\n").count == 1, "\(r.stderr)")
        #expect(listing(dir) == ["long.mid"])
    }

    /// Every container gives the same bytes for the same input: Ogg too
    /// (libsndfile's random stream serial is replaced), and MP3.
    @Test(arguments: ["ogg", "mp3", "flac", "aiff"])
    func everyFormatRendersByteIdentically(ext: String) throws {
        let dir = try SpinetCommand.temporaryDirectory("identical-\(ext)")
        defer { try? FileManager.default.removeItem(at: dir) }
        let input = try write(arpeggio(seconds: 2), to: dir, "song.mid")
        var renders: [Data] = []
        for i in 0..<2 {
            let out = dir.appendingPathComponent("song\(i).\(ext)")
            let r = try SpinetCommand.run(["render", input, "-o", out.path, "--soundfont", font, "--quiet"])
            #expect(r.status == 0, "\(r.stderr)")
            renders.append(try Data(contentsOf: out))
            if i == 0 { usleep(1_100_000) }   // libsndfile seeds its serial from the clock
        }
        #expect(renders[0].count > 1000)
        #expect(renders[0] == renders[1], "two .\(ext) renders of one input differ")
    }
}
