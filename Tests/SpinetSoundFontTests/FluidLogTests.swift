import Foundation
import Testing
import SpinetEngine
import SpinetMIDI
import SpinetSoundFont
import SpinetTestSupport

/// FluidSynth's log function is process-wide; its messages are kept per unit.
@Suite("FluidSynth messages per unit")
struct FluidLogTests {
    /// Two units render at once on two threads (two offline workers, or two
    /// plugin instances in one host), and FluidSynth warns on both render
    /// paths: each unit keeps its own warning, and neither thread allocates
    /// or locks for it.
    @Test func twoUnitsOnTwoThreadsKeepTheirOwnMessagesWithoutAllocating() throws {
        #expect(RealtimeProbe.isActive, "the allocation probe is not interposed in this test binary")
        final class Player: @unchecked Sendable {
            let unit: SoundFontUnit
            let engine = Engine()
            let queue: EventQueue
            let channel: UInt8
            var allocations = -1, locks = -1
            init(channel: UInt8) throws {
                self.channel = channel
                unit = try SoundFontUnit(fonts: [bundledFont], sampleRate: 48000)
                engine.routeAll(to: engine.add(unit))
                queue = engine.addInput()
                engine.prepare(sampleRate: 48000, maxFrames: 256)
            }
            func run() {
                let left = UnsafeMutablePointer<Float>.allocate(capacity: 256)
                let right = UnsafeMutablePointer<Float>.allocate(capacity: 256)
                defer { left.deallocate(); right.deallocate() }
                engine.render(frames: 256, left: left, right: right)    // warm-up
                // Bank 50 has no presets in the bundled font: FluidSynth
                // substitutes one and warns, on this thread, for every change.
                var allocations = 0, locks = 0
                for block in 1...40 {
                    let frame = Int64(block * 256)
                    queue.push(EngineEvent(frame: frame, .controlChange(channel: channel, controller: 0, value: 50)))
                    queue.push(EngineEvent(frame: frame + 1, .programChange(channel: channel, program: UInt8(block))))
                    queue.push(EngineEvent(frame: frame + 2, .noteOn(channel: channel, key: 60, velocity: 90)))
                    let counts = RealtimeProbe.count { engine.render(frames: 256, left: left, right: right) }
                    allocations += counts.allocations
                    locks += counts.locks
                }
                self.allocations = allocations
                self.locks = locks
            }
        }
        _ = SoundFontUnit.drainRenderThreadMessages()
        let a = try Player(channel: 3), b = try Player(channel: 6)
        let done = DispatchGroup()
        for player in [a, b] {
            done.enter()
            let thread = Thread { player.run(); done.leave() }
            thread.start()
        }
        done.wait()
        #expect(a.allocations == 0 && a.locks == 0, "thread A: \(a.allocations) allocations, \(a.locks) locks")
        #expect(b.allocations == 0 && b.locks == 0, "thread B: \(b.allocations) allocations, \(b.locks) locks")
        // FluidSynth numbers channels from 0 in its messages.
        let fromA = a.unit.drainRenderMessages(), fromB = b.unit.drainRenderMessages()
        #expect(fromA.contains { $0.contains("channel 3") }, "\(fromA.prefix(3))")
        #expect(fromB.contains { $0.contains("channel 6") }, "\(fromB.prefix(3))")
        #expect(!fromA.contains { $0.contains("channel 6") } && !fromB.contains { $0.contains("channel 3") })
    }
}
