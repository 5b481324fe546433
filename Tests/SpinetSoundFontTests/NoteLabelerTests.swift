import Testing
import SpinetFile
import SpinetMIDI

// The rules `--notes` follows, checked without audio (the command tests
// check them against rendered sound).
@Suite("NoteLabeler")
struct NoteLabelerTests {
    /// 960 ticks a second at 48 kHz: 50 frames a tick.
    static func labels(_ events: [(Int64, MIDIMessage)], _ configure: (inout NoteLabeler) -> Void = { _ in }) throws -> [NoteLabel] {
        var w = MIDIFileWriter(format: 0, ticksPerQuarter: 480)
        w.addTrack(events.map { ($0.0, TrackEvent.Kind.message($0.1)) })
        let schedule = try MIDIFile(bytes: w.bytes()).schedule(sampleRate: 48000)
        var labeler = NoteLabeler()
        labeler.instrumentName = { _, bank, program, synth in synth ? "synth \(program ?? -1)" : "sf \(bank):\(program ?? -1)" }
        configure(&labeler)
        return labeler.labels(schedule)
    }

    /// The SoundFont player's grid point for an event at `frame` (ties late).
    static func grid(_ frame: Int64) -> Int64 { (frame + 32) / 64 * 64 }

    @Test func aRepeatedKeyEndsTheNoteBeforeAndTheMusicsEndEndsTheRest() throws {
        let l = try Self.labels([(100, .noteOn(channel: 0, key: 60, velocity: 90)), (200, .noteOn(channel: 0, key: 60, velocity: 80)),
                                 (300, .noteOff(channel: 0, key: 60, velocity: 0)), (400, .noteOn(channel: 1, key: 50, velocity: 70)),
                                 (900, .controlChange(channel: 2, controller: 7, value: 100))])
        let onsets: [Int64] = l.map(\.onsetFrame)
        let expected: [Int64] = [Self.grid(5000), Self.grid(10000), Self.grid(20000)]
        #expect(onsets == expected)
        #expect(l[0].offsetFrame == Self.grid(10000))
        #expect(l[1].offsetFrame == Self.grid(15000))
        #expect(l[2].offsetFrame == Self.grid(45000), "still on at the end: ends with the music")
        #expect(l[2].channel == 2 && l[2].velocity == 70)
    }

    @Test func thePedalHoldsAndAllNotesOffSparesWhatItHolds() throws {
        let l = try Self.labels([(0, .controlChange(channel: 0, controller: 64, value: 127)),
                                 (100, .noteOn(channel: 0, key: 60, velocity: 90)), (150, .noteOff(channel: 0, key: 60, velocity: 0)),
                                 (160, .noteOn(channel: 0, key: 62, velocity: 90)),
                                 (200, .controlChange(channel: 0, controller: 123, value: 0)),
                                 (260, .controlChange(channel: 0, controller: 64, value: 0))]) { $0.synthChannels = [0] }
        let offsets: [Int64] = l.map(\.offsetFrame)
        #expect(offsets == [13000, 13000], "both held by the pedal until its release (synth: exact frames)")
        #expect(l.allSatisfy { $0.instrument == "synth -1" && $0.bank == 126 })
    }

    @Test func bankSelect126MovesTheChannelAndEndsItsNotes() throws {
        let l = try Self.labels([(0, .programChange(channel: 0, program: 5)),
                                 (100, .noteOn(channel: 0, key: 60, velocity: 90)),
                                 (200, .controlChange(channel: 0, controller: 0, value: 126)), (200, .programChange(channel: 0, program: 7)),
                                 (300, .noteOn(channel: 0, key: 64, velocity: 90)), (400, .noteOff(channel: 0, key: 64, velocity: 0)),
                                 (500, .noteOn(channel: 9, key: 36, velocity: 100)), (600, .noteOff(channel: 9, key: 36, velocity: 0))]) {
            $0.mutedChannels = [9]
        }
        #expect(l.count == 3)
        #expect(l[0].instrument == "sf 0:5")
        #expect(l[0].offsetFrame == Self.grid(10000), "ended by the move, on the grid")
        #expect(l[1].instrument == "synth 7" && l[1].onsetFrame == 15000 && l[1].offsetFrame == 20000)
        #expect(l[2].bank == 128 && l[2].instrument == "sf 128:-1" && !l[2].sounded, "drums, muted")
    }
}
