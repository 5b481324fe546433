import Testing
import SpinetFile
import SpinetMIDI

/// Heavy drums are split by key between channel 10 and channel 10 of the
/// second port, so the two render threads can share them.
@Suite("Drum split")
struct DrumSplitTests {
    /// Drums: kick 36 (heavy), snare 38, hi-hats 42/46 (one exclusive
    /// class), crash 49; a bass line on channel 1; controllers, a program
    /// and pitch on channel 10 that both sides must get.
    static func file(drumHits: Int = 64, sysEx: [UInt8]? = nil, extraChannel: UInt8? = nil) throws -> MIDISchedule {
        var w = MIDIFileWriter(format: 0, ticksPerQuarter: 96)
        var events: [(tick: Int64, event: TrackEvent.Kind)] = []
        if let sysEx { events.append((0, .sysEx(sysEx))) }
        events.append((0, .message(.controlChange(channel: 9, controller: 7, value: 100))))
        events.append((0, .message(.programChange(channel: 9, program: 8))))
        events.append((5, .message(.pitchBend(channel: 9, value: 9000))))
        for i in 0..<drumHits {
            for (key, length) in [(36, 40), (38, 10), (i % 4 == 3 ? 46 : 42, 20), (49, 90)] where key != 49 || i % 8 == 0 {
                events.append((Int64(i * 48), .message(.noteOn(channel: 9, key: UInt8(key), velocity: 100))))
                events.append((Int64(i * 48 + length), .message(.noteOff(channel: 9, key: UInt8(key), velocity: 0))))
            }
        }
        for i in 0..<8 {
            events.append((Int64(i * 384), .message(.noteOn(channel: 0, key: 40, velocity: 90))))
            events.append((Int64(i * 384 + 96), .message(.noteOff(channel: 0, key: 40, velocity: 0))))
        }
        if let extraChannel { events.append((10, .message(.noteOn(channel: extraChannel, key: 60, velocity: 1)))) }
        w.addTrack(events.sorted { $0.tick < $1.tick })
        return try MIDIFile(bytes: w.bytes()).schedule(sampleRate: 48000)
    }

    static func hiHats(_ key: Int) -> [Int] {
        [42, 44, 46].contains(key) ? [1] : []
    }

    @Test func keysSplitWithTheirExclusiveClassAndControllersGoToBoth() throws {
        let schedule = try Self.file()
        let split = try #require(ChannelPartition.splitDrums(schedule, noteCost: nil, exclusiveClasses: Self.hiHats))
        var channelOf: [Int: Set<UInt8>] = [:]
        var notes = 0
        for e in split.events {
            guard case .message(let m) = e.kind else { continue }
            if case .noteOn(let c, let key, _) = m { channelOf[Int(key), default: []].insert(c); notes += 1 }
            if case .noteOff(let c, let key, _) = m { channelOf[Int(key), default: []].insert(c) }
        }
        let split25 = UInt8(ChannelPartition.drumSplitChannel)
        // every key plays on one side only, both sides play, the hi-hats together
        #expect(channelOf.filter { $0.key != 40 }.allSatisfy { $0.value.count == 1 })
        #expect(Set(channelOf.filter { $0.key != 40 }.values.flatMap { $0 }) == [9, split25])
        #expect(channelOf[42] == channelOf[46])
        #expect(channelOf[40] == [0])
        #expect(notes == schedule.events.filter { if case .message(let m) = $0.kind { return m.isNoteOn } else { return false } }.count)
        // each channel message of channel 10 is followed by its copy
        let copies = split.events.enumerated().filter { i, e in
            guard case .message(let m) = e.kind, m.channel == 9, !m.isNoteOn else { return false }
            if case .noteOff = m { return false }
            return true
        }
        #expect(copies.count == 3)
        for (i, e) in copies {
            guard case .message(let m) = e.kind, case .message(let copy) = split.events[i + 1].kind else { Issue.record("no copy"); continue }
            #expect(split.events[i + 1].frame == e.frame)
            #expect(copy.channel == split25)
            switch (m, copy) {
            case (.controlChange(_, let a, let b), .controlChange(_, let c, let d)): #expect(a == c && b == d)
            case (.programChange(_, let a), .programChange(_, let b)): #expect(a == b)
            case (.pitchBend(_, let a), .pitchBend(_, let b)): #expect(a == b)
            default: Issue.record("\(copy) is not a copy of \(m)")
            }
        }
        // the same split every time
        #expect(ChannelPartition.splitDrums(schedule, noteCost: nil, exclusiveClasses: Self.hiHats)?.events == split.events)
    }

    @Test func noSplitWhereItCouldChangeTheMusicOrWouldNotHelp() throws {
        #expect(ChannelPartition.splitDrums(try Self.file(drumHits: 1), noteCost: nil, exclusiveClasses: Self.hiHats) == nil,
                "light drums")
        #expect(ChannelPartition.splitDrums(try Self.file(extraChannel: 20), noteCost: nil, exclusiveClasses: Self.hiHats) == nil,
                "a second port in use")
        let gsRhythmPart: [UInt8] = [0xF0, 0x41, 0x10, 0x42, 0x12, 0x40, 0x1A, 0x15, 0x02, 0x0F, 0xF7]
        #expect(ChannelPartition.splitDrums(try Self.file(sysEx: gsRhythmPart), noteCost: nil, exclusiveClasses: Self.hiHats) == nil,
                "a part setting")
        let gmOn: [UInt8] = [0xF0, 0x7E, 0x7F, 0x09, 0x01, 0xF7]
        #expect(ChannelPartition.splitDrums(try Self.file(sysEx: gmOn), noteCost: nil, exclusiveClasses: Self.hiHats) != nil,
                "GM System On resets every channel alike")
        // every key in one exclusive class: nothing to split
        #expect(ChannelPartition.splitDrums(try Self.file(), noteCost: nil, exclusiveClasses: { _ in [7] }) == nil)
    }
}
