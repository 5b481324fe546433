import Foundation
import SpinetEffects
import SpinetTestSupport
import Testing

@Suite("Presets")
struct PresetTests {
    let fs = 48000.0

    @Test func namedPresetsResolve() {
        #expect(ReverbPreset.all.map(\.name) == ["room", "hall", "plate"])
        #expect(ChorusPreset.all.map(\.name) == ["subtle", "wide"])
        #expect(DelayPreset.all.map(\.name) == ["eighth", "dotted-eighth"])
        for preset in ReverbPreset.all { #expect(ReverbPreset(name: preset.name.uppercased()) == preset) }
        for preset in ChorusPreset.all { #expect(ChorusPreset(name: preset.name) == preset) }
        for preset in DelayPreset.all { #expect(DelayPreset(name: preset.name) == preset) }
        #expect(ReverbPreset(name: "cathedral") == nil)
        #expect(ReverbPreset(name: "hall2")?.parameters.decaySeconds == 2.6)
        #expect(ChorusPreset(name: "flanger")?.parameters.voices == 1)
        #expect(DelayPreset(name: "gs-panning-delay")?.parameters.mode == .pingPong)
        #expect(DelayPreset.dottedEighth.parameters.time == .note(.dottedEighth))
    }

    /// A delay time instead of a preset: milliseconds or a note value.
    @Test func delayTimesResolve() {
        #expect(DelayPreset(name: "350ms")?.parameters.time == .milliseconds(350))
        #expect(DelayPreset(name: "350ms")?.parameters.feedback == DelayPreset.eighth.parameters.feedback)
        #expect(DelayPreset(name: "1/4")?.parameters.time == .note(.quarter))
        #expect(DelayPreset(name: "dotted-quarter")?.parameters.time == .note(.dottedQuarter))
        #expect(DelayPreset(name: "1/8t")?.parameters.time == .note(.eighthTriplet))
        for bad in ["0ms", "5000ms", "-3ms", "ms", "fast", "1/0", "4/1"] { #expect(DelayPreset(name: bad) == nil, "\(bad)") }
    }

    @Test func gsReverbTypesMapOntoRoomsHallsAndThePlate() {
        let decays = (0...5).map { ReverbPreset(gsType: $0)!.parameters.decaySeconds }
        #expect(decays == decays.sorted() || decays[5] == ReverbPreset.plate.parameters.decaySeconds)
        for t in 0...2 { #expect(ReverbPreset(gsType: t)!.parameters.size < ReverbPreset.hall.parameters.size) }
        for t in 3...4 { #expect(ReverbPreset(gsType: t)!.parameters.preDelayMilliseconds >= 18) }
        #expect(ReverbPreset(gsType: 5) == .plate)
        #expect(ReverbPreset(gsType: 6) == nil && ReverbPreset(gsType: 7) == nil && ReverbPreset(gsType: 8) == nil)
        #expect(DelayPreset(gsReverbType: 6)?.parameters.mode == .stereo)
        #expect(DelayPreset(gsReverbType: 7)?.parameters.mode == .pingPong)
        #expect(DelayPreset(gsReverbType: 4) == nil)
    }

    @Test func gm2ReverbTypesUseTheGM2ReverbTimes() {
        let expected: [Int: Double] = [0: 1.105, 1: 1.284, 2: 1.492, 3: 1.822, 4: 1.822, 8: 1.284]
        for (type, seconds) in expected {
            let preset = ReverbPreset(gm2Type: type)
            #expect(preset != nil)
            #expect(abs((preset?.parameters.decaySeconds ?? 0) - seconds) < 0.001)
        }
        for type in [5, 6, 7, 9, -1] { #expect(ReverbPreset(gm2Type: type) == nil) }
        #expect(ReverbPreset(gm2Type: 4)!.parameters.size > ReverbPreset(gm2Type: 3)!.parameters.size)
        #expect(abs(ReverbPreset.gm2DecaySeconds(parameterValue: 64) - 1.822) < 0.001)
    }

    @Test func gsAndGM2ChorusTypes() {
        for t in 0...5 { #expect(ChorusPreset(gsType: t) == ChorusPreset(gm2Type: t)) }
        #expect(ChorusPreset(gm2Type: 6) == nil && ChorusPreset(gsType: 8) == nil)
        let chorus1 = ChorusPreset(gm2Type: 0)!.parameters
        #expect(abs(chorus1.rateHz - 0.366) < 0.001 && abs(chorus1.depthMilliseconds - 1.875) < 0.001 && chorus1.feedback == 0)
        let flanger = ChorusPreset(gm2Type: 5)!.parameters
        #expect(flanger.delayMilliseconds < 2 && flanger.feedback > 0.8)
        let shortDelay = ChorusPreset(gsType: 6)!.parameters
        #expect(shortDelay.depthMilliseconds == 0 && shortDelay.rateHz == 0)
    }

    /// Every preset, mapped type included, renders finite sound at a
    /// sensible level for a noise burst at a typical send level.
    @Test func everyPresetRendersAtASensibleLevel() {
        let burst = Measure.noise(4800, amplitude: 0.5) + [Float](repeating: 0, count: 43200)
        let inputRMS = Double(SignalAnalysis.rms(burst[..<4800]))
        func check(_ name: String, _ out: (left: [Float], right: [Float])) {
            let level = 20 * log10(Double(SignalAnalysis.rms(out.left[...])) * (Double(burst.count) / 4800).squareRoot() / inputRMS)
            #expect(out.left.allSatisfy { $0.isFinite } && out.right.allSatisfy { $0.isFinite }, "\(name)")
            print("preset \(name): \(level) dB")
            #expect(level > -20 && level < 6, "\(name): \(level) dB")
        }
        let reverbs = ReverbPreset.all + (0...5).compactMap { ReverbPreset(gsType: $0) }
            + [0, 1, 2, 3, 4, 8].compactMap { ReverbPreset(gm2Type: $0) }
        for preset in reverbs {
            var reverb = Reverb(sampleRate: fs, parameters: preset.parameters)
            check(preset.name, Measure.render(left: burst, right: burst) {
                reverb.process(inputLeft: $0, inputRight: $1, outputLeft: $2, outputRight: $3, frames: $4)
            })
        }
        for preset in ChorusPreset.all + (0...7).compactMap({ ChorusPreset(gsType: $0) }) {
            var chorus = Chorus(sampleRate: fs, parameters: preset.parameters)
            check(preset.name, Measure.render(left: burst, right: burst) {
                chorus.process(inputLeft: $0, inputRight: $1, outputLeft: $2, outputRight: $3, frames: $4)
            })
        }
        for preset in DelayPreset.all + [6, 7].compactMap({ DelayPreset(gsReverbType: $0) }) {
            var delay = Delay(sampleRate: fs, parameters: preset.parameters)
            check(preset.name, Measure.render(left: burst, right: burst) {
                delay.process(inputLeft: $0, inputRight: $1, outputLeft: $2, outputRight: $3, frames: $4)
            })
        }
    }
}
