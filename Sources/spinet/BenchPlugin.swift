import CSpinetPlugin
import Dispatch
import Glibc
import SpinetPlugin

extension Bench {
    /// The plugin core (what the LV2 and CLAP plugins run) under the load
    /// `callbackTimes` puts on `spinet play`'s graph: the same held notes,
    /// given as a host gives them (MIDI bytes at frame offsets in the
    /// process call), timing each process call.
    static func pluginCallbackTimes(font: String, rate: Int, period: Int, voices: Int, periods: Int) throws -> CallbackStats {
        let plugin = try orFailure { try PluginInstance(sampleRate: Double(rate), bundleDirectory: nil, log: { _, _ in }) }
        try orFailure { try plugin.restoreState(PluginSettings(soundFont: font).json(), soundFontOverride: nil) }
        try orFailure { try plugin.activate(maxFrames: period) }
        var l = [Float](repeating: 0, count: period), r = l
        let bytes = UnsafeMutablePointer<UInt8>.allocate(capacity: 3 * 16)
        defer { bytes.deallocate() }
        func send(_ messages: [[UInt8]]) {
            var events: [spinet_midi_event] = []
            for (i, m) in messages.enumerated() {
                for (k, b) in m.enumerated() { bytes[3 * i + k] = b }
                events.append(spinet_midi_event(offset: 0, size: UInt32(m.count), data: UnsafePointer(bytes + 3 * i)))
            }
            events.withUnsafeBufferPointer { e in
                plugin.process(frames: period, left: &l, right: &r, events: e.baseAddress, count: e.count)
            }
        }
        let programs: [UInt8] = [48, 49, 19, 16, 89, 90, 52, 50, 48, 0, 19, 49, 89, 16, 52, 91]
        send((0..<16).filter { $0 != 9 }.map { [0xC0 | UInt8($0), programs[$0]] })
        var key = 0, attempts = 0
        while plugin.activeVoices < voices && attempts < 4 * voices {
            let n = key / 7
            let ch = UInt8(n % 15 < 9 ? n % 15 : n % 15 + 1)
            send([[0x90 | ch, UInt8(36 + key % 60), 90]])
            key += 7
            attempts += 1
        }
        for _ in 0..<50 { send([]) }
        var times: [Double] = []
        times.reserveCapacity(periods)
        var peak = 0
        try l.withUnsafeMutableBufferPointer { lp in
            try r.withUnsafeMutableBufferPointer { rp in
                for _ in 0..<periods {
                    let t0 = DispatchTime.now().uptimeNanoseconds
                    plugin.process(frames: period, left: lp.baseAddress!, right: rp.baseAddress!, events: nil, count: 0)
                    times.append(Double(DispatchTime.now().uptimeNanoseconds - t0))
                    peak = max(peak, plugin.activeVoices)
                }
                if times.isEmpty { throw Failure("no periods rendered") }
            }
        }
        plugin.deactivate()
        let periodNs = Double(period) / Double(rate) * 1e9
        let sorted = times.sorted()
        func pct(_ q: Double) -> Double { sorted[min(sorted.count - 1, Int(q * Double(sorted.count)))] / periodNs * 100 }
        return CallbackStats(p50: pct(0.5), p99: pct(0.99), max: sorted.last! / periodNs * 100, voices: peak)
    }

    /// CPU per voice: the median process time over the voices sounding, per
    /// frame, in nanoseconds.
    static func nanosecondsPerVoiceFrame(_ s: CallbackStats, rate: Int) -> Double {
        s.p50 / 100 / Double(rate) * 1e9 / Double(max(s.voices, 1))
    }
}
