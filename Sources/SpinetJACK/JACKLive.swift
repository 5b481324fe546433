import SpinetEngine
import SpinetHost

// JACK as an implementation of the live protocols (SpinetHost): the client
// is the audio device (its process callback renders the session's engine),
// and `JACKMIDIInput` is the MIDI input its process callback reads. With
// `--midi alsa` the session pairs the JACK device with the ALSA sequencer
// instead, which places its events on the JACK timeline through the
// anchors the device publishes each cycle.

/// The session's work on the process thread: publish where the engine's
/// next frame is heard, copy what was rendered to the record ring.
final class LiveCycleHooks: JACKCycleHooks, @unchecked Sendable {
    let timeline: AudioTimeline
    let ring: RecordRing?
    let heardAfterNanoseconds: Int64

    init(timeline: AudioTimeline, ring: RecordRing?, heardAfterNanoseconds: Int64) {
        self.timeline = timeline
        self.ring = ring
        self.heardAfterNanoseconds = heardAfterNanoseconds
    }

    override func cycleStarts(engineFrame: Int64, frames: Int, nanoseconds: Int64) {
        timeline.publish(TimelineAnchor(frame: engineFrame, nanoseconds: nanoseconds &+ heardAfterNanoseconds))
    }

    override func cycleRendered(left: UnsafePointer<Float>, right: UnsafePointer<Float>, frames: Int) {
        _ = ring?.write(left: left, right: right, frames: frames)
    }
}

extension JACKClient: AudioDevice {
    /// A cycle is heard after the outputs' playback latency; one more period
    /// covers a MIDI event that arrives just before the next cycle starts.
    public var periods: Int {
        let p = max(periodFrames, 1)
        return 2 + (playbackLatencyFrames + p - 1) / p
    }
    public var bufferFrames: Int { periodFrames + playbackLatencyFrames }
    public var summary: String {
        "JACK client '\(configuration.name)', \(sampleRate) Hz, \(periodFrames) frames a cycle, outputs \(audioPortNames.joined(separator: ", ")), MIDI \(midiPortNames.isEmpty ? "from ALSA" : midiPortNames.joined(separator: ", "))"
    }

    /// The server's thread renders: its priority is the server's (jackd -R,
    /// PipeWire's rtkit), so `priority` is not used.
    public func start(engine: Engine, timeline: AudioTimeline, ring: RecordRing?, priority: Int32) -> ThreadScheduling {
        let heardAfter = Int64(Double(playbackLatencyFrames) * 1e9 / Double(max(sampleRate, 1)))
        hooks = LiveCycleHooks(timeline: timeline, ring: ring, heardAfterNanoseconds: heardAfter)
        do { try start(engine: engine) } catch { fail(error.description) }
        return .normal
    }

    /// The session has faded out and played silence already.
    public func stop(drain: Bool) { stop(fadeSeconds: 0) }
}

extension JACKClient: RateFollowingDevice {
    public func hostWillFollowRate() { hostFollowsRate = true }
    public var offeredEngineTaken: Bool { !graphs.isPending }
}

/// The JACK MIDI inputs of a client, as the session's MIDI input: the
/// process callback hands their events to the engine at their frames.
public final class JACKMIDIInput: MIDIInput, @unchecked Sendable {
    let client: JACKClient
    public init(_ client: JACKClient) { self.client = client }

    public func start(queue: EventQueue, timeline: AudioTimeline, timing: LiveTiming, priority: Int32,
                      tempo: @escaping @Sendable (Double) -> Void) throws -> String {
        // The process callback hands JACK MIDI to the engine inside each
        // cycle (Engine.render(frames:left:right:events:)): `queue` is not used.
        let ports = client.midiPortNames.map { "\(client.configuration.name):\($0)" }
        let one = ports.count == 1
        return "JACK \(one ? "input" : "inputs") \(ports.joined(separator: ", ")) (connect \(one ? "it" : "them") from a DAW, a keyboard's JACK port or a session manager)"
    }
    public func stop() {}
    public var readsInAudioCallback: Bool { true }
    /// The client's lines too (the server gone and back, connections).
    public func takeNotices() -> [String] { client.takeNotices() }
    public var inputStatistics: MIDIInputStatistics {
        var s = MIDIInputStatistics()
        s.received = client.midiEventsReceived
        return s
    }
}

/// Another MIDI input (the ALSA sequencer, for `--midi alsa`) beside JACK
/// audio: everything is that input's, and the JACK client's lines (the
/// server gone and back) join its notices, so the status line shows them.
public final class JACKNoticesAlongside: MIDIInput, @unchecked Sendable {
    let input: any MIDIInput
    let client: JACKClient
    public init(_ input: any MIDIInput, _ client: JACKClient) {
        self.input = input
        self.client = client
    }

    public func start(queue: EventQueue, timeline: AudioTimeline, timing: LiveTiming, priority: Int32,
                      tempo: @escaping @Sendable (Double) -> Void) throws -> String {
        try input.start(queue: queue, timeline: timeline, timing: timing, priority: priority, tempo: tempo)
    }
    public func stop() { input.stop() }
    public func takeNotices() -> [String] { client.takeNotices() + input.takeNotices() }
    public var inputStatistics: MIDIInputStatistics { input.inputStatistics }
    public var canFollowNewEngine: Bool { input.canFollowNewEngine }
    public func follow(queue: EventQueue, timing: LiveTiming) { input.follow(queue: queue, timing: timing) }
}
