import Foundation
import Testing
import SpinetMIDI
import SpinetTestSupport

@Suite("Soft pedal")
struct SoftPedalTests {
    /// The SoundFont player follows the font: CC 67 acts only through
    /// modulators the font defines, and the bundled font (like FluidSynth's
    /// defaults) defines none, so a note under the soft pedal sounds as
    /// loud as without it. (Spinet's own synth keeps a real soft pedal:
    /// SpinetSynthTests' softPedalMakesNewNotesQuieter.)
    @Test(arguments: [0, 19, 48])
    func theSoundFontPlayerLeavesCC67ToTheFont(program: Int) throws {
        func level(soft: Bool) throws -> Float {
            var writer = MIDIFileWriter(format: 1, ticksPerQuarter: 480)
            writer.addTrack([
                (0, .message(.programChange(channel: 0, program: UInt8(program)))),
                (0, .message(.controlChange(channel: 0, controller: 91, value: 0))),
                (0, .message(.controlChange(channel: 0, controller: 67, value: soft ? 127 : 0))),
                (240, .message(.noteOn(channel: 0, key: 60, velocity: 100))),
                (960, .message(.noteOff(channel: 0, key: 60, velocity: 0))),
            ])
            let schedule = try MIDIFile(bytes: writer.bytes()).schedule(sampleRate: 48000)
            let out = try renderWithSoundFont(schedule)
            return SignalAnalysis.rms(out.left[12_000..<48_000])
        }
        let normal = try level(soft: false), soft = try level(soft: true)
        #expect(normal > 0.001)
        let difference = 20 * log10(Double(soft / normal))
        #expect(abs(difference) < 0.1, "a note under the soft pedal is \(difference) dB from one without")
    }
}
