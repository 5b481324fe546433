import Testing
import SpinetTestTraits
import SpinetEngine
import SpinetMIDI
import SpinetTestSupport

/// What the file player relies on: events queued ahead of time, stamped
/// with future engine frames, wait in the queue for their block; a retract
/// takes back the ones not yet played. The render thread allocates nothing
/// and takes no lock for either.
@Suite("Engine: events queued ahead")
struct FutureEventTests {
    @Test(.realtimeProbe) func futureEventsWaitForTheirBlockAndRetractedOnesAreSkipped() {
        #expect(RealtimeProbe.isActive, "the allocation probe is not interposed in this test binary")
        let engine = Engine(configuration: Engine.Configuration())
        let unit = SysExCountingUnit()
        engine.routeAll(to: engine.add(unit))
        let queue = engine.addInput(capacity: 4096)
        engine.prepare(sampleRate: 48000, maxFrames: 128)
        let left = UnsafeMutablePointer<Float>.allocate(capacity: 128)
        let right = UnsafeMutablePointer<Float>.allocate(capacity: 128)
        defer { left.deallocate(); right.deallocate() }
        // Half a second ahead: one event every 24 frames up to frame 24000.
        for k in 0..<1000 {
            queue.push(EngineEvent(frame: Int64(k * 24), .controlChange(channel: 0, controller: 1, value: UInt8(k % 128))))
        }
        func block() { engine.render(frames: 128, left: left, right: right, events: UnsafeBufferPointer(start: nil, count: 0)) }
        block()
        var allocations = 0, locks = 0
        // 12000 frames: the events before frame 12000 are played, no more.
        for _ in 1..<(12000 / 128) {
            let c = RealtimeProbe.counts { block() }
            allocations += c.allocations
            locks += c.locks
        }
        let played = unit.messages
        #expect(played == (Int(engine.frameTime) + 23) / 24, "only the events due so far: \(played) at frame \(engine.frameTime)")
        // Take back everything from 14400 on; what follows is played instead.
        queue.retract(from: 14400)
        queue.push(EngineEvent(frame: 14400, .controlChange(channel: 0, controller: 123, value: 0)))
        for _ in 0..<(24000 / 128) {
            let c = RealtimeProbe.counts { block() }
            allocations += c.allocations
            locks += c.locks
        }
        #expect(unit.messages == 14400 / 24 + 1, "the events before 14400 and the one pushed after the retract")
        #expect(allocations == 0)
        #expect(locks == 0)
        #expect(engine.statistics.lateEvents == 0 && engine.statistics.droppedEvents == 0)
    }
}
