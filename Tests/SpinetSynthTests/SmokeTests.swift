import Testing
import SpinetMIDI
@testable import SpinetSynth
import SpinetTestSupport

@Suite struct SmokeTests {
    @Test func aNoteSounds() throws {
        let synth = try makeSynth()
        let out = render(synth, frames: 4800, events: [(0, .noteOn(channel: 0, key: 60, velocity: 100))])
        let peak = out.left.map(abs).max() ?? 0
        #expect(peak > 0.05 && peak < 1)
        #expect(synth.activeVoices == 1)
    }
}
