import Testing
import SpinetMIDI

/// What `--start` and a seek replay: the state the music has at a frame.
@Suite("MIDIChase: the state of the music at a point")
struct MIDIChaseTests {
    /// A format 0 file (480 ticks a quarter, 120 bpm unless it sets a tempo: 960 ticks a second) at 1000 Hz.
    static func schedule(_ events: [(tick: Int64, event: TrackEvent.Kind)], endTick: Int64? = nil) throws -> MIDISchedule {
        var w = MIDIFileWriter(format: 0, ticksPerQuarter: 480)
        w.addTrack(events, endTick: endTick)
        return try MIDIFile(bytes: w.bytes()).schedule(sampleRate: 1000)
    }

    static func ccE(_ c: UInt8, _ n: UInt8, _ v: UInt8) -> TrackEvent.Kind { .message(.controlChange(channel: c, controller: n, value: v)) }
    static func cc(_ c: UInt8, _ n: UInt8, _ v: UInt8) -> MIDIMessage { .controlChange(channel: c, controller: n, value: v) }

    @Test func programChangesAndBanksAreTheLastBeforeTheTarget() throws {
        let s = try Self.schedule([
            (0, Self.ccE(0, 0, 1)), (0, .message(.programChange(channel: 0, program: 10))),
            (0, .message(.noteOn(channel: 0, key: 60, velocity: 100))),
            (960, .message(.programChange(channel: 0, program: 20))),
            (1920, .message(.programChange(channel: 0, program: 30))),
        ], endTick: 2880)
        let chase = MIDIChase(s, at: 1500)
        #expect(chase.messages == [Self.cc(0, 0, 1), .programChange(channel: 0, program: 20)])
        #expect(chase.sysEx.isEmpty)
        // the next event is the program change at 2 s (1920 ticks = 2000 frames)
        #expect(s.events[chase.nextEvent].frame == 2000)
        // notes are not part of the state
        #expect(!MIDIChase(s, at: 1500).messages.contains { $0.isNoteOn })
        // at the target frame itself, an event belongs to what follows
        #expect(MIDIChase(s, at: 1000).messages == [Self.cc(0, 0, 1), .programChange(channel: 0, program: 10)])
    }

    @Test func pedalsControllersAndBendAreReplayed() throws {
        let s = try Self.schedule([
            (0, Self.ccE(1, 7, 90)), (0, Self.ccE(1, 10, 20)), (0, Self.ccE(1, 11, 100)), (0, Self.ccE(1, 91, 70)),
            (100, Self.ccE(1, 64, 127)), (200, .message(.pitchBend(channel: 1, value: 10000))),
            (300, Self.ccE(1, 66, 127)), (400, Self.ccE(1, 64, 0)),
        ], endTick: 960)
        let expected: [MIDIMessage] = [
            Self.cc(1, 7, 90), Self.cc(1, 10, 20), Self.cc(1, 11, 100), Self.cc(1, 64, 127), Self.cc(1, 66, 127), Self.cc(1, 91, 70),
            .pitchBend(channel: 1, value: 10000),
        ]
        #expect(MIDIChase(s, at: 350).messages == expected)
        // the sustain pedal let go before the target stays up (0 is replayed)
        #expect(MIDIChase(s, at: 500).messages.contains(Self.cc(1, 64, 0)))
    }

    @Test func rpnPitchBendRangeAndTuningAreReplayedWithTheirNumbers() throws {
        let s = try Self.schedule([
            // pitch-bend range 12 semitones, fine tuning 64/0, then the null RPN
            (0, Self.ccE(2, 101, 0)), (0, Self.ccE(2, 100, 0)), (0, Self.ccE(2, 6, 12)), (0, Self.ccE(2, 38, 0)),
            (0, Self.ccE(2, 100, 1)), (0, Self.ccE(2, 6, 70)),
            (0, Self.ccE(2, 101, 127)), (0, Self.ccE(2, 100, 127)),
            // an NRPN's data entry is not taken for an RPN
            (10, Self.ccE(2, 99, 1)), (10, Self.ccE(2, 98, 8)), (10, Self.ccE(2, 6, 99)),
            (20, Self.ccE(2, 101, 127)), (20, Self.ccE(2, 100, 127)),
        ], endTick: 960)
        let expected: [MIDIMessage] = [
            Self.cc(2, 101, 0), Self.cc(2, 100, 0), Self.cc(2, 6, 12), Self.cc(2, 38, 0),
            Self.cc(2, 101, 0), Self.cc(2, 100, 1), Self.cc(2, 6, 70),
            Self.cc(2, 101, 127), Self.cc(2, 100, 127),
        ]
        #expect(MIDIChase(s, at: 100).messages == expected)
        // At 15 ms an NRPN is selected: it is selected again last, so a later Data Entry goes there.
        let at15 = MIDIChase(s, at: 15).messages
        #expect(Array(at15.suffix(2)) == [Self.cc(2, 99, 1), Self.cc(2, 98, 8)])
        #expect(!at15.contains(Self.cc(2, 6, 99)))
    }

    @Test func resetsKeepOnlyWhatFollowsTheLastOne() throws {
        let gmOn: [UInt8] = [0xF0, 0x7E, 0x7F, 0x09, 0x01, 0xF7]
        let gsReset: [UInt8] = [0xF0, 0x41, 0x10, 0x42, 0x12, 0x40, 0x00, 0x7F, 0x00, 0x41, 0xF7]
        let gsDrums: [UInt8] = [0xF0, 0x41, 0x10, 0x42, 0x12, 0x40, 0x1A, 0x15, 0x02, 0x0F, 0xF7]
        let s = try Self.schedule([
            (0, .sysEx(gmOn)), (0, .message(.programChange(channel: 0, program: 5))), (0, Self.ccE(0, 101, 0)), (0, Self.ccE(0, 100, 0)), (0, Self.ccE(0, 6, 7)),
            (100, .sysEx(gsReset)), (100, .sysEx(gsDrums)), (100, .message(.programChange(channel: 3, program: 9))),
        ], endTick: 960)
        let before = MIDIChase(s, at: 50)
        #expect(before.sysEx == [gmOn])
        #expect(before.messages.contains(.programChange(channel: 0, program: 5)))
        #expect(before.messages.contains(Self.cc(0, 6, 7)))
        let after = MIDIChase(s, at: 200)
        #expect(after.sysEx == [gsReset, gsDrums])
        #expect(after.messages == [.programChange(channel: 3, program: 9)])
    }

    @Test func tempoIsTheOneInEffectAtTheTarget() throws {
        // 120 bpm, then 60 bpm at 1 s (tick 960), then 240 bpm at tick 1440 (2 s)
        let s = try Self.schedule([
            (0, .tempo(microsecondsPerQuarter: 500_000)),
            (960, .tempo(microsecondsPerQuarter: 1_000_000)),
            (1440, .tempo(microsecondsPerQuarter: 250_000)),
            (1440, .message(.noteOn(channel: 0, key: 60, velocity: 90))),
        ], endTick: 1920)
        #expect(MIDIChase(s, at: 500).microsecondsPerQuarter == 500_000)
        #expect(MIDIChase(s, at: 1500).microsecondsPerQuarter == 1_000_000)
        #expect(MIDIChase(s, at: 2000).microsecondsPerQuarter == 250_000)
        #expect(s.events[MIDIChase(s, at: 1999).nextEvent].frame == 2000)
    }

    @Test func initialValuesTakeAChannelBackWithoutNotes() {
        var state = ChannelState(channels: 16)
        state.remember(.programChange(channel: 4, program: 40))
        state.remember(.controlChange(channel: 4, controller: 7, value: 30))
        state.remember(.controlChange(channel: 4, controller: 64, value: 127))
        state.remember(.pitchBend(channel: 4, value: 0))
        var out: [MIDIMessage] = []
        state.replayInitialValues { out.append($0) }
        #expect(out == [.programChange(channel: 4, program: 0), Self.cc(4, 7, 100), Self.cc(4, 64, 0), .pitchBend(channel: 4, value: 8192)])
    }
}
