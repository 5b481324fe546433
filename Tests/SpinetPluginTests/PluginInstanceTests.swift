import CSpinetPlugin
import Foundation
import Testing
import SpinetPlugin
import SpinetTestSupport
import SpinetTestTraits

/// A plugin instance driven as a host drives it: process calls of a given
/// block size, MIDI events at frame offsets within each call.
final class PluginDriver {
    /// What the instance logged (one line each), as a host's log receives it.
    final class Log: @unchecked Sendable {
        var lines: [String] = []
        let lock = NSLock()
    }
    let log = Log()
    private(set) var plugin: OpaquePointer!

    init(rate: Double) throws {
        let p = spinet_plugin_create(rate, nil, { context, _, line in
            let log = Unmanaged<Log>.fromOpaque(context!).takeUnretainedValue()
            log.lock.lock()
            log.lines.append(String(cString: line!))
            log.lock.unlock()
        }, Unmanaged.passUnretained(log).toOpaque())
        try #require(p != nil)
        plugin = p!
    }

    var lines: [String] { log.lock.lock(); defer { log.lock.unlock() }; return log.lines }

    deinit { spinet_plugin_destroy(plugin) }

    /// Renders `frames` frames in blocks of `block`, with `events` (frame,
    /// bytes) placed at their frames. Returns the left channel then the right.
    func render(frames: Int, block: Int, events: [(frame: Int, bytes: [UInt8])]) -> (left: [Float], right: [Float]) {
        var left = [Float](repeating: 0, count: frames), right = [Float](repeating: 0, count: frames)
        let storage = events.map { e -> UnsafeMutablePointer<UInt8> in
            let p = UnsafeMutablePointer<UInt8>.allocate(capacity: e.bytes.count)
            p.initialize(from: e.bytes, count: e.bytes.count)
            return p
        }
        defer { storage.forEach { $0.deallocate() } }
        var start = 0
        while start < frames {
            let n = min(block, frames - start)
            var list: [spinet_midi_event] = []
            for (i, e) in events.enumerated() where e.frame >= start && e.frame < start + n {
                list.append(spinet_midi_event(offset: UInt32(e.frame - start), size: UInt32(e.bytes.count), data: UnsafePointer(storage[i])))
            }
            left.withUnsafeMutableBufferPointer { l in
                right.withUnsafeMutableBufferPointer { r in
                    spinet_plugin_process(plugin, UInt32(n), l.baseAddress! + start, r.baseAddress! + start, list, UInt32(list.count))
                }
            }
            start += n
        }
        return (left, right)
    }
}

/// The instance's SoundFont path, as the C API gives it.
func fontPath(_ d: PluginDriver) -> String {
    var path = [UInt8](repeating: 0, count: 4096)
    let n = path.withUnsafeMutableBufferPointer { b in
        b.baseAddress!.withMemoryRebound(to: CChar.self, capacity: 4096) { spinet_plugin_soundfont_path(d.plugin, $0, 4096) }
    }
    return String(decoding: path.prefix(min(n, 4095)), as: UTF8.self)
}

/// Spinet's synth on channel 1 (Bank Select 126), then notes at `frames`.
func synthNotes(at frames: [Int], key: UInt8 = 69) -> [(frame: Int, bytes: [UInt8])] {
    var events: [(frame: Int, bytes: [UInt8])] = [(0, [0xB0, 0, 126]), (0, [0xC0, 0])]
    for f in frames {
        events.append((f, [0x90, key, 100]))
        events.append((f + 600, [0x80, key, 0]))
    }
    return events
}

/// The first frame at or after `from` whose level exceeds `threshold`.
func onset(_ x: [Float], from: Int = 0, threshold: Float = 1e-6) -> Int? {
    (from..<x.count).first { abs(x[$0]) > threshold }
}

@Suite("Plugin core")
struct PluginInstanceTests {
    @Test(arguments: [44100.0, 48000.0, 96000.0])
    func synthNotesLandOnTheirFramePlusTheLatency(rate: Double) throws {
        for block in [1, 37, 64, 500, 4096] {
            let d = try PluginDriver(rate: rate)
            #expect(spinet_plugin_activate(d.plugin, UInt32(block)) == 0)
            let latency = Int(spinet_plugin_latency(d.plugin))
            #expect(latency == Int((rate * 0.0015).rounded()))
            let note = 1000 + block / 3
            let out = d.render(frames: note + 4000, block: block, events: synthNotes(at: [note]))
            #expect(onset(out.left) == note + latency, "block \(block) at \(rate) Hz")
        }
    }

    /// Where each note's sound starts, for SoundFont notes at `frames`.
    func soundFontOnsets(block: Int, frames: [Int]) throws -> [Int] {
        try frames.map { frame in
            let d = try PluginDriver(rate: 48000)
            #expect(spinet_plugin_activate(d.plugin, UInt32(block)) == 0)
            let out = d.render(frames: 6000, block: block, events: [(frame, [0x90, 60, 110]), (4000, [0x80, 60, 0])])
            #expect(out.left.map { abs($0) }.max()! > 0.01, "the SoundFont is heard")
            return try #require(onset(out.left, threshold: 1e-5))
        }
    }

    /// A SoundFont note is delivered on FluidSynth's 64-frame grid. With
    /// blocks of a multiple of 64 frames that is the nearest grid point (ties
    /// late), as offline. With other block sizes FluidSynth may already have
    /// rendered the part of the grid around the note (it renders 64 frames
    /// at a time): the note then starts at the next grid point, never more
    /// than 64 frames after the nearest.
    @Test(arguments: [1, 37, 500, 4096])
    func soundFontChannelsLandOnTheGrid(block: Int) throws {
        let frames = [990, 1000, 1050, 1060, 1100]
        let nearest = frames.map { ($0 + 32) / 64 * 64 }
        // blocks of 64: onset = nearest grid point + one constant (latency and the sample's start)
        let reference = try soundFontOnsets(block: 64, frames: frames)
        let constant = reference[0] - nearest[0]
        #expect(zip(reference, nearest).allSatisfy { $0 - $1 == constant }, "\(reference)")
        #expect(constant >= 72 && constant < 72 + 64)
        let onsets = try soundFontOnsets(block: block, frames: frames)
        print("plugin SoundFont onsets, block \(block): grid point minus nearest \(zip(onsets, nearest).map { $0 - constant - $1 })")
        for (onset, near) in zip(onsets, nearest) {
            let point = onset - constant
            #expect(point % 64 == 0, "block \(block): onset \(onset) is off the grid")
            #expect(point == near || (block % 64 != 0 && point == near + 64), "block \(block): grid point \(point), nearest \(near)")
        }
    }

    /// A bounce must sound as playback: the same input in blocks of any
    /// size (1, 37, 64, 500, 4096) gives the same bytes on Spinet's synth
    /// (notes, a bend and the mod wheel at frames on no grid: its control
    /// blocks carry on across process calls), on SoundFont channels (events
    /// on the 64-frame grid: see `soundFontChannelsLandOnTheGrid` for the
    /// rest), sends, effects (which start and stop running on the same
    /// frames) and a return level moving.
    @Test func theOutputDoesNotDependOnTheBlockSize() throws {
        let soundFont: [(frame: Int, bytes: [UInt8])] = [
            (0, [0xB0, 91, 100]), (0, [0xB0, 93, 100]), (0, [0xB0, 94, 100]), (128, [0x90, 60, 110]),
            (9024, [0xB0, 91, 20]), (30016, [0x80, 60, 0]), (90048, [0x90, 64, 100]), (99008, [0x80, 64, 0]),
        ]
        let synth: [(frame: Int, bytes: [UInt8])] = [
            (0, [0xB2, 0, 126]), (0, [0xC2, 1]), (0, [0xB2, 91, 60]), (0, [0xB2, 94, 40]),
            (2_345, [0x92, 64, 100]), (5_001, [0xB2, 1, 90]), (7_777, [0x92, 71, 90]), (9_003, [0xE2, 0x11, 0x50]),
            (12_111, [0x82, 64, 0]), (15_013, [0x82, 71, 0]), (25_037, [0x92, 67, 100]), (31_000, [0x82, 67, 0]),
        ]
        // A host's events come in frame order.
        let events = (soundFont + synth).enumerated().sorted { ($0.element.frame, $0.offset) < ($1.element.frame, $1.offset) }.map(\.element)
        let blocks = [37, 1, 64, 500, 4096]
        var outputs: [[Float]] = []
        for block in blocks {
            let d = try PluginDriver(rate: 48000)
            spinet_plugin_set_param(d.plugin, UInt32(SPINET_PARAM_CHORUS.rawValue), 0.5)
            #expect(spinet_plugin_activate(d.plugin, UInt32(block)) == 0)
            var out = d.render(frames: 20000, block: block, events: events)
            spinet_plugin_set_param(d.plugin, UInt32(SPINET_PARAM_REVERB.rawValue), 0.3)   // at frame 20000, whatever the block
            let rest = d.render(frames: 130000, block: block, events: events.map { ($0.frame - 20000, $0.bytes) }.filter { $0.0 >= 0 })
            out.left += rest.left
            out.right += rest.right
            outputs.append(out.left + out.right)
        }
        #expect(outputs[0].map { abs($0) }.max()! > 0.01)
        for k in 1..<outputs.count {
            let first = outputs[k].indices.first { outputs[k][$0].bitPattern != outputs[0][$0].bitPattern }
            let most = zip(outputs[k], outputs[0]).map { abs($0 - $1) }.max()!
            #expect(first == nil, "block size \(blocks[k]) differs from 37 from frame \(first ?? -1) (left, then right), by up to \(most)")
        }
    }

    @Test func stateRoundTripRendersTheSameBytes() throws {
        let a = try PluginDriver(rate: 48000)
        spinet_plugin_set_param(a.plugin, UInt32(SPINET_PARAM_GAIN.rawValue), -6)
        spinet_plugin_set_param(a.plugin, UInt32(SPINET_PARAM_REVERB.rawValue), 0.25)
        let json = String(cString: spinet_plugin_save_state(a.plugin))
        #expect(json.contains("\"gain\": -6"))
        let b = try PluginDriver(rate: 48000)
        #expect(spinet_plugin_restore_state(b.plugin, json, nil) == 0)
        #expect(spinet_plugin_get_param(b.plugin, UInt32(SPINET_PARAM_GAIN.rawValue)) == -6)
        let events = synthNotes(at: [500, 3000]) + [(1200, [0x91, 64, 100]), (9000, [0x81, 64, 0])]
        let sorted = events.sorted { $0.frame < $1.frame }
        #expect(spinet_plugin_activate(a.plugin, 512) == 0)
        #expect(spinet_plugin_activate(b.plugin, 512) == 0)
        let x = a.render(frames: 24000, block: 512, events: sorted)
        let y = b.render(frames: 24000, block: 512, events: sorted)
        #expect(x.left == y.left && x.right == y.right)
        #expect(x.left.map { abs($0) }.max()! > 0.01)
        // a fresh default instance differs (the gain and reverb were restored, not ignored)
        let c = try PluginDriver(rate: 48000)
        #expect(spinet_plugin_activate(c.plugin, 512) == 0)
        #expect(c.render(frames: 24000, block: 512, events: sorted).left != x.left)
    }

    @Test func reactivationStartsFromSilence() throws {
        let d = try PluginDriver(rate: 48000)
        #expect(spinet_plugin_activate(d.plugin, 256) == 0)
        let first = d.render(frames: 8000, block: 256, events: synthNotes(at: [100]))
        spinet_plugin_deactivate(d.plugin)
        #expect(spinet_plugin_activate(d.plugin, 256) == 0)
        let again = d.render(frames: 8000, block: 256, events: synthNotes(at: [100]))
        #expect(first.left == again.left)
    }

    /// Ardour deactivates and activates its plugins on its audio thread, at
    /// every transport stop and after an export. Once the loader thread has
    /// the spare graph ready, that pair allocates and frees nothing (no font
    /// is loaded, no graph released there), and the spare sounds exactly as
    /// a fresh instance does, with the parameters as they are now.
    @Test(.realtimeProbe, .enabled(if: RealtimeProbe.isActive, "the allocation probe is not active in this process"))
    func reactivationTakesTheSpareAndAllocatesNothing() throws {
        let events = (synthNotes(at: [100, 3000]) + [(1200, [0x91, 64, 100]), (5000, [0x81, 64, 0])]).sorted { $0.frame < $1.frame }
        let d = try PluginDriver(rate: 48000)
        #expect(spinet_plugin_activate(d.plugin, 256) == 0)
        _ = d.render(frames: 8000, block: 256, events: events)
        spinet_plugin_set_param(d.plugin, UInt32(SPINET_PARAM_GAIN.rawValue), -6)
        spinet_plugin_set_param(d.plugin, UInt32(SPINET_PARAM_REVERB.rawValue), 0.5)
        try #require(spinet_plugin_wait_for_spare(d.plugin, 60_000) == 1, "the loader thread built no spare")
        let cycle = RealtimeProbe.counts { () -> Int32 in
            spinet_plugin_deactivate(d.plugin)
            return spinet_plugin_activate(d.plugin, 256)
        }
        #expect(cycle.result == 0)
        #expect(cycle.allocations == 0 && cycle.frees == 0, "deactivate + activate: \(cycle.allocations) allocations, \(cycle.frees) frees")
        let again = d.render(frames: 12000, block: 256, events: events)
        let fresh = try PluginDriver(rate: 48000)
        spinet_plugin_set_param(fresh.plugin, UInt32(SPINET_PARAM_GAIN.rawValue), -6)
        spinet_plugin_set_param(fresh.plugin, UInt32(SPINET_PARAM_REVERB.rawValue), 0.5)
        #expect(spinet_plugin_activate(fresh.plugin, 256) == 0)
        let first = fresh.render(frames: 12000, block: 256, events: events)
        #expect(again.left.map { abs($0) }.max()! > 0.01)
        #expect(again.left == first.left && again.right == first.right, "the spare sounds as a fresh instance")
        // a new block size is prepared anew, and still from silence
        spinet_plugin_deactivate(d.plugin)
        #expect(spinet_plugin_activate(d.plugin, 512) == 0)
        let bigger = d.render(frames: 12000, block: 512, events: events)
        #expect(bigger.left.map { abs($0) }.max()! > 0.01)
        #expect(bigger.left[0..<100].allSatisfy { $0 == 0 })
    }

    @Test func gainParameterScalesTheOutput() throws {
        let d = try PluginDriver(rate: 48000), e = try PluginDriver(rate: 48000)
        spinet_plugin_set_param(e.plugin, UInt32(SPINET_PARAM_GAIN.rawValue), -12)
        #expect(spinet_plugin_activate(d.plugin, 256) == 0)
        #expect(spinet_plugin_activate(e.plugin, 256) == 0)
        let loud = d.render(frames: 12000, block: 256, events: synthNotes(at: [100]))
        let soft = e.render(frames: 12000, block: 256, events: synthNotes(at: [100]))
        let ratio = Double(soft.left[6000..<10000].map { abs($0) }.max()!) / Double(loud.left[6000..<10000].map { abs($0) }.max()!)
        #expect(abs(20 * log10(ratio) + 12) < 0.5, "\(20 * log10(ratio)) dB")
    }

    @Test func aFontThatFailsLeavesTheOldOnePlaying() throws {
        let d = try PluginDriver(rate: 48000)
        #expect(spinet_plugin_activate(d.plugin, 256) == 0)
        let before = fontPath(d)
        #expect(spinet_plugin_load_soundfont(d.plugin, "/nonexistent/font.sf2") != 0)
        #expect(d.lines.contains { $0.contains("/nonexistent/font.sf2") }, "the host's log says why: \(d.lines)")
        #expect(!d.lines.contains { $0.contains("--soundfont") }, "a DAW user has no command line: \(d.lines)")
        #expect(fontPath(d) == before)
        let out = d.render(frames: 6000, block: 256, events: [(100, [0x90, 60, 110])])
        #expect(out.left.map { abs($0) }.max()! > 0.01)
    }

    @Test func aFontChangeWhileProcessingTakesOverWithoutABreak() throws {
        let other = SpinetCommand.repositoryRoot.appendingPathComponent("Fuzz/corpus/SoundFontFuzzer/gm-like.sf2").path
        let d = try PluginDriver(rate: 48000)
        #expect(spinet_plugin_activate(d.plugin, 256) == 0)
        // a long note on the first font, then the change on another thread while blocks keep coming
        let held = d.render(frames: 4096, block: 256, events: [(100, [0x90, 60, 110])])
        let loaded = DispatchSemaphore(value: 0)
        struct Shared: @unchecked Sendable { let status: UnsafeMutablePointer<Int32>; let plugin: OpaquePointer }
        let shared = Shared(status: .allocate(capacity: 1), plugin: d.plugin)
        let status = shared.status
        defer { status.deallocate() }
        status.pointee = 99
        let loader = Thread { shared.status.pointee = spinet_plugin_load_soundfont(shared.plugin, other); loaded.signal() }
        loader.start()
        var during: [Float] = []
        while loaded.wait(timeout: .now()) == .timedOut {
            during += d.render(frames: 256, block: 256, events: []).left
        }
        #expect(status.pointee == 0)
        let after = d.render(frames: 9600, block: 256, events: [(200, [0x90, 72, 110]), (9000, [0x80, 72, 0])])
        // the held note rang on through the change: no block of silence
        let all = Array(held.left[1024...]) + during + Array(after.left[0..<200])
        for start in stride(from: 0, to: all.count - 256, by: 256) {
            #expect(all[start..<start + 256].map { abs($0) }.max()! > 1e-4, "silence at \(start) of the held note")
        }
        #expect(fontPath(d) == other)
        // a new note plays the new font: unlike the same note on the first one
        let first = try PluginDriver(rate: 48000)
        #expect(spinet_plugin_activate(first.plugin, 256) == 0)
        let reference = first.render(frames: 9600, block: 256, events: [(200, [0x90, 72, 110]), (9000, [0x80, 72, 0])])
        #expect(after.left[2000..<8000].map { abs($0) }.max()! > 1e-3)
        #expect(Array(after.left[2000..<8000]) != Array(reference.left[2000..<8000]))
    }

    @Test func badStateIsRefusedAndTheSettingsStay() throws {
        let d = try PluginDriver(rate: 48000)
        let before = String(cString: spinet_plugin_save_state(d.plugin))
        #expect(spinet_plugin_restore_state(d.plugin, "{\"spinet-plugin-state\": 1, \"reverb\": \"cathedral\"}", nil) != 0)
        #expect(spinet_plugin_restore_state(d.plugin, "not json", nil) != 0)
        #expect(String(cString: spinet_plugin_save_state(d.plugin)) == before)
    }

    @Test(.realtimeProbe, .enabled(if: RealtimeProbe.isActive, "the allocation probe is not active in this process"))
    func processAllocatesNothingAndTakesNoLock() throws {
        let d = try PluginDriver(rate: 48000)
        #expect(spinet_plugin_activate(d.plugin, 128) == 0)
        let frames = 128
        let l = UnsafeMutablePointer<Float>.allocate(capacity: frames), r = UnsafeMutablePointer<Float>.allocate(capacity: frames)
        defer { l.deallocate(); r.deallocate() }
        let bytes = UnsafeMutablePointer<UInt8>.allocate(capacity: 64)
        defer { bytes.deallocate() }
        // note on/off on the SoundFont and the synth, a CC, a SysEx (GM on)
        let raw: [[UInt8]] = [[0x90, 60, 100], [0xC1, 3], [0xB1, 0, 126], [0x91, 64, 90], [0xB0, 91, 80],
                              [0xF0, 0x7E, 0x7F, 0x09, 0x01, 0xF7], [0x80, 60, 0], [0x81, 64, 0]]
        var events: [spinet_midi_event] = []
        var at = 0
        for (i, m) in raw.enumerated() {
            (bytes + at).initialize(from: m, count: m.count)
            events.append(spinet_midi_event(offset: UInt32(i * 13), size: UInt32(m.count), data: UnsafePointer(bytes + at)))
            at += m.count
        }
        func block(_ i: Int) {
            events.withUnsafeBufferPointer { e in
                spinet_plugin_process(d.plugin, UInt32(frames), l, r, i % 4 == 0 ? e.baseAddress : nil, i % 4 == 0 ? UInt32(e.count) : 0)
            }
            spinet_plugin_set_param(d.plugin, UInt32(SPINET_PARAM_REVERB.rawValue), Double(i % 3) / 2)
            spinet_plugin_set_param(d.plugin, UInt32(SPINET_PARAM_CEILING.rawValue), -Double(i % 5))
        }
        // From the very first call (activation prepared everything and ran
        // each kind of event once through a throwaway graph): the first call,
        // each kind of event the first time, then blocks with events.
        var first = RealtimeProbe.counts { spinet_plugin_process(d.plugin, UInt32(frames), l, r, nil, 0) }.allocations
        for k in 0..<events.count {
            first += RealtimeProbe.counts {
                events.withUnsafeBufferPointer { e in spinet_plugin_process(d.plugin, UInt32(frames), l, r, e.baseAddress! + k, 1) }
            }.allocations
        }
        #expect(first == 0, "the first calls allocated")
        let counts = RealtimeProbe.counts { for i in 0..<200 { block(i) } }
        #expect(counts.allocations == 0)
        #expect(counts.frees == 0)
        #expect(counts.locks == 0)
    }
}
