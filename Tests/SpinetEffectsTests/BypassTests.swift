import Foundation
import SpinetEffects
import SpinetTestSupport
import Testing

/// Switching any effect in or out while a tone plays fades: the mix of dry
/// signal and return never steps more than it does with the effect steadily
/// in or out (a click would be a step the size of the return itself).
@Suite("Bypass")
struct BypassTests {
    let fs = 48000.0
    /// Bypass on, off, on, and off again in the middle of the fade.
    let toggles = [14400, 14400 + 4800 + 37, 28800, 28800 + 300]

    /// Walks `frames` frames in blocks of at most 128, cut at `toggles` when
    /// `toggling`: at each toggle `toggle` gets the new bypass state (on,
    /// off, on, off), then `process(frame, n)` renders the block.
    func blocks(_ frames: Int, toggling: Bool, toggle: (Bool) -> Void, process: (_ frame: Int, _ n: Int) -> Void) {
        var bypassed = false
        var frame = 0
        while frame < frames {
            var n = min(128, frames - frame)
            if toggling, let next = toggles.first(where: { $0 > frame }) { n = min(n, next - frame) }
            if toggling && toggles.contains(frame) {
                bypassed.toggle()
                toggle(bypassed)
            }
            process(frame, n)
            frame += n
        }
    }

    /// Renders a send effect as the mixer uses it: the outputs hold the dry
    /// tone and the effect adds its return. Bypass toggles at `toggles`.
    func sendMix<Effect: SpinetEffects.SendEffect & ~Copyable>(toggling: Bool, _ make: () -> MonoSend<Effect>) -> [Float] {
        let effect = make()
        let tone = Measure.sine(frequency: 220, amplitude: 0.5, frames: 48000, sampleRate: fs)
        var mix = tone
        tone.withUnsafeBufferPointer { input in
            mix.withUnsafeMutableBufferPointer { output in
                blocks(tone.count, toggling: toggling, toggle: { effect.bypassed = $0 }) { frame, n in
                    effect.add(input.baseAddress! + frame, output.baseAddress! + frame, n)
                }
            }
        }
        return mix
    }

    func check<Effect: SpinetEffects.SendEffect & ~Copyable>(_ name: String, _ make: () -> MonoSend<Effect>) {
        let steadyOn = sendMix(toggling: false, make)
        let toggled = sendMix(toggling: true, make)
        let dryStep = SignalAnalysis.maxStep(Measure.sine(frequency: 220, amplitude: 0.5, frames: 4800, sampleRate: fs)[...])
        let steady = max(dryStep, SignalAnalysis.maxStep(steadyOn[9600...]))
        let step = SignalAnalysis.maxStep(toggled[9600...])
        let returnLevel = SignalAnalysis.peak(zip(steadyOn, Measure.sine(frequency: 220, amplitude: 0.5, frames: 48000, sampleRate: fs)).map { $0 - $1 }[9600...])
        print("\(name) bypass toggles: max step \(step), steady at most \(steady), return peak \(returnLevel)")
        #expect(returnLevel > 0.1)
        #expect(step < 1.3 * steady)
        // and the toggles did switch the effect: the last 0.2 s (effect on) differs from dry
        let differs = toggled[38400...] != Measure.sine(frequency: 220, amplitude: 0.5, frames: 48000, sampleRate: fs)[38400...]
        #expect(differs)
    }

    @Test func reverb() { check("reverb") { MonoSend(Reverb(sampleRate: fs, parameters: ReverbPreset.plate.parameters)) } }
    @Test func chorus() { check("chorus") { MonoSend(Chorus(sampleRate: fs, parameters: ChorusPreset.wide.parameters)) } }
    @Test func delay() {
        check("delay") { MonoSend(Delay(sampleRate: fs, parameters: .init(time: .milliseconds(50), feedback: 0.5))) }
    }

    /// The equalizer crossfades between processed and dry signal.
    @Test func equalizer() {
        let tone = Measure.sine(frequency: 220, amplitude: 0.25, frames: 48000, sampleRate: fs)
        func run(toggling: Bool) -> [Float] {
            var eq = Equalizer(sampleRate: fs, parameters: .init(lowShelfFrequency: 500, lowShelfGainDB: 12))
            var l = tone, r = tone
            l.withUnsafeMutableBufferPointer { lp in
                r.withUnsafeMutableBufferPointer { rp in
                    blocks(tone.count, toggling: toggling, toggle: { eq.isBypassed = $0 }) { frame, n in
                        eq.process(left: lp.baseAddress! + frame, right: rp.baseAddress! + frame, frames: n)
                    }
                }
            }
            return l
        }
        let steady = SignalAnalysis.maxStep(run(toggling: false)[9600...])
        let toggled = run(toggling: true)
        let step = SignalAnalysis.maxStep(toggled[9600...])
        print("equalizer bypass toggles: max step \(step), steady (boosted) \(steady)")
        #expect(step < 1.1 * steady)
        #expect(SignalAnalysis.peak(toggled[14400 + 1200..<14400 + 4800]) < 0.26)   // bypassed: the dry level
    }
}

/// A send effect as the mixer uses it: a mono input, its return added to
/// `output` (the right output goes to a scratch buffer).
final class MonoSend<Effect: SpinetEffects.SendEffect & ~Copyable> {
    var effect: Effect
    let scratch = FixedBuffer<Float>(repeating: 0, count: 4096)
    init(_ effect: consuming Effect) { self.effect = effect }
    var bypassed: Bool { get { effect.isBypassed } set { effect.isBypassed = newValue } }
    func add(_ input: UnsafePointer<Float>, _ output: UnsafeMutablePointer<Float>, _ frames: Int) {
        effect.process(inputLeft: input, inputRight: input, outputLeft: output, outputRight: scratch.pointer, frames: frames)
    }
}
