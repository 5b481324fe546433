import Glibc
import SpinetEngine
import SpinetHost
import SpinetMIDI
import SpinetRig
import SpinetSoundFont
import SpinetSupport
import SpinetTestSupport
import Testing

private let font = SpinetCommand.repositoryRoot.appendingPathComponent("SoundFonts/sf_GMbank.sf2").path

/// A MIDI input with a thread of its own (as the ALSA sequencer): it can
/// follow a new engine, and plays one note through whichever queue and
/// timing it has, once started and once more after each `follow`.
final class FollowingInput: MIDIInput, @unchecked Sendable {
    struct Followed {
        var queue: ObjectIdentifier
        var sampleRate: Double
        /// The engine whose anchor the timeline held when `follow` came.
        var anchorEngine: UInt
    }
    let device: FakeDevice
    let canFollow: Bool
    private let state = Locked<(timeline: AudioTimeline?, followed: [Followed])>((nil, []))

    init(device: FakeDevice, canFollow: Bool) {
        self.device = device
        self.canFollow = canFollow
    }

    var canFollowNewEngine: Bool { canFollow }
    var followed: [Followed] { state.withLock { $0.followed } }

    func start(queue: EventQueue, timeline: AudioTimeline, timing: LiveTiming, priority: Int32,
               tempo: @escaping @Sendable (Double) -> Void) throws -> String {
        state.withLock { $0.timeline = timeline }
        play(queue, timing, timeline, key: 60)
        return "following fake input"
    }

    func follow(queue: EventQueue, timing: LiveTiming) {
        let timeline = state.withLock { s in
            s.followed.append(Followed(queue: ObjectIdentifier(queue), sampleRate: timing.sampleRate,
                                       anchorEngine: device.lastPublisher.load(ordering: .relaxed)))
            return s.timeline!
        }
        play(queue, timing, timeline, key: 64)
    }

    private func play(_ queue: EventQueue, _ timing: LiveTiming, _ timeline: AudioTimeline, key: UInt8) {
        guard let anchor = timeline.read() else { return }
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        let now = Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
        queue.push(EngineEvent(frame: timing.frame(forArrival: now, anchor: anchor), .noteOn(channel: 0, key: key, velocity: 100)))
    }

    func stop() {}
    func takeNotices() -> [String] { [] }
    var inputStatistics: MIDIInputStatistics { MIDIInputStatistics() }
}

@Suite("LiveSession: a rate change with a MIDI input of its own thread")
struct LiveSessionRateTests {
    /// With ALSA sequencer MIDI and JACK audio, play stayed silent after a
    /// rate change. The session now builds the graph again at the new rate,
    /// and moves the input to the new graph's queue and timing only once the
    /// device has swapped the new engine in and published one of its
    /// anchors: the note the input plays then sounds on the new engine.
    @Test func anInputThatCanFollowMovesToTheNewGraph() throws {
        let (session, device, input, lines) = try Self.run(canFollow: true)
        #expect(session.graph.engine.sampleRate == 44100)
        let followed = input.followed
        try #require(followed.count == 1, "follow was not called once: \(lines)")
        #expect(followed[0].queue == ObjectIdentifier(session.graph.inputs[0]), "moved to another queue than the new graph's")
        #expect(followed[0].sampleRate == 44100)
        #expect(followed[0].anchorEngine == UInt(bitPattern: ObjectIdentifier(session.graph.engine).hashValue),
                "moved before the new engine published its first anchor")
        #expect(session.graph.engine.statistics.peakVoices > 0, "the note after the change did not play on the new engine")
        #expect(session.graph.engine.statistics.lateEvents == 0)
        _ = device
    }

    /// An input that cannot move keeps the session at the old graph (silent
    /// until the rate is back), as before.
    @Test func anInputThatCannotFollowKeepsTheOldGraph() throws {
        let (session, _, input, _) = try Self.run(canFollow: false)
        #expect(session.graph.engine.sampleRate == 48000)
        #expect(input.followed.isEmpty)
    }

    /// Plays 1.2 s; the device's rate goes to 44.1 kHz after 0.4 s.
    static func run(canFollow: Bool) throws -> (LiveSession, FakeDevice, FollowingInput, [String]) {
        let settings = GraphSettings()
        let unit = try SoundFontUnit(fonts: [font], sampleRate: 48000, options: settings.soundFont)
        let graph = try GraphBuilder.live(settings, soundFont: unit, inputCapacities: [8192, 1024])
        let device = FakeDevice()
        let input = FollowingInput(device: device, canFollow: canFollow)
        let (session, lines) = fakeSession(graph, device: device, input: input, font: font, seconds: 1.2)
        let changer = NativeThread(name: "rate-change") {
            usleep(400_000)
            device.rate.store(44100, ordering: .releasing)
        }
        let status = try session.run()
        changer.join()
        #expect(status == 0)
        return (session, device, input, lines.all)
    }
}
