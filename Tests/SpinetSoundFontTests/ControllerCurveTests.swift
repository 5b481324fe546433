import Foundation
import Testing
import SpinetEngine
import SpinetMIDI
import SpinetSoundFont
import SpinetTestSupport

/// The SoundFont player obeys the mixer controllers as the oscillator synth
/// does (see the synth's ControllerTests): volume (CC 7) and expression
/// (CC 11) follow the GM recommendation, 40·log10(CC/127) dB each, and pan
/// (CC 10) keeps the power constant (-3 dB a side at the centre).
@Suite("SoundFont unit: volume, expression and pan")
struct ControllerCurveTests {
    /// Left and right RMS of a held organ note (a looped, steady sample)
    /// after `messages`, from 0.3 s to 0.8 s.
    static func level(_ messages: [MIDIMessage], program: UInt8 = 16) throws -> (left: Double, right: Double) {
        let events: [(Int, MIDIMessage)] = [(0, .programChange(channel: 0, program: program))] + messages.map { (0, $0) }
            + [(0, .noteOn(channel: 0, key: 60, velocity: 100))]
        let planes = try renderSoundFontUnit(sounding: nil, events: events, frames: 48000 * 8 / 10).planes
        let window = (48000 * 3 / 10)..<(48000 * 8 / 10)
        return (Double(SignalAnalysis.rms(planes[0][window])), Double(SignalAnalysis.rms(planes[1][window])))
    }

    static func dB(_ ratio: Double) -> Double { 20 * log10(ratio) }
    static func cc(_ controller: UInt8, _ value: UInt8) -> MIDIMessage { .controlChange(channel: 0, controller: controller, value: value) }

    @Test func volumeAndExpressionFollowTheGMCurve() throws {
        let full = try Self.level([Self.cc(7, 127)])
        #expect(full.left > 0.005)
        for v: UInt8 in [100, 64, 32, 16] {
            let gm = 40 * log10(Double(v) / 127)
            let volume = try Self.level([Self.cc(7, v)])
            let expression = try Self.level([Self.cc(7, 127), Self.cc(11, v)])
            #expect(abs(Self.dB(volume.left / full.left) - gm) < 0.1, "CC 7 = \(v): \(Self.dB(volume.left / full.left)) dB, GM \(gm) dB")
            #expect(abs(Self.dB(expression.left / full.left) - gm) < 0.1, "CC 11 = \(v): \(Self.dB(expression.left / full.left)) dB, GM \(gm) dB")
        }
        // the two multiply: 40·log10(64/127 · 64/127)
        let both = try Self.level([Self.cc(7, 64), Self.cc(11, 64)])
        #expect(abs(Self.dB(both.left / full.left) - 80 * log10(64.0 / 127)) < 0.1)
        // a channel that never sent CC 7 is at 100, the GM default
        let untouched = try Self.level([])
        #expect(abs(Self.dB(untouched.left / full.left) - 40 * log10(100.0 / 127)) < 0.1)
    }

    /// Constant power across the pan range; -3 dB a side at the centre;
    /// 0 is hard left. (FluidSynth maps 1 and 127 to -38 dB on the far side,
    /// not to silence; Spinet's synth takes 1 as hard left, as GM2 does.)
    @Test func panKeepsThePowerConstant() throws {
        let centre = try Self.level([Self.cc(7, 127), Self.cc(10, 64)])
        #expect(abs(centre.left - centre.right) < 1e-6 * centre.left)
        let centrePower = centre.left * centre.left + centre.right * centre.right
        for pan: UInt8 in [0, 1, 20, 32, 96, 110, 127] {
            let p = try Self.level([Self.cc(7, 127), Self.cc(10, pan)])
            let power = p.left * p.left + p.right * p.right
            #expect(abs(10 * log10(power / centrePower)) < 0.05, "pan \(pan) changed the power by \(10 * log10(power / centrePower)) dB")
        }
        let hardLeft = try Self.level([Self.cc(7, 127), Self.cc(10, 0)])
        #expect(hardLeft.right < 1e-5 * hardLeft.left)
        #expect(abs(Self.dB(centre.left / hardLeft.left) + 3.01) < 0.05, "centre is \(Self.dB(centre.left / hardLeft.left)) dB from hard left")
        let right = try Self.level([Self.cc(7, 127), Self.cc(10, 127)])
        #expect(Self.dB(right.left / right.right) < -30)
    }
}
