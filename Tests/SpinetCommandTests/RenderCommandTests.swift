import Foundation
import Testing
import SpinetMIDI
import SpinetTestSupport

let demo = SpinetCommand.repositoryRoot.appendingPathComponent("demo/spinet-demo.mid").path
let font = SpinetCommand.repositoryRoot.appendingPathComponent("SoundFonts/sf_GMbank.sf2").path

/// One A4 on channel 1, held for a second (960 ticks at 120 bpm).
func heldA4() -> [UInt8] {
    var w = MIDIFileWriter(format: 0, ticksPerQuarter: 480)
    w.addTrack([(0, .message(.noteOn(channel: 0, key: 69, velocity: 100))), (960, .message(.noteOff(channel: 0, key: 69, velocity: 0)))])
    return w.bytes()
}

/// A short file: a C major arpeggio on the piano, `seconds` long at 120 bpm.
func arpeggio(seconds: Int = 2, channel: UInt8 = 0, program: UInt8 = 0) -> [UInt8] {
    var w = MIDIFileWriter(format: 0, ticksPerQuarter: 480)
    var events: [(tick: Int64, event: TrackEvent.Kind)] = [(0, .message(.programChange(channel: channel, program: program)))]
    let keys: [UInt8] = [60, 64, 67, 72]
    for i in 0..<(seconds * 2) {
        let t = Int64(i * 480)
        events.append((t, .message(.noteOn(channel: channel, key: keys[i % 4], velocity: 100))))
        events.append((t + 400, .message(.noteOff(channel: channel, key: keys[i % 4], velocity: 0))))
    }
    w.addTrack(events)
    return w.bytes()
}

func write(_ bytes: [UInt8], to dir: URL, _ name: String) throws -> String {
    let url = dir.appendingPathComponent(name)
    try Data(bytes).write(to: url)
    return url.path
}

/// Files in `dir` (including hidden ones, so leftover temporaries show).
func listing(_ dir: URL) -> [String] {
    ((try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? []).sorted()
}

/// Hand-made broken Standard MIDI Files, each with its name.
func brokenFiles() -> [(String, [UInt8])] {
    let mthd: [UInt8] = Array("MThd".utf8)
    let mtrk: [UInt8] = Array("MTrk".utf8)
    let header: [UInt8] = mthd + [0, 0, 0, 6, 0, 0, 0, 1, 0, 96]
    var files: [(String, [UInt8])] = []
    files.append(("empty.mid", []))
    files.append(("truncated-header.mid", mthd + [0, 0, 0, 6, 0, 1]))
    files.append(("division-zero.mid", mthd + [0, 0, 0, 6, 0, 0, 0, 1, 0, 0] + mtrk + [0, 0, 0, 4, 0, 0xFF, 0x2F, 0]))
    files.append(("track-past-end.mid", header + mtrk + [0x7F, 0xFF, 0xFF, 0xFF, 0, 0x90, 60, 100]))
    files.append(("no-running-status.mid", header + mtrk + [0, 0, 0, 8, 0, 60, 100, 0, 0xFF, 0x2F, 0, 0]))
    files.append(("unterminated-sysex.mid", header + mtrk + [0, 0, 0, 6, 0, 0xF0, 0x40, 1, 2, 3]))
    files.append(("not-midi.mid", Array("RIFF".utf8) + [4, 0, 0, 0] + Array("WAVE".utf8)))
    return files
}

@Suite("spinet render", .serialized)
struct RenderCommandTests {
    @Test func rendersTheDemoToAWAVFileAndSaysWhatItDid() throws {
        let dir = try SpinetCommand.temporaryDirectory("render")
        defer { try? FileManager.default.removeItem(at: dir) }
        let out = dir.appendingPathComponent("demo.wav").path
        let r = try SpinetCommand.run(["render", demo, "-o", out, "--soundfont", font])
        #expect(r.status == 0, "\(r.stderr)")
        let wav = try WAVFile(data: Data(contentsOf: URL(fileURLWithPath: out)))
        #expect(wav.sampleRate == 48000 && wav.channels == 2 && wav.bitsPerSample == 16)
        let seconds = Double(wav.frames) / 48000
        // The music lasts 49.85 s to its last event; the tail decays in a few seconds, not a fixed pad.
        #expect(seconds > 49.8 && seconds < 58, "length \(seconds) s")
        let peak = wav.samples.map { abs($0) }.max() ?? 0
        #expect(peak > 0.05 && peak <= 0.892)
        #expect(r.stderr.contains("SoundFont: \(font)"))
        let summary = r.stderr.split(separator: "\n").last.map(String.init) ?? ""
        #expect(summary.contains("real time") && summary.contains("dBFS") && summary.contains("voices") && summary.contains("0 events dropped"), "\(summary)")
        #expect(listing(dir) == ["demo.wav"])
    }

    @Test(arguments: ["16", "32f"])
    func twoRendersAreByteIdentical(bits: String) throws {
        let dir = try SpinetCommand.temporaryDirectory("determinism")
        defer { try? FileManager.default.removeItem(at: dir) }
        for name in ["a.wav", "b.wav"] {
            if name == "b.wav" { sleep(1) }   // a time stamp in the file would change
            let r = try SpinetCommand.run(["render", demo, "-o", dir.appendingPathComponent(name).path, "--soundfont", font, "--quiet", "--bits", bits])
            #expect(r.status == 0, "\(r.stderr)")
            #expect(r.stderr.isEmpty)
        }
        let a = try Data(contentsOf: dir.appendingPathComponent("a.wav"))
        let b = try Data(contentsOf: dir.appendingPathComponent("b.wav"))
        #expect(a.count > 1_000_000)
        #expect(a == b)
    }

    /// Renders `input` with `--threads 1` and `--threads 2` into `dir`; the two files' bytes.
    func renderOnOneAndTwoThreads(_ input: String, in dir: URL) throws -> (one: Data, two: Data) {
        for t in ["1", "2"] {
            let r = try SpinetCommand.run(["render", input, "-o", dir.appendingPathComponent("t\(t).wav").path, "--soundfont", font, "--threads", t, "--quiet"])
            #expect(r.status == 0, "\(r.stderr)")
        }
        return (try Data(contentsOf: dir.appendingPathComponent("t1.wav")), try Data(contentsOf: dir.appendingPathComponent("t2.wav")))
    }

    /// Rendering on one thread or two gives the same bytes.
    @Test func theThreadCountDoesNotChangeTheOutput() throws {
        let dir = try SpinetCommand.temporaryDirectory("threads")
        defer { try? FileManager.default.removeItem(at: dir) }
        let (a, b) = try renderOnOneAndTwoThreads(demo, in: dir)
        #expect(a.count > 1_000_000)
        #expect(a == b)
    }

    /// The music decides the partitions: a light file renders on one
    /// FluidSynth (one thread, whatever --threads says), a dense one on
    /// several, with the same bytes on 1, 2 or 16 threads, and never more
    /// threads than partitions or cores (the render team's hand-overs spin).
    @Test func thePartitionsFollowTheMusicAndTheThreadsChangeNoByte() throws {
        let dir = try SpinetCommand.temporaryDirectory("plan")
        defer { try? FileManager.default.removeItem(at: dir) }
        let light = try SpinetCommand.run(["render", try write(arpeggio(seconds: 2), to: dir, "light.mid"),
                                           "-o", dir.appendingPathComponent("light.wav").path, "--soundfont", font, "--threads", "2"])
        #expect(light.status == 0, "\(light.stderr)")
        #expect(light.stderr.contains("real time, 1 partition on 1 thread)"), "\(light.stderr)")
        let dense = try write(denseSong(seconds: 6, channels: 2), to: dir, "dense.mid")
        var outputs: [Data] = []
        var partitions: Set<Int> = []
        for t in ["1", "2", "16"] {
            let out = dir.appendingPathComponent("t\(t).wav")
            let r = try SpinetCommand.run(["render", dense, "-o", out.path, "--soundfont", font, "--threads", t])
            #expect(r.status == 0, "\(r.stderr)")
            // "(12.3x real time, 8 partitions on 2 threads)"
            let said = r.stderr.components(separatedBy: "real time, ").dropFirst().first?.components(separatedBy: ")").first
            let words = said.map { $0.split(separator: " ") } ?? []
            partitions.insert(words.first.flatMap { Int($0) } ?? 0)
            let expected = min(Int(t)!, Int(words.first ?? "") ?? 0, ProcessInfo.processInfo.activeProcessorCount)
            #expect(words.count == 5 && words[3] == Substring("\(expected)"), "\(r.stderr)")
            outputs.append(try Data(contentsOf: out))
        }
        #expect(partitions.count == 1 && partitions.first! > 2 && partitions.first! <= 16, "\(partitions)")
        #expect(outputs[0].count > 1_000_000)
        #expect(outputs[1] == outputs[0])
        #expect(outputs[2] == outputs[0])
    }

    /// A song whose drum track is most of the work has that channel split
    /// over both synthesizers (each key's notes taking turns): still the
    /// same bytes on one thread or two, and the drums still sound.
    @Test func aSplitDrumChannelRendersTheSameOnAnyThreadCount() throws {
        let dir = try SpinetCommand.temporaryDirectory("split")
        defer { try? FileManager.default.removeItem(at: dir) }
        var w = MIDIFileWriter(format: 0, ticksPerQuarter: 480)
        var events: [(tick: Int64, event: TrackEvent.Kind)] = []
        for i in 0..<96 {   // ride on every eighth, hi-hats, kick and snare
            let t = Int64(i * 240)
            for key: UInt8 in [51, i % 4 == 3 ? 46 : 42, i % 2 == 0 ? 36 : 38] {
                events.append((t, .message(.noteOn(channel: 9, key: key, velocity: 100))))
                events.append((t + 200, .message(.noteOff(channel: 9, key: key, velocity: 0))))
            }
        }
        events.append((0, .message(.noteOn(channel: 0, key: 60, velocity: 90))))
        events.append((960, .message(.noteOff(channel: 0, key: 60, velocity: 0))))
        w.addTrack(events.sorted { $0.tick < $1.tick })
        let (a, b) = try renderOnOneAndTwoThreads(try write(w.bytes(), to: dir, "drums.mid"), in: dir)
        #expect(a.count > 1_000_000)
        #expect(a == b)
        // the groove is loud all through (2 s windows of the 24 s)
        let left = try WAVFile(data: a).channel(0)
        for s in 0..<11 {
            let peak = left[(s * 96000)..<((s + 1) * 96000)].map { abs($0) }.max() ?? 0
            #expect(peak > 0.03, "seconds \(2 * s)-\(2 * s + 2): peak \(peak)")
        }
    }

    /// `--channel 1=synth:sine` sends channel 1 to Spinet's synth: a held A4
    /// comes out as a pure 440 Hz sine (the SoundFont piano is rich in harmonics).
    @Test func channelOptionPlaysTheSynth() throws {
        let dir = try SpinetCommand.temporaryDirectory("channel")
        defer { try? FileManager.default.removeItem(at: dir) }
        let input = try write(heldA4(), to: dir, "a4.mid")
        var harmonicRatio: [String: Double] = [:]
        for (name, extra) in [("synth", ["--channel", "1=synth:sine"]), ("soundfont", [])] {
            let out = dir.appendingPathComponent("\(name).wav")
            let r = try SpinetCommand.run(["render", input, "-o", out.path, "--soundfont", font, "--bits", "32f", "--quiet"] + extra)
            #expect(r.status == 0, "\(r.stderr)")
            let x = try WAVFile(data: Data(contentsOf: out)).channel(0)
            let slice = x[9600..<(9600 + 16384)]
            let f = SignalAnalysis.fundamentalFrequency(slice, sampleRate: 48000)
            let spectrum = SignalAnalysis.magnitudeSpectrum(slice)
            let bin = { (hz: Double) in Int((hz / 48000 * 16384).rounded()) }
            let fundamental = spectrum[(bin(440) - 3)...(bin(440) + 3)].max()!
            let second = spectrum[(bin(880) - 3)...(bin(880) + 3)].max()!
            harmonicRatio[name] = 20 * log10(second / fundamental)
            if name == "synth" { #expect(abs(SignalAnalysis.cents(f, relativeTo: 440)) < 0.1) }
        }
        #expect(harmonicRatio["synth"]! < -80, "\(harmonicRatio)")
        #expect(harmonicRatio["soundfont"]! > -60, "\(harmonicRatio)")
    }

    /// The config file's channel assignment is used, and a bad key is one clear line.
    @Test func theConfigFileAssignsChannels() throws {
        let dir = try SpinetCommand.temporaryDirectory("config")
        defer { try? FileManager.default.removeItem(at: dir) }
        let input = try write(heldA4(), to: dir, "a4.mid")
        try FileManager.default.createDirectory(at: dir.appendingPathComponent("spinet"), withIntermediateDirectories: true)
        let config = dir.appendingPathComponent("spinet/config.json")
        try Data(#"{"channels": ["1=synth:sine"], "rate": 44100}"#.utf8).write(to: config)
        let out = dir.appendingPathComponent("a4.wav")
        let r = try SpinetCommand.run(["render", input, "-o", out.path, "--soundfont", font, "--bits", "32f", "--quiet"],
                                      environment: ["XDG_CONFIG_HOME": dir.path])
        #expect(r.status == 0, "\(r.stderr)")
        let wav = try WAVFile(data: Data(contentsOf: out))
        #expect(wav.sampleRate == 44100)
        let f = SignalAnalysis.fundamentalFrequency(wav.channel(0)[8820..<(8820 + 16384)], sampleRate: 44100)
        #expect(abs(SignalAnalysis.cents(f, relativeTo: 440)) < 0.1)

        try Data(#"{"chanels": ["1=synth"]}"#.utf8).write(to: config)
        let bad = try SpinetCommand.run(["render", input, "-o", out.path, "--force", "--soundfont", font], environment: ["XDG_CONFIG_HOME": dir.path])
        #expect(bad.status == 1)
        #expect(bad.stderr.contains(config.path) && bad.stderr.contains("chanels") && bad.stderr.split(separator: "\n").count == 1, "\(bad.stderr)")

        // Broken JSON: where, and what was expected.
        try Data("{\n  \"rate\": 44100,\n  \"channels\": [\"1=synth\"\n}".utf8).write(to: config)
        let broken = try SpinetCommand.run(["render", input, "-o", out.path, "--force", "--soundfont", font], environment: ["XDG_CONFIG_HOME": dir.path])
        #expect(broken.status == 1)
        #expect(broken.stderr == "spinet: config \(config.path): not valid JSON: line 4, column 1: expected ',' or ']' in a list\n", "\(broken.stderr)")

        // A number where a setting is natural, and a SoundFont under ~ (HOME).
        try FileManager.default.createDirectory(at: dir.appendingPathComponent("home/fonts"), withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: font, toPath: dir.appendingPathComponent("home/fonts/gm.sf2").path)
        try Data(#"{"soundfonts": ["~/fonts/gm.sf2"], "highpass": 30, "rate": 44100}"#.utf8).write(to: config)
        let home = try SpinetCommand.run(["render", input, "-o", out.path, "--force", "--quiet"],
                                         environment: ["XDG_CONFIG_HOME": dir.path, "HOME": dir.appendingPathComponent("home").path])
        #expect(home.status == 0, "\(home.stderr)")
        #expect(try WAVFile(data: Data(contentsOf: out)).sampleRate == 44100)
        try Data(#"{"rate": 44100.5}"#.utf8).write(to: config)
        let fraction = try SpinetCommand.run(["render", input, "-o", out.path, "--force", "--soundfont", font], environment: ["XDG_CONFIG_HOME": dir.path])
        #expect(fraction.status == 1 && fraction.stderr.contains("\"rate\" must be a whole number of Hz"), "\(fraction.stderr)")
    }

    /// Spinet does not load Foundation (with its internationalization
    /// libraries and ICU, about 7 MB of resident memory): its modules use
    /// FoundationEssentials only.
    @Test func spinetDoesNotLinkFoundation() throws {
        let r = try runTool("/usr/bin/ldd", [SpinetCommand.executable])
        let libraries = String(decoding: r.stdout, as: UTF8.self)
        #expect(r.status == 0, "\(libraries)\(r.stderr)")
        for name in ["libFoundation.so", "libFoundationInternationalization", "lib_FoundationICU"] {
            #expect(!libraries.contains(name), "\(name) is linked:\n\(libraries)")
        }
        if libraries.contains("libswiftCore") {
            // The Swift libraries are shared (a debug build): FoundationEssentials is one of them.
            #expect(libraries.contains("libFoundationEssentials"), "\(libraries)")
        } else {
            // Linked in (the release build, --static-swift-stdlib): the
            // symbols say which Foundation modules are in the binary
            // (spinet-rtcheck, which links Foundation, has all three).
            let binary = try Data(contentsOf: URL(fileURLWithPath: SpinetCommand.executable))
            #expect(binary.range(of: Data("$s20FoundationEssentials".utf8)) != nil, "no FoundationEssentials symbol")
            for symbol in ["$s10Foundation", "$s30FoundationInternationalization", "ucal_open"] {
                #expect(binary.range(of: Data(symbol.utf8)) == nil, "\(symbol) is linked in")
            }
        }
    }

    /// Spinet's reverb (fed by the default CC 91 send of 40) adds a tail the
    /// render includes; --dry has none; an unknown preset is one clear line.
    @Test func spinetReverbAddsATailAndDryHasNone() throws {
        let dir = try SpinetCommand.temporaryDirectory("effects")
        defer { try? FileManager.default.removeItem(at: dir) }
        let input = try write(arpeggio(seconds: 2), to: dir, "song.mid")
        var seconds: [String: Double] = [:]
        for (name, extra) in [("hall", ["--reverb", "hall"]), ("dry", ["--dry"])] {
            let out = dir.appendingPathComponent("\(name).wav")
            let r = try SpinetCommand.run(["render", input, "-o", out.path, "--soundfont", font, "--quiet"] + extra)
            #expect(r.status == 0, "\(r.stderr)")
            seconds[name] = Double(try WAVFile(data: Data(contentsOf: out)).frames) / 48000
        }
        #expect(seconds["hall"]! > seconds["dry"]! + 1.0, "\(seconds)")
        let bad = try SpinetCommand.run(["render", input, "-o", dir.appendingPathComponent("x.wav").path, "--soundfont", font, "--reverb", "cathedral"])
        #expect(bad.status == 1 && bad.stderr.contains("--reverb cathedral") && bad.stderr.contains("hall"), "\(bad.stderr)")
    }

    @Test func anExistingOutputIsRefusedBeforeAnyWorkUnlessForced() throws {
        let dir = try SpinetCommand.temporaryDirectory("force")
        defer { try? FileManager.default.removeItem(at: dir) }
        let input = try write(arpeggio(), to: dir, "song.mid")
        let out = dir.appendingPathComponent("song.wav")
        try Data("keep me".utf8).write(to: out)
        let r = try SpinetCommand.run(["render", input, "-o", out.path, "--soundfont", font])
        #expect(r.status != 0)
        #expect(r.stderr.contains("already exists") && r.stderr.contains("--force"))
        #expect(try Data(contentsOf: out) == Data("keep me".utf8))
        let forced = try SpinetCommand.run(["render", input, "-o", out.path, "--soundfont", font, "--force"])
        #expect(forced.status == 0, "\(forced.stderr)")
        #expect(try Data(contentsOf: out).prefix(4) == Data("RIFF".utf8))
        #expect(listing(dir) == ["song.mid", "song.wav"])
    }

    @Test func theOutputNameDefaultsToTheInputWithWAV() throws {
        let dir = try SpinetCommand.temporaryDirectory("default-name")
        defer { try? FileManager.default.removeItem(at: dir) }
        let input = try write(arpeggio(), to: dir, "tune.mid")
        let r = try SpinetCommand.run(["render", input, "--soundfont", font, "--quiet"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(listing(dir) == ["tune.mid", "tune.wav"])
    }

    @Test(arguments: [("flac", "fLaC"), ("ogg", "OggS"), ("aiff", "FORM"), ("wav", "RIFF")])
    func theFormatFollowsTheExtension(ext: String, magic: String) throws {
        let dir = try SpinetCommand.temporaryDirectory("format")
        defer { try? FileManager.default.removeItem(at: dir) }
        let input = try write(arpeggio(), to: dir, "song.mid")
        let out = dir.appendingPathComponent("song.\(ext)")
        let r = try SpinetCommand.run(["render", input, "-o", out.path, "--soundfont", font, "--quiet"])
        #expect(r.status == 0, "\(r.stderr)")
        let data = try Data(contentsOf: out)
        #expect(data.count > 1000)
        #expect(data.prefix(4) == Data(magic.utf8))
    }

    @Test(arguments: [("24", 24, false), ("32f", 32, true), ("16", 16, false)])
    func bitsSetTheSampleFormat(bits: String, expectedBits: Int, isFloat: Bool) throws {
        let dir = try SpinetCommand.temporaryDirectory("bits")
        defer { try? FileManager.default.removeItem(at: dir) }
        let input = try write(arpeggio(), to: dir, "song.mid")
        let out = dir.appendingPathComponent("song.wav")
        let r = try SpinetCommand.run(["render", input, "-o", out.path, "--soundfont", font, "--bits", bits, "--rate", "44100", "--quiet"])
        #expect(r.status == 0, "\(r.stderr)")
        let wav = try WAVFile(data: Data(contentsOf: out))
        #expect(wav.bitsPerSample == expectedBits && wav.isFloat == isFloat && wav.sampleRate == 44100)
        #expect((wav.samples.map { abs($0) }.max() ?? 0) > 0.01)
    }

    @Test func dashWritesAWAVStreamToStandardOutput() throws {
        let dir = try SpinetCommand.temporaryDirectory("stdout")
        defer { try? FileManager.default.removeItem(at: dir) }
        let input = try write(arpeggio(), to: dir, "song.mid")
        let r = try SpinetCommand.run(["render", input, "-o", "-", "--soundfont", font])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.prefix(4) == Data("RIFF".utf8))
        let wav = try WAVFile(data: r.stdout)
        #expect(wav.frames > 48000 * 2 && (wav.samples.map { abs($0) }.max() ?? 0) > 0.01)
        #expect(listing(dir) == ["song.mid"])
    }

    @Test func gainChangesTheLevel() throws {
        let dir = try SpinetCommand.temporaryDirectory("gain")
        defer { try? FileManager.default.removeItem(at: dir) }
        let input = try write(arpeggio(), to: dir, "song.mid")
        var peaks: [Float] = []
        for g in ["0", "-12"] {
            let out = dir.appendingPathComponent("g\(g).wav")
            let r = try SpinetCommand.run(["render", input, "-o", out.path, "--soundfont", font, "--gain", g, "--bits", "32f", "--quiet"])
            #expect(r.status == 0, "\(r.stderr)")
            peaks.append(try WAVFile(data: Data(contentsOf: out)).samples.map { abs($0) }.max() ?? 0)
        }
        let ratio = 20 * log10(Double(peaks[1] / peaks[0]))
        #expect(abs(ratio + 12) < 0.1, "gain ratio \(ratio) dB")
    }

    @Test func ctrlCLeavesNoPartialFile() throws {
        let dir = try SpinetCommand.temporaryDirectory("interrupt")
        defer { try? FileManager.default.removeItem(at: dir) }
        let input = try write(arpeggio(seconds: 1800), to: dir, "long.mid")
        let out = dir.appendingPathComponent("long.wav")
        let r = try SpinetCommand.run(["render", input, "-o", out.path, "--soundfont", font], interruptAfter: 1.0)
        #expect(r.status == 130, "\(r.stderr)")
        #expect(r.stderr.contains("interrupted"))
        #expect(listing(dir) == ["long.mid"])
    }

    /// Every stopping signal ends a render the way Ctrl-C does: no output,
    /// no temporary file (`.long.wav.spinet-*`), and 128 + the signal as the
    /// exit status. SIGHUP is the terminal closing; SIGQUIT (Ctrl-\\) must not
    /// bring the Swift runtime's crash report, nor let the render go on.
    @Test(arguments: [SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM])
    func aStoppingSignalLeavesNoFile(_ signal: Int32) throws {
        let dir = try SpinetCommand.temporaryDirectory("signal-\(signal)")
        defer { try? FileManager.default.removeItem(at: dir) }
        let input = try write(arpeggio(seconds: 1800), to: dir, "long.mid")
        let out = dir.appendingPathComponent("long.wav")
        // Sent once the temporary file exists: the render is under way.
        let r = try SpinetCommand.run(["render", input, "-o", out.path, "--soundfont", font], timeout: 120,
                                      interruptAfter: 0.5, signal: signal,
                                      interruptWhen: { listing(dir).contains { $0.hasPrefix(".long.wav.spinet-") } })
        #expect(!r.timedOut)
        #expect(r.status == 128 + signal, "\(r.stderr)")
        #expect(r.stderr.contains("interrupted"), "\(r.stderr)")
        #expect(!r.stderr.contains("crashed") && !r.stderr.contains("Backtrace"), "\(r.stderr)")
        #expect(listing(dir) == ["long.mid"])
    }

    @Test func aMissingSoundFontIsNamed() throws {
        let dir = try SpinetCommand.temporaryDirectory("nofont")
        defer { try? FileManager.default.removeItem(at: dir) }
        let input = try write(arpeggio(), to: dir, "song.mid")
        let r = try SpinetCommand.run(["render", input, "--soundfont", "/nonexistent/font.sf2"])
        #expect(r.status == 1)
        #expect(r.stderr.contains("/nonexistent/font.sf2") && r.stderr.contains("--soundfont"))
        #expect(listing(dir) == ["song.mid"])
    }

    /// A note followed by an End of Track years later must not render for years.
    @Test func absurdlyLongMusicIsRefusedNotRendered() throws {
        let dir = try SpinetCommand.temporaryDirectory("long")
        defer { try? FileManager.default.removeItem(at: dir) }
        var w = MIDIFileWriter(format: 0, ticksPerQuarter: 1)
        w.addTrack([(0, .message(.noteOn(channel: 0, key: 60, velocity: 100))), (1, .message(.noteOff(channel: 0, key: 60, velocity: 0)))],
                   endTick: 0x0FFF_FFFF)
        let input = try write(w.bytes(), to: dir, "forever.mid")
        let r = try SpinetCommand.run(["render", input, "--soundfont", font], timeout: 30)
        #expect(!r.timedOut)
        #expect(r.status == 1 && r.stderr.contains("24 hours"), "\(r.stderr)")
        #expect(listing(dir) == ["forever.mid"])
    }

    @Test func aFileWithoutNotesIsAnErrorNotSilence() throws {
        let dir = try SpinetCommand.temporaryDirectory("nonotes")
        defer { try? FileManager.default.removeItem(at: dir) }
        var w = MIDIFileWriter(format: 1, ticksPerQuarter: 96)
        w.addTrack([(0, .sysEx([0xF0, 0x7E, 0x7F, 0x09, 0x01, 0xF7])), (96, .message(.controlChange(channel: 0, controller: 7, value: 100)))])
        let input = try write(w.bytes(), to: dir, "sysex-only.mid")
        let r = try SpinetCommand.run(["render", input, "--soundfont", font])
        #expect(r.status == 1)
        #expect(r.stderr.contains("sysex-only.mid") && r.stderr.contains("no notes"))
        #expect(listing(dir) == ["sysex-only.mid"])
    }

    /// Hand-made broken files: one line naming the file and the byte, status
    /// 1, and no output file (or temporary) left behind.
    @Test(arguments: brokenFiles())
    func brokenFilesFailCleanly(name: String, bytes: [UInt8]) throws {
        let dir = try SpinetCommand.temporaryDirectory("broken")
        defer { try? FileManager.default.removeItem(at: dir) }
        let input = try write(bytes, to: dir, name)
        let r = try SpinetCommand.run(["render", input, "--soundfont", font])
        #expect(r.status == 1, "\(name): \(r.stderr)")
        let lines = r.stderr.split(separator: "\n")
        #expect(lines.count == 1, "\(r.stderr)")
        #expect(r.stderr.contains(name) && r.stderr.contains("byte"), "\(r.stderr)")
        #expect(listing(dir) == [name])
    }

    @Test(arguments: [["--rate", "8000"], ["--bits", "12"], ["--format", "xyz"], ["--bits", "32f", "-o", "x.flac"], ["-o", "x.unknown"]])
    func badOptionsFailBeforeAnyWork(extra: [String]) throws {
        let dir = try SpinetCommand.temporaryDirectory("options")
        defer { try? FileManager.default.removeItem(at: dir) }
        let input = try write(arpeggio(), to: dir, "song.mid")
        let r = try SpinetCommand.run(["render", input, "--soundfont", font] + extra, in: dir)
        #expect(r.status == 1, "\(extra): \(r.stderr)")
        #expect(r.stderr.split(separator: "\n").count == 1, "\(r.stderr)")
        #expect(listing(dir) == ["song.mid"])
    }
}
