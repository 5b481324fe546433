import Foundation
import Glibc
import Testing
import SpinetSupport
import SpinetTestSupport
import SpinetTestTraits

// Inputs that used to crash, hang or eat memory: a large SysEx in a MIDI
// file, a preset file with no presets, /dev/zero and other endless or huge
// inputs, a FIFO named as a SoundFont, tens of thousands of tracks, standard
// input. Each ends in a render or in one line naming the thing, exit 1, and
// no file (temporary or not) left behind.

private func be32(_ v: Int) -> [UInt8] { [UInt8((v >> 24) & 0xFF), UInt8((v >> 16) & 0xFF), UInt8((v >> 8) & 0xFF), UInt8(v & 0xFF)] }
private func vlq(_ n: Int) -> [UInt8] {
    var out = [UInt8(n & 0x7F)]
    var v = n >> 7
    while v > 0 { out.insert(UInt8(v & 0x7F) | 0x80, at: 0); v >>= 7 }
    return out
}
private func header(format: Int, tracks: Int, division: Int = 96) -> [UInt8] {
    Array("MThd".utf8) + be32(6) + [0, UInt8(format), UInt8((tracks >> 8) & 0xFF), UInt8(tracks & 0xFF), UInt8(division >> 8), UInt8(division & 0xFF)]
}
private func track(_ body: [UInt8]) -> [UInt8] { Array("MTrk".utf8) + be32(body.count) + body }
private let note: [UInt8] = [0x00, 0x90, 60, 100, 0x60, 0x80, 60, 0]
private let eot: [UInt8] = [0x00, 0xFF, 0x2F, 0x00]

/// A format 0 file: a SysEx message of each size (F0 and F7 included), then a note.
private func sysExFile(_ sizes: [Int]) -> Data {
    var body: [UInt8] = []
    for size in sizes {
        body += [0x00, 0xF0] + vlq(size - 1) + [0x41] + [UInt8](repeating: 0x10, count: size - 3) + [0xF7]
    }
    return Data(header(format: 0, tracks: 1) + track(body + note + eot))
}

/// Files in `dir` whose names mark them as Spinet's temporary outputs.
private func leftovers(_ dir: URL) -> [String] {
    ((try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? []).filter { $0.contains(".spinet-") }
}

func errorLines(_ r: SpinetCommand.Result) -> [String] {
    r.stderr.split(separator: "\n").map(String.init).filter { $0.hasPrefix("spinet: ") && !$0.hasPrefix("spinet: warning") && !$0.hasPrefix("spinet: FluidSynth") }
}

/// Runs spinet with standard input read from `stdinPath`; returns status and stderr.
private func runWithInput(_ arguments: [String], stdinPath: String, in dir: URL, timeout: Double = 120) throws -> (status: Int32, stderr: String) {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: SpinetCommand.executable)
    p.arguments = arguments
    p.currentDirectoryURL = dir
    let err = Pipe()
    p.standardError = err
    p.standardOutput = FileHandle.nullDevice
    p.standardInput = FileHandle(forReadingAtPath: stdinPath)
    try p.run()
    let start = Date()
    while p.isRunning && Date().timeIntervalSince(start) < timeout { usleep(10_000) }
    if p.isRunning { p.terminate() }
    p.waitUntilExit()
    let text = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    return (p.terminationStatus, text)
}

/// Runs spinet as a child and returns its exit status and peak RSS in bytes (wait4's ru_maxrss).
func peakMemory(_ arguments: [String]) -> (status: Int32, bytes: Int) {
    let spawned = ChildProcess.spawn(SpinetCommand.executable, arguments, descriptors: [
        .open(0, path: "/dev/null", flags: O_RDONLY), .open(1, path: "/dev/null", flags: O_WRONLY), .open(2, path: "/dev/null", flags: O_WRONLY),
    ])
    guard case .success(let pid) = spawned else { return (-1, 0) }
    // The child's own high-water mark (VmHWM), read while it runs: wait4's
    // ru_maxrss would also count the test process's memory, which a child
    // spawned with a shared address space (vfork) takes over until exec.
    var status: Int32 = 0
    var peak = 0
    while true {
        if let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
           let line = text.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
           let kb = Int(String(line.dropFirst("VmHWM:".count).filter(\.isNumber))) {
            peak = max(peak, kb * 1024)
        }
        let done = waitpid(pid, &status, WNOHANG)
        if done == pid || (done < 0 && errno != EINTR) { break }
        usleep(2_000)
    }
    let exit = (status & 0x7F) == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
    return (exit, peak)
}

@Suite("spinet render: hard inputs", .serialized)
struct HardInputTests {
    // MARK: 1. Large SysEx

    @Test(arguments: [(70_000, [String]()), (300_000, []), (2_000_000, []), (300_000, ["--threads", "1"])])
    func aLargeSysExIsSkippedAndCounted(size: Int, extra: [String]) throws {
        let dir = try SpinetCommand.temporaryDirectory("sysex")
        defer { try? FileManager.default.removeItem(at: dir) }
        try sysExFile([size]).write(to: dir.appendingPathComponent("dump.mid"))
        let r = try SpinetCommand.run(["render", "dump.mid", "-o", "dump.wav"] + extra, in: dir, timeout: 120)
        #expect(!r.timedOut)
        #expect(r.status == 0, "\(size) bytes: \(r.stderr)")
        #expect(r.stderr.contains("1 SysEx message over 64 KB skipped"), "\(r.stderr)")
        #expect(FileManager.default.fileExists(atPath: dir.appendingPathComponent("dump.wav").path))
        #expect(leftovers(dir).isEmpty)
    }

    @Test func sysExOfManySizesInOneFileAndInABatch() throws {
        let dir = try SpinetCommand.temporaryDirectory("sysex-batch")
        defer { try? FileManager.default.removeItem(at: dir) }
        // 20 KB passes (a GS reset would); the others are skipped.
        try sysExFile([20_000, 70_000, 300_000, 2_000_000, 20_000_000]).write(to: dir.appendingPathComponent("all.mid"))
        try sysExFile([262_000, 300_000]).write(to: dir.appendingPathComponent("two.mid"))
        let single = try SpinetCommand.run(["render", "all.mid", "-o", "all.wav", "--threads", "1"], in: dir, timeout: 200)
        #expect(single.status == 0, "\(single.stderr)")
        #expect(single.stderr.contains("4 SysEx messages over 64 KB skipped"), "\(single.stderr)")
        let batch = try SpinetCommand.run(["render", "all.mid", "two.mid", "-o", "out/", "--jobs", "2"], in: dir, timeout: 200)
        #expect(batch.status == 0, "\(batch.stderr)")
        #expect(batch.stderr.contains("two.mid: ") && batch.stderr.contains("2 SysEx messages over 64 KB skipped"), "\(batch.stderr)")
        for name in ["out/all.wav", "out/two.wav"] {
            #expect(FileManager.default.fileExists(atPath: dir.appendingPathComponent(name).path))
        }
        #expect(leftovers(dir).isEmpty && leftovers(dir.appendingPathComponent("out")).isEmpty)
    }

    // MARK: 2. A preset file with no presets

    @Test func aPresetFileWithNoPresetsWorksEverywhere() throws {
        let dir = try SpinetCommand.temporaryDirectory("empty-presets")
        defer { try? FileManager.default.removeItem(at: dir) }
        try Data(header(format: 0, tracks: 1) + track(note + eot)).write(to: dir.appendingPathComponent("song.mid"))
        try Data(#"{"base": "empty", "presets": []}"#.utf8).write(to: dir.appendingPathComponent("empty.json"))
        try Data(#"{"presets": "empty.json"}"#.utf8).write(to: dir.appendingPathComponent("config.json"))
        for args in [["--presets", "empty.json"], ["--presets", "empty.json", "--channel", "1=synth"],
                     ["--config", "config.json"], ["--config", "config.json", "--channel", "1=synth"]] {
            let r = try SpinetCommand.run(["render", "song.mid", "-o", "song.wav", "--force"] + args, in: dir, timeout: 120)
            #expect(r.status == 0, "\(args): \(r.stderr)")
        }
        // A channel that names a preset the file does not have: one line, no crash.
        let r = try SpinetCommand.run(["render", "song.mid", "-o", "bell.wav", "--presets", "empty.json", "--channel", "1=synth:bell"], in: dir)
        #expect(r.status == 1)
        #expect(errorLines(r).count == 1 && r.stderr.contains("\"bell\""), "\(r.stderr)")
        #expect(!FileManager.default.fileExists(atPath: dir.appendingPathComponent("bell.wav").path))
        #expect(leftovers(dir).isEmpty)
    }

    // MARK: 3. Bounded time and memory

    @Test(arguments: ["/dev/zero", "/dev/urandom", "zeros.mid", "huge.mid"])
    func endlessOrHugeInputsFailAtOnce(input: String) throws {
        let dir = try SpinetCommand.temporaryDirectory("huge")
        defer { try? FileManager.default.removeItem(at: dir) }
        // Sparse files: 3 GB of zeros, and a MIDI header followed by 300 MB.
        FileManager.default.createFile(atPath: dir.appendingPathComponent("zeros.mid").path, contents: nil)
        #expect(truncate(dir.appendingPathComponent("zeros.mid").path, off_t(3) << 30) == 0)
        FileManager.default.createFile(atPath: dir.appendingPathComponent("huge.mid").path, contents: Data(header(format: 0, tracks: 1)))
        #expect(truncate(dir.appendingPathComponent("huge.mid").path, off_t(300) << 20) == 0)
        let start = Date()
        let r = try SpinetCommand.run(["render", input, "-o", "out.wav"], in: dir, timeout: 60)
        #expect(!r.timedOut)
        #expect(Date().timeIntervalSince(start) < 30)
        #expect(r.status == 1)
        #expect(errorLines(r).count == 1 && r.stderr.contains(input), "\(r.stderr)")
        if input == "huge.mid" { #expect(r.stderr.contains("256 MB")) } else { #expect(r.stderr.contains("no MThd header")) }
        #expect(leftovers(dir).isEmpty)
        #expect(!FileManager.default.fileExists(atPath: dir.appendingPathComponent("out.wav").path))
    }

    @Test(arguments: [["--soundfont", "fifo"], ["--soundfont", "link"], ["--presets", "fifo"], ["--config", "fifo"]])
    func aFIFOInPlaceOfAFileIsRefusedWithoutOpeningIt(args: [String]) throws {
        let dir = try SpinetCommand.temporaryDirectory("fifo")
        defer { try? FileManager.default.removeItem(at: dir) }
        try Data(header(format: 0, tracks: 1) + track(note + eot)).write(to: dir.appendingPathComponent("song.mid"))
        #expect(mkfifo(dir.appendingPathComponent("fifo").path, 0o600) == 0)
        try FileManager.default.createSymbolicLink(atPath: dir.appendingPathComponent("link").path, withDestinationPath: "fifo")
        let r = try SpinetCommand.run(["render", "song.mid", "-o", "out.wav"] + args, in: dir, timeout: 30)
        #expect(!r.timedOut, "\(args) hung")
        #expect(r.status == 1)
        #expect(errorLines(r).count == 1 && r.stderr.contains("\(args[1]) is not a regular file"), "\(r.stderr)")
        #expect(leftovers(dir).isEmpty)
    }

    /// 30,000 one-note tracks, every note at once: this took 640 MB (FluidSynth
    /// warned for each note, and the warnings were all kept); now under 150 MB.
    @Test(.measuresMemory) func thirtyThousandTracksTakeLittleMemory() throws {
        let dir = try SpinetCommand.temporaryDirectory("tracks")
        defer { try? FileManager.default.removeItem(at: dir) }
        let n = 30_000
        let one = track(note + eot)
        var bytes = header(format: 1, tracks: n)
        bytes.reserveCapacity(bytes.count + n * one.count)
        for _ in 0..<n { bytes += one }
        try Data(bytes).write(to: dir.appendingPathComponent("tracks.mid"))
        let r = peakMemory(["render", dir.appendingPathComponent("tracks.mid").path, "-o", dir.appendingPathComponent("tracks.wav").path,
                            "--threads", "2", "--quiet"])
        #expect(r.status == 0)
        #expect(r.bytes < 150 << 20, "peak RSS \(r.bytes >> 20) MB")
        #expect(r.bytes > 10 << 20, "the peak was read: \(r.bytes) bytes")
    }

    // MARK: 4. Messages: warnings once, standard input, derived names

    @Test func eachWarningIsPrintedOnce() throws {
        let dir = try SpinetCommand.temporaryDirectory("warnings")
        defer { try? FileManager.default.removeItem(at: dir) }
        // declares 3 tracks, has 1; no End of Track
        try Data(header(format: 0, tracks: 3) + track(note)).write(to: dir.appendingPathComponent("odd.mid"))
        let r = try SpinetCommand.run(["render", "odd.mid", "-o", "odd.wav"], in: dir)
        #expect(r.status == 0)
        let warnings = r.stderr.split(separator: "\n").filter { $0.hasPrefix("spinet: warning:") }
        #expect(warnings.count == 2, "\(r.stderr)")
        #expect(Set(warnings).count == warnings.count)
    }

    @Test func standardInputIsReadWithAnOutputNamed() throws {
        let dir = try SpinetCommand.temporaryDirectory("stdin")
        defer { try? FileManager.default.removeItem(at: dir) }
        let song = dir.appendingPathComponent("song.mid").path
        try Data(header(format: 0, tracks: 1) + track(note + eot)).write(to: URL(fileURLWithPath: song))
        let ok = try runWithInput(["render", "-", "-o", "out.wav"], stdinPath: song, in: dir)
        #expect(ok.status == 0, "\(ok.stderr)")
        #expect(FileManager.default.fileExists(atPath: dir.appendingPathComponent("out.wav").path))
        // No -o: one line asking for one.
        let noOutput = try runWithInput(["render", "-"], stdinPath: song, in: dir)
        #expect(noOutput.status == 1)
        #expect(noOutput.stderr.contains("-o"), "\(noOutput.stderr)")
        #expect(noOutput.stderr.split(separator: "\n").count == 1)
        // /dev/stdin: no output name is made from it (it used to write /dev/stdin.wav).
        let devStdin = try runWithInput(["render", "/dev/stdin"], stdinPath: song, in: dir)
        #expect(devStdin.status == 1)
        #expect(devStdin.stderr.contains("/dev/stdin is not a regular file") && devStdin.stderr.contains("-o"), "\(devStdin.stderr)")
        // Batch mode names outputs after inputs: standard input is refused there.
        let batch = try runWithInput(["render", "-", "song.mid", "-o", "out/"], stdinPath: song, in: dir)
        #expect(batch.status == 1)
        #expect(batch.stderr.contains("standard input"), "\(batch.stderr)")
        #expect(leftovers(dir).isEmpty)
    }
}
