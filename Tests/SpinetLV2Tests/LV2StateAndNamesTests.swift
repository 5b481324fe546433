import Foundation
import SpinetTestSupport
import Testing

/// What a DAW user meets beyond the sound: the saved parameters are the
/// host's, a moved font costs only the font, and the host sees program and
/// drum key names (Ardour's midnam extension).
@Suite("LV2 plugin: state and names", .serialized,
       .enabled(if: LV2Host.isBuilt, "needs the built plugin: run `make plugin-tests-lv2` (sets SPINET_PLUGIN_DIR)"))
struct LV2StateAndNamesTests {
    static func directory(_ name: String) throws -> URL { try SpinetCommand.temporaryDirectory("lv2-" + name) }

    /// The settings JSON of a saved state (state.ttl's string, unescaped enough to search).
    static func settings(_ stateDir: URL) throws -> String {
        try String(contentsOf: stateDir.appendingPathComponent("state.ttl"), encoding: .utf8).replacingOccurrences(of: "\\", with: "")
    }

    static let input = MIDILines.synth(channel: 2, program: 1, at: 0) + [
        MIDILines.noteOn(100, channel: 0, key: 60), MIDILines.noteOn(2345, channel: 2, key: 64),
        MIDILines.noteOn(5000, channel: 9, key: 38), MIDILines.noteOff(20000, channel: 0, key: 60),
        MIDILines.noteOff(21000, channel: 2, key: 64),
    ]

    /// A host that sets the control ports and saves before any run: the
    /// state holds the ports' values, not the defaults, and a fresh
    /// instance restored from it sounds as the one that saved it.
    @Test func theStateHoldsTheHostsParameterValues() throws {
        let dir = try Self.directory("state-params")
        defer { try? FileManager.default.removeItem(at: dir) }
        let stateDir = dir.appendingPathComponent("state")
        // The music starts once the original's parameters have ramped
        // from the defaults to the ports' values (the restored instance
        // starts at them).
        let start = 12000
        let input = Self.input.map { line -> String in
            let f = line.split(separator: " ", maxSplits: 1)
            return "\(Int(f[0])! + start) \(f[1])"
        }
        let original = try LV2Host.run(["--frames", "60000", "--param", "gain=-6", "--param", "reverb=0.25",
                                        "--save-state", stateDir.path, "--save-at", "0"], events: input, in: dir, name: "original")
        try #require(original.status == 0, "\(original.stderr)")
        let json = try Self.settings(stateDir)
        #expect(json.contains("\"gain\": -6,") && json.contains("\"reverb\": 0.25,"), "\(json)")
        let restored = try LV2Host.run(["--frames", "60000", "--restore-state", stateDir.path], events: input, in: dir, name: "restored")
        try #require(restored.status == 0, "\(restored.stderr)")
        #expect(original.left.peak(start..<60000) > 0.01)
        // (the original's smoothed parameters end within float rounding of their targets)
        let apart = differenceDB(Array(original.left[start...]), Array(restored.left[start...]))
        #expect(apart < -100, "\(apart) dB apart")
    }

    /// The project's font was renamed after saving: the restored instance
    /// plays the default font with every other setting of the state (here
    /// a channel given to Spinet's synth by the state), and the host's log
    /// names the saved path.
    @Test func aRenamedFontCostsOnlyTheFont() throws {
        let dir = try Self.directory("state-moved-font")
        defer { try? FileManager.default.removeItem(at: dir) }
        let font = try #require(try LV2Host.otherFont(in: dir), "no second GM SoundFont installed (timgm6mb-soundfont or fluid-soundfont-gm)")
        let stateDir = dir.appendingPathComponent("state")
        let params = ["--param", "gain=-4", "--param", "reverb=0.3", "--param", "delay=0"]
        let saved = try LV2Host.run(["--frames", "24576", "--save-state", stateDir.path] + params, events: ["0 font \(font)"], in: dir, name: "saved")
        try #require(saved.status == 0, "\(saved.stderr)")
        // The state gives channel 4 to the synth (a setting no port holds).
        let ttl = stateDir.appendingPathComponent("state.ttl")
        let text = try String(contentsOf: ttl, encoding: .utf8)
        let edited = text.replacingOccurrences(of: "\"channels\": []", with: "\"channels\": [\"4=synth\"]")
        try #require(edited != text, "the state's channels were not found in \(text)")
        try edited.write(to: ttl, atomically: true, encoding: .utf8)
        try FileManager.default.moveItem(atPath: font, toPath: dir.appendingPathComponent("renamed.sf2").path)

        let music = [MIDILines.noteOn(100, channel: 3, key: 64), MIDILines.noteOn(300, channel: 0, key: 60),
                     MIDILines.noteOff(20000, channel: 3, key: 64), MIDILines.noteOff(20000, channel: 0, key: 60)]
        let restored = try LV2Host.run(["--frames", "30000", "--restore-state", stateDir.path], events: music, in: dir, name: "restored")
        try #require(restored.status == 0, "\(restored.stderr)")
        #expect(restored.stderr.contains(font) && restored.stderr.contains("other settings are restored"), "\(restored.stderr)")
        #expect(restored.notifiedFonts().first == LV2Host.bundle + "/SoundFonts/sf_GMbank.sf2", "\(restored.notifiedFonts())")
        // as the same state with the default font in the place of the lost one
        let referenceDir = dir.appendingPathComponent("reference-state")
        try FileManager.default.copyItem(at: stateDir, to: referenceDir)
        let link = referenceDir.appendingPathComponent((font as NSString).lastPathComponent)
        try FileManager.default.removeItem(at: link)
        try FileManager.default.createSymbolicLink(atPath: link.path, withDestinationPath: LV2Host.bundle + "/SoundFonts/sf_GMbank.sf2")
        let reference = try LV2Host.run(["--frames", "30000", "--restore-state", referenceDir.path], events: music, in: dir, name: "reference")
        try #require(reference.status == 0, "\(reference.stderr)")
        #expect(restored.left.peak(0..<30000) > 0.01)
        let same = restored.left.bits == reference.left.bits
        #expect(same, "\(differenceDB(reference.left, restored.left)) dB apart")
    }

    /// The MIDNAM document (Ardour's midnam extension): the bundled font's
    /// preset names per bank, Spinet's synth presets in bank 126, the
    /// General MIDI drum key names; after a font change, the new font's
    /// names and an update request to the host.
    @Test func theHostSeesProgramAndDrumNames() throws {
        let dir = try Self.directory("midnam")
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("default.midnam")
        let a = try LV2Host.run(["--frames", "4096", "--midnam", file.path], in: dir, name: "default")
        try #require(a.status == 0, "\(a.stderr)")
        let xml = try String(contentsOf: file, encoding: .utf8)
        #expect(xml.hasPrefix("<?xml") && xml.contains("<MIDINameDocument>") && xml.hasSuffix("</MIDINameDocument>\n"))
        #expect(xml.contains("<Patch Number=\"0\" Name=\"Piano 1\" ProgramChange=\"0\"/>"))
        #expect(xml.contains("<PatchBank Name=\"Spinet synth 126\">"))
        #expect(xml.contains("<ControlChange Control=\"0\" Value=\"126\"/>"))
        #expect(xml.contains("<Patch Number=\"25\" Name=\"TR 808\" ProgramChange=\"25\">"))
        #expect(xml.contains("<Note Number=\"35\" Name=\"Acoustic Bass Drum\"/>"))
        #expect(xml.contains("<ChannelNameSetAssign Channel=\"10\" NameSet=\"Drums\"/>"))
        #expect(a.stdout.contains("midnam_model Spinet:"))
        #expect((a.value("midnam_updates") ?? 0) >= 1, "the host is told at the first run")
        // a font change: the new names, and the host is told again
        let other = SpinetCommand.repositoryRoot.appendingPathComponent("Fuzz/corpus/SoundFontFuzzer/gm-like.sf2").path
        let changed = dir.appendingPathComponent("changed.midnam")
        let b = try LV2Host.run(["--frames", "8192", "--midnam", changed.path], events: ["1024 font \(other)"], in: dir, name: "changed")
        try #require(b.status == 0, "\(b.stderr)")
        let xml2 = try String(contentsOf: changed, encoding: .utf8)
        #expect(xml2.contains("Name=\"Grand\"") && !xml2.contains("Piano 1"))
        #expect(!xml2.contains("<NoteNameList"), "not a General MIDI font: no key names")
        #expect((b.value("midnam_updates") ?? 0) >= 2, "\(b.stdout)")
        // FluidR3, where installed: its names (for the record)
        let fluid = "/usr/share/sounds/sf2/FluidR3_GM.sf2"
        if FileManager.default.fileExists(atPath: fluid) {
            let f = dir.appendingPathComponent("fluid.midnam")
            let c = try LV2Host.run(["--frames", "8192", "--midnam", f.path], events: ["0 font \(fluid)"], in: dir, name: "fluid", timeout: 600)
            try #require(c.status == 0, "\(c.stderr)")
            let xml3 = try String(contentsOf: f, encoding: .utf8)
            #expect(xml3.contains("Name=\"Yamaha Grand Piano\""))
            #expect(xml3.contains("<Note Number=\"35\" Name=\"Acoustic Bass Drum\"/>"))
        }
    }
}
