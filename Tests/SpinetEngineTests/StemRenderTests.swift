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

    static let stemCount = 4

    /// Four ringing units, each its own stem: channels 0-2 with reverb and
    /// delay sends, channel 3 with none (its stem runs no effect); a loud
    /// master gain drives the limiter; an EQ, a master volume change, a
    /// reverb type SysEx and a tempo change. `stems` false: the same engine
    /// without stems.
    static func makeEngine(threads: Int, stems: Bool = true) -> (Engine, EventQueue) {
        var config = Engine.Configuration()
        config.offlineRenderThreads = threads
        config.reverb = .hall
        config.chorus = .wide
        config.delay = .eighth
        config.gainDB = 12
        config.equalizer = Equalizer.Parameters(highPassEnabled: true, highPassFrequency: 80)
        let engine = Engine(configuration: config)
        for c in 0..<4 { engine.route(channel: c, to: engine.add(RingingUnit(sends: c < 3))) }
        // stem 2 sends to no chorus, stem 3 to nothing
        if stems { engine.setStems([[StemPart(unit: 0)], [StemPart(unit: 1)], [StemPart(unit: 2)], [StemPart(unit: 3)]],
                                   effects: [.all, .all, [.reverb, .delay], []]) }
        let queue = engine.addInput(capacity: 4096)
        engine.prepare(sampleRate: 48000, maxFrames: blockFrames)
        var rng = SplitMix64(seed: 11)
        var f: Int64 = 3
        for i in 0..<200 {
            f += Int64(rng.next() % 700) + 1
            // channel 2 plays only in the second half; channel 3 every fifth note
            let ch = i % 5 == 4 ? 3 : f < 60_000 ? UInt8(rng.next() % 2) : UInt8(rng.next() % 3)
            queue.push(EngineEvent(frame: f, .noteOn(channel: ch, key: UInt8(40 + rng.next() % 40), velocity: 127)))
        }
        queue.pushSysEx(frame: 40_000, [0xF0, 0x7F, 0x7F, 0x04, 0x01, 0x00, 0x60, 0xF7])
        queue.pushSysEx(frame: 50_000, [0xF0, 0x41, 0x10, 0x42, 0x12, 0x40, 0x01, 0x30, 0x02, 0x0D, 0xF7])
        return (engine, queue)
    }

    /// Renders `blocks` blocks overlapped; returns the mix and the stems,
    /// interleaved (no stems with `stems` false), and the engine.
    static func render(blocks: Int, threads: Int, stems withStems: Bool = true) -> (mix: [Float], stems: [[Float]], engine: Engine) {
        let (engine, _) = makeEngine(threads: threads, stems: withStems)
        engine.setTempo(beatsPerMinute: 100)
        let n = blockFrames, count = stemCount
        let l = UnsafeMutablePointer<Float>.allocate(capacity: n), r = UnsafeMutablePointer<Float>.allocate(capacity: n)
        let stemBuffers = UnsafeMutablePointer<Float>.allocate(capacity: 2 * count * n)
        let pointers = UnsafeMutablePointer<UnsafeMutablePointer<Float>>.allocate(capacity: 2 * count)
        for i in 0..<(2 * count) { (pointers + i).initialize(to: stemBuffers + i * n) }
        defer { l.deallocate(); r.deallocate(); stemBuffers.deallocate(); pointers.deallocate() }
        var mix: [Float] = [], stems = [[Float]](repeating: [], count: withStems ? count : 0)
        func take(_ m: Int) {
            for i in 0..<m {
                mix += [l[i], r[i]]
                for s in 0..<stems.count { stems[s] += [pointers[2 * s][i], pointers[2 * s + 1][i]] }
            }
        }
        let stemPointers = withStems ? UnsafePointer(pointers) : nil
        for b in 0..<blocks {
            if b == 60 { engine.setTempo(beatsPerMinute: 140) }
            take(engine.renderOverlapped(frames: n, left: l, right: r, stems: stemPointers))
        }
        take(engine.finishOverlapped(left: l, right: r, stems: stemPointers))
        return (mix, stems, engine)
    }

    /// On two threads the stems of a block run as tasks beside the next block's units.
    @Test(arguments: [1, 2])
    func stemsSumToTheMixWithTheLimiterEngaged(threads: Int) {
        let (mix, stems, _) = Self.render(blocks: 300, threads: threads)
        var energy = 0.0, residual = 0.0
        for i in 0..<mix.count {
            let sum = stems.reduce(0.0) { $0 + Double($1[i]) }
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

    /// The mix of a render with stems is the mix without: the same units,
    /// the same shared effects, the same master bus, to the bit.
    @Test(arguments: [1, 2])
    func theMixWithStemsIsTheMixWithout(threads: Int) {
        let with = Self.render(blocks: 200, threads: threads), without = Self.render(blocks: 200, threads: threads, stems: false)
        #expect(with.mix.count == without.mix.count)
        #expect(with.mix == without.mix)
        #expect(with.mix.contains { $0 != 0 })
    }

    /// A stem runs only the effects it was given, and only when its sends
    /// reach them: the stem without sends runs none, and still sounds.
    @Test func aStemWithoutSendsRunsNoEffect() {
        let (_, stems, engine) = Self.render(blocks: 200, threads: 1)
        #expect(engine.stemEffects(3) == [])
        #expect(engine.stemEffects(2) == [.reverb, .delay])
        #expect(engine.stemEffects(0) == [.reverb, .chorus, .delay])
        #expect(engine.stemEffectRuns(3) == 0)
        #expect(engine.stemEffectRuns(0) > 100)
        #expect(engine.stemEffectRuns(2) > 0)
        #expect(stems[3].contains { abs($0) > 0.01 })
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
        let stemBuffers = UnsafeMutablePointer<Float>.allocate(capacity: 2 * Self.stemCount * n)
        let pointers = UnsafeMutablePointer<UnsafeMutablePointer<Float>>.allocate(capacity: 2 * Self.stemCount)
        for i in 0..<(2 * Self.stemCount) { (pointers + i).initialize(to: stemBuffers + i * n) }
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
