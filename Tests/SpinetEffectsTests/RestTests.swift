import SpinetEffects
import Testing

/// `rest(frames:)`: a stem's reverb or chorus whose own input has been silent
/// for longer than its tail skips its arithmetic, but must stay in step with
/// the mix's effect (same modulation, glides, positions), or the stems no
/// longer sum to the mix. The check: an effect that rests N frames and one
/// that processes N frames of silence (both from silence) then give the
/// same bytes for the same input, including while parameters glide and for
/// N that are not whole control periods.
@Suite("Effects: rest in step")
struct RestTests {
    static let fs = 48000.0

    /// Deterministic noise.
    static func noise(_ frames: Int, seed: UInt32) -> [Float] {
        var state = seed
        return (0..<frames).map { _ in
            state = state &* 1_664_525 &+ 1_013_904_223
            return Float(Int32(bitPattern: state)) / Float(Int32.max) * 0.5
        }
    }

    /// `.rest(n)` rests `a` and processes n frames of silence in `b`;
    /// `.play(n)` and `.silence(n)` process the same n frames (noise,
    /// silence) in both; `.change` changes both one's parameters.
    enum Step { case rest(Int), play(Int), silence(Int), change }

    /// Runs `a` and `b` (two instances in the same state) through `plan`;
    /// returns the largest difference between their outputs over the
    /// played and silent steps, and the largest output.
    static func run<E: SpinetEffects.SendEffect & ~Copyable>(_ a: inout E, _ b: inout E, plan: [Step],
                                                change: (inout E, Int) -> Void) -> (difference: Float, peak: Float) {
        var difference: Float = 0, peak: Float = 0, seed: UInt32 = 1, changes = 0
        for step in plan {
            switch step {
            case .change:
                changes += 1
                change(&a, changes)
                change(&b, changes)
            case .rest(let n):
                let rested = a.rest(frames: n)
                #expect(rested)
                let zeros = [Float](repeating: 0, count: n)
                var l = zeros, r = zeros
                b.process(inputLeft: zeros, inputRight: zeros, outputLeft: &l, outputRight: &r, frames: n)
            case .play(let n), .silence(let n):
                var inL = [Float](repeating: 0, count: n), inR = inL
                if case .play = step {
                    inL = noise(n, seed: seed); inR = noise(n, seed: seed &+ 1000); seed &+= 1
                }
                var al = [Float](repeating: 0, count: n), ar = al, bl = al, br = al
                a.process(inputLeft: inL, inputRight: inR, outputLeft: &al, outputRight: &ar, frames: n)
                b.process(inputLeft: inL, inputRight: inR, outputLeft: &bl, outputRight: &br, frames: n)
                for k in 0..<n { difference = max(difference, abs(al[k] - bl[k]), abs(ar[k] - br[k])) }
                peak = max(peak, al.map(abs).max() ?? 0)
            }
        }
        return (difference, peak)
    }

    /// From silence: rests of any length, across a glide, leave nothing to
    /// tell the two apart (the same bytes).
    static let fromSilence: [Step] = [.rest(1000), .change, .rest(17), .rest(13), .play(3001), .change, .play(777)]
    // (after .play, a rest would clear a tail that processing keeps: see afterSound)

    /// After sound: a rest once the tail has died away (the input silent for
    /// longer than `tailSeconds`, as a stem's effect rests) differs from
    /// processing by what the tail had left: under -120 dB of the peak.
    static func afterSound(tailFrames: Int) -> [Step] {
        [.play(4000), .silence(tailFrames), .change, .rest(5045), .play(6000), .silence(2000)]
    }

    /// Both plans on `a` and `b` (the same effect, the same state): equal
    /// bytes from silence, within -120 dB of the peak after a tail.
    static func expectInStep<E: SpinetEffects.SendEffect & ~Copyable>(_ a: inout E, _ b: inout E, tailFrames: Int,
                                                                    change: (inout E, Int) -> Void) {
        let exact = run(&a, &b, plan: fromSilence, change: change)
        #expect(exact.peak > 0.01 && exact.difference == 0, "\(exact)")
        let after = run(&a, &b, plan: afterSound(tailFrames: tailFrames), change: change)
        print("rest after the tail: difference \(after.difference), peak \(after.peak)")
        #expect(after.peak > 0.01 && after.difference < after.peak * 1e-6, "\(after)")
    }

    @Test func aReverbThatRestsStaysInStep() {
        let change: (inout Reverb, Int) -> Void = { r, turn in
            // every parameter glides (the lengths, decay, pre-delay, levels)
            var p = turn % 4 < 2 ? ReverbPreset.plate.parameters : ReverbPreset.hall.parameters
            p.size = turn % 2 == 0 ? 0.4 : 0.33
            p.wetLevel = turn % 2 == 0 ? 0.5 : 0.37
            p.width = turn % 2 == 0 ? 0.2 : 0.13
            p.earlyReflections = turn % 2 == 0 ? 0.1 : 0.71
            p.diffusion = turn % 2 == 0 ? 0.3 : 0.29
            p.preDelayMilliseconds = turn % 2 == 0 ? 5 : 31
            r.parameters = p
        }
        var a = Reverb(sampleRate: Self.fs, parameters: ReverbPreset.hall.parameters)
        var b = Reverb(sampleRate: Self.fs, parameters: ReverbPreset.hall.parameters)
        Self.expectInStep(&a, &b, tailFrames: Int(a.tailSeconds * Self.fs), change: change)
    }

    @Test func aChorusThatRestsStaysInStep() {
        let change: (inout Chorus, Int) -> Void = { c, turn in
            // rate, depth, feedback and level glide
            c.parameters = (turn % 2 == 1 ? ChorusPreset(gsType: 1)! : ChorusPreset.wide).parameters
        }
        var a = Chorus(sampleRate: Self.fs, parameters: ChorusPreset.wide.parameters)
        var b = Chorus(sampleRate: Self.fs, parameters: ChorusPreset.wide.parameters)
        Self.expectInStep(&a, &b, tailFrames: Int(a.tailSeconds * Self.fs), change: change)
    }

    /// The delay cannot rest (its caller processes instead).
    @Test func aDelaySaysItCannotRest() {
        var delay = Delay(sampleRate: Self.fs)
        let rested = delay.rest(frames: 100)
        #expect(!rested)
    }

    /// Resting after sound clears the tail: the next silence is exact zeros.
    @Test func restingClearsTheTail() {
        var reverb = Reverb(sampleRate: Self.fs, parameters: ReverbPreset.hall.parameters)
        let x = Self.noise(4096, seed: 3)
        var l = [Float](repeating: 0, count: 4096), r = l
        reverb.process(inputLeft: x, inputRight: x, outputLeft: &l, outputRight: &r, frames: 4096)
        #expect(l.map(abs).max()! > 0.001)
        reverb.rest(frames: 100)
        let zeros = [Float](repeating: 0, count: 4096)
        l = zeros; r = zeros
        reverb.process(inputLeft: zeros, inputRight: zeros, outputLeft: &l, outputRight: &r, frames: 4096)
        #expect(l.allSatisfy { $0 == 0 } && r.allSatisfy { $0 == 0 })
    }
}
