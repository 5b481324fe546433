import Foundation
import Testing
import SpinetEffects
@testable import SpinetEngine
import SpinetMIDI
import SpinetTestSupport
import SpinetTestTraits

/// A ringing unit that sends to all three effects, each at its own level,
/// and falls silent (exact zeros) `ringFrames` after its last note-on.
final class AllSendsUnit: InstrumentUnit {
    let name = "all-sends"
    static let ringFrames = 2000
    private let voice = RingingUnit()
    private let levels: (reverb: Float, chorus: Float, delay: Float)
    private var sinceNote = Int.max / 2
    init(reverb: Float, chorus: Float, delay: Float) { levels = (reverb, chorus, delay) }
    func prepare(sampleRate: Double, maxFrames: Int, channels: Int) { voice.prepare(sampleRate: sampleRate, maxFrames: maxFrames, channels: channels) }
    func receive(_ message: MIDIMessage) {
        if case .noteOn = message { sinceNote = 0 }
        voice.receive(message)
    }
    func receiveSysEx(_ message: UnsafeBufferPointer<UInt8>) {}
    func render(left: UnsafeMutablePointer<Float>, right: UnsafeMutablePointer<Float>, frames: Int) {
        voice.render(left: left, right: right, frames: frames)
        for i in 0..<frames where sinceNote + i >= Self.ringFrames { left[i] = 0; right[i] = 0 }
        sinceNote += frames
    }
    func render(_ output: UnitOutput, frames: Int) {
        render(left: output.left, right: output.right, frames: frames)
        for i in 0..<frames {
            output.reverbLeft[i] = levels.reverb * output.left[i]
            output.reverbRight[i] = levels.reverb * output.right[i]
            output.chorusLeft[i] = levels.chorus * output.left[i]
            output.chorusRight[i] = levels.chorus * output.right[i]
            output.delayLeft[i] = levels.delay * output.left[i]
            output.delayRight[i] = levels.delay * output.right[i]
        }
    }
    var activeVoices: Int { voice.activeVoices }
}

/// The send effects of a block as tasks of their own on the offline
/// workers (each into its own return, the last one to end adding them up and
/// running the master bus): the same bits as the whole finishing step on one
/// thread, and nothing allocated or locked on the way.
@Suite("Engine: send effects in parallel")
struct ParallelEffectsTests {
    static let blockFrames = 512
    static let blocks = 260
    /// A low rate, so that the effects' tails (seconds) end within a short render.
    static let sampleRate = 8000.0

    /// Four units on channels 0-3 sending to reverb, chorus and delay (the
    /// fourth to none); two bursts of notes with a silence between them long
    /// enough for the effects to go idle and start again; a reverb and a
    /// chorus type SysEx, a master volume change.
    static func makeEngine(threads: Int) -> Engine {
        var config = Engine.Configuration()
        config.offlineRenderThreads = threads
        config.reverb = .hall
        config.chorus = .wide
        config.delay = .eighth
        let units = [AllSendsUnit(reverb: 0.5, chorus: 0.4, delay: 0.3), AllSendsUnit(reverb: 0.2, chorus: 0, delay: 0.6),
                     AllSendsUnit(reverb: 0, chorus: 0.7, delay: 0), AllSendsUnit(reverb: 0, chorus: 0, delay: 0)]
        let (engine, queue) = EngineHarness.make(units, configuration: config, sampleRate: sampleRate, maxFrames: blockFrames,
                                                 queueCapacity: 4096) { engine, units in
            for (channel, unit) in units.enumerated() { engine.route(channel: channel, to: unit) }
        }
        var rng = SplitMix64(seed: 11)
        var f: Int64 = 5
        for _ in 0..<2 {
            for _ in 0..<20 {
                f += Int64(rng.next() % 900) + 1
                queue.push(EngineEvent(frame: f, .noteOn(channel: UInt8(rng.next() % 4), key: UInt8(40 + rng.next() % 40), velocity: 110)))
            }
            f += 60_000
        }
        queue.pushSysEx(frame: 3_000, [0xF0, 0x41, 0x10, 0x42, 0x12, 0x40, 0x01, 0x30, 0x02, 0x0D, 0xF7])   // GS reverb: hall 1
        queue.pushSysEx(frame: 6_000, [0xF0, 0x41, 0x10, 0x42, 0x12, 0x40, 0x01, 0x38, 0x03, 0x04, 0xF7])   // GS chorus 4
        queue.pushSysEx(frame: 72_000, [0xF0, 0x7F, 0x7F, 0x04, 0x01, 0x00, 0x50, 0xF7])
        return engine
    }

    /// Return levels moved (ramping) before block `block` is finished.
    static func returnLevels(before block: Int, _ engine: Engine) {
        if block == 10 { engine.sendEffects!.setReturnLevels(reverb: 0.5, chorus: 0.8, delay: 0.25) }
        if block == 140 { engine.sendEffects!.setReturnLevels(reverb: 1, chorus: 0, delay: 1) }
    }

    /// `render` on one thread, block after block: the reference.
    static func sequential() -> [Float] {
        let engine = makeEngine(threads: 1)
        let n = blockFrames
        var out = [Float](repeating: 0, count: 2 * n * blocks)
        let l = UnsafeMutablePointer<Float>.allocate(capacity: n), r = UnsafeMutablePointer<Float>.allocate(capacity: n)
        defer { l.deallocate(); r.deallocate() }
        for b in 0..<blocks {
            returnLevels(before: b, engine)
            engine.render(frames: n, left: l, right: r)
            for i in 0..<n { out[2 * (b * n + i)] = l[i]; out[2 * (b * n + i) + 1] = r[i] }
        }
        return out
    }

    /// `renderOverlapped` on `threads` threads (a call finishes the block before).
    static func overlapped(threads: Int) -> [Float] {
        let engine = makeEngine(threads: threads)
        #expect(engine.hasWorkers == (threads > 1))
        let n = blockFrames
        var out = [Float](repeating: 0, count: 2 * n * blocks)
        let l = UnsafeMutablePointer<Float>.allocate(capacity: n), r = UnsafeMutablePointer<Float>.allocate(capacity: n)
        defer { l.deallocate(); r.deallocate() }
        for b in 0...blocks {
            if b > 0 { returnLevels(before: b - 1, engine) }
            let produced = b < blocks ? engine.renderOverlapped(frames: n, left: l, right: r) : engine.finishOverlapped(left: l, right: r)
            #expect(produced == (b == 0 ? 0 : n))
            if b > 0 { for i in 0..<n { out[2 * ((b - 1) * n + i)] = l[i]; out[2 * ((b - 1) * n + i) + 1] = r[i] } }
        }
        return out
    }

    @Test(arguments: [1, 2, 3, 4])
    func theEffectsOnSeveralThreadsGiveTheSameBits(threads: Int) {
        let reference = Self.sequential()
        #expect(reference.contains { abs($0) > 0.05 })
        // the effects went idle (silence) and started again
        let n = 2 * Self.blockFrames
        let silent = (0..<Self.blocks).filter { b in (0..<n).allSatisfy { reference[b * n + $0] == 0 } }
        let restarted = silent.contains { b in ((b + 1) * n..<min((b + 20) * n, reference.count)).contains { abs(reference[$0]) > 0.01 } }
        #expect(silent.count > 5 && restarted, "silent blocks: \(silent)")
        let out = Self.overlapped(threads: threads)
        let firstDifference = reference.indices.first { reference[$0].bitPattern != out[$0].bitPattern }
        #expect(firstDifference == nil, "first difference at sample \(firstDifference ?? -1)")
    }

    /// With workers, the call's first round holds the finishing step as one
    /// task per effect and one for the dry mix, and they all ran.
    @Test func aBlocksEffectsAreTasksOfTheirOwn() {
        let engine = Self.makeEngine(threads: 2)
        let n = Self.blockFrames
        let l = UnsafeMutablePointer<Float>.allocate(capacity: n), r = UnsafeMutablePointer<Float>.allocate(capacity: n)
        defer { l.deallocate(); r.deallocate() }
        _ = engine.renderOverlapped(frames: n, left: l, right: r)
        #expect(engine.schedulePending(left: l, right: r, stems: nil) == n)
        engine.splitPendingFinish()
        #expect(engine.overlap.finishParts == SendEffects.effectCount + 1)
        #expect(!engine.overlap.postPending)
        engine.runFinishParts()
        #expect(engine.overlap.partsLeft.load(ordering: .relaxed) == 0)
        #expect(engine.overlap.finishParts == 0)
    }

    /// A worker runs any of the parts: each, run on this thread as a worker
    /// runs it, allocates nothing and takes no lock; nor does the caller of
    /// `renderOverlapped` with workers.
    @Test(.realtimeProbe) func theEffectTasksAllocateNothing() {
        #expect(RealtimeProbe.isActive, "the allocation probe is not interposed in this test binary")
        let engine = Self.makeEngine(threads: 2)
        let n = Self.blockFrames
        let l = UnsafeMutablePointer<Float>.allocate(capacity: n), r = UnsafeMutablePointer<Float>.allocate(capacity: n)
        defer { l.deallocate(); r.deallocate() }
        for _ in 0..<4 { _ = engine.renderOverlapped(frames: n, left: l, right: r) }
        var allocations = 0, locks = 0, parts = 0
        for _ in 0..<60 {
            let call = RealtimeProbe.count { _ = engine.renderOverlapped(frames: n, left: l, right: r) }
            // the block just rendered, finished part by part on this thread
            #expect(engine.schedulePending(left: l, right: r, stems: nil) == n)
            let split = RealtimeProbe.count {
                engine.splitPendingFinish()
                var p = 0
                while p < engine.overlap.finishParts { engine.runFinishPart(p); p += 1 }
                return p
            }
            engine.overlap.finishParts = 0
            parts += split.result
            allocations += call.allocations + split.allocations
            locks += call.locks + split.locks
        }
        #expect(parts == 60 * (SendEffects.effectCount + 1))
        #expect(allocations == 0)
        #expect(locks == 0)
    }
}
