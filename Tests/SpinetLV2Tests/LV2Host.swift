import Foundation
import SpinetTestSupport

/// Runs the headless LV2 host (Tests/PluginHosts/lv2-host.c, built by
/// scripts/build-plugin.sh lv2 beside the bundle) on the built plugin.
enum LV2Host {
    /// `$SPINET_PLUGIN_DIR`: where `make plugins-lv2` put spinet.lv2 and lv2-host.
    static var pluginDirectory: String? {
        guard let d = ProcessInfo.processInfo.environment["SPINET_PLUGIN_DIR"], !d.isEmpty else { return nil }
        return d
    }
    static var isBuilt: Bool { pluginDirectory != nil }
    static var bundle: String { (pluginDirectory ?? "") + "/spinet.lv2" }
    static var program: String { (pluginDirectory ?? "") + "/lv2-host" }

    struct Run {
        var status: Int32
        var stdout: String
        var stderr: String
        var left: [Float]
        var right: [Float]
        var second: (left: [Float], right: [Float])?

        /// The value after `key` on the line that starts with `prefix key`.
        func value(_ key: String, of prefix: String = "instance1") -> Int? {
            for line in stdout.split(separator: "\n") {
                let f = line.split(separator: " ")
                if f.count >= 3 && f[0] == prefix && f[1] == key { return Int(f[2]) }
                if prefix.isEmpty && f.count >= 2 && f[0] == key { return Int(f[1]) }
            }
            return nil
        }

        /// The probe's counts: `instance1 allocations A frees F locks L max_allocations_per_run M`.
        func probe(_ name: String = "instance1") -> [String: Int]? {
            for line in stdout.split(separator: "\n") {
                let f = line.split(separator: " ").map(String.init)
                guard f.count >= 9, f[0] == name, f[1] == "allocations" else { continue }
                var r: [String: Int] = [:]
                for i in stride(from: 1, to: f.count - 1, by: 2) { r[f[i]] = Int(f[i + 1]) }
                return r
            }
            return nil
        }

        /// The SoundFont paths the plugin told on its notify port, in order.
        func notifiedFonts(_ name: String = "instance1") -> [String] {
            stdout.split(separator: "\n").compactMap { line in
                let f = line.split(separator: " ", maxSplits: 4).map(String.init)
                return f.count == 5 && f[0] == name && f[1] == "notify" && f[3] == "soundfont" ? f[4] : nil
            }
        }
    }

    /// Runs the host with `events` (lines of the host's event format) and
    /// the extra arguments; reads back the WAV output(s).
    static func run(_ arguments: [String], events: [String] = [], events2: [String]? = nil,
                    in dir: URL, name: String, timeout: Double = 300) throws -> Run {
        let eventsFile = dir.appendingPathComponent(name + ".events")
        try (events.joined(separator: "\n") + "\n").write(to: eventsFile, atomically: true, encoding: .utf8)
        let out = dir.appendingPathComponent(name + ".wav")
        var args = ["--bundle", bundle, "--events", eventsFile.path, "--out", out.path]
        var out2: URL?
        if let events2 {
            let f = dir.appendingPathComponent(name + "-2.events")
            try (events2.joined(separator: "\n") + "\n").write(to: f, atomically: true, encoding: .utf8)
            out2 = dir.appendingPathComponent(name + "-2.wav")
            args += ["--instances", "2", "--events2", f.path, "--out2", out2!.path]
        }
        args += arguments
        let r = try SpinetCommand.run(args, in: dir, timeout: timeout, program: program)
        var run = Run(status: r.status, stdout: String(decoding: r.stdout, as: UTF8.self), stderr: r.stderr,
                      left: [], right: [], second: nil)
        if r.status == 0, FileManager.default.fileExists(atPath: out.path) {
            let wav = try WAVFile(data: Data(contentsOf: out))
            run.left = wav.channel(0)
            run.right = wav.channel(1)
        }
        if r.status == 0, let out2, FileManager.default.fileExists(atPath: out2.path) {
            let wav = try WAVFile(data: Data(contentsOf: out2))
            run.second = (wav.channel(0), wav.channel(1))
        }
        return run
    }

    /// Another GM SoundFont than the plugin's default, for font changes:
    /// TimGM6mb (6 MB) if installed, else FluidR3_GM (148 MB), copied into
    /// `dir` when small so that nothing outside the test can take it away
    /// mid-test.
    static func otherFont(in dir: URL) throws -> String? {
        for path in ["/usr/share/sounds/sf2/TimGM6mb.sf2", "/usr/share/sounds/sf2/FluidR3_GM.sf2"] {
            guard let attrs = try? FileManager.default.attributesOfItem(atPath: path),
                  let size = attrs[.size] as? Int, size > 0 else { continue }
            if size < 32 << 20 {
                let copy = dir.appendingPathComponent((path as NSString).lastPathComponent)
                try? FileManager.default.removeItem(at: copy)
                try FileManager.default.copyItem(atPath: path, toPath: copy.path)
                return copy.path
            }
            return path
        }
        return nil
    }
}

/// MIDI lines in the host's event format.
enum MIDILines {
    /// Bank Select MSB 126 + Program Change: the channel goes to Spinet's synth.
    static func synth(channel: Int, program: Int, at frame: Int = 0) -> [String] {
        [String(format: "%d b%x 00 7e", frame, channel), String(format: "%d c%x %02x", frame, channel, program)]
    }
    static func noteOn(_ frame: Int, channel: Int = 0, key: Int = 69, velocity: Int = 100) -> String {
        String(format: "%d 9%x %02x %02x", frame, channel, key, velocity)
    }
    static func noteOff(_ frame: Int, channel: Int = 0, key: Int = 69) -> String {
        String(format: "%d 8%x %02x 00", frame, channel, key)
    }
    /// Program Change on a SoundFont channel.
    static func program(_ frame: Int, channel: Int, program: Int) -> String {
        String(format: "%d c%x %02x", frame, channel, program)
    }
}

extension Array where Element == Float {
    /// The first index at or after `from` whose magnitude is above `threshold`.
    func firstAbove(_ threshold: Float, from: Int = 0) -> Int? {
        SignalAnalysis.firstOnset(self, threshold: threshold, from: from)
    }

    func peak(_ range: Range<Int>) -> Float {
        let r = range.clamped(to: indices)
        return r.isEmpty ? 0 : SignalAnalysis.peak(self[r])
    }

    /// The bit patterns, for byte-exact comparisons.
    var bits: [UInt32] { map(\.bitPattern) }
}

/// The largest difference between two signals, in dB relative to the first one's peak.
func differenceDB(_ a: [Float], _ b: [Float]) -> Double {
    let n = Swift.min(a.count, b.count)
    var peak: Float = 0, diff: Float = 0
    for i in 0..<n {
        peak = Swift.max(peak, abs(a[i]))
        diff = Swift.max(diff, abs(a[i] - b[i]))
    }
    if diff == 0 { return -.infinity }
    return 20 * log10(Double(diff) / Double(Swift.max(peak, 1e-30)))
}
