import CSpinetPlugin
import Foundation
import Testing
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
