import Foundation
import Testing
import SpinetEffects
import SpinetEngine
import SpinetMIDI
import SpinetTestSupport
import SpinetTestTraits

/// A unit with memory and effect sends: each note-on starts a decaying sine
/// at the key's frequency, sent to the reverb and the delay. Its output
/// depends on everything it rendered before, so a block rendered twice, out
/// of order or into the wrong buffers shows in the output.
final class RingingUnit: InstrumentUnit {
    let name = "ringing"
    /// Sends to the reverb and delay (false: no sends at all).
    let sends: Bool
    init(sends: Bool = true) { self.sends = sends }
    private var phase: Double = 0
    private var increment: Double = 0
    private var amplitude: Float = 0
    private var sampleRate: Double = 48000
    func prepare(sampleRate: Double, maxFrames: Int, channels: Int) { self.sampleRate = sampleRate }
    func receive(_ message: MIDIMessage) {
        if case .noteOn(_, let key, let velocity) = message, velocity > 0 {
            increment = 440 * pow(2, (Double(key) - 69) / 12) / sampleRate
            amplitude = Float(velocity) / 127 * 0.3
        }
    }
    func receiveSysEx(_ message: UnsafeBufferPointer<UInt8>) {}
    func render(left: UnsafeMutablePointer<Float>, right: UnsafeMutablePointer<Float>, frames: Int) {
        for i in 0..<frames {
            let v = amplitude * Float(sin(2 * Double.pi * phase))
            phase += increment
            if phase >= 1 { phase -= 1 }
            amplitude *= 0.9999
            left[i] = v
            right[i] = -v
        }
    }
    func render(_ output: UnitOutput, frames: Int) {
        render(left: output.left, right: output.right, frames: frames)
        guard sends else {
            output.silenceSends(frames: frames)
            return
        }
        for i in 0..<frames {
            output.reverbLeft[i] = 0.5 * output.left[i]
            output.reverbRight[i] = 0.5 * output.right[i]
            output.chorusLeft[i] = 0
            output.chorusRight[i] = 0
            output.delayLeft[i] = 0.3 * output.left[i]
            output.delayRight[i] = 0.3 * output.right[i]
        }
    }
    var activeVoices: Int { amplitude > 1e-4 ? 1 : 0 }
}

@Suite("Engine: overlapped offline rendering")
struct OverlappedRenderTests {
    static let blockFrames = 512

    /// An engine with three ringing units on channels 0-2, reverb and delay,
    /// and a schedule of notes, a master volume change and a tempo change.
    static func makeEngine(threads: Int) -> (Engine, EventQueue) {
        var config = Engine.Configuration()
        config.offlineRenderThreads = threads
        config.reverb = .hall
        config.delay = .eighth
        let units = (0..<3).map { _ in RingingUnit() }
        let (engine, queue) = EngineHarness.make(units, configuration: config, maxFrames: blockFrames, queueCapacity: 4096) { engine, units in
            for (channel, unit) in units.enumerated() { engine.route(channel: channel, to: unit) }
        }
        var rng = SplitMix64(seed: 7)
        var f: Int64 = 3
        for _ in 0..<300 {
            f += Int64(rng.next() % 700) + 1
            queue.push(EngineEvent(frame: f, .noteOn(channel: UInt8(rng.next() % 3), key: UInt8(40 + rng.next() % 40), velocity: 100)))
        }
        queue.pushSysEx(frame: 40_000, [0xF0, 0x7F, 0x7F, 0x04, 0x01, 0x00, 0x50, 0xF7])
        return (engine, queue)
    }

    /// `render`, block after block: the reference.
    static func sequential(frames: Int) -> [Float] {
        let (engine, _) = makeEngine(threads: 1)
        engine.setTempo(beatsPerMinute: 90)
        var out = [Float](repeating: 0, count: 2 * frames)
        let l = UnsafeMutablePointer<Float>.allocate(capacity: blockFrames)
        let r = UnsafeMutablePointer<Float>.allocate(capacity: blockFrames)
        defer { l.deallocate(); r.deallocate() }
        var done = 0
        while done < frames {
            if done == 50 * blockFrames { engine.setTempo(beatsPerMinute: 140) }
            engine.render(frames: blockFrames, left: l, right: r)
            for i in 0..<blockFrames { out[2 * (done + i)] = l[i]; out[2 * (done + i) + 1] = r[i] }
            done += blockFrames
        }
        return out
    }

    /// `renderOverlapped` on `threads` threads, then `finishOverlapped`.
    static func overlapped(frames: Int, threads: Int) -> [Float] {
        let (engine, _) = makeEngine(threads: threads)
        engine.setTempo(beatsPerMinute: 90)
        var out = [Float](repeating: 0, count: 2 * frames)
        let l = UnsafeMutablePointer<Float>.allocate(capacity: blockFrames)
        let r = UnsafeMutablePointer<Float>.allocate(capacity: blockFrames)
        defer { l.deallocate(); r.deallocate() }
        var synthesized = 0, produced = 0
        func take(_ n: Int) {
            for i in 0..<n { out[2 * (produced + i)] = l[i]; out[2 * (produced + i) + 1] = r[i] }
            produced += n
        }
        while synthesized < frames {
            if synthesized == 50 * blockFrames { engine.setTempo(beatsPerMinute: 140) }
            let n = engine.renderOverlapped(frames: blockFrames, left: l, right: r)
            #expect(n == (synthesized == 0 ? 0 : blockFrames))
            take(n)
            synthesized += blockFrames
        }
        take(engine.finishOverlapped(left: l, right: r))
        #expect(engine.finishOverlapped(left: l, right: r) == 0)
        #expect(produced == frames)
        return out
    }

    /// The same samples, bit for bit, as `render`, on one thread or several.
    @Test(arguments: [1, 2, 3, 4])
    func overlappedOutputEqualsRender(threads: Int) {
        let frames = 200 * Self.blockFrames
        let reference = Self.sequential(frames: frames)
        let out = Self.overlapped(frames: frames, threads: threads)
        #expect(reference.contains { abs($0) > 0.05 })           // it did sound
        let firstDifference = reference.indices.first { reference[$0].bitPattern != out[$0].bitPattern }
        #expect(firstDifference == nil, "first difference at sample \(firstDifference ?? -1)")
    }

    /// Final class so the side task can keep its state across calls.
    final class Taker {
        var out: [Float]
        var produced = 0
        var runs = 0
        var pending: (l: UnsafeMutablePointer<Float>, r: UnsafeMutablePointer<Float>, n: Int)?
        init(frames: Int) { out = [Float](repeating: 0, count: 2 * frames) }
        func take() {
            runs += 1
            guard let p = pending else { return }
            for i in 0..<p.n { out[2 * (produced + i)] = p.l[i]; out[2 * (produced + i) + 1] = p.r[i] }
            produced += p.n
            pending = nil
        }
    }

    /// The output taken by a side task, one block behind, from two
    /// alternating buffers (as the offline renderer does), on any number of
    /// threads: the same samples as `render`, and the task ran once a call.
    @Test(arguments: [1, 2, 3])
    func aSideTaskTakesEachBlockOnce(threads: Int) {
        let frames = 120 * Self.blockFrames
        let reference = Self.sequential(frames: 100 * Self.blockFrames)
        let (engine, _) = Self.makeEngine(threads: threads)
        engine.setTempo(beatsPerMinute: 90)
        let buffers = UnsafeMutablePointer<Float>.allocate(capacity: 4 * Self.blockFrames)
        defer { buffers.deallocate() }
        let taker = Taker(frames: frames)
        let side = { taker.take() }
        var calls = 0
        for k in 0..<(frames / Self.blockFrames) {
            if k == 50 { engine.setTempo(beatsPerMinute: 140) }
            let l = buffers + 2 * (k % 2) * Self.blockFrames, r = l + Self.blockFrames
            let n = engine.renderOverlapped(frames: Self.blockFrames, left: l, right: r, alongside: side)
            calls += 1
            #expect(taker.pending == nil)
            taker.pending = (l, r, n)
        }
        #expect(taker.runs == calls)
        #expect(taker.produced == frames - 2 * Self.blockFrames)
        let firstDifference = reference.indices.first { reference[$0].bitPattern != taker.out[$0].bitPattern }
        #expect(firstDifference == nil, "first difference at sample \(firstDifference ?? -1)")
    }

    /// After warming up, one overlapped block allocates nothing and takes no lock (one thread: the live rules).
    @Test(.realtimeProbe) func overlappedRenderingAllocatesNothing() {
        #expect(RealtimeProbe.isActive, "the allocation probe is not interposed in this test binary")
        let (engine, _) = Self.makeEngine(threads: 1)
        let l = UnsafeMutablePointer<Float>.allocate(capacity: Self.blockFrames)
        let r = UnsafeMutablePointer<Float>.allocate(capacity: Self.blockFrames)
        defer { l.deallocate(); r.deallocate() }
        _ = engine.renderOverlapped(frames: Self.blockFrames, left: l, right: r)
        _ = engine.renderOverlapped(frames: Self.blockFrames, left: l, right: r)
        var allocations = 0, locks = 0
        for _ in 0..<100 {
            let counts = RealtimeProbe.count { _ = engine.renderOverlapped(frames: Self.blockFrames, left: l, right: r) }
            allocations += counts.allocations
            locks += counts.locks
        }
        #expect(allocations == 0)
        #expect(locks == 0)
    }
}
