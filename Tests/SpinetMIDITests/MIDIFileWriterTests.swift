import Testing
@testable import SpinetMIDI
import SpinetTestSupport

@Test func writesExactBytes() {
    var writer = MIDIFileWriter(format: 0, ticksPerQuarter: 96)
    writer.addTrack([(96, off(0, 60)), (0, on(0, 60, 100)), (0, on(0, 64, 100))])
    let header: [UInt8] = Array("MThd".utf8) + [0, 0, 0, 6, 0, 0, 0, 1, 0, 0x60] + Array("MTrk".utf8)
    #expect(writer.bytes() == header + [0, 0, 0, 15,
        0x00, 0x90, 0x3C, 0x64,
        0x00, 0x40, 0x64,          // running status
        0x60, 0x80, 0x3C, 0x40,
        0x00, 0xFF, 0x2F, 0x00])
    #expect(writer.bytes(runningStatus: false) == header + [0, 0, 0, 16,
        0x00, 0x90, 0x3C, 0x64,
        0x00, 0x90, 0x40, 0x64,
        0x60, 0x80, 0x3C, 0x40,
        0x00, 0xFF, 0x2F, 0x00])
}

@Test func writesSMPTEHeaderAndEndTick() {
    var writer = MIDIFileWriter(format: 1, smpteFramesPerSecond: 25, ticksPerFrame: 40)
    writer.addTrack([], endTick: 200)
    #expect(writer.bytes() == Array("MThd".utf8) + [0, 0, 0, 6, 0, 1, 0, 1, 0xE7, 0x28]
        + Array("MTrk".utf8) + [0, 0, 0, 5, 0x81, 0x48, 0xFF, 0x2F, 0x00])
}

@Test func writesVariableLengthQuantities() {
    func vlq(_ v: Int) -> [UInt8] {
        var out: [UInt8] = []
        MIDIFileWriter.putVLQ(v, &out)
        return out
    }
    #expect(vlq(0) == [0x00])
    #expect(vlq(0x7F) == [0x7F])
    #expect(vlq(0x80) == [0x81, 0x00])
    #expect(vlq(0x3FFF) == [0xFF, 0x7F])
    #expect(vlq(0x4000) == [0x81, 0x80, 0x00])
    #expect(vlq(0x0FFF_FFFF) == [0xFF, 0xFF, 0xFF, 0x7F])
}

@Test func roundTripsEveryEventKind() throws {
    let track0: [TrackEvent] = [
        ev(0, .text(type: 3, bytes: Array("Conductor".utf8))),
        ev(0, .tempo(microsecondsPerQuarter: 454_545)),
        ev(0, .timeSignature(numerator: 7, denominatorPower: 3, clocksPerClick: 12, thirtySecondsPerQuarter: 8)),
        ev(0, .keySignature(sharps: -6, minor: true)),
        ev(0, .otherMeta(type: 0x7F, bytes: [0x00, 0x00, 0x41, 0x01])),
        ev(0, .otherMeta(type: 0x00, bytes: [0x00, 0x01])),
        ev(100_000, .tempo(microsecondsPerQuarter: 0xFF_FFFF)),
        ev(100_000, .text(type: 0x0F, bytes: [])),
        ev(200_000, .endOfTrack),
    ]
    let longSysEx: [UInt8] = [0xF0] + (0..<300).map { UInt8($0 % 128) } + [0xF7]
    let track1: [TrackEvent] = [
        ev(0, .message(.programChange(channel: 9, program: 0))),
        ev(0, .message(.controlChange(channel: 9, controller: 7, value: 127))),
        ev(0, on(9, 36, 127)),
        ev(0, on(9, 42, 1)),
        ev(10, on(9, 36, 0)),
        ev(10, on(9, 42, 0)),
        ev(20, .message(.polyPressure(channel: 3, key: 60, pressure: 5))),
        ev(20, .message(.channelPressure(channel: 3, pressure: 6))),
        ev(30, .message(.pitchBend(channel: 15, value: 16383))),
        ev(30, .message(.pitchBend(channel: 15, value: 0))),
        ev(40, .sysEx([0xF0, 0x7E, 0x7F, 0x09, 0x01, 0xF7])),
        ev(40, .sysEx(longSysEx)),
        ev(50, off(3, 60, 0)),
        ev(50, off(3, 61, 127)),
        ev(0x0FFF_FFFF + 50, off(3, 62)),
        ev(0x0FFF_FFFF + 50, .endOfTrack),
    ]
    var writer = MIDIFileWriter(format: 1, ticksPerQuarter: 960)
    for t in [track0, track1] { writer.addTrack(t.map { ($0.tick, $0.kind) }) }
    let compact = writer.bytes()
    let plain = writer.bytes(runningStatus: false)
    #expect(compact.count < plain.count)
    for bytes in [compact, plain] {
        let f = try MIDIFile(bytes: bytes)
        #expect(f.warnings.isEmpty)
        #expect(f.format == 1)
        #expect(f.division == .ticksPerQuarter(960))
        #expect(f.tracks.map(\.events) == [track0, track1])
    }
}

@Test func roundTripsRandomTracksAndRewritesIdentically() throws {
    var rng = SplitMix64(seed: 42)
    var tracks: [[(tick: Int64, event: TrackEvent.Kind)]] = []
    for _ in 0..<4 {
        var events: [(tick: Int64, event: TrackEvent.Kind)] = []
        for _ in 0..<2000 {
            let tick = Int64.random(in: 0...50_000, using: &rng)
            let c = UInt8.random(in: 0...15, using: &rng), a = UInt8.random(in: 0...127, using: &rng), b = UInt8.random(in: 0...127, using: &rng)
            let kind: TrackEvent.Kind
            switch Int.random(in: 0..<9, using: &rng) {
            case 0: kind = on(c, a, b)
            case 1: kind = off(c, a, b)
            case 2: kind = .message(.polyPressure(channel: c, key: a, pressure: b))
            case 3: kind = .message(.controlChange(channel: c, controller: a, value: b))
            case 4: kind = .message(.programChange(channel: c, program: a))
            case 5: kind = .message(.channelPressure(channel: c, pressure: a))
            case 6: kind = .message(.pitchBend(channel: c, value: UInt16(a) << 7 | UInt16(b)))
            case 7: kind = .sysEx([0xF0, a, b, 0xF7])
            default: kind = .tempo(microsecondsPerQuarter: Int.random(in: 1...0xFF_FFFF, using: &rng))
            }
            events.append((tick, kind))
        }
        tracks.append(events)
    }
    var writer = MIDIFileWriter(format: 1, ticksPerQuarter: 480)
    for t in tracks { writer.addTrack(t) }
    let bytes = writer.bytes()
    let f = try MIDIFile(bytes: bytes)
    #expect(f.warnings.isEmpty)
    for (read, written) in zip(f.tracks, tracks) {
        // The writer sorts stably by tick.
        let sorted = written.enumerated().sorted { ($0.element.tick, $0.offset) < ($1.element.tick, $1.offset) }.map(\.element)
        #expect(read.events.dropLast().map(\.tick) == sorted.map(\.tick))
        #expect(read.events.dropLast().map(\.kind) == sorted.map(\.event))
        #expect(read.events.last == ev(sorted.last?.tick ?? 0, .endOfTrack))
    }
    // A file read back writes the same bytes again.
    var again = MIDIFileWriter(format: 1, ticksPerQuarter: 480)
    for t in f.tracks { again.addTrack(t.events.map { ($0.tick, $0.kind) }) }
    #expect(again.bytes() == bytes)
}

@Test func writesPortMetaEventsForHighChannels() throws {
    var writer = MIDIFileWriter(format: 0, ticksPerQuarter: 480)
    writer.addTrack([(0, on(17, 60, 100)), (1, on(17, 61, 100)), (2, on(2, 62, 100)), (3, on(250, 63, 100)),
                     (4, .message(.systemReset))])
    let f = try MIDIFile(bytes: writer.bytes())
    #expect(f.warnings.isEmpty)
    // System reset is written as an escape (F7 01 FF), which the reader skips.
    #expect(f.tracks[0].events == [
        ev(0, .otherMeta(type: 0x21, bytes: [1])), ev(0, on(17, 60, 100)), ev(1, on(17, 61, 100)),
        ev(2, .otherMeta(type: 0x21, bytes: [0])), ev(2, on(2, 62, 100)),
        ev(3, .otherMeta(type: 0x21, bytes: [15])), ev(3, on(250, 63, 100)),
        ev(4, .endOfTrack),
    ])
}
