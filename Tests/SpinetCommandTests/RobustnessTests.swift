import Foundation
import Glibc
import Testing
import SpinetMIDI
import SpinetTestSupport
import SpinetTestTraits

// The file side of robustness: `spinet render` survives bad input, odd files and
// failing output. Every case ends one of two ways -- a correct, audible
// render (exit 0), or one error line naming the file (exit 1) with no output
// file and no temporary file left behind. Never a crash, never exit 0 with
// silence, never an empty file.

/// What a render of an odd input must do.
enum Outcome: Sendable, CustomStringConvertible {
    /// Exit 0 and an audible WAV file.
    case renders
    /// Exit 1, one line that names the input and contains this text.
    case fails(String)
    /// Either of the above: the file is damaged in a way that may or may not matter.
    case rendersOrFails

    var description: String {
        switch self {
        case .renders: return "renders"
        case .fails(let text): return "fails with \"\(text)\""
        case .rendersOrFails: return "renders or fails"
        }
    }
}

/// Real-world oddities (hundreds of tracks, karaoke, 8 sharps, ...), made here so the suite needs no external files.
func oddFiles() -> [(String, [UInt8], Outcome)] {
    func be32(_ v: Int) -> [UInt8] { [UInt8((v >> 24) & 0xFF), UInt8((v >> 16) & 0xFF), UInt8((v >> 8) & 0xFF), UInt8(v & 0xFF)] }
    func header(format: Int, tracks: Int, division: Int = 96) -> [UInt8] {
        Array("MThd".utf8) + be32(6) + [0, UInt8(format), UInt8(tracks >> 8), UInt8(tracks & 0xFF), UInt8(division >> 8), UInt8(division & 0xFF)]
    }
    func track(_ body: [UInt8]) -> [UInt8] { Array("MTrk".utf8) + be32(body.count) + body }
    let eot: [UInt8] = [0x00, 0xFF, 0x2F, 0x00]
    var files: [(String, [UInt8], Outcome)] = []

    // Hundreds of tracks: 300, each one note, on all 16 channels.
    var many = MIDIFileWriter(format: 1, ticksPerQuarter: 96)
    for i in 0..<300 {
        let ch = UInt8(i % 16), key = UInt8(36 + i % 48), t = Int64(i * 4)
        many.addTrack([(t, .message(.noteOn(channel: ch, key: key, velocity: 90))), (t + 48, .message(.noteOff(channel: ch, key: key, velocity: 0)))])
    }
    files.append(("300-tracks.mid", many.bytes(), .renders))

    // A karaoke file: the @KMIDI marker, lyrics as text events in their own track.
    var kar = MIDIFileWriter(format: 1, ticksPerQuarter: 96)
    kar.addTrack([(0, .text(type: 0x01, bytes: Array("@KMIDI KARAOKE FILE".utf8)))])
    kar.addTrack([(0, .text(type: 0x03, bytes: Array("Words".utf8))), (0, .text(type: 0x01, bytes: Array("@LENGLISH".utf8))),
                  (96, .text(type: 0x01, bytes: Array("\\Twin".utf8))), (192, .text(type: 0x01, bytes: Array("kle ".utf8))),
                  (288, .text(type: 0x01, bytes: Array("/lit".utf8)))])
    var melody: [(tick: Int64, event: TrackEvent.Kind)] = [(0, .text(type: 0x03, bytes: Array("Melody".utf8)))]
    for (i, key) in [60, 60, 67, 67, 69, 69, 67].enumerated() {
        melody.append((Int64(i * 96), .message(.noteOn(channel: 0, key: UInt8(key), velocity: 100))))
        melody.append((Int64(i * 96 + 90), .message(.noteOff(channel: 0, key: UInt8(key), velocity: 0))))
    }
    kar.addTrack(melody)
    files.append(("twinkle.kar", kar.bytes(), .renders))

    // Raw bytes the writer would not produce.
    let note: [UInt8] = [0x00, 0x90, 60, 100, 0x60, 0x80, 60, 0]
    files.append(("8-sharps.mid", header(format: 0, tracks: 1) + track([0x00, 0xFF, 0x59, 0x02, 0x08, 0x00] + note + eot), .renders))
    files.append(("velocity-255.mid", header(format: 0, tracks: 1) + track([0x00, 0x90, 60, 0xFF, 0x60, 0x80, 60, 0xFF] + eot), .renders))
    files.append(("zero-tracks.mid", header(format: 1, tracks: 0), .fails("no notes")))
    files.append(("all-sysex.mid", header(format: 0, tracks: 1) + track([
        0x00, 0xF0, 0x05, 0x7E, 0x7F, 0x09, 0x01, 0xF7,
        0x00, 0xF0, 0x0A, 0x41, 0x10, 0x42, 0x12, 0x40, 0x00, 0x7F, 0x00, 0x41, 0xF7,
        0x10, 0xF0, 0x03, 0x7F, 0x7F, 0x04, 0x10, 0xF7, 0x03, 0x01, 0x00, 0xF7,
    ] + eot), .fails("no notes")))
    // A note no preset plays (drum key 1 is outside every General MIDI kit): silence is an error.
    files.append(("no-sounding-note.mid", header(format: 0, tracks: 1) + track([0x00, 0x99, 1, 100, 0x60, 0x89, 1, 0] + eot), .fails("silent")))
    files.append(("declares-more-tracks.mid", header(format: 1, tracks: 9) + track(note + eot), .renders))
    files.append(("no-end-of-track.mid", header(format: 0, tracks: 1) + track(note), .renders))

    // Format 2 and SMPTE time.
    var seqs = MIDIFileWriter(format: 2, ticksPerQuarter: 96)
    for ch in UInt8(0)..<3 { seqs.addTrack([(0, .message(.noteOn(channel: ch, key: 60 + ch, velocity: 100))), (96, .message(.noteOff(channel: ch, key: 60 + ch, velocity: 0)))]) }
    files.append(("format-2.mid", seqs.bytes(), .renders))
    var smpte = MIDIFileWriter(format: 0, smpteFramesPerSecond: 25, ticksPerFrame: 40)
    smpte.addTrack([(0, .message(.noteOn(channel: 0, key: 60, velocity: 100))), (500, .message(.noteOff(channel: 0, key: 60, velocity: 0)))])
    files.append(("smpte.mid", smpte.bytes(), .renders))

    // RIFF MIDI with a wrong data length.
    let body = smpte.bytes()
    let le = { (v: Int) in Array(be32(v).reversed()) }
    files.append(("wrapped.rmi", Array("RIFF".utf8) + le(0xFFFF_FFF0) + Array("RMID".utf8) + Array("data".utf8) + le(0xFFFF_FFF0) + body, .renders))

    // Declared sizes that must not be allocated.
    files.append(("track-length-4GB.mid", header(format: 0, tracks: 1) + Array("MTrk".utf8) + be32(0xFFFF_FFFF) + note, .fails("byte 18")))
    files.append(("sysex-length-256MB.mid", header(format: 0, tracks: 1) + track([0x00, 0xF0, 0xFF, 0xFF, 0xFF, 0x7F, 0x01] + eot), .fails("SysEx length")))
    files.append(("65535-tracks-declared.mid", header(format: 1, tracks: 0xFFFF) + track(note + eot), .renders))
    return files
}

@Suite("spinet render: robustness", .serialized)
struct RobustnessTests {
    /// Runs a render and checks the outcome: the output, the exit status,
    /// the one error line, and what is left in the directory.
    func check(_ args: [String], input: String, output: URL, in dir: URL, expect outcome: Outcome,
               timeout: Double = 120, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let before = listing(dir).filter { $0 != output.lastPathComponent }
        let r = try SpinetCommand.run(["render", input, "-o", output.path, "--quiet"] + args, timeout: timeout)
        let name = URL(fileURLWithPath: input).lastPathComponent
        #expect(!r.timedOut, "\(name): still running after \(timeout) s", sourceLocation: sourceLocation)
        let lines = r.stderr.split(separator: "\n").map(String.init)
        switch (outcome, r.status) {
        case (.renders, _), (.rendersOrFails, 0):
            #expect(r.status == 0, "\(name): \(r.stderr)", sourceLocation: sourceLocation)
            guard r.status == 0 else { return }
            let wav = try WAVFile(data: Data(contentsOf: output))
            #expect(wav.frames > 0, "\(name): an empty render", sourceLocation: sourceLocation)
            #expect((wav.samples.map { abs($0) }.max() ?? 0) > 0.001, "\(name): a silent render", sourceLocation: sourceLocation)
            #expect(listing(dir) == (before + [output.lastPathComponent]).sorted(), "\(name): left \(listing(dir))", sourceLocation: sourceLocation)
        case (.fails, _), (.rendersOrFails, _):
            #expect(r.status == 1, "\(name): status \(r.status): \(r.stderr)", sourceLocation: sourceLocation)
            #expect(lines.count == 1, "\(name): \(r.stderr)", sourceLocation: sourceLocation)
            #expect(r.stderr.contains(name), "\(name): the error does not name the file: \(r.stderr)", sourceLocation: sourceLocation)
            if case .fails(let text) = outcome {
                #expect(r.stderr.contains(text), "\(name): \(r.stderr)", sourceLocation: sourceLocation)
            }
            #expect(listing(dir) == before, "\(name): left \(listing(dir))", sourceLocation: sourceLocation)
        }
    }

    @Test(arguments: oddFiles())
    func oddFilesRenderOrFailCleanly(name: String, bytes: [UInt8], outcome: Outcome) throws {
        let dir = try SpinetCommand.temporaryDirectory("odd")
        defer { try? FileManager.default.removeItem(at: dir) }
        let input = try write(bytes, to: dir, name)
        try check(["--soundfont", font], input: input, output: dir.appendingPathComponent("out.wav"), in: dir, expect: outcome)
    }

    /// Every input that ever broke Spinet (Tests/SpinetMIDITests/Regressions),
    /// rendered at 192 kHz, where the largest frame numbers arise.
    @Test(arguments: regressionInputs(SpinetCommand.repositoryRoot.appendingPathComponent("Tests/SpinetMIDITests/Regressions/midi-file")))
    func regressionInputsRenderOrFailCleanly(path: String) throws {
        let dir = try SpinetCommand.temporaryDirectory("regression")
        defer { try? FileManager.default.removeItem(at: dir) }
        let input = dir.appendingPathComponent(URL(fileURLWithPath: path).lastPathComponent).path
        try FileManager.default.copyItem(atPath: path, toPath: input)
        try check(["--soundfont", font, "--rate", "192000"], input: input, output: dir.appendingPathComponent("out.wav"),
                  in: dir, expect: .rendersOrFails, timeout: 60)
    }

    /// Thirty minutes of music render completely: the summary names the
    /// length, and the file holds 30 minutes plus the decay tail.
    @Test(.slow)   // a debug or sanitizer render of 30 minutes takes minutes
    func aThirtyMinuteFileRendersCompletely() throws {
        let dir = try SpinetCommand.temporaryDirectory("thirty")
        defer { try? FileManager.default.removeItem(at: dir) }
        // A note every 8 s for 30 minutes: the render's cost is in the frames, not the notes.
        var w = MIDIFileWriter(format: 0, ticksPerQuarter: 480)
        var events: [(tick: Int64, event: TrackEvent.Kind)] = []
        for i in 0..<225 {
            let t = Int64(i * 7680), key = UInt8(60 + i % 12)
            events.append((t, .message(.noteOn(channel: 0, key: key, velocity: 90))))
            events.append((t + 1800, .message(.noteOff(channel: 0, key: key, velocity: 0))))
        }
        w.addTrack(events, endTick: 225 * 7680)
        let input = try write(w.bytes(), to: dir, "thirty.mid")
        let out = dir.appendingPathComponent("thirty.wav")
        let r = try SpinetCommand.run(["render", input, "-o", out.path, "--soundfont", font, "--rate", "22050"], timeout: 900)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stderr.contains("Rendered 30:00.0 of music"), "\(r.stderr)")
        // 16-bit stereo: 4 bytes a frame after libsndfile's 44-byte header.
        let size = try FileManager.default.attributesOfItem(atPath: out.path)[.size] as? Int ?? 0
        let seconds = Double(size - 44) / 4 / 22050
        #expect(seconds >= 1800 && seconds < 1812, "\(seconds) s")
        #expect(listing(dir) == ["thirty.mid", "thirty.wav"])
    }

    // MARK: SoundFonts

    /// Broken SoundFonts: the top-level structure is checked before any audio
    /// work (a clear error naming the font); damage inside a well-sized file
    /// either fails the same way or renders -- FluidSynth never crashes.
    @Test(arguments: brokenSoundFonts())
    func brokenSoundFontsFailCleanly(name: String, expectError: Bool) throws {
        let dir = try SpinetCommand.temporaryDirectory("sf")
        defer { try? FileManager.default.removeItem(at: dir) }
        let fontPath = dir.appendingPathComponent(name).path
        if let data = try makeBrokenSoundFont(name) { try data.write(to: URL(fileURLWithPath: fontPath)) }
        if name == "a-directory.sf2" { try FileManager.default.createDirectory(atPath: fontPath, withIntermediateDirectories: false) }
        let input = try write(arpeggio(), to: dir, "song.mid")
        let before = listing(dir)
        let out = dir.appendingPathComponent("song.wav")
        let r = try SpinetCommand.run(["render", input, "-o", out.path, "--soundfont", fontPath, "--quiet"], timeout: 60)
        #expect(r.status == 0 || r.status == 1, "\(name): status \(r.status) (a crash?): \(r.stderr.suffix(2000))")
        if expectError { #expect(r.status == 1, "\(name) was accepted") }
        if r.status == 0 {
            let wav = try WAVFile(data: Data(contentsOf: out))
            #expect(wav.frames > 0 && (wav.samples.map { abs($0) }.max() ?? 0) > 0.001, "\(name): an empty or silent render")
        } else {
            // libinstpatch (FluidSynth's DLS loader, tried after its SoundFont
            // loader fails) prints GLib "CRITICAL" lines of its own; Spinet's
            // error is the line that starts with "spinet:".
            // A font FluidSynth accepts despite its damage can render silence:
            // that error names the MIDI file.
            let ours = r.stderr.split(separator: "\n").filter { $0.hasPrefix("spinet:") }
            #expect(ours.count == 1, "\(name): \(r.stderr)")
            let named = ours.first?.contains(fontPath) == true || (!expectError && ours.first?.contains("song.mid is silent") == true)
            #expect(named, "\(name): the error does not name the font: \(r.stderr)")
            #expect(listing(dir) == before, "\(name): left \(listing(dir))")
        }
    }

    // MARK: Output

    /// Every output's folders are made first, in order (the output
    /// transaction), as `mkdir -p` would; a folder that cannot be made (a
    /// file stands where it should be) is one line before any work.
    @Test func aMissingOutputFolderIsMadeAndOneThatCannotBeIsRefused() throws {
        let dir = try SpinetCommand.temporaryDirectory("nodir")
        defer { try? FileManager.default.removeItem(at: dir) }
        let input = try write(arpeggio(), to: dir, "song.mid")
        let out = dir.appendingPathComponent("missing/deeper/song.wav").path
        let r = try SpinetCommand.run(["render", input, "-o", out, "--soundfont", font, "-q"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(try WAVFile(data: Data(contentsOf: URL(fileURLWithPath: out))).frames > 0)
        try Data("x".utf8).write(to: dir.appendingPathComponent("afile"))
        let blocked = dir.appendingPathComponent("afile/song.wav").path
        let b = try SpinetCommand.run(["render", input, "-o", blocked, "--soundfont", font])
        #expect(b.status == 1)
        #expect(b.stderr.split(separator: "\n").count == 1 && b.stderr.contains("afile"), "\(b.stderr)")
        #expect(listing(dir) == ["afile", "missing", "song.mid"])
    }

    /// A directory Spinet may not write to: read-only for a normal user; for
    /// root (who may write anywhere) a read-only tmpfs.
    @Test func anUnwritableDirectoryIsRefusedBeforeAnyWork() throws {
        try withReadOnlyDirectory("readonly") { dir, locked in
            let input = try write(arpeggio(), to: dir, "song.mid")
            let out = locked.appendingPathComponent("song.wav").path
            let r = try SpinetCommand.run(["render", input, "-o", out, "--soundfont", font])
            #expect(r.status == 1)
            #expect(r.stderr.split(separator: "\n").count == 1 && r.stderr.contains(out), "\(r.stderr)")
            #expect(r.stderr.contains("Read-only file system") || r.stderr.contains("Permission denied"), "\(r.stderr)")
            #expect(listing(locked).isEmpty)
        }
    }

    /// The disk fills up mid-render (a 200 KB tmpfs, a render of about 1.5 MB):
    /// one error line, exit 1, and the partial temporary file is removed.
    @Test func aFullDiskMidRenderLeavesNoPartialFile() throws {
        let dir = try SpinetCommand.temporaryDirectory("fulldisk")
        let small = dir.appendingPathComponent("small")
        try FileManager.default.createDirectory(at: small, withIntermediateDirectories: false)
        var mounted = false
        defer {
            if mounted { _ = try? runTool("/bin/umount", ["-l", small.path]) }
            try? FileManager.default.removeItem(at: dir)
        }
        mounted = try mountTmpfs(at: small, options: "size=200k")
        if !mounted { try Test.cancel("cannot mount a small tmpfs here (needs root and mount permission): the full-disk case is not tested") }
        let input = try write(arpeggio(seconds: 8), to: dir, "song.mid")
        let out = small.appendingPathComponent("song.wav").path
        let r = try SpinetCommand.run(["render", input, "-o", out, "--soundfont", font, "--quiet"])
        #expect(r.status == 1, "\(r.stderr)")
        #expect(r.stderr.split(separator: "\n").count == 1 && r.stderr.contains("No space left on device"), "\(r.stderr)")
        #expect(r.stderr.contains("song.wav"), "the error should name the output: \(r.stderr)")
        #expect(listing(small).isEmpty, "left \(listing(small))")
    }

    /// `spinet render ... -o - | head -c 100`: the reader goes away early;
    /// Spinet stops rendering and exits cleanly, without an error.
    @Test func standardOutputClosedEarlyIsACleanExit() throws {
        let dir = try SpinetCommand.temporaryDirectory("headc")
        defer { try? FileManager.default.removeItem(at: dir) }
        let input = try write(arpeggio(seconds: 300), to: dir, "long.mid")
        let script = "\"$0\" render \"$1\" -o - --soundfont \"$2\" --quiet | head -c 100 > \"$3\"; echo \"${PIPESTATUS[0]}\""
        let start = Date()
        let r = try runTool("/bin/bash", ["-c", script, SpinetCommand.executable, input, font, dir.appendingPathComponent("head.bin").path])
        let status = String(decoding: r.stdout, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(status == "0", "spinet exited with \(status): \(r.stderr)")
        #expect(r.stderr.isEmpty, "\(r.stderr)")
        #expect(Date().timeIntervalSince(start) < 60, "spinet went on rendering after its reader left")
        let head = try Data(contentsOf: dir.appendingPathComponent("head.bin"))
        #expect(head.count == 100 && head.prefix(4) == Data("RIFF".utf8))
        #expect(listing(dir) == ["head.bin", "long.mid"])
    }

    /// Standard output that cannot be written (/dev/full): one error line, exit 1.
    @Test func standardOutputThatCannotBeWrittenIsAnError() throws {
        let dir = try SpinetCommand.temporaryDirectory("devfull")
        defer { try? FileManager.default.removeItem(at: dir) }
        let input = try write(arpeggio(), to: dir, "song.mid")
        let r = try runTool("/bin/bash", ["-c", "\"$0\" render \"$1\" -o - --soundfont \"$2\" --quiet > /dev/full", SpinetCommand.executable, input, font])
        #expect(r.status == 1, "\(r.stderr)")
        #expect(r.stderr.split(separator: "\n").count == 1 && r.stderr.contains("No space left on device"), "\(r.stderr)")
    }

    // MARK: Network

    /// Spinet opens no socket: `strace -f` sees no socket call during a render.
    @Test func aRenderOpensNoSocket() throws {
        guard let strace = ([String](["/usr/bin/strace", "/bin/strace"])).first(where: { access($0, X_OK) == 0 }) else {
            try Test.cancel("strace is not installed (apt-get install strace); the no-socket check is skipped")
        }
        let dir = try SpinetCommand.temporaryDirectory("strace")
        defer { try? FileManager.default.removeItem(at: dir) }
        let input = try write(arpeggio(), to: dir, "song.mid")
        let trace = dir.appendingPathComponent("trace.txt").path
        let r = try runTool(strace, ["-f", "-qq", "-e", "trace=socket,socketpair,connect,bind,listen", "-o", trace,
                                     SpinetCommand.executable, "render", input, "-o", dir.appendingPathComponent("song.wav").path,
                                     "--soundfont", font, "--quiet"])
        if r.status != 0 && r.stderr.contains("ptrace") {
            try Test.cancel("strace cannot trace here (ptrace not permitted): \(r.stderr)")
        }
        #expect(r.status == 0, "\(r.stderr)")
        let calls: String = (try? String(contentsOfFile: trace, encoding: .utf8)) ?? ""
        #expect(!calls.contains("socket("), "\(calls)")
        #expect(!calls.contains("connect(") && !calls.contains("bind("), "\(calls)")
    }
}

// MARK: - Helpers

/// Broken SoundFonts by name, and whether Spinet must refuse them (true) or
/// may render with them (false: damage FluidSynth can survive).
func brokenSoundFonts() -> [(String, Bool)] {
    [("empty.sf2", true), ("truncated.sf2", true), ("riff-size-huge.sf2", true), ("chunk-size-huge.sf2", true),
     ("renamed-wav.sf2", true), ("missing.sf2", true), ("a-directory.sf2", true), ("midi-file.sf2", true),
     ("pdta-phdr-size-odd.sf2", true), ("pdta-pbag-size-huge.sf2", true), ("pdta-zeroed.sf2", true),
     ("pdta-random-bytes.sf2", false), ("shdr-samples-past-the-data.sf2", false), ("shdr-start-after-end.sf2", false),
     ("sdta-smpl-size-small.sf2", false), ("sdta-smpl-renamed.sf2", false)]
}

/// Builds the broken SoundFont `name` from the bundled one (nil: no file at all).
func makeBrokenSoundFont(_ name: String) throws -> Data? {
    let good = [UInt8](try Data(contentsOf: URL(fileURLWithPath: font)))
    func le32(_ b: [UInt8], _ o: Int) -> Int { Int(b[o]) | Int(b[o + 1]) << 8 | Int(b[o + 2]) << 16 | Int(b[o + 3]) << 24 }
    func put32(_ b: inout [UInt8], _ o: Int, _ v: Int) { for i in 0..<4 { b[o + i] = UInt8((v >> (8 * i)) & 0xFF) } }
    /// Offsets of the top-level LIST chunks and their sub-chunks, by tag.
    func chunks() -> [String: (offset: Int, size: Int)] {
        var found: [String: (Int, Int)] = [:]
        var o = 12
        while o + 12 <= good.count {
            let size = le32(good, o + 4)
            let list = String(decoding: good[(o + 8)..<(o + 12)], as: UTF8.self)
            found[list] = (o, size)
            var p = o + 12
            while p + 8 <= min(o + 8 + size, good.count) {
                let s = le32(good, p + 4)
                found[String(decoding: good[p..<(p + 4)], as: UTF8.self)] = (p, s)
                p += 8 + s + (s & 1)
            }
            o += 8 + size + (size & 1)
        }
        return found
    }
    let c = chunks()
    guard let pdta = c["pdta"], let sdta = c["sdta"], let phdr = c["phdr"], let pbag = c["pbag"], let shdr = c["shdr"], let smpl = c["smpl"] else {
        Issue.record("the bundled SoundFont does not have the usual chunks: \(c.keys.sorted())")
        return nil
    }
    var b = good
    switch name {
    case "empty.sf2": b = []
    case "truncated.sf2": b = Array(good.prefix(good.count / 3))
    case "riff-size-huge.sf2": put32(&b, 4, 0x7FFF_FFFF)
    case "chunk-size-huge.sf2": put32(&b, sdta.offset + 4, 0x7FFF_FFFF)
    case "renamed-wav.sf2": b = Array("RIFF".utf8) + [36, 0, 0, 0] + Array("WAVEfmt ".utf8) + [UInt8](repeating: 0, count: 64)
    case "missing.sf2", "a-directory.sf2": return nil
    case "midi-file.sf2": b = arpeggio()
    case "pdta-phdr-size-odd.sf2": put32(&b, phdr.offset + 4, phdr.size + 1)
    case "pdta-pbag-size-huge.sf2": put32(&b, pbag.offset + 4, 0x7FFF_FFFF)
    case "pdta-zeroed.sf2":
        for i in (pdta.offset + 12)..<(pdta.offset + 8 + pdta.size) { b[i] = 0 }
    case "pdta-random-bytes.sf2":
        // 2000 random bytes changed in the preset data, sub-chunk headers and all.
        var rng = SplitMix64(seed: 6)
        for _ in 0..<2000 {
            let i = pdta.offset + 12 + Int(rng.next() % UInt64(pdta.size - 4))
            b[i] = UInt8(truncatingIfNeeded: rng.next())
        }
    case "shdr-samples-past-the-data.sf2":
        for r in 0..<(shdr.size / 46) {
            let o = shdr.offset + 8 + r * 46
            put32(&b, o + 20, 0); put32(&b, o + 24, 0x7FFF_FFF0); put32(&b, o + 28, 0x7FFF_0000); put32(&b, o + 32, 0x7FFF_FFF0)
        }
    case "shdr-start-after-end.sf2":
        for r in 0..<(shdr.size / 46) {
            let o = shdr.offset + 8 + r * 46
            let start = le32(good, o + 20), end = le32(good, o + 24)
            put32(&b, o + 20, end); put32(&b, o + 24, start)
        }
    case "sdta-smpl-size-small.sf2": put32(&b, smpl.offset + 4, 100)
    case "sdta-smpl-renamed.sf2": for (i, ch) in "xxxx".utf8.enumerated() { b[smpl.offset + i] = ch }
    default: Issue.record("no recipe for \(name)")
    }
    return Data(b)
}

/// Runs a tool and waits (its output must be small).
func runTool(_ path: String, _ arguments: [String]) throws -> (status: Int32, stdout: Data, stderr: String) {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: path)
    p.arguments = arguments
    let out = Pipe(), err = Pipe()
    p.standardOutput = out
    p.standardError = err
    p.standardInput = FileHandle.nullDevice
    try p.run()
    let o = out.fileHandleForReading.readDataToEndOfFile()
    let e = err.fileHandleForReading.readDataToEndOfFile()
    p.waitUntilExit()
    return (p.terminationStatus, o, String(decoding: e, as: UTF8.self))
}

/// Mounts a tmpfs at `dir`; false where that is not permitted.
/// Runs `body` with a new temporary directory and, inside it, a directory
/// nobody can write to (a read-only tmpfs when running as root, who ignores
/// permissions; mode 555 otherwise). Cleans both up.
func withReadOnlyDirectory(_ name: String, _ body: (_ dir: URL, _ locked: URL) throws -> Void) throws {
    let dir = try SpinetCommand.temporaryDirectory(name)
    let locked = dir.appendingPathComponent("locked")
    try FileManager.default.createDirectory(at: locked, withIntermediateDirectories: false)
    var mounted = false
    defer {
        if mounted { _ = try? runTool("/bin/umount", ["-l", locked.path]) }
        chmod(locked.path, 0o755)
        try? FileManager.default.removeItem(at: dir)
    }
    if geteuid() == 0 {
        mounted = try mountTmpfs(at: locked, options: "ro,size=64k")
        if !mounted { try Test.cancel("root cannot be kept from writing without mounting a read-only tmpfs, and mount is not permitted here") }
    } else {
        chmod(locked.path, 0o555)
    }
    try body(dir, locked)
}

func mountTmpfs(at dir: URL, options: String) throws -> Bool {
    guard geteuid() == 0, access("/bin/mount", X_OK) == 0 else { return false }
    return try runTool("/bin/mount", ["-t", "tmpfs", "-o", options, "tmpfs", dir.path]).status == 0
}
