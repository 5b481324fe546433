import CSpinetPlugin
import Foundation
import SpinetPlugin
import SpinetTestSupport
import SpinetTestTraits
import Testing

/// The LV2 plugin under a real lilv host (Tests/PluginHosts/lv2-host.c):
/// every test runs the built bundle, as a DAW loads it, and asserts on the
/// rendered samples, the host's exit status or the bytes.
/// `make plugin-tests-lv2` (part of `make check`) builds the bundle and sets
/// SPINET_PLUGIN_DIR; without it the suite cannot run and says so.
@Suite("LV2 plugin", .serialized,
       .enabled(if: LV2Host.isBuilt, "needs the built plugin: run `make plugin-tests-lv2` (sets SPINET_PLUGIN_DIR)"))
struct SpinetLV2Tests {
    /// The effects' returns off, so that only the dry signal is measured.
    static let dry = ["--param", "reverb=0", "--param", "chorus=0", "--param", "delay=0"]

    static func directory(_ name: String) throws -> URL { try SpinetCommand.temporaryDirectory("lv2-" + name) }

    // MARK: The bundle

    @Test func theBundleValidatesAgainstTheSystemSchemas() throws {
        let r = try SpinetCommand.run(["-c", "sord_validate /usr/lib/lv2/*.lv2/*.ttl \"$0\"/*.ttl 2>&1", LV2Host.bundle],
                                      program: "/bin/sh")
        let out = String(decoding: r.stdout, as: UTF8.self)
        #expect(r.status == 0, "\(out)")
        #expect(out.contains("Found 0 errors"), "\(out)")
    }

    @Test func theLibraryNeedsNoSwiftToolchainAndExportsOnlyItsEntryPoints() throws {
        let lib = LV2Host.bundle + "/spinet_lv2.so"
        let ldd = try SpinetCommand.run([lib], program: "/usr/bin/ldd")
        let libs = String(decoding: ldd.stdout, as: UTF8.self)
        #expect(ldd.status == 0)
        #expect(!libs.lowercased().contains("swift") && !libs.contains("libFoundation") && !libs.contains("libdispatch"), "\(libs)")
        #expect(!libs.contains("not found"), "\(libs)")
        let nm = try SpinetCommand.run(["-D", "--defined-only", lib], program: "/usr/bin/nm")
        let exported = String(decoding: nm.stdout, as: UTF8.self).split(separator: "\n").compactMap { line -> String? in
            let f = line.split(separator: " ")
            guard f.count == 3, "TDBVWi".contains(f[1]) else { return nil }
            return String(f[2].split(separator: "@")[0])
        }
        #expect(Set(exported) == ["lv2_descriptor", "GOMP_parallel"], "\(exported)")
        // Never unloaded (-z nodelete): libgomp's pool thread outlives the instances.
        let readelf = try SpinetCommand.run(["-d", lib], program: "/usr/bin/readelf")
        #expect(String(decoding: readelf.stdout, as: UTF8.self).contains("NODELETE"))
    }

    @Test func lv2infoSeesAnInstrumentWithItsPorts() throws {
        let dir = try Self.directory("lv2info")
        defer { try? FileManager.default.removeItem(at: dir) }
        try FileManager.default.createSymbolicLink(atPath: dir.appendingPathComponent("spinet.lv2").path,
                                                   withDestinationPath: LV2Host.bundle)
        let r = try SpinetCommand.run(["https://spinet.dev/plugins/spinet"],
                                      environment: ["LV2_PATH": "/usr/lib/lv2:" + dir.path],
                                      program: "/usr/bin/lv2info")
        let out = String(decoding: r.stdout, as: UTF8.self)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(out.contains("Class:") && out.contains("Instrument"), "\(out)")
        let symbols = out.split(separator: "\n").compactMap { line -> String? in
            let f = line.split(whereSeparator: \.isWhitespace)
            return f.count == 2 && f[0] == "Symbol:" ? String(f[1]) : nil
        }
        #expect(symbols == ["control", "notify", "out_l", "out_r", "gain", "reverb", "chorus", "delay", "ceiling", "latency"],
                "\(symbols)")
        // Each parameter port's range and default are the core's (spinet_plugin_param_info).
        var index: UInt32 = 0
        while let info = spinet_plugin_param_info(index) {
            let symbol = String(cString: info.pointee.symbol)
            let block = out.components(separatedBy: "Symbol:      \(symbol)\n").dropFirst().first ?? ""
            func field(_ name: String) -> Double? {
                block.split(separator: "\n").prefix(8).lazy.compactMap { line -> Double? in
                    let f = line.split(whereSeparator: \.isWhitespace)
                    return f.count == 2 && f[0] == "\(name):" ? Double(f[1]) : nil
                }.first
            }
            #expect(field("Minimum") == info.pointee.min_value, "\(symbol) minimum")
            #expect(field("Maximum") == info.pointee.max_value, "\(symbol) maximum")
            #expect(field("Default") == info.pointee.default_value, "\(symbol) default")
            index += 1
        }
        #expect(index == 5)
    }

    /// `make install-plugins-lv2` puts the bundle where hosts look: under
    /// PREFIX/lib/lv2 when PREFIX is given, else in ~/.lv2; lv2info finds it
    /// there with the font beside it.
    @Test func installPluginsPutsTheBundleWhereHostsLook() throws {
        let dir = try Self.directory("install")
        defer { try? FileManager.default.removeItem(at: dir) }
        let root = SpinetCommand.repositoryRoot.path
        let staged = try SpinetCommand.run(["-C", root, "install-plugins-lv2", "PREFIX=/usr", "DESTDIR=\(dir.path)/stage"],
                                           environment: ["MAKEFLAGS": ""], program: "/usr/bin/make")
        #expect(staged.status == 0, "\(staged.stderr)")
        let home = dir.appendingPathComponent("home")
        let user = try SpinetCommand.run(["-C", root, "install-plugins-lv2"],
                                         environment: ["HOME": home.path, "MAKEFLAGS": ""], program: "/usr/bin/make")
        #expect(user.status == 0, "\(user.stderr)")
        for lv2 in ["\(dir.path)/stage/usr/lib/lv2", "\(home.path)/.lv2"] {
            for file in ["manifest.ttl", "spinet.ttl", "spinet_lv2.so", "SoundFonts/sf_GMbank.sf2"] {
                #expect(FileManager.default.fileExists(atPath: "\(lv2)/spinet.lv2/\(file)"), "\(lv2)/spinet.lv2/\(file)")
            }
            let info = try SpinetCommand.run(["https://spinet.dev/plugins/spinet"], environment: ["LV2_PATH": "/usr/lib/lv2:" + lv2],
                                             program: "/usr/bin/lv2info")
            #expect(info.status == 0 && String(decoding: info.stdout, as: UTF8.self).contains("Instrument"), "\(lv2): \(info.stderr)")
        }
    }

    // MARK: Timing

    /// Spinet's synth (Bank Select 126) starts a note on its exact frame,
    /// delayed by the latency the plugin reports, for any block size and rate.
    @Test(arguments: [44100, 48000, 96000], [1, 37, 64, 500, 4096])
    func synthOnsetsAreExactToTheFrame(rate: Int, block: Int) throws {
        let dir = try Self.directory("onset")
        defer { try? FileManager.default.removeItem(at: dir) }
        let note = 3001
        let events = MIDILines.synth(channel: 0, program: 8) + [MIDILines.noteOn(note), MIDILines.noteOff(note + 2000)]
        let r = try LV2Host.run(["--rate", "\(rate)", "--block", "\(block)", "--frames", "\(note + 8000)"] + Self.dry,
                                events: events, in: dir, name: "onset")
        try #require(r.status == 0, "\(r.stderr)")
        let latency = try #require(r.value("latency"))
        let expected = note + latency
        #expect(r.left.peak(0..<expected) < 1e-6, "silence before the note")
        #expect(r.left.firstAbove(1e-5) == expected, "rate \(rate), block \(block), latency \(latency)")
        #expect(r.right.firstAbove(1e-5) == expected)
    }

    /// SoundFont channels take events on the 64-frame grid: the onset is
    /// the grid point nearest the note (plus the latency and the font's
    /// attack), the same for any block size.
    @Test(arguments: [1, 37, 64, 500, 4096])
    func soundFontOnsetsAreOnTheGrid(block: Int) throws {
        let dir = try Self.directory("sf-onset")
        defer { try? FileManager.default.removeItem(at: dir) }
        let note = 3001
        let r = try LV2Host.run(["--block", "\(block)", "--frames", "\(note + 12000)"] + Self.dry,
                                events: [MIDILines.noteOn(note, channel: 1, key: 60), MIDILines.noteOff(note + 6000, channel: 1, key: 60)],
                                in: dir, name: "sf")
        try #require(r.status == 0, "\(r.stderr)")
        let latency = try #require(r.value("latency"))
        let start = try #require(r.left.firstAbove(1e-4))
        #expect(abs(start - (note + latency)) <= 32 + 16, "onset \(start), note \(note) + latency \(latency)")
        #expect(r.left.peak(0..<(note + latency - 64)) < 1e-6)
    }

    /// The plugin's output does not depend on how the host cuts the
    /// blocks: Spinet's synth (its 16-frame control blocks carry on across
    /// process calls) and SoundFont channels (whose events here are not
    /// moved by FluidSynth's 64-frame grid: see docs/daw.md) give the same
    /// bytes in blocks of 1, 37, 64, 500 and 4096 frames.
    @Test func theOutputIsTheSameForAnyBlockSize() throws {
        let dir = try Self.directory("blocks")
        defer { try? FileManager.default.removeItem(at: dir) }
        let events = MIDILines.synth(channel: 2, program: 8, at: 0) +
            [MIDILines.noteOn(1000, channel: 0, key: 60), MIDILines.noteOn(2345, channel: 2, key: 64),
             MIDILines.noteOff(9000, channel: 0, key: 60), MIDILines.noteOff(11111, channel: 2, key: 64)]
        var outputs: [Int: LV2Host.Run] = [:]
        for block in [64, 1, 37, 500, 4096] {
            let r = try LV2Host.run(["--block", "\(block)", "--frames", "24000"] + Self.dry, events: events, in: dir, name: "b\(block)")
            try #require(r.status == 0, "\(r.stderr)")
            outputs[block] = r
        }
        let reference = try #require(outputs[64])
        #expect(reference.left.peak(0..<24000) > 0.01)
        #expect(reference.left.peak(3000..<9000) > 0.01, "the synth's note sounds")
        for block in [1, 37, 500, 4096] {
            let r = try #require(outputs[block])
            let d = differenceDB(reference.left, r.left)
            print("lv2: block \(block) vs 64: difference \(d) dB")
            #expect(r.left.bits == reference.left.bits && r.right.bits == reference.right.bits, "block \(block): \(d) dB from block 64")
        }
    }

    // MARK: Sound

    @Test func theDefaultSoundFontIsHeard() throws {
        let dir = try Self.directory("font")
        defer { try? FileManager.default.removeItem(at: dir) }
        let r = try LV2Host.run(["--frames", "48000"] + Self.dry,
                                events: [MIDILines.noteOn(1000, key: 60), MIDILines.noteOff(30000, key: 60), "40000 get"],
                                in: dir, name: "font")
        try #require(r.status == 0, "\(r.stderr)")
        #expect(r.left.peak(1000..<30000) > 0.01, "the piano plays")
        let fonts = r.notifiedFonts()
        #expect(fonts.count == 1 && fonts[0].hasSuffix(".sf2"), "patch:Get answered: \(fonts)")
        print("lv2: default font \(fonts)")
        let silent = try LV2Host.run(["--frames", "24000"], in: dir, name: "silent")
        #expect(silent.status == 0 && silent.left.peak(0..<24000) == 0, "no note, no sound")
    }

    /// Bank Select 126 + Program Change 8 gives the synth's plain sine: one
    /// partial, where the SoundFont's piano on the same key has many.
    @Test func bankSelect126ReachesTheSynth() throws {
        let dir = try Self.directory("bank")
        defer { try? FileManager.default.removeItem(at: dir) }
        let sine = try LV2Host.run(["--frames", "24000"] + Self.dry,
                                   events: MIDILines.synth(channel: 0, program: 8) + [MIDILines.noteOn(1000, key: 69)],
                                   in: dir, name: "sine")
        let piano = try LV2Host.run(["--frames", "24000"] + Self.dry, events: [MIDILines.noteOn(1000, key: 69)],
                                    in: dir, name: "piano")
        try #require(sine.status == 0 && piano.status == 0)
        func secondHarmonicDB(_ x: [Float]) -> Double {
            let n = 8192
            let spectrum = SignalAnalysis.magnitudeSpectrum(x[8192..<(8192 + n)])
            let bin = 440.0 * Double(n) / 48000
            func around(_ f: Double) -> Double {
                let k = Int(f.rounded())
                return spectrum[(k - 4)...(k + 4)].max() ?? 0
            }
            return 20 * log10(around(2 * bin) / around(bin))
        }
        let f0 = SignalAnalysis.fundamentalFrequency(sine.left[8192..<16384], sampleRate: 48000)
        #expect(abs(f0 - 440) < 0.5, "the sine's pitch: \(f0) Hz")
        let s = secondHarmonicDB(sine.left), p = secondHarmonicDB(piano.left)
        print("lv2: second harmonic, synth sine \(s) dB, SoundFont piano \(p) dB")
        #expect(s < -60, "a plain sine: \(s) dB")
        #expect(p > s + 20, "the piano is not the sine: \(p) dB")
    }

    /// The host's tempo (a time:Position on the control port) reaches the
    /// delay: an eighth note at 120 bpm (the default) is 12000 frames; at
    /// 90 bpm the first echo comes later.
    @Test func theHostsTempoSetsTheDelay() throws {
        let dir = try Self.directory("tempo")
        defer { try? FileManager.default.removeItem(at: dir) }
        let notes = ["0 b0 5e 7f", MIDILines.noteOn(1000, key: 60), MIDILines.noteOff(3000, key: 60)]   // CC 94: delay send
        let none = try LV2Host.run(["--frames", "96000"], events: notes, in: dir, name: "none")
        let at120 = try LV2Host.run(["--frames", "96000"], events: ["0 tempo 120"] + notes, in: dir, name: "t120")
        let at90 = try LV2Host.run(["--frames", "96000"], events: ["0 tempo 90"] + notes, in: dir, name: "t90")
        try #require(none.status == 0 && at120.status == 0 && at90.status == 0, "\(at90.stderr)")
        let same = none.left.bits == at120.left.bits
        #expect(same, "120 bpm is the default")
        let echo = 1000 + 12000 + (none.value("latency") ?? 0)
        let before = differenceDB(Array(none.left[0..<echo]), Array(at90.left[0..<echo]))
        let after = differenceDB(none.left, at90.left)
        print("lv2: 90 vs 120 bpm: \(before) dB before the first echo, \(after) dB in all")
        #expect(before < -90, "the dry note is the same")
        #expect(after > -20, "the echoes moved")
    }

    // MARK: State

    /// The state (font path, settings JSON, port values) saved from one
    /// instance and restored into a new one renders the same bytes for the
    /// same input.
    @Test func aStateRoundTripRendersTheSameBytes() throws {
        let dir = try Self.directory("state")
        defer { try? FileManager.default.removeItem(at: dir) }
        let font = try #require(try LV2Host.otherFont(in: dir), "no second GM SoundFont installed (timgm6mb-soundfont or fluid-soundfont-gm)")
        let saveAt = 24576
        let input = MIDILines.synth(channel: 2, program: 1, at: 0) + [
            MIDILines.noteOn(100, channel: 0, key: 60), MIDILines.noteOn(2345, channel: 2, key: 64),
            MIDILines.noteOn(5000, channel: 9, key: 38), MIDILines.noteOff(20000, channel: 0, key: 60),
            MIDILines.noteOff(21000, channel: 2, key: 64),
        ]
        func shifted(_ lines: [String], by offset: Int) -> [String] {
            lines.map { line in
                let f = line.split(separator: " ", maxSplits: 1)
                return "\(Int(f[0])! + offset) \(f[1])"
            }
        }
        let stateDir = dir.appendingPathComponent("state")
        let original = try LV2Host.run(["--frames", "\(saveAt + 48000)", "--save-state", stateDir.path, "--save-at", "\(saveAt)",
                                        "--cycle-at", "\(saveAt)",
                                        "--param", "gain=-4", "--param", "reverb=0.3", "--param", "chorus=0.2",
                                        "--param", "delay=0", "--param", "ceiling=-6"],
                                       events: ["0 font \(font)"] + shifted(input, by: saveAt), in: dir, name: "original")
        try #require(original.status == 0, "\(original.stderr)")
        #expect(original.notifiedFonts().last == font)
        let restored = try LV2Host.run(["--frames", "48000", "--restore-state", stateDir.path], events: input, in: dir, name: "restored")
        try #require(restored.status == 0, "\(restored.stderr)")
        // The host links the font into the state directory (state:mapPath
        // makes it a path relative to the state): the same file.
        let restoredFont = restored.notifiedFonts().first.map { URL(fileURLWithPath: $0).resolvingSymlinksInPath().path }
        #expect(restoredFont == URL(fileURLWithPath: font).resolvingSymlinksInPath().path,
                "the restored instance plays the saved font: \(restored.notifiedFonts())")
        let after = Array(original.left[saveAt...]), afterR = Array(original.right[saveAt...])
        #expect(after.peak(0..<48000) > 0.01)
        let sameLeft = after.bits == restored.left.bits, sameRight = afterR.bits == restored.right.bits
        #expect(sameLeft, "left: \(differenceDB(after, restored.left)) dB apart")
        #expect(sameRight, "right: \(differenceDB(afterR, restored.right)) dB apart")
        // And the state mattered: a fresh instance sounds different.
        let fresh = try LV2Host.run(["--frames", "48000"], events: input, in: dir, name: "fresh")
        #expect(differenceDB(fresh.left, restored.left) > -40)
    }

    // MARK: Instances and life cycle

    @Test func twoInstancesAtOnceAreIndependent() throws {
        let dir = try Self.directory("two")
        defer { try? FileManager.default.removeItem(at: dir) }
        let a = [MIDILines.noteOn(1000, key: 60), MIDILines.noteOff(20000, key: 60)]
        let b = MIDILines.synth(channel: 0, program: 1) + [MIDILines.noteOn(2000, key: 64), MIDILines.noteOff(15000, key: 64)]
        let alone1 = try LV2Host.run(["--frames", "30000", "--block", "256"], events: a, in: dir, name: "a")
        let alone2 = try LV2Host.run(["--frames", "30000", "--block", "256"], events: b, in: dir, name: "b")
        let both = try LV2Host.run(["--frames", "30000", "--block", "256"], events: a, events2: b, in: dir, name: "ab")
        try #require(alone1.status == 0 && alone2.status == 0 && both.status == 0, "\(both.stderr)")
        let second = try #require(both.second)
        #expect(alone1.left.peak(0..<30000) > 0.01 && alone2.left.peak(0..<30000) > 0.01)
        let first1 = both.left.bits == alone1.left.bits, second2 = second.left.bits == alone2.left.bits
        let second2R = second.right.bits == alone2.right.bits
        #expect(first1, "instance 1 as alone: \(differenceDB(alone1.left, both.left)) dB apart")
        #expect(second2, "instance 2 as alone: \(differenceDB(alone2.left, second.left)) dB apart")
        #expect(second2R)
        #expect(differenceDB(both.left, second.left) > -20, "and they differ")
    }

    /// Deactivate stops the notes; each activate starts from silence, and
    /// the next note is exact again.
    @Test(arguments: [37, 512])
    func activateDeactivateCycles(block: Int) throws {
        let dir = try Self.directory("cycles")
        defer { try? FileManager.default.removeItem(at: dir) }
        // Activation starts from scratch, the channels' programs too: the
        // synth is chosen again after the first cycle.
        let events = [MIDILines.noteOn(1000, key: 60)] +        // held across the first cycle
            MIDILines.synth(channel: 1, program: 8, at: 17001) +
            [MIDILines.noteOn(17001, channel: 1, key: 69)]      // held across the second
        let r = try LV2Host.run(["--block", "\(block)", "--frames", "40000", "--cycle-at", "8192", "--cycle-at", "24576",
                                 "--cycle-at", "30000"] + Self.dry, events: events, in: dir, name: "cycles")
        try #require(r.status == 0, "\(r.stderr)")
        let cycles = r.stdout.split(separator: "\n").filter { $0.hasPrefix("cycled at ") }.compactMap { Int($0.split(separator: " ")[2]) }
        try #require(cycles.count == 3, "\(r.stdout)")
        let latency = try #require(r.value("latency"))
        #expect(r.left.peak(1000..<cycles[0]) > 0.01, "the first note sounds")
        #expect(r.left.peak(cycles[0]..<17001) < 1e-6, "silence after the first cycle: \(r.left.peak(cycles[0]..<17001))")
        #expect(r.left.firstAbove(1e-5, from: cycles[0]) == 17001 + latency, "the next note is exact")
        #expect(r.left.peak(cycles[1]..<40000) < 1e-6, "silence after the second cycle")
    }

    // MARK: The SoundFont parameter

    /// patch:Set of spinet:soundfont while notes play: the worker loads the
    /// font, the plugin swaps it in and tells the host on notify; the note
    /// already sounding rings on, later notes play the new font.
    @Test func aFontChangeWhileProcessing() throws {
        let dir = try Self.directory("change")
        defer { try? FileManager.default.removeItem(at: dir) }
        let font = try #require(try LV2Host.otherFont(in: dir), "no second GM SoundFont installed")
        let notes = [MIDILines.noteOn(0, key: 60), MIDILines.noteOff(30000, key: 60),
                     MIDILines.noteOn(36000, key: 64), MIDILines.noteOff(60000, key: 64), "64000 get"]
        let same = try LV2Host.run(["--frames", "72000"], events: notes, in: dir, name: "same")
        let changed = try LV2Host.run(["--frames", "72000"], events: notes + ["12288 font \(font)"], in: dir, name: "changed")
        try #require(same.status == 0 && changed.status == 0, "\(changed.stderr)")
        #expect(changed.notifiedFonts() == [font, font], "the change, then the patch:Get reply: \(changed.notifiedFonts())")
        // No break at the swap: every 512-frame window of the held note sounds.
        for w in stride(from: 1024, to: 28000, by: 512) {
            #expect(SignalAnalysis.rms(changed.left[w..<(w + 512)]) > 1e-3, "a gap at \(w)")
        }
        let before = differenceDB(Array(same.left[0..<12288]), Array(changed.left[0..<12288]))
        #expect(before == -.infinity, "the same bytes before the change: \(before) dB")
        let later = differenceDB(Array(same.left[36000..<60000]), Array(changed.left[36000..<60000]))
        print("lv2: the note after the change is \(later) dB from the old font's")
        #expect(later > -30, "the later note plays the new font")
    }

    @Test func aFontThatFailsToLoadLeavesTheOldOnePlaying() throws {
        let dir = try Self.directory("badfont")
        defer { try? FileManager.default.removeItem(at: dir) }
        let notes = [MIDILines.noteOn(0, key: 60), MIDILines.noteOff(30000, key: 60), MIDILines.noteOn(36000, key: 64), "44000 get"]
        let same = try LV2Host.run(["--frames", "48000"], events: notes, in: dir, name: "same")
        let bad = dir.appendingPathComponent("no-such-font.sf2").path
        let r = try LV2Host.run(["--frames", "48000"], events: notes + ["12288 font \(bad)"], in: dir, name: "bad")
        try #require(r.status == 0 && same.status == 0, "\(r.stderr)")
        #expect(r.stderr.contains("no-such-font.sf2"), "the host's log says why: \(r.stderr)")
        let unchanged = r.left.bits == same.left.bits
        #expect(unchanged, "the old font plays on, unchanged: \(differenceDB(same.left, r.left)) dB apart")
        let fonts = r.notifiedFonts()
        #expect(fonts.count == 2 && fonts.allSatisfy { !$0.contains("no-such-font") }, "\(fonts)")
    }

    // MARK: Hosts that give little

    @Test func withoutURIDMapInstantiationFailsWithALogLine() throws {
        let dir = try Self.directory("nomap")
        defer { try? FileManager.default.removeItem(at: dir) }
        let r = try LV2Host.run(["--no-map", "--frames", "512"], in: dir, name: "nomap")
        #expect(r.status == 3, "instantiate returned NULL")
        #expect(r.stderr.contains("urid#map"), "\(r.stderr)")
    }

    /// urid:map only: no log (stderr), no worker (the core's loader
    /// thread), no options (block size unknown).
    @Test func aHostWithNoOptionalFeatureStillWorks() throws {
        let dir = try Self.directory("minimal")
        defer { try? FileManager.default.removeItem(at: dir) }
        let font = try #require(try LV2Host.otherFont(in: dir), "no second GM SoundFont installed")
        let events = MIDILines.synth(channel: 0, program: 8) + [MIDILines.noteOn(3001), "4096 font \(font)"] +
            (1...20).map { "\($0 * 24000) get" }
        let r = try LV2Host.run(["--minimal-features", "--pace", "--probe", "--block", "1024", "--frames", "480000"] + Self.dry,
                                events: events, in: dir, name: "minimal", timeout: 120)
        try #require(r.status == 0, "\(r.stderr)")
        let latency = try #require(r.value("latency"))
        #expect(r.left.firstAbove(1e-5) == 3001 + latency)
        #expect(r.notifiedFonts().contains(font), "the loader thread loaded it: \(r.notifiedFonts())")
        // Handing the path to the loader thread (sem_post) takes no lock and allocates nothing in run().
        if SpinetTestEnvironment.sanitizer == nil, let counts = r.probe() {
            #expect(counts["allocations"] == 0 && counts["locks"] == 0 && counts["frees"] == 0, "\(counts)")
        }
    }

    /// Without a worker, two fonts asked for in a row (the second before the
    /// first has loaded): the core's loader ends with the second, and the
    /// host is told so.
    @Test func withoutAWorkerTwoFontChangesEndWithTheLast() throws {
        let dir = try Self.directory("twofonts")
        defer { try? FileManager.default.removeItem(at: dir) }
        let first = try #require(try LV2Host.otherFont(in: dir), "no second GM SoundFont installed")
        let second = dir.appendingPathComponent("second.sf2").path
        try FileManager.default.copyItem(atPath: SpinetCommand.repositoryRoot.appendingPathComponent("Fuzz/corpus/SoundFontFuzzer/gm-like.sf2").path,
                                         toPath: second)
        let events = ["4096 font \(first)", "4100 font \(second)"] + (1...10).map { "\($0 * 24000) get" }
        let r = try LV2Host.run(["--no-worker", "--pace", "--block", "1024", "--frames", "240000"] + Self.dry,
                                events: events, in: dir, name: "twofonts", timeout: 120)
        try #require(r.status == 0, "\(r.stderr)")
        let fonts = r.notifiedFonts()
        #expect(fonts.last == second, "\(fonts)")
        #expect(fonts.allSatisfy { $0 == first || $0 == second }, "\(fonts)")
    }

    // MARK: A real host

    /// jalv (a JACK host) on a private dummy JACK server, jack_midiseq
    /// looping middle C at frames 0 and 24000 of a 48000-frame loop, jack_rec
    /// recording: the notes are 24000 frames apart to the frame (both on the
    /// SoundFont's 64-frame grid, 24000 being a multiple of 64).
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/jalv")
                   && FileManager.default.isExecutableFile(atPath: "/usr/bin/jackd"), "jalv or jackd is not installed"))
    func jalvOnJACKPlaysTheNotesInTime() throws {
        let dir = try Self.directory("jalv")
        defer { try? FileManager.default.removeItem(at: dir) }
        let wav = dir.appendingPathComponent("jalv.wav")
        let r = try SpinetCommand.run([SpinetCommand.repositoryRoot.appendingPathComponent("scripts/lv2-jalv-test.sh").path,
                                       LV2Host.pluginDirectory ?? "", wav.path, "4"], timeout: 120, program: "/bin/bash")
        try #require(r.status == 0, "\(r.stderr)")
        let x = try WAVFile(data: Data(contentsOf: wav)).channel(0)
        let onsets = SignalAnalysis.onsets(x, threshold: 0.003, quiet: 0.0003, minGap: 2000)
        let gaps = zip(onsets, onsets.dropFirst()).map { $1 - $0 }
        print("lv2: jalv onsets \(onsets), gaps \(gaps)")
        #expect(onsets.count >= 5, "\(onsets)")
        #expect(!gaps.isEmpty && gaps.allSatisfy { $0 == 24000 }, "\(gaps)")
    }

    // MARK: Parity with spinet render

    /// The same MIDI through the plugin and through `spinet render` (one
    /// thread, 32-bit float): the plugin's output, shifted back by its
    /// latency, is the render's, the same bytes, in blocks of 1024 (the
    /// offline renderer's block) and of 512. This file plays Spinet's synth
    /// (whose control blocks do not follow the process calls) and SoundFont
    /// channels (whose events FluidSynth's grid does not move here).
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: SpinetCommand.executable),
                   "no spinet binary (SPINET_BIN, or the debug build)"),
          arguments: [1024, 512])
    func thePluginRendersWhatSpinetRenderRenders(block: Int) throws {
        let dir = try Self.directory("parity")
        defer { try? FileManager.default.removeItem(at: dir) }
        // 480 ticks per quarter note at 120 bpm: 1 tick = 1/960 s = 50 frames at 48 kHz.
        let events: [(tick: Int, bytes: [UInt8])] = [
            (0, [0xB2, 0x00, 0x7E]), (0, [0xC2, 0x01]),                 // channel 3: the synth's saw-lead
            (96, [0x90, 60, 100]), (241, [0x92, 64, 90]), (480, [0x99, 38, 110]),
            (700, [0x90, 67, 80]), (960, [0x80, 60, 0]), (1200, [0x82, 64, 0]),
            (1300, [0x92, 71, 100]), (1500, [0x80, 67, 0]), (1800, [0x82, 71, 0]),
        ]
        let midi = dir.appendingPathComponent("parity.mid")
        try Self.standardMIDIFile(events, ticksPerQuarter: 480).write(to: midi)
        let lines = events.map { e in "\(e.tick * 50) " + e.bytes.map { String(format: "%02x", $0) }.joined(separator: " ") }
        let frames = 4 * 48000
        let plugin = try LV2Host.run(["--block", "\(block)", "--frames", "\(frames)"], events: lines, in: dir, name: "plugin")
        try #require(plugin.status == 0, "\(plugin.stderr)")
        let latency = try #require(plugin.value("latency"))
        let wav = dir.appendingPathComponent("render.wav")
        let render = try SpinetCommand.run(["render", midi.path, "-o", wav.path, "--bits", "32f", "--threads", "1", "--quiet",
                                            "--force", "--soundfont", LV2Host.bundle + "/SoundFonts/sf_GMbank.sf2"])
        try #require(render.status == 0, "\(render.stderr)")
        let offline = try WAVFile(data: Data(contentsOf: wav))
        let n = Swift.min(offline.frames, frames - latency, 3 * 48000)
        let fromPlugin = Array(plugin.left[latency..<(latency + n)]), fromRender = Array(offline.channel(0)[0..<n])
        let fromPluginR = Array(plugin.right[latency..<(latency + n)]), fromRenderR = Array(offline.channel(1)[0..<n])
        #expect(SignalAnalysis.peak(fromRender[...]) > 0.01)
        let left = differenceDB(fromRender, fromPlugin), right = differenceDB(fromRenderR, fromPluginR)
        print("lv2: plugin (blocks of \(block)) vs spinet render: left \(left) dB, right \(right) dB over \(n) frames")
        let same = fromPlugin.bits == fromRender.bits && fromPluginR.bits == fromRenderR.bits
        #expect(same, "blocks of \(block): left \(left) dB, right \(right) dB")
    }

    /// A format-0 Standard MIDI File at the default tempo (120 bpm).
    static func standardMIDIFile(_ events: [(tick: Int, bytes: [UInt8])], ticksPerQuarter: Int) -> Data {
        func varLen(_ v: Int) -> [UInt8] {
            var bytes = [UInt8(v & 0x7F)]
            var v = v >> 7
            while v > 0 { bytes.insert(UInt8(v & 0x7F) | 0x80, at: 0); v >>= 7 }
            return bytes
        }
        var track: [UInt8] = []
        var last = 0
        for e in events {
            track += varLen(e.tick - last) + e.bytes
            last = e.tick
        }
        track += [0x00, 0xFF, 0x2F, 0x00]
        func be32(_ v: Int) -> [UInt8] { [UInt8(v >> 24 & 0xFF), UInt8(v >> 16 & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF)] }
        let header: [UInt8] = Array("MThd".utf8) + be32(6) + [0, 0, 0, 1, UInt8(ticksPerQuarter >> 8), UInt8(ticksPerQuarter & 0xFF)]
        return Data(header + Array("MTrk".utf8) + be32(track.count) + track)
    }

    // MARK: Real time

    /// run() allocates nothing, frees nothing and takes no lock, counted by
    /// the real-time probe interposed in the host (CRealtimeProbe), over
    /// notes on the SoundFont and the synth, a font swap and a re-activation.
    @Test(.realtimeProbe, arguments: [64, 512])
    func runAllocatesNothing(block: Int) throws {
        let dir = try Self.directory("probe")
        defer { try? FileManager.default.removeItem(at: dir) }
        var events = MIDILines.synth(channel: 3, program: 1)
        for i in 0..<40 {
            let f = 1000 + i * 4000
            events += [MIDILines.noteOn(f, channel: i % 4, key: 48 + i % 24), MIDILines.noteOff(f + 3000, channel: i % 4, key: 48 + i % 24)]
        }
        events += ["90000 get"]
        // A font swapped in while notes play, and a re-activation: counted too.
        if let font = try LV2Host.otherFont(in: dir) { events += ["60000 font \(font)"] }
        let r = try LV2Host.run(["--probe", "--block", "\(block)", "--frames", "192000", "--cycle-at", "96000"],
                                events: events, in: dir, name: "probe")
        try #require(r.status == 0, "\(r.stderr)")
        #expect(r.value("probe_active", of: "") == 1, "the probe is interposed in the host")
        let counts = try #require(r.probe())
        let regions = r.value("inline_regions", of: "") ?? -1
        print("lv2: block \(block): runs \(r.value("runs") ?? -1), probe \(counts), inline OpenMP regions \(regions)")
        // No one-thread OpenMP region ran at all here (0), inline or in
        // libgomp: libfluidsynth's render opens none with the core's
        // settings, so libgomp cannot allocate in run(); if one did, the
        // plugin's GOMP_parallel would take it (gdb shows libfluidsynth
        // bound to it while loading a font).
        #expect(counts["allocations"] == 0 && counts["frees"] == 0 && counts["locks"] == 0, "\(counts)")
    }
}
