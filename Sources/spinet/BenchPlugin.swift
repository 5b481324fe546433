import CSpinetPlugin
import Glibc
import SpinetPlugin

extension Bench {
    /// The plugin core (what the LV2 and CLAP plugins run) under the load
    /// `callbackTimes` puts on `spinet play`'s graph (`heldNoteTimes`),
    /// given as a host gives it: MIDI bytes at frame offsets in the process
    /// call.
    static func pluginCallbackTimes(font: String, rate: Int, period: Int, voices: Int, periods: Int) throws -> CallbackStats {
        let plugin = try orFailure { try PluginInstance(sampleRate: Double(rate), bundleDirectory: nil, log: { _, _ in }) }
        try orFailure { try plugin.restoreState(PluginSettings(soundFont: font).json(), soundFontOverride: nil) }
        try orFailure { try plugin.activate(maxFrames: period) }
        // the messages handed over for the next process call, as a host's MIDI bytes
        let bytes = UnsafeMutablePointer<UInt8>.allocate(capacity: 3 * 16)
        defer { bytes.deallocate() }
        var events: [spinet_midi_event] = []
        let stats = try heldNoteTimes(rate: rate, period: period, voices: voices, periods: periods,
                                      send: { m in
                                          let b = m.bytes, at = bytes + 3 * events.count
                                          for (k, x) in b.enumerated() { at[k] = x }
                                          events.append(spinet_midi_event(offset: 0, size: UInt32(b.count), data: UnsafePointer(at)))
                                      },
                                      activeVoices: { plugin.activeVoices },
                                      render: { l, r in
                                          events.withUnsafeBufferPointer { e in
                                              plugin.process(frames: period, left: l, right: r, events: e.baseAddress, count: e.count)
                                          }
                                          events.removeAll(keepingCapacity: true)
                                      })
        plugin.deactivate()
        return stats
    }

    /// CPU per voice: the median process time over the voices sounding, per
    /// frame, in nanoseconds.
    static func nanosecondsPerVoiceFrame(_ s: CallbackStats, rate: Int) -> Double {
        s.p50 / 100 / Double(rate) * 1e9 / Double(max(s.voices, 1))
    }
}
