import Foundation
import Testing
@testable import SpinetALSA
import SpinetHost

/// Arrival time -> engine frame: constant latency, whatever the anchor.
@Suite("LiveTiming and AudioTimeline")
struct TimingTests {
    @Test func latencyIsPeriodsTimesPeriodPlusSafety() {
        let t = LiveTiming(sampleRate: 48000, periodFrames: 128, periods: 2, safetyFrames: 48)
        #expect(t.latencyFrames == 304)
        #expect(t.latencyNanoseconds == 6_333_333)
    }

    @Test func eventArrivingAtTheAnchorTimePlaysOneLatencyLater() {
        let t = LiveTiming(sampleRate: 48000, latencyFrames: 256)
        let anchor = TimelineAnchor(frame: 48_000, nanoseconds: 5_000_000_000)
        #expect(t.frame(forArrival: 5_000_000_000, anchor: anchor) == 48_256)
        // 10 ms later: 480 frames later.
        #expect(t.frame(forArrival: 5_010_000_000, anchor: anchor) == 48_736)
        // Before the anchor (an event stamped by the kernel, read late) works too.
        #expect(t.frame(forArrival: 4_990_000_000, anchor: anchor) == 47_776)
    }

    @Test func theFrameDoesNotDependOnWhichAnchorIsUsed() {
        // Anchors published at every period of a steady 48 kHz device map the
        // same arrival time to the same frame: no jitter from the period grid.
        let t = LiveTiming(sampleRate: 48000, periodFrames: 128, periods: 2, safetyFrames: 48)
        let arrival: Int64 = 1_234_567_890
        let frameAt0 = Int64(1_000)
        let nsAt0 = Int64(1_200_000_000)
        var frames = Set<Int64>()
        for k in 0..<20 {
            let f = frameAt0 + Int64(k * 128)
            let ns = nsAt0 + Int64((Double(k * 128) * 1e9 / 48000).rounded())
            frames.insert(t.frame(forArrival: arrival, anchor: TimelineAnchor(frame: f, nanoseconds: ns)))
        }
        #expect(frames.count <= 2, "rounding may differ by one frame, no more: \(frames.sorted())")
        #expect((frames.max() ?? 0) - (frames.min() ?? 0) <= 1)
    }

    @Test func timelineReadsNothingBeforeTheFirstPublication() {
        let timeline = AudioTimeline()
        #expect(timeline.read() == nil)
        timeline.publish(TimelineAnchor(frame: 5, nanoseconds: 7))
        #expect(timeline.read() == TimelineAnchor(frame: 5, nanoseconds: 7))
    }

    @Test func timelineNeverReturnsATornPair() {
        // The writer publishes pairs with nanoseconds = frame * 1000; a reader
        // must never see a frame from one pair and nanoseconds from another.
        let timeline = AudioTimeline()
        let done = DispatchSemaphore(value: 0)
        let writer = Thread {
            for f in Int64(1)...300_000 { timeline.publish(TimelineAnchor(frame: f, nanoseconds: f * 1000)) }
            done.signal()
        }
        writer.start()
        var reads = 0
        var torn = 0
        var last: Int64 = 0
        while done.wait(timeout: .now()) == .timedOut {
            if let a = timeline.read() {
                reads += 1
                if a.nanoseconds != a.frame * 1000 { torn += 1 }
                #expect(a.frame >= last)
                last = a.frame
            }
        }
        #expect(torn == 0)
        #expect(reads > 0)
    }

    @Test func queueCalibrationKeepsTheNarrowestBracket() {
        var c = QueueClockCalibration()
        #expect(c.monotonic(forQueue: 0) == nil)
        c.beginRound()
        c.add(queue: 1_000, before: 10_000, after: 10_400)      // offset 9_200 +- 200
        c.add(queue: 2_000, before: 11_050, after: 11_070)      // offset 9_060 +- 10: wins
        c.add(queue: 3_000, before: 12_000, after: 12_500)
        #expect(c.offset == 9_060)
        #expect(c.monotonic(forQueue: 5_000) == 14_060)
        // A new round replaces the offset with its own best reading.
        c.beginRound()
        c.add(queue: 10_000, before: 20_000, after: 20_100)
        #expect(c.offset == 10_050)
    }
}
