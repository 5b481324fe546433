import Testing
import SpinetEngine
import SpinetMIDI
import SpinetTestSupport

@Suite("Engine: mute and solo")
struct MuteSoloTests {
    /// Plays a note, a controller and a note-off on each of channels 0-3 and
    /// returns what the unit received and the output's impulses per channel.
    static func play(muted: [Int] = [], solo: [Int] = []) -> [MIDIMessage] {
        var config = Engine.Configuration()
        config.mutedChannels = muted
        config.soloChannels = solo
        let unit = ImpulseUnit()
        let (engine, queue) = EngineHarness.make(unit, configuration: config)
        for c: UInt8 in 0..<4 {
            queue.push(EngineEvent(frame: Int64(c) * 100, .noteOn(channel: c, key: 60 + c, velocity: 100)))
            queue.push(EngineEvent(frame: Int64(c) * 100 + 10, .controlChange(channel: c, controller: 7, value: 90)))
            queue.push(EngineEvent(frame: Int64(c) * 100 + 20, .noteOff(channel: c, key: 60 + c, velocity: 0)))
        }
        _ = renderEngine(engine, frames: 1024, blockSizes: [256])
        return unit.messages
    }

    static func noteOnChannels(_ messages: [MIDIMessage]) -> [UInt8] {
        messages.compactMap { $0.isNoteOn ? $0.channel : nil }
    }

    @Test func aMutedChannelPlaysNoNoteButKeepsItsState() {
        #expect(Self.noteOnChannels(Self.play()) == [0, 1, 2, 3])
        let m = Self.play(muted: [2])
        #expect(Self.noteOnChannels(m) == [0, 1, 3])
        // its controller and note-off still arrive
        #expect(m.contains(.controlChange(channel: 2, controller: 7, value: 90)))
        #expect(m.contains { $0.isNoteOff && $0.channel == 2 })
    }

    @Test func soloMutesEveryOtherChannel() {
        #expect(Self.noteOnChannels(Self.play(solo: [1, 3])) == [1, 3])
        // mute wins over solo on the same channel
        #expect(Self.noteOnChannels(Self.play(muted: [3], solo: [1, 3])) == [1])
        // out-of-range numbers are ignored
        #expect(Self.noteOnChannels(Self.play(solo: [99])) == [0, 1, 2, 3])
    }
}
