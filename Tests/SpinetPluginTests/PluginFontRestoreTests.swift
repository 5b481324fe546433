import CSpinetPlugin
import Foundation
import Testing
import SpinetPlugin
import SpinetTestSupport

/// A project moves, a SoundFont is renamed: restoring its state loses the
/// font only. Every other setting comes back, the host's log names the
/// path the state asked for, and the default font plays until the user
/// chooses one.
@Suite("Plugin state: a moved SoundFont")
struct PluginFontRestoreTests {
    /// A state with settings unlike the defaults (a channel on the synth,
    /// another reverb, the gain and the reverb return), saved with `font`.
    static func savedState(font: String) throws -> String {
        let d = try PluginDriver(rate: 48000)
        #expect(spinet_plugin_load_soundfont(d.plugin, font) == 0)
        spinet_plugin_set_param(d.plugin, UInt32(SPINET_PARAM_GAIN.rawValue), -6)
        spinet_plugin_set_param(d.plugin, UInt32(SPINET_PARAM_REVERB.rawValue), 0.25)
        let json = String(cString: spinet_plugin_save_state(d.plugin))
            .replacingOccurrences(of: "\"channels\": []", with: "\"channels\": [\"2=synth\"]")
            .replacingOccurrences(of: "\"reverb\": \"room\"", with: "\"reverb\": \"hall\"")
        #expect(json.contains("2=synth") && json.contains("\"hall\""))
        return json
    }

    static let music: [(frame: Int, bytes: [UInt8])] = [(100, [0x90, 60, 110]), (300, [0x91, 69, 100]), (9000, [0x80, 60, 0]), (9000, [0x81, 69, 0])]

    @Test func aRenamedFontCostsOnlyTheFont() throws {
        let dir = try SpinetCommand.temporaryDirectory("plugin-font-moved")
        let defaultFont = fontPath(try PluginDriver(rate: 48000))
        let font = dir.appendingPathComponent("Project Font.sf2").path
        try FileManager.default.copyItem(atPath: defaultFont, toPath: font)
        let json = try Self.savedState(font: font)
        try FileManager.default.moveItem(atPath: font, toPath: dir.appendingPathComponent("renamed.sf2").path)

        let b = try PluginDriver(rate: 48000)
        #expect(spinet_plugin_restore_state(b.plugin, json, nil) == 0, "\(b.lines)")
        // the host's log names the path the state asked for, and what plays now
        let line = try #require(b.lines.first { $0.contains(font) }, "\(b.lines)")
        #expect(line.contains(defaultFont) && line.contains("other settings are restored"), "\(line)")
        #expect(fontPath(b) == defaultFont)
        // every other setting holds
        let restored = String(cString: spinet_plugin_save_state(b.plugin))
        #expect(restored.contains("\"channels\": [\"2=synth\"]") && restored.contains("\"reverb\": \"hall\""), "\(restored)")
        #expect(spinet_plugin_get_param(b.plugin, UInt32(SPINET_PARAM_GAIN.rawValue)) == -6)
        #expect(spinet_plugin_get_param(b.plugin, UInt32(SPINET_PARAM_REVERB.rawValue)) == 0.25)
        // and it sounds as the same state saved with the default font
        let c = try PluginDriver(rate: 48000)
        #expect(spinet_plugin_restore_state(c.plugin, json.replacingOccurrences(of: font, with: defaultFont), nil) == 0)
        #expect(spinet_plugin_activate(b.plugin, 256) == 0)
        #expect(spinet_plugin_activate(c.plugin, 256) == 0)
        let x = b.render(frames: 12000, block: 256, events: Self.music), y = c.render(frames: 12000, block: 256, events: Self.music)
        #expect(x.left.map { abs($0) }.max()! > 0.01)
        #expect(x.left == y.left && x.right == y.right)
    }

    /// The host's path for the font (LV2 maps it into the project) is gone,
    /// the absolute path the state holds is still there: that one plays.
    @Test func theSavedAbsolutePathIsTriedAfterTheHostsPath() throws {
        let dir = try SpinetCommand.temporaryDirectory("plugin-font-absolute")
        let other = SpinetCommand.repositoryRoot.appendingPathComponent("Fuzz/corpus/SoundFontFuzzer/gm-like.sf2").path
        let font = dir.appendingPathComponent("kept.sf2").path
        try FileManager.default.copyItem(atPath: other, toPath: font)
        let json = try Self.savedState(font: font)
        let b = try PluginDriver(rate: 48000)
        #expect(spinet_plugin_restore_state(b.plugin, json, dir.appendingPathComponent("state7/kept.sf2").path) == 0)
        #expect(fontPath(b) == font)
        #expect(!b.lines.contains { $0.contains("not found") }, "\(b.lines)")
    }

    /// The path candidates, in their order.
    @Test func fontCandidates() {
        #expect(PluginSettings.soundFontCandidates(override: "/p/state1/F.sf2", saved: "/old/F.sf2", bundleDirectory: "/b")
            == ["/p/state1/F.sf2", "/old/F.sf2", "/b/SoundFonts/F.sf2"])
        #expect(PluginSettings.soundFontCandidates(override: "/p/state1/F.sf2", saved: "fonts/F.sf2", bundleDirectory: nil)
            == ["/p/state1/F.sf2", "/p/state1/fonts/F.sf2"])
        #expect(PluginSettings.soundFontCandidates(override: nil, saved: "/b/SoundFonts/F.sf2", bundleDirectory: "/b") == ["/b/SoundFonts/F.sf2"])
    }
}

/// The names a host shows for programs and drum keys.
@Suite("Plugin program names")
struct PluginNameTableTests {
    @Test func theBundledFontsPresetsSynthPresetsAndDrumKeys() throws {
        let d = try PluginDriver(rate: 48000)
        let table = try #require(spinet_plugin_name_table(d.plugin))
        defer { spinet_plugin_free_name_table(table) }
        let t = table.pointee
        var programs: [String: String] = [:]
        for k in 0..<Int(t.program_count) {
            programs["\(t.programs[k].bank):\(t.programs[k].program)"] = String(cString: t.programs[k].name)
        }
        var keys: [String: String] = [:]
        for k in 0..<Int(t.key_count) {
            keys["\(t.keys[k].bank):\(t.keys[k].program):\(t.keys[k].key)"] = String(cString: t.keys[k].name)
        }
        // sf_GMbank's own names
        #expect(programs["0:0"] == "Piano 1")
        #expect(programs["128:0"] == "Standard")
        #expect(programs["128:25"] == "TR 808")
        // Spinet's synth presets in bank 126
        let synth = (0..<Int(t.program_count)).filter { t.programs[$0].bank == 126 }
        #expect(synth.count >= 8)
        #expect(programs["126:0"] != nil)
        // in bank, then program order
        let order = (0..<Int(t.program_count)).map { Int(t.programs[$0].bank) * 128 + Int(t.programs[$0].program) }
        #expect(order == order.sorted())
        // a General MIDI font: the General MIDI percussion names on every kit
        #expect(PluginNameTable.generalMIDIPercussion.count == 47)
        #expect(keys["128:0:35"] == "Acoustic Bass Drum")
        #expect(keys["128:0:38"] == "Acoustic Snare")
        #expect(keys["128:25:81"] == "Open Triangle")
        #expect(keys["0:0:38"] == nil)
    }

    /// A font that is not General MIDI gets no key names rather than wrong ones.
    @Test func aFontThatIsNotGeneralMIDINamesNoKeys() throws {
        let font = SpinetCommand.repositoryRoot.appendingPathComponent("Fuzz/corpus/SoundFontFuzzer/gm-like.sf2").path
        let d = try PluginDriver(rate: 48000)
        #expect(spinet_plugin_load_soundfont(d.plugin, font) == 0)
        let table = try #require(spinet_plugin_name_table(d.plugin))
        defer { spinet_plugin_free_name_table(table) }
        #expect(table.pointee.program_count > 0)
        #expect(table.pointee.key_count == 0)
    }
}
