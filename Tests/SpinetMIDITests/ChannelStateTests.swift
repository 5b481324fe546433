import Testing
import SpinetMIDI

@Suite("ChannelState: what a re-activated or swapped instrument plays back")
struct ChannelStateTests {
    static func replayed(_ state: borrowing ChannelState) -> [MIDIMessage] {
        var out: [MIDIMessage] = []
        state.replay { out.append($0) }
        return out
    }

    @Test func replaysBankThenProgramThenControllersThenBendAndPressure() {
        var s = ChannelState(channels: 16)
        s.remember(.pitchBend(channel: 2, value: 9000))
        s.remember(.controlChange(channel: 2, controller: 7, value: 90))
        s.remember(.programChange(channel: 2, program: 48))
        s.remember(.controlChange(channel: 2, controller: 32, value: 1))
        s.remember(.controlChange(channel: 2, controller: 0, value: 126))
        s.remember(.channelPressure(channel: 2, pressure: 33))
        s.remember(.controlChange(channel: 2, controller: 64, value: 127))
        s.remember(.noteOn(channel: 2, key: 60, velocity: 100))
        #expect(Self.replayed(s) == [
            .controlChange(channel: 2, controller: 0, value: 126),
            .controlChange(channel: 2, controller: 32, value: 1),
            .programChange(channel: 2, program: 48),
            .controlChange(channel: 2, controller: 7, value: 90),
            .controlChange(channel: 2, controller: 64, value: 127),
            .pitchBend(channel: 2, value: 9000),
            .channelPressure(channel: 2, pressure: 33),
        ])
    }

    @Test func dataEntryParameterNumbersAndModeMessagesAreNotKept() {
        var s = ChannelState()
        for n: UInt8 in [6, 38, 96, 97, 98, 99, 100, 101, 120, 122, 123, 124, 125, 126, 127] {
            s.remember(.controlChange(channel: 0, controller: n, value: 5))
        }
        #expect(Self.replayed(s).isEmpty)
    }

    @Test func resetAllControllersKeepsWhatRP015Keeps() {
        var s = ChannelState()
        for n: UInt8 in [0, 1, 7, 10, 11, 32, 64, 71, 74, 91, 93, 94, 95] {
            s.remember(.controlChange(channel: 5, controller: n, value: 20))
        }
        s.remember(.programChange(channel: 5, program: 3))
        s.remember(.pitchBend(channel: 5, value: 100))
        s.remember(.channelPressure(channel: 5, pressure: 9))
        s.remember(.controlChange(channel: 5, controller: 121, value: 0))
        let kept = Self.replayed(s)
        #expect(kept == [
            .controlChange(channel: 5, controller: 0, value: 20),
            .controlChange(channel: 5, controller: 32, value: 20),
            .programChange(channel: 5, program: 3),
        ] + ([7, 10, 71, 74, 91, 93, 94, 95] as [UInt8]).map { .controlChange(channel: 5, controller: $0, value: 20) })
    }

    @Test func resetsForgetEveryChannel() {
        let resets: [[UInt8]] = [
            [0xF0, 0x7E, 0x7F, 0x09, 0x01, 0xF7],                                   // GM System On
            [0xF0, 0x41, 0x10, 0x42, 0x12, 0x40, 0x00, 0x7F, 0x00, 0x41, 0xF7],     // GS Reset
            [0xF0, 0x43, 0x10, 0x4C, 0x00, 0x00, 0x7E, 0x00, 0xF7],                 // XG System On
        ]
        for reset in resets {
            var s = ChannelState(channels: 32)
            s.remember(.programChange(channel: 20, program: 7))
            s.remember(.controlChange(channel: 3, controller: 7, value: 50))
            reset.withUnsafeBufferPointer { s.remember(sysEx: $0) }
            #expect(Self.replayed(s).isEmpty, "\(reset)")
        }
        var s = ChannelState()
        s.remember(.programChange(channel: 1, program: 7))
        [0xF0, 0x7F, 0x7F, 0x04, 0x01, 0x00, 0x40, 0xF7].withUnsafeBufferPointer { s.remember(sysEx: $0) }   // master volume: kept
        #expect(Self.replayed(s).count == 1)
        s.remember(.systemReset)
        #expect(Self.replayed(s).isEmpty)
    }

    @Test func channelsBeyondThoseKeptAreIgnoredAndCopiesCarryOver() {
        var s = ChannelState(channels: 16)
        s.remember(.programChange(channel: 17, program: 9))
        #expect(Self.replayed(s).isEmpty)
        s.remember(.programChange(channel: 15, program: 9))
        var t = ChannelState(channels: 16)
        t.copy(from: s)
        #expect(Self.replayed(t) == [.programChange(channel: 15, program: 9)])
    }
}
