import Glibc
import SpinetEngine
import SpinetHost
import SpinetRig
import Synchronization

/// An audio device with no hardware, for the live session's tests: a thread
/// that renders a period every 2 ms and publishes where its frames are, as a
/// driver does, and copies what it renders to the record ring. Its rate can
/// change while it runs, as a JACK server's does under PipeWire: it swaps in
/// an offered engine at the start of a block, stays silent (renders and
/// publishes nothing) while no engine matches its rate, and records which
/// engine each anchor it publishes belongs to.
final class FakeDevice: RateFollowingDevice, @unchecked Sendable {
    let rate = Atomic<Int>(48000)
    var sampleRate: Int { rate.load(ordering: .acquiring) }
    let periodFrames = 256
    let periods = 2
    var bufferFrames: Int { periods * periodFrames }
    let summary = "fake, 48000 Hz"
    let xruns = 0
    let failure: String? = nil
    let stopped = Atomic<Bool>(false)
    let following = Atomic<Bool>(false)
    /// Periods rendered.
    let blocks = Atomic<Int>(0)
    /// The engine of the last anchor published (ObjectIdentifier bits).
    let lastPublisher = Atomic<UInt>(0)
    private let engines = HandOver<Engine>()
    private var thread: NativeThread?

    func takeIntervalLoad() -> RenderLoad { RenderLoad(mean: 0, peak: 0, periods: 0) }
    var totalLoad: RenderLoad { RenderLoad(mean: 0, peak: 0, periods: 0) }
    func hostWillFollowRate() { following.store(true, ordering: .relaxed) }

    func offer(engine: Engine) -> Bool {
        engines.collect()
        return engines.offerIfEmpty(engine)
    }
    var offeredEngineTaken: Bool { !engines.isPending }

    func start(engine first: Engine, timeline: AudioTimeline, ring: RecordRing?, priority: Int32) -> ThreadScheduling {
        let t = NativeThread(name: "fake-audio") { [self] in
            var engine = Unmanaged.passRetained(first)
            let l = UnsafeMutablePointer<Float>.allocate(capacity: periodFrames)
            let r = UnsafeMutablePointer<Float>.allocate(capacity: periodFrames)
            defer { l.deallocate(); r.deallocate(); engines.retire(engine) }
            while !stopped.load(ordering: .acquiring) {
                if let next = engines.take() {
                    engines.retire(engine)
                    engine = next
                }
                let e = engine.takeUnretainedValue()
                if Int(e.sampleRate) == sampleRate {
                    var ts = timespec()
                    clock_gettime(CLOCK_MONOTONIC, &ts)
                    lastPublisher.store(UInt(bitPattern: ObjectIdentifier(e).hashValue), ordering: .relaxed)
                    timeline.publish(TimelineAnchor(frame: e.frameTime, nanoseconds: Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)))
                    e.render(frames: periodFrames, left: l, right: r)
                    ring?.write(left: l, right: r, frames: periodFrames)
                    blocks.add(1, ordering: .relaxed)
                }
                usleep(2_000)
            }
        }
        thread = t
        return t.scheduling
    }

    func stop(drain: Bool) {
        stopped.store(true, ordering: .releasing)
        thread?.join()
        thread = nil
        engines.collect()
    }
}

/// The lines a session logs, collected from any thread.
final class LoggedLines: Sendable {
    private let lines = Locked<[String]>([])
    func add(_ line: String) { lines.withLock { $0.append(line) } }
    var all: [String] { lines.withLock { $0 } }
}

/// A live session of `graph` on fakes, for `seconds`, at no real-time
/// priority, and the lines it logs (read them after `run`).
func fakeSession(_ graph: EngineGraph, device: FakeDevice, input: any MIDIInput, font: String,
                 seconds: Double) -> (LiveSession, LoggedLines) {
    var options = LiveSession.Options()
    options.priority = 0
    options.duration = seconds
    let lines = LoggedLines()
    let session = LiveSession(graph: graph, device: device, midi: input, fonts: [font], recorder: nil,
                              options: options, log: { lines.add($0) })
    return (session, lines)
}
