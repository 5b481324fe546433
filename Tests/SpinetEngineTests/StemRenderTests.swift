import Foundation
import Testing
import SpinetTestTraits
import SpinetEffects
import SpinetEngine
import SpinetMIDI
import SpinetTestSupport

@Suite("Engine: stems that add up to the mix")
struct StemRenderTests {
    static let blockFrames = 512

    /// Three ringing units (channels 0-2) with reverb, chorus and delay
    /// sends, each its own stem; a loud master gain drives the limiter; an EQ,
    /// a master volume change, a reverb type SysEx and a tempo change.
    static func makeEngine(threads: Int) -> (Engine, EventQueue) {
        var config = Engine.Configuration()
        config.offlineRenderThreads = threads
        config.reverb = .hall
        config.chorus = .wide
        config.delay = .eighth
        config.gainDB = 12
        config.equalizer = Equalizer.Parameters(highPassEnabled: true, highPassFrequency: 80)
        let engine = Engine(configuration: config)
        for c in 0..<3 { engine.route(channel: c, to: engine.add(RingingUnit())) }
        engine.setStems([[0], [1], [2]])
        let queue = engine.addInput(capacity: 4096)
        engine.prepare(sampleRate: 48000, maxFrames: blockFrames)
        var rng = SplitMix64(seed: 11)
        var f: Int64 = 3
        for _ in 0..<200 {
            f += Int64(rng.next() % 700) + 1
            // channel 2 plays only in the second half
            let ch = f < 60_000 ? UInt8(rng.next() % 2) : UInt8(rng.next() % 3)
            queue.push(EngineEvent(frame: f, .noteOn(channel: ch, key: UInt8(40 + rng.next() % 40), velocity: 127)))
        }
        queue.pushSysEx(frame: 40_000, [0xF0, 0x7F, 0x7F, 0x04, 0x01, 0x00, 0x60, 0xF7])
        queue.pushSysEx(frame: 50_000, [0xF0, 0x41, 0x10, 0x42, 0x12, 0x40, 0x01, 0x30, 0x02, 0x0D, 0xF7])
        return (engine, queue)
    }

    /// Renders `blocks` blocks overlapped; returns the mix and the stems, interleaved.
    static func render(blocks: Int, threads: Int) -> (mix: [Float], stems: [[Float]]) {
        let (engine, _) = makeEngine(threads: threads)
        engine.setTempo(beatsPerMinute: 100)
        let n = blockFrames
        let l = UnsafeMutablePointer<Float>.allocate(capacity: n), r = UnsafeMutablePointer<Float>.allocate(capacity: n)
        let stemBuffers = UnsafeMutablePointer<Float>.allocate(capacity: 6 * n)
        let pointers = UnsafeMutablePointer<UnsafeMutablePointer<Float>>.allocate(capacity: 6)
        for i in 0..<6 { (pointers + i).initialize(to: stemBuffers + i * n) }
        defer { l.deallocate(); r.deallocate(); stemBuffers.deallocate(); pointers.deallocate() }
        var mix: [Float] = [], stems: [[Float]] = [[], [], []]
        func take(_ m: Int) {
            for i in 0..<m {
                mix += [l[i], r[i]]
                for s in 0..<3 { stems[s] += [pointers[2 * s][i], pointers[2 * s + 1][i]] }
            }
        }
        for b in 0..<blocks {
            if b == 60 { engine.setTempo(beatsPerMinute: 140) }
            take(engine.renderOverlapped(frames: n, left: l, right: r, stems: UnsafePointer(pointers)))
        }
        take(engine.finishOverlapped(left: l, right: r, stems: UnsafePointer(pointers)))
        return (mix, stems)
    }

    /// On two threads the stems of a block run as tasks beside the next block's units.
    @Test(arguments: [1, 2])
    func stemsSumToTheMixWithTheLimiterEngaged(threads: Int) {
        let (mix, stems) = Self.render(blocks: 300, threads: threads)
        var energy = 0.0, residual = 0.0
        for i in 0..<mix.count {
            let sum = Double(stems[0][i]) + Double(stems[1][i]) + Double(stems[2][i])
            energy += Double(mix[i]) * Double(mix[i])
            residual += (sum - Double(mix[i])) * (sum - Double(mix[i]))
        }
        let db = 10 * log10(max(residual, 1e-300) / energy)
        #expect(db <= -80, "residual \(db) dB")
        #expect((mix.map { abs($0) }.max() ?? 0) > 0.85, "the limiter was meant to engage")
        // channel 2 is silent until it plays
        let firstNote = 60_000 * 2
        #expect(stems[2][0..<firstNote].allSatisfy { $0 == 0 })
        #expect(stems[2][firstNote...].contains { abs($0) > 0.01 })
    }

    @Test func stemsAreTheSameOnAnyNumberOfThreads() {
        let one = Self.render(blocks: 120, threads: 1), two = Self.render(blocks: 120, threads: 2)
        #expect(one.mix == two.mix)
        #expect(one.stems == two.stems)
    }

    @Test(.realtimeProbe) func renderingWithStemsAllocatesNothing() {
        #expect(RealtimeProbe.isActive, "the allocation probe is not interposed in this test binary")
        let (engine, _) = Self.makeEngine(threads: 1)
        let n = Self.blockFrames
        let l = UnsafeMutablePointer<Float>.allocate(capacity: n), r = UnsafeMutablePointer<Float>.allocate(capacity: n)
        let stemBuffers = UnsafeMutablePointer<Float>.allocate(capacity: 6 * n)
        let pointers = UnsafeMutablePointer<UnsafeMutablePointer<Float>>.allocate(capacity: 6)
        for i in 0..<6 { (pointers + i).initialize(to: stemBuffers + i * n) }
        defer { l.deallocate(); r.deallocate(); stemBuffers.deallocate(); pointers.deallocate() }
        for _ in 0..<2 {
            _ = engine.renderOverlapped(frames: n, left: l, right: r, stems: UnsafePointer(pointers))
            engine.render(frames: n, left: l, right: r, stems: UnsafePointer(pointers))
        }
        var allocations = 0, locks = 0
        for _ in 0..<100 {
            let counts = RealtimeProbe.count {
                _ = engine.renderOverlapped(frames: n, left: l, right: r, stems: UnsafePointer(pointers))
                engine.render(frames: n, left: l, right: r, stems: UnsafePointer(pointers))
            }
            allocations += counts.allocations
            locks += counts.locks
        }
        #expect(allocations == 0)
        #expect(locks == 0)
    }
}
