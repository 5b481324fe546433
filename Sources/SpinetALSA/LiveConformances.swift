import SpinetEngine
import SpinetHost

// ALSA is the first implementation of the live protocols: the PCM output
// renders on its own thread, one period at a time; the sequencer client
// reads on its own thread and pushes stamped events to the engine's queue.

extension PCMOutput: AudioDevice {
    public var summary: String {
        "\(device), \(sampleRate) Hz, \(format), \(periods) x \(periodFrames) frames, \(channels) channels"
    }
}

extension SequencerClient: MIDIInput {
    public func start(queue: EventQueue, timeline: AudioTimeline, timing: LiveTiming, priority: Int32,
                      tempo: @escaping @Sendable (Double) -> Void) throws -> String {
        let made = try start(connect: connectMode, queue: queue, timeline: timeline, timing: timing,
                             priority: priority, tempo: tempo)
        let inputs = inputAddresses.map(\.description).joined(separator: ", ")
        let from = made.isEmpty ? "no source connected yet" : "connected from " + made.map { "\($0.address) (\($0.name))" }.joined(separator: ", ")
        return "client '\(name)' \(clientID), input \(inputs); \(from)"
    }

    /// The sequencer thread moves to a new engine's queue (`follow`).
    public var canFollowNewEngine: Bool { true }

    public var inputStatistics: MIDIInputStatistics {
        let s = statistics
        var m = MIDIInputStatistics()
        m.received = s.received
        m.stamped = s.kernelStamped
        m.overflows = s.overflows
        m.lost = s.kernelLost
        m.sysExTooLong = s.sysExTooLong
        m.sysExUnfinished = s.sysExUnfinished
        m.released = s.released
        m.connected = s.connected
        return m
    }
}
