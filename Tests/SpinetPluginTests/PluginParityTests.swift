import CSpinetPlugin
import Foundation
import Testing
import SpinetMIDI
import SpinetTestSupport
import SpinetTestTraits

/// The plugin and `spinet render` are one engine: the same MIDI file through
/// a plugin instance, in blocks of 512 frames as a host runs it, against
/// the offline render (after the plugin's reported latency).
///
/// What holds exactly: a file whose channels the offline render keeps in
/// one SoundFont player matches to float rounding, effects included.
/// What does not: for speed, the offline render splits busy files over two
/// SoundFont players (and a channel that is most of the work over both, its
/// keys taking turns); a plugin instance, like `spinet play`, plays every
/// channel on one. FluidSynth's voices then interact differently (measured
/// on the demo: -47 dB residual), so that file is held to a looser bound.
@Suite("Plugin parity with spinet render")
struct PluginParityTests {
    /// The residual of `x` against `reference`, in dB of the reference's energy.
    static func residualDB(_ x: ArraySlice<Float>, _ reference: ArraySlice<Float>) -> Double {
        var e = 0.0, r = 0.0
        for (a, b) in zip(x, reference) {
            e += Double(a - b) * Double(a - b)
            r += Double(b) * Double(b)
        }
        return 10 * log10(max(e, 1e-30) / max(r, 1e-30))
    }

    /// A two-channel file (electric piano, bass) with controllers and a
    /// reverb send: small enough that the offline render keeps it in one player.
    static func smallFile() -> [UInt8] {
        func vlq(_ n: Int) -> [UInt8] {
            var out = [UInt8(n & 0x7F)], v = n >> 7
            while v > 0 { out.insert(UInt8(v & 0x7F) | 0x80, at: 0); v >>= 7 }
            return out
        }
        let events: [(Int, [UInt8])] = [
            (0, [0xC0, 4]), (0, [0xC1, 33]), (0, [0xB0, 91, 100]), (0, [0xB1, 10, 30]),
            (0, [0x90, 60, 78]), (0, [0x91, 36, 100]), (480, [0x90, 64, 70]), (240, [0xB0, 7, 90]),
            (240, [0x80, 60, 0]), (0, [0x81, 36, 0]), (480, [0x80, 64, 0]), (0, [0x90, 67, 90]),
            (0, [0x91, 43, 90]), (960, [0x80, 67, 0]), (0, [0x81, 43, 0]),
        ]
        var track: [UInt8] = [0x00, 0xFF, 0x51, 0x03, 0x07, 0xA1, 0x20]   // 120 bpm
        for (dt, m) in events { track += vlq(dt) + m }
        track += [0x00, 0xFF, 0x2F, 0x00]
        func be32(_ v: Int) -> [UInt8] { [UInt8(v >> 24 & 0xFF), UInt8(v >> 16 & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF)] }
        return Array("MThd".utf8) + be32(6) + [0, 0, 0, 1, 0x01, 0xE0] + Array("MTrk".utf8) + be32(track.count) + track
    }

    /// The plugin's and the offline render's residual, left and right, in dB.
    func residuals(_ path: String, rate: Int = 48000, seconds: Int = 20) throws -> (Double, Double) {
        let schedule = try MIDIFile(path: path).schedule(sampleRate: rate)
        let name = URL(fileURLWithPath: path).deletingPathExtension().lastPathComponent
        let out = FileManager.default.temporaryDirectory.appendingPathComponent("spinet-parity-\(getpid())-\(name).wav")
        defer { try? FileManager.default.removeItem(at: out) }
        let r = try SpinetCommand.run(["render", path, "-o", out.path, "--bits", "32f", "--rate", "\(rate)", "--force", "-q"])
        try #require(r.status == 0, "\(r.stderr)")
        let wav = try WAVFile(data: Data(contentsOf: out))

        let d = try PluginDriver(rate: Double(rate))
        #expect(spinet_plugin_activate(d.plugin, 512) == 0)
        let latency = Int(spinet_plugin_latency(d.plugin))
        var events: [(frame: Int, bytes: [UInt8])] = []
        for e in schedule.events {
            switch e.kind {
            case .message(let m): events.append((Int(e.frame), m.bytes))
            case .sysEx(let i): events.append((Int(e.frame), schedule.sysEx[i]))
            }
        }
        if let tempo = schedule.tempoChanges.first {
            spinet_plugin_set_tempo(d.plugin, 60_000_000 / Double(tempo.microsecondsPerQuarter))
        }
        // the first `seconds` (an unoptimized build renders slowly)
        let frames = min(wav.frames, seconds * rate)
        let plugin = d.render(frames: frames + latency, block: 512, events: events.filter { $0.frame < frames })
        let l = Self.residualDB(plugin.left[latency...], wav.channel(0)[..<frames])
        let r2 = Self.residualDB(plugin.right[latency...], wav.channel(1)[..<frames])
        print("plugin vs spinet render (\(name), blocks of 512): residual \(String(format: "%.1f", l)) dB left, \(String(format: "%.1f", r2)) dB right")
        return (l, r2)
    }

    @Test func aFileInOnePlayerMatchesTheOfflineRender() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("spinet-parity-\(getpid())-small.mid")
        defer { try? FileManager.default.removeItem(at: path) }
        try Data(Self.smallFile()).write(to: path)
        let (l, r) = try residuals(path.path)
        #expect(l <= -90 && r <= -90)
    }

    @Test func theDemoIsCloseToTheOfflineRender() throws {
        let (l, r) = try residuals(SpinetCommand.repositoryRoot.appendingPathComponent("demo/spinet-demo.mid").path)
        #expect(l <= -35 && r <= -35)
    }
}
