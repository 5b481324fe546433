import Testing
@testable import SpinetSoundFont
@testable import SpinetSynth

/// Spinet's two instruments feed one shared reverb, chorus and delay: a
/// channel that never sent CC 91/93/94 must send the same on both, or the
/// same song would sit in a different space depending on which unit plays
/// a channel.
@Suite("Effect send defaults")
struct SendDefaultsTests {
    @Test func synthAndSoundFontSendDefaultsAgree() {
        let levels = UnsafeMutablePointer<Float>.allocate(capacity: 3)
        defer { levels.deallocate() }
        levels.initialize(repeating: -1, count: 3)
        SoundFontUnit.resetSends(levels, count: 1)
        #expect(levels[0] == OscillatorSynth.defaultReverbSend)
        #expect(levels[1] == OscillatorSynth.defaultChorusSend)
        #expect(levels[2] == OscillatorSynth.defaultDelaySend)
        #expect(levels[0] == Float(40) / 127)
    }
}
