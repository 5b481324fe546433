import CSpinetPlugin
import Foundation
import Testing
import SpinetPlugin
import SpinetTestSupport

/// A project file can be damaged, edited by hand or written by a newer
/// Spinet: restoring such a state is refused with one logged line and
/// leaves the instance as it was, or restores what it says; it never
/// crashes, and the instance keeps rendering.
@Suite("Plugin state: damaged input")
struct PluginStateDamageTests {
    @Test func damagedStatesAreRefusedOrRestoredNeverCrash() throws {
        let d = try PluginDriver(rate: 48000)
        let valid = String(cString: spinet_plugin_save_state(d.plugin))
        var bytes = Array(valid.utf8)
        var rng = SplitMix64(seed: 0x5EED_0017)
        var refused = 0, restored = 0
        for _ in 0..<400 {
            var b = bytes
            for _ in 0..<Int.random(in: 1...4, using: &rng) {
                switch Int.random(in: 0..<4, using: &rng) {
                case 0: b[Int.random(in: 0..<b.count, using: &rng)] = UInt8.random(in: 0...255, using: &rng)
                case 1: b.remove(at: Int.random(in: 0..<b.count, using: &rng))
                case 2: b.insert(UInt8.random(in: 32...126, using: &rng), at: Int.random(in: 0...b.count, using: &rng))
                default: b = Array(b.prefix(Int.random(in: 0...b.count, using: &rng)))
                }
                if b.isEmpty { b = [0x7B] }
            }
            let text = String(decoding: b.filter { $0 != 0 }, as: UTF8.self)
            let before = String(cString: spinet_plugin_save_state(d.plugin))
            if spinet_plugin_restore_state(d.plugin, text, nil) == 0 {
                restored += 1
            } else {
                refused += 1
                #expect(String(cString: spinet_plugin_save_state(d.plugin)) == before, "a refused state changed the settings: \(text)")
            }
        }
        print("damaged plugin states: \(refused) refused, \(restored) restored")
        #expect(refused > 0)
        // values out of range are clamped, unknown parameters ignored, a newer version refused
        #expect(spinet_plugin_restore_state(d.plugin, valid.replacingOccurrences(of: "\"gain\": 0", with: "\"gain\": 1e300"), nil) == 0)
        #expect(spinet_plugin_get_param(d.plugin, UInt32(SPINET_PARAM_GAIN.rawValue)) == 12)
        #expect(spinet_plugin_restore_state(d.plugin, valid.replacingOccurrences(of: "\"spinet-plugin-state\": 1", with: "\"spinet-plugin-state\": 2"), nil) != 0)
        #expect(spinet_plugin_restore_state(d.plugin, valid.replacingOccurrences(of: "\"gain\":", with: "\"future-knob\": 3, \"gain\":"), nil) == 0)
        // it still plays
        #expect(spinet_plugin_activate(d.plugin, 256) == 0)
        let out = d.render(frames: 6000, block: 256, events: [(100, [0x90, 60, 110])])
        #expect(out.left.map { abs($0) }.max()! > 0.01)
        bytes = []
    }

    /// Each shape of a hostile state: a number where a whole number is
    /// expected (1e300 trapped in `Int(_:)` and took the host down), a wrong
    /// type, deep nesting, a state over the size limit. Each is refused with
    /// one host-log line naming the problem; the instance keeps its settings
    /// and keeps playing.
    @Test func hostileStatesAreRefusedWithALogLineAndTheInstanceKeepsItsSettings() throws {
        let d = try PluginDriver(rate: 48000)
        /// The state with one top-level key's value replaced.
        func replacing(_ key: String, in state: String, with value: String) -> String {
            state.split(separator: "\n", omittingEmptySubsequences: false).map { line in
                guard line.hasPrefix("  \"\(key)\": ") else { return String(line) }
                return "  \"\(key)\": \(value)" + (line.hasSuffix(",") ? "," : "")
            }.joined(separator: "\n")
        }
        let saved = String(cString: spinet_plugin_save_state(d.plugin))
        #expect(spinet_plugin_restore_state(d.plugin, replacing("reverb", in: saved, with: "\"hall\""), nil) == 0)
        let valid = String(cString: spinet_plugin_save_state(d.plugin))
        #expect(valid.contains("\"hall\"") && valid != saved)
        func version(_ v: String) -> String { replacing("spinet-plugin-state", in: valid, with: v) }
        func with(_ key: String, _ v: String) -> String { replacing(key, in: valid, with: v) }
        let deep = String(repeating: "[", count: 1_000_000)
        let cases: [(state: String, says: String)] = [
            (version("1e300"), "not a version number"),
            (version("-1e300"), "not a version number"),
            (version("9223372036854775808"), "not a version number"),
            (version("1e19"), "not a version number"),
            (version("-1"), "not a version number"),
            (version("0"), "not a version number"),
            (version("1.5"), "not a version number"),
            (version("\"1\""), "not a version number"),
            (version("true"), "not a version number"),
            (version("null"), "not a version number"),
            (version("[1]"), "not a version number"),
            (version("2"), "newer than this Spinet reads"),
            (version("1e9"), "newer than this Spinet reads"),
            (with("parameters", "[0, 1]"), "\"parameters\" is not an object"),
            (with("parameters", "\"loud\""), "\"parameters\" is not an object"),
            (with("parameters", #"{"gain": "0"}"#), "\"gain\" is not a number"),
            (with("parameters", #"{"gain": null}"#), "\"gain\" is not a number"),
            (with("channels", #"{"1": "synth"}"#), "\"channels\" is not a list"),
            (with("channels", "[1e300]"), "\"channels\" is not a list of strings"),
            (with("soundfont", "1e300"), "\"soundfont\" is not a string"),
            (with("reverb", #"{"a": [1]}"#), "\"reverb\" is not a string"),
            (with("effects", "-1e300"), "\"effects\" is not a string"),
            (with("delay", "[]"), "\"delay\" is not a string"),
            (with("reverb", #""hall", "presets": "{\"presets\": [{\"name\": \"x\", \"program\": 1e300}]}""#), "\"program\""),
            (with("reverb", #""hall", "presets": "{\"presets\": [{\"name\": \"x\", \"program\": -1e300}]}""#), "\"program\""),
            (with("reverb", #""hall", "presets": "{\"presets\": [{\"name\": \"x\", \"program\": 1.5}]}""#), "\"program\""),
            (with("reverb", #""hall", "presets": 1e300"#), "\"presets\" is not a string"),
            ("[1e300]", "not a JSON object"),
            ("1e300", "not a JSON object"),
            ("1e400", "number out of range"),
            (deep, "nested more than"),
            (with("reverb", deep), "nested more than"),
            (with("channels", "[" + String(repeating: "\"1=synth\", ", count: 400_000) + "\"2=synth\"]"), "larger than 4 MB"),
            (valid + String(repeating: " ", count: 5 << 20), "larger than 4 MB"),
            // what a refusal echoes stays one line of reasonable length
            (with("reverb", "\"hall\", \"x\\ny\": 1, \"x\\ny\": 2"), "duplicate key \"x\\ny\""),
            (with("reverb", "\"hall\", \"\(String(repeating: "k", count: 100_000))\": 1, \"\(String(repeating: "k", count: 100_000))\": 2"), "duplicate key"),
        ]
        for (state, says) in cases {
            let logged = d.lines.count
            #expect(spinet_plugin_restore_state(d.plugin, state, nil) != 0, "restored: \(state.prefix(120))")
            let lines = Array(d.lines.dropFirst(logged))
            #expect(lines.count == 1 && lines[0].contains("cannot restore the saved state") && lines[0].contains(says),
                    "\(state.prefix(120)): logged \(lines.map { $0.prefix(300) })")
            #expect(lines.allSatisfy { $0.utf8.count < 2500 && !$0.contains("\n") && !$0.contains("\r") }, "a log line echoes the state: \(lines.map { $0.prefix(200) })")
            #expect(String(cString: spinet_plugin_save_state(d.plugin)) == valid, "a refused state changed the settings: \(state.prefix(120))")
        }
        // and it still plays
        #expect(spinet_plugin_activate(d.plugin, 256) == 0)
        let out = d.render(frames: 6000, block: 256, events: [(100, [0x90, 60, 110])])
        #expect(out.left.map { abs($0) }.max()! > 0.01)
    }

    /// A state whose font path is a directory ("/", found by the state
    /// fuzzer) has no font there: the host's override is taken (missing
    /// here, so the restore says where it looked), not the directory.
    @Test func aDirectoryIsNoSavedFont() throws {
        let moved = "/nonexistent-\(getpid())/moved.sf2"
        let s = try PluginSettings(json: #"{"spinet-plugin-state": 1, "soundfont": "/"}"#, soundFontOverride: moved)
        #expect(s.soundFont == moved)
        #expect(s.missingSoundFont == [moved, "/"])
        let tmp = FileManager.default.temporaryDirectory.path
        let direct = try PluginSettings(json: #"{"spinet-plugin-state": 1, "soundfont": "\#(tmp)"}"#)
        #expect(direct.soundFont == tmp && direct.missingSoundFont == [tmp])
    }

    /// The plugin state fuzzer's seeds (Fuzz/corpus/PluginStateFuzzer): each
    /// is restored, or refused with one log line leaving the settings as
    /// they were; none traps.
    @Test func theFuzzersSeedsAreRestoredOrRefused() throws {
        let seeds = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../Fuzz/corpus/PluginStateFuzzer").standardized
        let names = try FileManager.default.contentsOfDirectory(atPath: seeds.path).sorted()
        #expect(names.count >= 10)
        let d = try PluginDriver(rate: 48000)
        // the seeds name fonts of other machines: restored with this one's, as a host that moved the font does
        let saved = try JSONSerialization.jsonObject(with: Data(String(cString: spinet_plugin_save_state(d.plugin)).utf8)) as? [String: Any]
        let font = try #require(saved?["soundfont"] as? String)
        var restored = 0
        for name in names {
            let bytes = try Data(contentsOf: seeds.appendingPathComponent(name))
            let before = String(cString: spinet_plugin_save_state(d.plugin))
            let logged = d.lines.count
            if spinet_plugin_restore_state(d.plugin, String(decoding: bytes, as: UTF8.self), font) == 0 {
                restored += 1
                let state = String(cString: spinet_plugin_save_state(d.plugin))
                #expect(spinet_plugin_restore_state(d.plugin, state, nil) == 0, "\(name): its own save does not restore")
                _ = spinet_plugin_restore_state(d.plugin, before, nil)
            } else {
                let lines = Array(d.lines.dropFirst(logged))
                #expect(lines.count == 1 && lines[0].contains("cannot restore the saved state"), "\(name): \(lines)")
                #expect(String(cString: spinet_plugin_save_state(d.plugin)) == before, "\(name): a refused state changed the settings")
            }
        }
        #expect(restored >= 1, "no seed restored")
    }

    /// A state of many keys (a later version's, or a damaged one) is read in
    /// time linear in its size: 160k keys took 40 s inside a project load.
    @Test func aStateWithManyKeysIsReadQuickly() throws {
        let d = try PluginDriver(rate: 48000)
        let valid = String(cString: spinet_plugin_save_state(d.plugin))
        let extra = (0..<160_000).map { "\"future-\($0)\": \($0)" }.joined(separator: ", ")
        let state = valid.replacingOccurrences(of: "\"spinet-plugin-state\": 1,", with: "\"spinet-plugin-state\": 1, \(extra),")
        #expect(state.utf8.count > 2_000_000 && state.utf8.count < 4 << 20)
        let start = Date()
        #expect(spinet_plugin_restore_state(d.plugin, state, nil) == 0, "\(d.lines.suffix(1))")
        let seconds = Date().timeIntervalSince(start)
        print("plugin state of 160k keys (\(state.utf8.count) bytes) restored in \(seconds) s")
        #expect(seconds < 15)
    }
}

/// A new instance starts from the user's config file: a font named there
/// that cannot be used is said in one host-log line naming the file and the
/// key, and the instance takes the next font it finds.
@Suite("Plugin start: the config file's fonts")
struct PluginConfigFontTests {
    @Test func anUnusableConfigFontIsNamedWithTheFileAndTheKey() throws {
        let dir = try SpinetCommand.temporaryDirectory("plugin-config")
        defer { try? FileManager.default.removeItem(at: dir) }
        try FileManager.default.createDirectory(at: dir.appendingPathComponent("spinet"), withIntermediateDirectories: false)
        let text = dir.appendingPathComponent("text.sf2").path
        try Data("not a font\n".utf8).write(to: URL(fileURLWithPath: text))
        let fifo = dir.appendingPathComponent("fifo.sf2").path
        #expect(mkfifo(fifo, 0o600) == 0)
        let missing = dir.appendingPathComponent("missing.sf2").path
        let config = dir.appendingPathComponent("spinet/config.json").path
        // with a byte order mark, as some editors save it
        try Data(("\u{FEFF}" + #"{"soundfonts": ["\#(text)", "\#(fifo)", "\#(missing)"], "reverb": "hall"}"#).utf8).write(to: URL(fileURLWithPath: config))
        var warnings: [String] = []
        let settings = PluginSettings.defaults(bundleDirectory: nil, environment: ["XDG_CONFIG_HOME": dir.path, "HOME": dir.path]) { warnings.append($0) }
        #expect(warnings.count == 3, "\(warnings)")
        for (font, says) in [(text, "not a SoundFont"), (fifo, "not a regular file"), (missing, "No such file")] {
            #expect(warnings.contains { $0.hasPrefix("config \(config): \"soundfonts\": \(font): ") && $0.contains(says) }, "\(font): \(warnings)")
        }
        let s = try #require(settings, "no font found besides the config's")
        #expect(![text, fifo, missing].contains(s.soundFont))
        #expect(s.reverb == "hall", "the rest of the config file was read")
    }
}

@Suite("Plugin start: a default font that does not load")
struct PluginBrokenDefaultFontTests {
    /// The font found beside the plugin (SoundFonts/sf_GMbank.sf2) is
    /// damaged: the instance is refused with one line naming it (the host
    /// logs it), and nothing is freed twice (the init's own clean-up ran
    /// before the deinit did it again).
    @Test func aDamagedFontBesideThePluginIsOneLineNotACrash() throws {
        let dir = try SpinetCommand.temporaryDirectory("broken-default")
        defer { try? FileManager.default.removeItem(at: dir) }
        try FileManager.default.createDirectory(at: dir.appendingPathComponent("SoundFonts"), withIntermediateDirectories: false)
        let font = dir.appendingPathComponent("SoundFonts/sf_GMbank.sf2").path
        try Data("RIFF\u{0}\u{0}\u{0}\u{0}sfbk, but nothing after it".utf8).write(to: URL(fileURLWithPath: font))
        for _ in 0..<3 {
            do {
                _ = try PluginInstance(sampleRate: 48000, bundleDirectory: dir.path, log: { _, _ in })
                Issue.record("a damaged font made an instance")
            } catch {
                #expect(error.description.contains(font), "\(error)")
                #expect(!error.description.contains("\n"))
            }
        }
    }
}

@Suite("Plugin re-activation")
struct PluginReactivationTests {
    /// A host deactivates and activates a plugin (a new block size, a
    /// device switched off and on): the channel a Bank Select 126 moved to
    /// Spinet's synth is still there, and the controllers still hold.
    @Test func theChannelsKeepTheirInstrumentsAcrossReactivation() throws {
        let d = try PluginDriver(rate: 48000)
        #expect(spinet_plugin_activate(d.plugin, 256) == 0)
        // channel 2 to the synth (program 0), volume down on channel 2
        _ = d.render(frames: 512, block: 256, events: [(0, [0xB1, 0, 126]), (0, [0xC1, 0]), (0, [0xB1, 7, 64])])
        let before = d.render(frames: 8000, block: 256, events: [(100, [0x91, 69, 100]), (4000, [0x81, 69, 0])])
        spinet_plugin_deactivate(d.plugin)
        #expect(spinet_plugin_activate(d.plugin, 256) == 0)
        _ = d.render(frames: 512, block: 256, events: [])
        let after = d.render(frames: 8000, block: 256, events: [(100, [0x91, 69, 100]), (4000, [0x81, 69, 0])])
        // the synth again: the note starts on its frame (the SoundFont's would start on the grid, later)
        let latency = Int(spinet_plugin_latency(d.plugin))
        #expect(onset(after.left) == 100 + latency)
        #expect(onset(before.left) == 100 + latency)
        let peakBefore = before.left.map { abs($0) }.max()!, peakAfter = after.left.map { abs($0) }.max()!
        #expect(abs(20 * log10(Double(peakAfter / peakBefore))) < 0.5, "the volume held: \(peakBefore) vs \(peakAfter)")
        // a GM reset forgets it all: the channel is back on the SoundFont
        _ = d.render(frames: 256, block: 256, events: [(0, [0xF0, 0x7E, 0x7F, 0x09, 0x01, 0xF7])])
        spinet_plugin_deactivate(d.plugin)
        #expect(spinet_plugin_activate(d.plugin, 256) == 0)
        let reset = d.render(frames: 8000, block: 256, events: [(100, [0x91, 69, 100]), (4000, [0x81, 69, 0])])
        #expect(onset(reset.left) != 100 + latency)
    }
}
