import Foundation
import SpinetEngine
import SpinetMIDI
import SpinetTestSupport
import Testing
import SpinetHost
import SpinetRig
@testable import SpinetALSA
import SpinetTestTraits

final class ThreadLog: Sendable {
    let threads = Locked<[UInt]>([])
}

/// A unit that writes a constant per held note and logs what it receives.
final class LoggingUnit: InstrumentUnit, @unchecked Sendable {
    let name: String
    let level: Float
    var received: [MIDIMessage] = []
    var held = Set<UInt8>()
    var logging = true
    /// Where this unit notes the thread it is released on, when a test asks
    /// (suites run in parallel: a log per test, not one for every unit).
    let deinitLog: ThreadLog?

    init(name: String, level: Float, deinitLog: ThreadLog? = nil) {
        self.name = name
        self.level = level
        self.deinitLog = deinitLog
        received.reserveCapacity(4096)
        held.reserveCapacity(128)
    }
    deinit { deinitLog?.threads.withLock { $0.append(UInt(pthread_self())) } }

    func prepare(sampleRate: Double, maxFrames: Int, channels: Int) {}
    func receive(_ message: MIDIMessage) {
        if logging { received.append(message) }
        switch message {
        case .noteOn(_, let k, let v) where v > 0: held.insert(k)
        case .noteOn(_, let k, _), .noteOff(_, let k, _): held.remove(k)
        default: break
        }
    }
    func receiveSysEx(_ message: UnsafeBufferPointer<UInt8>) {}
    func render(left: UnsafeMutablePointer<Float>, right: UnsafeMutablePointer<Float>, frames: Int) {
        let v = level * Float(held.count)
        for i in 0..<frames { left[i] = v; right[i] = v }
    }
    /// Sends carry the level too (reverb x2, chorus x3, delay x4), to follow them through the slot.
    func render(_ output: UnitOutput, frames: Int) {
        let v = level * Float(held.count)
        for i in 0..<frames {
            output.left[i] = v; output.right[i] = v
            output.reverbLeft[i] = 2 * v; output.reverbRight[i] = 2 * v
            output.chorusLeft[i] = 3 * v; output.chorusRight[i] = 3 * v
            output.delayLeft[i] = 4 * v; output.delayRight[i] = 4 * v
        }
    }
    var activeVoices: Int { held.count }
}

@Suite("SwappableInstrument")
final class SwappableInstrumentTests {
    let frames = 64
    var left = [Float](repeating: 0, count: 64)
    var right = [Float](repeating: 0, count: 64)

    private func render(_ slot: SwappableInstrument, times: Int = 1) {
        for _ in 0..<times { slot.render(left: &left, right: &right, frames: frames) }
    }

    @Test func newInstrumentGetsTheChannelStateAndNewNotes() {
        let old = LoggingUnit(name: "old", level: 1)
        let slot = SwappableInstrument(old, channels: 16)
        slot.prepare(sampleRate: 1000, maxFrames: 64, channels: 16)
        slot.receive(.controlChange(channel: 2, controller: 0, value: 1))      // bank 1
        slot.receive(.programChange(channel: 2, program: 19))
        slot.receive(.controlChange(channel: 2, controller: 7, value: 90))
        slot.receive(.controlChange(channel: 2, controller: 101, value: 0))    // RPN select: not replayed
        slot.receive(.pitchBend(channel: 2, value: 9000))
        slot.receive(.noteOn(channel: 2, key: 60, velocity: 100))
        render(slot)
        #expect(left[0] == 1)

        let new = LoggingUnit(name: "new", level: 10)
        #expect(slot.offer(new))
        #expect(!slot.offer(LoggingUnit(name: "third", level: 0)), "one swap at a time")
        render(slot)
        #expect(new.received == [.controlChange(channel: 2, controller: 0, value: 1),
                                      .programChange(channel: 2, program: 19),
                                      .controlChange(channel: 2, controller: 7, value: 90),
                                      .pitchBend(channel: 2, value: 9000)])
        // The old note rings on (1) beside the new instrument (silent so far).
        #expect(left[0] == 1)
        slot.receive(.noteOn(channel: 2, key: 64, velocity: 100))
        render(slot)
        #expect(left[0] == 11, "old note (1) + new note (10)")
        #expect(!old.held.contains(64), "new notes go to the new instrument only")
        // The note-off reaches the old instrument; its sound ends.
        slot.receive(.noteOff(channel: 2, key: 60, velocity: 0))
        render(slot)
        #expect(left[0] == 10)
        #expect(slot.activeVoices == 1)
    }

    @Test func effectSendsOfBothInstrumentsPassThrough() {
        let old = LoggingUnit(name: "old", level: 1)
        let slot = SwappableInstrument(old, channels: 16)
        slot.prepare(sampleRate: 1000, maxFrames: 64, channels: 16)
        let buffers = UnsafeMutablePointer<Float>.allocate(capacity: 8 * 64)
        defer { buffers.deallocate() }
        let out = UnitOutput(planar: buffers, stride: 64)
        slot.receive(.noteOn(channel: 0, key: 60, velocity: 100))
        #expect(slot.offer(LoggingUnit(name: "new", level: 10)))
        slot.render(out, frames: 64)
        slot.receive(.noteOn(channel: 0, key: 62, velocity: 100))
        slot.render(out, frames: 64)
        #expect([out.left[5], out.reverbRight[5], out.chorusLeft[5], out.delayRight[5]] == [11, 22, 33, 44])
    }

    @Test func oldInstrumentIsReleasedOnTheControlThreadNotTheRenderThread() {
        let deinitLog = ThreadLog()
        var old: LoggingUnit? = LoggingUnit(name: "old", level: 1, deinitLog: deinitLog)
        let slot = SwappableInstrument(old!, channels: 16)
        slot.prepare(sampleRate: 1000, maxFrames: 64, channels: 16)
        weak let weakOld = old
        old = nil
        #expect(slot.offer(LoggingUnit(name: "new", level: 1)))
        // Render on another thread until the old unit (silent) has rung out its tail.
        let renderThread = Thread {
            var l = [Float](repeating: 0, count: 64), r = [Float](repeating: 0, count: 64)
            for _ in 0..<40 { slot.render(left: &l, right: &r, frames: 64) }   // 2.5 s at 1 kHz
        }
        renderThread.start()
        while !renderThread.isFinished { usleep(1000) }
        #expect(weakOld != nil, "the render thread must not drop the last reference")
        #expect(slot.isSwapComplete)
        #expect(weakOld == nil)
        #expect(deinitLog.threads.withLock { $0 } == [UInt(pthread_self())])
    }

    @Test func ringOutIsCappedWithAFade() {
        let old = LoggingUnit(name: "old", level: 1)
        let slot = SwappableInstrument(old, channels: 16, ringOutSeconds: 0.2)
        slot.prepare(sampleRate: 1000, maxFrames: 64, channels: 16)
        slot.receive(.noteOn(channel: 0, key: 60, velocity: 100))   // never released
        #expect(slot.offer(LoggingUnit(name: "new", level: 1)))
        var last: [Float] = []
        for _ in 0..<4 { render(slot); last += left }
        #expect(last[0] == 1)
        #expect(abs(last[199] - 0) <= 0.03, "faded out by the end of the ring-out time")
        #expect(zip(last.dropFirst(150), last.dropFirst(151)).allSatisfy { $0 >= $1 }, "a ramp, not a step")
        #expect(last[255] == 0)
        #expect(slot.isSwapComplete)
    }
}

/// The render-path pieces of SpinetALSA allocate, free, lock and call the
/// kernel for nothing (the render thread's rule).
@Suite("ALSA render path: real-time safety")
struct RealtimeSafetyTests {
    @Test(.realtimeProbe, .enabled(if: RealtimeProbe.isActive, "the allocation probe is not active in this process"))
    func renderPathPiecesAreRealtimeSafe() {
        let ring = RecordRing(capacity: 4096)
        let timeline = AudioTimeline()
        var converter = SampleConverter(format: .int16, channels: 2)
        let l = UnsafeMutablePointer<Float>.allocate(capacity: 256)
        let r = UnsafeMutablePointer<Float>.allocate(capacity: 256)
        let raw = UnsafeMutableRawPointer.allocate(byteCount: 256 * 4, alignment: 16)
        let drainL = UnsafeMutablePointer<Float>.allocate(capacity: 4096)
        let drainR = UnsafeMutablePointer<Float>.allocate(capacity: 4096)
        defer { l.deallocate(); r.deallocate(); raw.deallocate(); drainL.deallocate(); drainR.deallocate() }
        l.initialize(repeating: 0.25, count: 256)
        r.initialize(repeating: -0.25, count: 256)
        let old = LoggingUnit(name: "old", level: 0.1)
        old.logging = false
        let sends = UnsafeMutablePointer<Float>.allocate(capacity: 8 * 256)
        defer { sends.deallocate() }
        let unitOutput = UnitOutput(planar: sends, stride: 256)
        let slot = SwappableInstrument(old, channels: 16, ringOutSeconds: 0.01)
        slot.prepare(sampleRate: 48000, maxFrames: 256, channels: 16)
        let new = LoggingUnit(name: "new", level: 0.1)
        new.logging = false

        func period(_ i: Int) {
            slot.receive(.noteOn(channel: 0, key: UInt8(i % 100), velocity: 90))
            slot.render(unitOutput, frames: 256)
            slot.render(left: l, right: r, frames: 256)
            slot.receive(.noteOff(channel: 0, key: UInt8(i % 100), velocity: 0))
            timeline.publish(TimelineAnchor(frame: Int64(i * 256), nanoseconds: Int64(i) * 5_333_333))
            ring.write(left: l, right: r, frames: 256)
            converter.convert(left: l, right: r, frames: 256, into: raw)
        }
        period(0)   // first run: metadata and witness tables
        _ = ring.read(left: drainL, right: drainR, maxFrames: 4096)
        #expect(slot.offer(new))
        let counts = RealtimeProbe.counts {
            for i in 1...8 { period(i) }   // takes the new unit, rings the old out, retires it
        }
        #expect(counts.allocations == 0)
        #expect(counts.frees == 0)
        #expect(counts.locks == 0)
        #expect(slot.isSwapComplete)
        _ = ring.read(left: drainL, right: drainR, maxFrames: 4096)
        if let report = RealtimeProbe.syscallReport({ for i in 9...12 { period(i) } }) {
            #expect(report.count == 0, "\(report.description)")
        }
    }
}
