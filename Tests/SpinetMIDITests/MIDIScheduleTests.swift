import Testing
@testable import SpinetMIDI
import SpinetTestSupport

private func file(format: Int = 1, ticksPerQuarter: Int = 480, _ tracks: [[(tick: Int64, event: TrackEvent.Kind)]]) throws -> MIDIFile {
    var writer = MIDIFileWriter(format: format, ticksPerQuarter: ticksPerQuarter)
    for t in tracks { writer.addTrack(t) }
    return try MIDIFile(bytes: writer.bytes())
}

private func messages(_ s: MIDISchedule) -> [MIDIMessage] {
    s.events.compactMap { if case .message(let m) = $0.kind { return m } else { return nil } }
}

@Test func defaultTempoSanity() throws {
    let f = try file([[(0, on(0, 60, 100)), (480, off(0, 60))]])
    let s = f.schedule(sampleRate: 48_000)
    #expect(s.frame(forTick: 480) == 24_000)
    #expect(s.events == [.init(frame: 0, kind: .message(.noteOn(channel: 0, key: 60, velocity: 100))),
                         .init(frame: 24_000, kind: .message(.noteOff(channel: 0, key: 60, velocity: 64)))])
    #expect(s.endFrame == 24_000)
    #expect(s.sampleRate == 48_000)
    #expect(s.tempoChanges.map(\.frame) == [0])
    #expect(s.tempoChanges.map(\.microsecondsPerQuarter) == [500_000])
}

@Test func tempoFromAnyTrackAppliesToAll() throws {
    let f = try file([
        [(480, .tempo(microsecondsPerQuarter: 250_000)), (0, .text(type: 3, bytes: [0x41]))],
        [(960, on(0, 60, 100)), (1440, off(0, 60))],
    ])
    let s = f.schedule(sampleRate: 48_000)
    #expect(s.events.map(\.frame) == [36_000, 48_000])
    #expect(s.frame(forTick: 480, track: 1) == 24_000)
    #expect(s.frame(forTick: 960) == 36_000)
    #expect(s.tempoChanges.map(\.frame) == [0, 24_000])
    #expect(s.tempoChanges.map(\.microsecondsPerQuarter) == [500_000, 250_000])
}

@Test func tempoAtTickZeroReplacesDefault() throws {
    let f = try file([[(0, .tempo(microsecondsPerQuarter: 600_000)), (0, .tempo(microsecondsPerQuarter: 1_000_000)), (480, on(0, 1, 1))]])
    let s = f.schedule(sampleRate: 44_100)
    #expect(s.tempoChanges.map(\.frame) == [0])
    #expect(s.tempoChanges.map(\.microsecondsPerQuarter) == [1_000_000])
    #expect(s.events.map(\.frame) == [44_100])
}

@Test func roundsHalfUp() throws {
    // Division 1 and 1 us per quarter: tick t is t microseconds; at 500 kHz that is t / 2 frames.
    let f = try file(ticksPerQuarter: 1, [[(0, .tempo(microsecondsPerQuarter: 1)), (1, on(0, 1, 1)), (2, on(0, 2, 1)), (3, on(0, 3, 1))]])
    let s = f.schedule(sampleRate: 500_000)
    #expect(s.events.map(\.frame) == [1, 1, 2])
    #expect(s.frame(forTick: 5) == 3)
}

@Test func smpte25fpsIsOneMillisecondPerTick() throws {
    var writer = MIDIFileWriter(format: 0, smpteFramesPerSecond: 25, ticksPerFrame: 40)
    // The tempo event is ignored with SMPTE division.
    writer.addTrack([(0, .tempo(microsecondsPerQuarter: 250_000)), (1000, on(0, 60, 100)), (1500, off(0, 60))])
    let f = try MIDIFile(bytes: writer.bytes())
    #expect(f.division == .smpte(framesPerSecond: 25, ticksPerFrame: 40))
    let s = f.schedule(sampleRate: 48_000)
    #expect(s.frame(forTick: 1000) == 48_000)
    #expect(s.events.map(\.frame) == [48_000, 72_000])
    #expect(s.endFrame == 72_000)
    #expect(s.tempoChanges.isEmpty)
}

@Test func smpte2997DropFrame() throws {
    var writer = MIDIFileWriter(format: 0, smpteFramesPerSecond: 29, ticksPerFrame: 4)
    writer.addTrack([(4, on(0, 60, 100)), (120, off(0, 60)), (120_000, on(0, 61, 1))])
    let f = try MIDIFile(bytes: writer.bytes())
    #expect(f.division == .smpte(framesPerSecond: 29, ticksPerFrame: 4))
    let s = f.schedule(sampleRate: 48_000)
    // One video frame is 1001/30000 s = 1601.6 samples; 30 frames are 1.001 s.
    #expect(s.events.map(\.frame) == [1_602, 48_048, 48_048_000])
}

@Test func format2PlaysTracksOneAfterAnother() throws {
    let f = try file(format: 2, [
        [(0, on(0, 60, 100)), (240, .tempo(microsecondsPerQuarter: 1_000_000)), (240, off(0, 60)), (480, .endOfTrack)],
        [(0, .tempo(microsecondsPerQuarter: 250_000)), (480, on(1, 62, 100)), (960, .endOfTrack)],
    ])
    #expect(f.format == 2)
    let s = f.schedule(sampleRate: 48_000)
    // Track 0: 240 ticks at 0.5 s/quarter, then 240 at 1 s/quarter: ends at 0.75 s.
    // Track 1 starts there with its own tempo map (track 0's tempo does not carry over).
    #expect(s.events == [
        .init(frame: 0, kind: .message(.noteOn(channel: 0, key: 60, velocity: 100))),
        .init(frame: 12_000, kind: .message(.noteOff(channel: 0, key: 60, velocity: 64))),
        .init(frame: 48_000, kind: .message(.noteOn(channel: 1, key: 62, velocity: 100))),
    ])
    #expect(s.endFrame == 60_000)
    #expect(s.frame(forTick: 240, track: 0) == 12_000)
    #expect(s.frame(forTick: 480, track: 0) == 36_000)
    #expect(s.frame(forTick: 480, track: 1) == 48_000)
    #expect(s.tempoChanges.map(\.frame) == [0, 12_000, 36_000])
    #expect(s.tempoChanges.map(\.microsecondsPerQuarter) == [500_000, 1_000_000, 250_000])
}

@Test func simultaneousEventsAcrossTracks() throws {
    let sysEx: [UInt8] = [0xF0, 0x7E, 0x7F, 0x09, 0x01, 0xF7]
    let f = try file([
        [(0, on(0, 60, 100)), (0, off(0, 61)), (10, on(0, 70, 1)), (20, .message(.controlChange(channel: 0, controller: 1, value: 1)))],
        [(0, .message(.controlChange(channel: 1, controller: 7, value: 100))), (0, off(1, 62)), (0, on(1, 64, 0)),
         (0, .sysEx(sysEx)), (10, off(1, 70))],
        [(10, .message(.programChange(channel: 2, program: 5))), (20, .message(.controlChange(channel: 2, controller: 1, value: 2)))],
    ])
    let s = f.schedule(sampleRate: 48_000)
    #expect(s.events.map(\.kind) == [
        // Tick 0: track 0's note-on is first in its track, so its note-off waits behind it;
        // track 1's events go first (other, then the two note-offs, then its SysEx, all
        // ahead of the note-on), keeping their own order.
        .message(.controlChange(channel: 1, controller: 7, value: 100)),
        .message(.noteOff(channel: 1, key: 62, velocity: 64)),
        .message(.noteOn(channel: 1, key: 64, velocity: 0)),
        .sysEx(index: 0),
        .message(.noteOn(channel: 0, key: 60, velocity: 100)),
        .message(.noteOff(channel: 0, key: 61, velocity: 64)),
        // Tick 10: note-off, then other, then note-on, whatever the track index.
        .message(.noteOff(channel: 1, key: 70, velocity: 64)),
        .message(.programChange(channel: 2, program: 5)),
        .message(.noteOn(channel: 0, key: 70, velocity: 1)),
        // Tick 20: same class, so track order (not position in the track).
        .message(.controlChange(channel: 0, controller: 1, value: 1)),
        .message(.controlChange(channel: 2, controller: 1, value: 2)),
    ])
    #expect(s.sysEx == [sysEx])
}

@Test func onlyMessagesAndSysExAreScheduled() throws {
    let a: [UInt8] = [0xF0, 0x01, 0xF7], b: [UInt8] = [0xF0, 0x02, 0x03, 0xF7]
    let f = try file([[
        (0, .text(type: 1, bytes: [0x41])), (0, .timeSignature(numerator: 4, denominatorPower: 2, clocksPerClick: 24, thirtySecondsPerQuarter: 8)),
        (0, .keySignature(sharps: 1, minor: false)), (0, .otherMeta(type: 0x7F, bytes: [1])),
        (0, .sysEx(a)), (480, .sysEx(b)), (480, .message(.channelPressure(channel: 3, pressure: 9))),
    ]])
    let s = f.schedule(sampleRate: 96_000)
    #expect(s.events == [.init(frame: 0, kind: .sysEx(index: 0)), .init(frame: 48_000, kind: .sysEx(index: 1)),
                         .init(frame: 48_000, kind: .message(.channelPressure(channel: 3, pressure: 9)))])
    #expect(s.sysEx == [a, b])
    #expect(messages(s) == [.channelPressure(channel: 3, pressure: 9)])
}

@Test func endFrameIsTheLatestEndOfTrack() throws {
    let f = try file([
        [(0, on(0, 60, 100)), (480, off(0, 60))],
        [(0, .text(type: 3, bytes: [0x41])), (1920, .endOfTrack)],
    ])
    let s = f.schedule(sampleRate: 48_000)
    #expect(s.endFrame == 96_000)
    #expect(s.events.last?.frame == 24_000)
}

@Test func emptyFileSchedule() throws {
    let f = try MIDIFile(bytes: SMF.header(format: 2, tracks: 0))
    let s = f.schedule(sampleRate: 48_000)
    #expect(s.events.isEmpty)
    #expect(s.endFrame == 0)
    #expect(s.frame(forTick: 480) == 24_000)
}

/// One hour and more of music with 5,000 random tempo changes: every note's
/// frame is the exact time, rounded, with no drift. The exact time is computed
/// independently, by accumulating an Int128 numerator event by event in tick
/// order (the schedule uses tempo segments and a binary search), and the test
/// checks correct rounding (within half a frame), which is stricter than the
/// required one frame.
@Test(arguments: [480, 96, 1000])
func longFileWithManyTempoChangesHasNoDrift(division: Int) throws {
    var rng = SplitMix64(seed: UInt64(division) &* 7919)
    var tempos: [(tick: Int64, microseconds: Int)] = []
    var tick: Int64 = 0
    for i in 0..<5000 {
        if i > 0 { tick += Int64.random(in: 1...Int64(2 * division), using: &rng) }
        tempos.append((tick, Int.random(in: 200_000...1_500_000, using: &rng)))
    }
    let lastTick = tick + Int64(4 * division)
    var notes: [(tick: Int64, event: TrackEvent.Kind)] = []
    for _ in 0..<10_000 {
        let t = Int64.random(in: 0...lastTick, using: &rng)
        let key = UInt8.random(in: 0...127, using: &rng)
        notes.append((t, on(0, key, 100)))
        notes.append((t + Int64.random(in: 1...Int64(division), using: &rng), off(0, key)))
    }
    let f = try file(ticksPerQuarter: division, [tempos.map { ($0.tick, .tempo(microsecondsPerQuarter: $0.microseconds)) }, notes])
    let noteEvents = f.tracks[1].events.filter { if case .message = $0.kind { return true } else { return false } }
    #expect(noteEvents.count == 20_000)

    // Independent exact times: numerator (us x ticks-per-quarter units) per note.
    var exact: [Int128] = []
    var numerator: Int128 = 0
    var at: Int64 = 0
    var tempo = 500_000
    var next = 0
    for e in noteEvents {
        while next < tempos.count && tempos[next].tick <= e.tick {
            numerator += Int128(tempos[next].tick - at) * Int128(tempo)
            at = tempos[next].tick
            tempo = tempos[next].microseconds
            next += 1
        }
        numerator += Int128(e.tick - at) * Int128(tempo)
        at = e.tick
        exact.append(numerator)
    }
    let denominator = Int128(division) * 1_000_000
    #expect(exact.last.map { $0 / denominator } ?? 0 >= 3600, "the file should last at least an hour")

    for rate in [44_100, 48_000, 96_000] {
        let s = f.schedule(sampleRate: rate)
        #expect(s.events.count == noteEvents.count)
        var worst: Int128 = 0
        for (event, n) in zip(s.events, exact) {
            // |frame - exact frame| x denominator
            let error = Int128(event.frame) * denominator - n * Int128(rate)
            worst = max(worst, error < 0 ? -error : error)
        }
        #expect(2 * worst <= denominator, "a frame is off by more than half a frame at \(rate) Hz")
        #expect(s.tempoChanges.count == 5000)
    }
}
