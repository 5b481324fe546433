import Testing
import SpinetEffects
@testable import SpinetEngine

/// How a stem's send effect follows the shared one's frames (`SendSlot.follow`):
/// which runs it processes and which it rests, decided per frame, whether
/// the block takes the one-run shortcut or the pass over its frames.
@Suite("Engine: a stem's effect follows the shared one's frames")
struct SendSlotFollowTests {
    /// Records its calls: "p" a processed run, "r" a rest, with their lengths.
    /// Adds 1 to the outputs where it processes.
    struct Recorder: SendEffect {
        var calls: [String] = []
        var canRest = true
        var tailSeconds: Double { 0 }
        var isBypassed = false
        mutating func process(inputLeft: UnsafePointer<Float>, inputRight: UnsafePointer<Float>,
                              outputLeft: UnsafeMutablePointer<Float>, outputRight: UnsafeMutablePointer<Float>, frames: Int) {
            calls.append("p\(frames)")
            for i in 0..<frames { outputLeft[i] += 1; outputRight[i] += 1 }
        }
        mutating func reset() {}
        mutating func rest(frames: Int) -> Bool {
            calls.append("r\(frames)")
            return canRest
        }
    }

    /// One block through a slot with a tail of `tail` frames, idle for
    /// `idle` frames before it; `sounding` the frames with input, `active`
    /// the shared effect's frames (nil: all). Returns the calls, what
    /// `follow` returned, the idle count after, and the left output.
    func follow(frames: Int, tail: Int, idle: Int, sounding: [Int], active: [Int]? = nil, canRest: Bool = true)
        -> (calls: [String], ran: Bool, idle: Int, output: [Float]) {
        var slot = SendSlot(Recorder(canRest: canRest), tailFrames: tail)
        slot.idle = idle
        var l = [Float](repeating: 0, count: frames), r = l, outL = l, outR = l
        for i in sounding { if i % 2 == 0 { l[i] = 0.5 } else { r[i] = -0.25 } }
        let flags = (0..<frames).map { active?.contains($0) ?? true }
        let ran = flags.withUnsafeBufferPointer { a in
            slot.follow(a.baseAddress!, &l, &r, &outL, &outR, frames: frames)
        }
        return (slot.effect.calls, ran, slot.idle, outL)
    }

    @Test func soundingInputIsOneProcessedRun() {
        let f = follow(frames: 64, tail: 1000, idle: 5, sounding: [3, 40])
        #expect(f.calls == ["p64"] && f.ran && f.idle == 23)
        #expect(f.output.allSatisfy { $0 == 1 })
        // the last frame sounding (on the right only): idle 0
        #expect(follow(frames: 64, tail: 1000, idle: 5, sounding: [63]).idle == 0)
        // silent, the tail still ringing past the block's end
        let quiet = follow(frames: 64, tail: 1000, idle: 900, sounding: [])
        #expect(quiet.calls == ["p64"] && quiet.idle == 964)
    }

    @Test func theTailEndingInTheBlockSplitsIt() {
        // silent since 990 frames, a tail of 1000: frames 0-9 still process
        let f = follow(frames: 64, tail: 1000, idle: 990, sounding: [])
        #expect(f.calls == ["p10", "r54"] && f.ran && f.idle == 1054)
        #expect(f.output[0..<10].allSatisfy { $0 == 1 } && f.output[10...].allSatisfy { $0 == 0 })
        // exactly at the edge: the block's last frame is the tail's last
        #expect(follow(frames: 64, tail: 1000, idle: 936, sounding: []).calls == ["p64"])
        #expect(follow(frames: 64, tail: 1000, idle: 937, sounding: []).calls == ["p63", "r1"])
    }

    @Test func aSilentSlotRestsUntilItsInputSounds() {
        let f = follow(frames: 64, tail: 100, idle: Int.max, sounding: [])
        #expect(f.calls == ["r64"] && !f.ran && f.idle == Int.max)
        #expect(follow(frames: 64, tail: 100, idle: 500, sounding: []).idle == 564)
        // an effect that cannot rest processes instead
        let busy = follow(frames: 64, tail: 100, idle: Int.max, sounding: [], canRest: false)
        #expect(busy.calls == ["r64", "p64"] && busy.ran)
        // input arriving wakes it at that frame
        let woken = follow(frames: 64, tail: 100, idle: Int.max, sounding: [20])
        #expect(woken.calls == ["r20", "p44"] && woken.idle == 43)
    }

    @Test func onlyTheSharedEffectsFramesRun() {
        let f = follow(frames: 32, tail: 1000, idle: 0, sounding: [1], active: Array(8..<32))
        #expect(f.calls == ["p24"] && f.output[0..<8].allSatisfy { $0 == 0 })
        let g = follow(frames: 32, tail: 1000, idle: 0, sounding: [1], active: Array(0..<8) + Array(16..<32))
        #expect(g.calls == ["p8", "p16"])
        #expect(follow(frames: 32, tail: 1000, idle: 0, sounding: [1], active: []).calls == [])
    }

    @Test func flagsAndSoundingFramesAreFoundAtEveryPosition() {
        for frames in [1, 7, 8, 9, 17, 64] {
            var flags = [Bool](repeating: true, count: frames)
            #expect(SendSlot<Recorder>.allSet(flags, frames))
            for i in 0..<frames {
                flags[i] = false
                #expect(!SendSlot<Recorder>.allSet(flags, frames), "\(frames) frames, off at \(i)")
                flags[i] = true
                var l = [Float](repeating: 0, count: frames), r = l
                #expect(SendSlot<Recorder>.lastSounding(l, r, frames) == -1)
                if i % 2 == 0 { l[i] = 1e-30 } else { r[i] = -0.5 }
                #expect(SendSlot<Recorder>.lastSounding(l, r, frames) == i, "\(frames) frames, sounding at \(i)")
                l[0] = 1
                #expect(SendSlot<Recorder>.lastSounding(l, r, frames) == i)
            }
        }
    }
}
