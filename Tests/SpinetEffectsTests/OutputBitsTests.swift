import SpinetEffects
import SpinetTestSupport
import Testing

/// The effects' exact output for a fixed input, as a hash of the samples'
/// bit patterns: a change in how an effect stores or reaches its buffers
/// must not change one bit of what it renders. Each render runs in odd
/// blocks (333 frames) through noise, a parameter change and a silent tail.
/// (If an effect's sound is changed on purpose, update its value here.)
@Suite("Effect output bits")
struct OutputBitsTests {
    static let fs = 48000.0
    static let frames = 24000

    /// Noise for the first half, then silence (the tail).
    static func input(seed: UInt64) -> [Float] {
        var x = Measure.noise(frames, amplitude: 0.5, seed: seed)
        for i in (frames / 2)..<frames { x[i] = 0 }
        return x
    }

    /// Renders the input in two halves through `process`; `change` runs between them.
    static func render(_ process: (UnsafePointer<Float>, UnsafePointer<Float>, UnsafeMutablePointer<Float>, UnsafeMutablePointer<Float>, Int) -> Void,
                       change: () -> Void) -> [Float] {
        let l = input(seed: 1), r = input(seed: 2)
        let half = frames / 2
        let first = Measure.render(left: Array(l[..<half]), right: Array(r[..<half]), block: 333, process)
        change()
        let second = Measure.render(left: Array(l[half...]), right: Array(r[half...]), block: 333, process)
        return first.left + first.right + second.left + second.right
    }

    @Test func reverb() {
        var reverb = Reverb(sampleRate: Self.fs)
        let out = Self.render({ reverb.process(inputLeft: $0, inputRight: $1, outputLeft: $2, outputRight: $3, frames: $4) },
                              change: { reverb.parameters = ReverbPreset(gsType: 4)!.parameters; reverb.parameters.size = 0.7 })
        #expect(BitHash.of(out) == 10232402564673907538)
    }

    @Test func chorus() {
        var chorus = Chorus(sampleRate: Self.fs, parameters: .init(voices: 3, feedback: 0.4))
        let out = Self.render({ chorus.process(inputLeft: $0, inputRight: $1, outputLeft: $2, outputRight: $3, frames: $4) },
                              change: { chorus.parameters.voices = 4; chorus.parameters.delayMilliseconds = 2; chorus.parameters.feedback = -0.7 })
        #expect(BitHash.of(out) == 1992779504785380302)
    }

    @Test func delay() {
        var delay = Delay(sampleRate: Self.fs, maxDelaySeconds: 1)
        let out = Self.render({ delay.process(inputLeft: $0, inputRight: $1, outputLeft: $2, outputRight: $3, frames: $4) },
                              change: { delay.setTempo(bpm: 97); delay.parameters.feedback = 0.6; delay.parameters.lowPassHz = 3000 })
        #expect(BitHash.of(out) == 16596236466582554852)
    }

    @Test func equalizer() {
        var eq = Equalizer(sampleRate: Self.fs, parameters: .init(highPassEnabled: true, lowShelfGainDB: 4, highShelfGainDB: -5))
        let out = Self.render({ l, r, outL, outR, n in
            outL.update(from: l, count: n)
            outR.update(from: r, count: n)
            eq.process(left: outL, right: outR, frames: n)
        }, change: { eq.parameters.highShelfGainDB = 6 })
        #expect(BitHash.of(out) == 15108175867848471732)
    }
}
