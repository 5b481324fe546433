import Foundation
import Testing
@testable import SpinetMIDI
import SpinetTestSupport

// MARK: - Reading well-formed files

@Test func readsFormat0WithRunningStatus() throws {
    let body: [UInt8] = [
        0x00, 0x90, 0x3C, 0x64,   // note-on C4
        0x00, 0x3E, 0x50,         // running status: note-on D4
        0x60, 0x80, 0x3C, 0x40,   // 96 ticks later: note-off C4
        0x00, 0x90, 0x3E, 0x00,   // note-on velocity 0 stays as it is
        0x00, 0xE0, 0x00, 0x40,   // pitch bend at rest
        0x00, 0xC5, 0x07,         // program change, 1 data byte
    ] + SMF.endOfTrack
    let file = try MIDIFile(bytes: SMF.file(body))
    #expect(file.format == 0)
    #expect(file.division == .ticksPerQuarter(480))
    #expect(file.warnings.isEmpty)
    #expect(file.tracks.count == 1)
    #expect(file.tracks[0].events == [
        ev(0, on(0, 60, 100)),
        ev(0, on(0, 62, 80)),
        ev(96, off(0, 60, 64)),
        ev(96, on(0, 62, 0)),
        ev(96, .message(.pitchBend(channel: 0, value: 8192))),
        ev(96, .message(.programChange(channel: 5, program: 7))),
        ev(96, .endOfTrack),
    ])
}

@Test func readsMetaEvents() throws {
    let body: [UInt8] = [
        0x00, 0xFF, 0x03, 0x04] + Array("Lead".utf8) + [
        0x00, 0xFF, 0x51, 0x03, 0x07, 0xA1, 0x20,           // 500000 us
        0x00, 0xFF, 0x58, 0x04, 0x06, 0x03, 0x18, 0x08,     // 6/8
        0x00, 0xFF, 0x59, 0x02, 0xFD, 0x01,                 // 3 flats, minor
        0x00, 0xFF, 0x7F, 0x03, 0x00, 0x00, 0x41,           // sequencer specific
        0x83, 0x60, 0xFF, 0x2F, 0x00,                       // end of track at 480
    ]
    let file = try MIDIFile(bytes: SMF.file(body))
    #expect(file.warnings.isEmpty)
    #expect(file.tracks[0].events == [
        ev(0, .text(type: 3, bytes: Array("Lead".utf8))),
        ev(0, .tempo(microsecondsPerQuarter: 500_000)),
        ev(0, .timeSignature(numerator: 6, denominatorPower: 3, clocksPerClick: 24, thirtySecondsPerQuarter: 8)),
        ev(0, .keySignature(sharps: -3, minor: true)),
        ev(0, .otherMeta(type: 0x7F, bytes: [0, 0, 0x41])),
        ev(480, .endOfTrack),
    ])
}

@Test func readsFormat1AndFormat2() throws {
    for format in [1, 2] {
        let bytes = SMF.header(format: format, tracks: 2, division: 96)
            + SMF.track([0x00, 0xFF, 0x51, 0x03, 0x03, 0xD0, 0x90] + SMF.endOfTrack)
            + SMF.track([0x10, 0x91, 0x40, 0x7F, 0x10, 0x81, 0x40, 0x00] + SMF.endOfTrack)
        let file = try MIDIFile(bytes: bytes)
        #expect(file.format == format)
        #expect(file.division == .ticksPerQuarter(96))
        #expect(file.warnings.isEmpty)
        #expect(file.tracks.count == 2)
        #expect(file.tracks[0].events == [ev(0, .tempo(microsecondsPerQuarter: 250_000)), ev(0, .endOfTrack)])
        #expect(file.tracks[1].events == [ev(16, on(1, 64, 127)), ev(32, off(1, 64, 0)), ev(32, .endOfTrack)])
    }
}

@Test func readsSMPTEDivisions() throws {
    // 0xE7 = -25 frames per second, 40 ticks per frame.
    let f25 = try MIDIFile(bytes: SMF.file(SMF.endOfTrack, division: 0xE728))
    #expect(f25.division == .smpte(framesPerSecond: 25, ticksPerFrame: 40))
    // 0xE3 = -29: 29.97 drop-frame.
    let f29 = try MIDIFile(bytes: SMF.file(SMF.endOfTrack, division: 0xE350))
    #expect(f29.division == .smpte(framesPerSecond: 29, ticksPerFrame: 80))
    let f24 = try MIDIFile(bytes: SMF.file(SMF.endOfTrack, division: 0xE804))
    #expect(f24.division == .smpte(framesPerSecond: 24, ticksPerFrame: 4))
    let f30 = try MIDIFile(bytes: SMF.file(SMF.endOfTrack, division: 0xE2FF))
    #expect(f30.division == .smpte(framesPerSecond: 30, ticksPerFrame: 255))
}

@Test func readsRMIDWrapper() throws {
    let smf = SMF.file([0x00, 0x90, 0x3C, 0x64] + SMF.endOfTrack)  // 30 bytes
    let riffBody = Array("RMID".utf8) + Array("LIST".utf8) + SMF.le32(3) + [1, 2, 3, 0]  // odd chunk, padded
        + Array("data".utf8) + SMF.le32(smf.count) + smf
    let bytes = Array("RIFF".utf8) + SMF.le32(riffBody.count) + riffBody
    let file = try MIDIFile(bytes: bytes)
    #expect(file.tracks[0].events == [ev(0, on(0, 60, 100)), ev(0, .endOfTrack)])
    #expect(file.warnings.isEmpty)

    // Offsets inside an RMID are offsets in the whole file: the SMF starts at 32.
    let broken = SMF.file([0x00, 0x3C, 0x64] + SMF.endOfTrack)
    let riff2 = Array("RMID".utf8) + Array("data".utf8) + SMF.le32(broken.count) + broken
    let err = parseError(Array("RIFF".utf8) + SMF.le32(riff2.count) + riff2)
    #expect(err?.offset == 20 + 23)
    #expect(err?.reason == "running status with no preceding status byte: data byte 0x3C where an event should start")
}

@Test func readsPortMetaEvent() throws {
    let body: [UInt8] = [
        0x00, 0x91, 0x3C, 0x64,               // before any port event: port 0
        0x00, 0xFF, 0x21, 0x01, 0x01,         // port 1
        0x00, 0x91, 0x3C, 0x64,               // global channel 17
        0x00, 0xFF, 0x21, 0x01, 0x14,         // port 20: clamped to 15 (the 0x14 is byte 22+17 = 39)
        0x00, 0x92, 0x3C, 0x64,               // global channel 242
    ] + SMF.endOfTrack
    let bytes = SMF.header(format: 1, tracks: 2) + SMF.track(body) + SMF.track([0x00, 0x93, 0x3C, 0x64] + SMF.endOfTrack)
    let file = try MIDIFile(bytes: bytes)
    #expect(file.tracks[0].events == [
        ev(0, on(1, 60, 100)),
        ev(0, .otherMeta(type: 0x21, bytes: [1])),
        ev(0, on(17, 60, 100)),
        ev(0, .otherMeta(type: 0x21, bytes: [20])),
        ev(0, on(242, 60, 100)),
        ev(0, .endOfTrack),
    ])
    // The port does not carry over to the next track.
    #expect(file.tracks[1].events.first == ev(0, on(3, 60, 100)))
    #expect(file.warnings == [MIDIFileWarning(offset: 39, message: "MIDI port 20 is beyond the 16 ports (0...15) Spinet has; using port 15")])
}

@Test func reassemblesSysExPackets() throws {
    let body: [UInt8] = [
        0x00, 0xF7, 0x02, 0xF3, 0x01,               // escape with no SysEx pending: ignored, no warning
        0x00, 0xF0, 0x05, 0x7E, 0x7F, 0x09, 0x01, 0xF7,   // complete in one packet
        0x00, 0xF0, 0x03, 0x43, 0x10, 0x4C,         // F0 packet without F7
        0x10, 0xF7, 0x02, 0x00, 0x00,               // continuation
        0x10, 0xF7, 0x02, 0x7F, 0xF7,               // last continuation, at tick 32
        0x00, 0xF0, 0x02, 0x43, 0x10,               // unterminated (F0 at 22+30 = 52), then a note (its 0x90 is at 22+35 = 57)
        0x00, 0x90, 0x3C, 0x64,
    ] + SMF.endOfTrack
    let file = try MIDIFile(bytes: SMF.file(body))
    #expect(file.tracks[0].events == [
        ev(0, .sysEx([0xF0, 0x7E, 0x7F, 0x09, 0x01, 0xF7])),
        ev(32, .sysEx([0xF0, 0x43, 0x10, 0x4C, 0x00, 0x00, 0x7F, 0xF7])),
        ev(32, .sysEx([0xF0, 0x43, 0x10, 0xF7])),
        ev(32, on(0, 60, 100)),
        ev(32, .endOfTrack),
    ])
    #expect(file.warnings == [MIDIFileWarning(offset: 57, message: "the SysEx message at byte 52 has no F7 at its end and is followed by another event; sending it with F7 added")])
}

@Test func metaAndSysExCancelRunningStatus() throws {
    // Strictly a broken file; read with the last channel status and a warning.
    let body: [UInt8] = [0x00, 0x90, 0x3C, 0x64, 0x00, 0xFF, 0x01, 0x01, 0x41, 0x00, 0x3E, 0x64] + SMF.endOfTrack
    let file = try MIDIFile(bytes: SMF.file(body))
    #expect(file.tracks[0].events.map(\.kind) == [on(0, 60, 100), .text(type: 1, bytes: [0x41]), on(0, 62, 100), .endOfTrack])
    #expect(file.warnings == [MIDIFileWarning(offset: 32, message: "running status used after a meta or SysEx event, which cancels it; assuming the previous status 0x90")])
}

@Test func readsFromPath() throws {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("spinet-midi-test-\(getpid()).mid").path
    let bytes = SMF.file([0x00, 0x90, 0x3C, 0x64] + SMF.endOfTrack)
    #expect(FileManager.default.createFile(atPath: path, contents: Data(bytes)))
    defer { try? FileManager.default.removeItem(atPath: path) }
    let file = try MIDIFile(path: path)
    #expect(file.tracks[0].events == [ev(0, on(0, 60, 100)), ev(0, .endOfTrack)])

    do {
        _ = try MIDIFile(path: "/nonexistent/spinet/none.mid")
        Issue.record("reading a missing file should fail")
    } catch {
        #expect(error == MIDIFileError(offset: 0, reason: "cannot read file: No such file or directory"))
        #expect(error.description == "byte 0: cannot read file: No such file or directory")
    }
}

@Test func reads300Tracks() throws {
    var writer = MIDIFileWriter(format: 1, ticksPerQuarter: 480)
    for t in 0..<300 {
        writer.addTrack([(Int64(t), on(UInt8(t % 16), UInt8(t % 128), 100)),
                         (Int64(t + 10), off(UInt8(t % 16), UInt8(t % 128)))])
    }
    let file = try MIDIFile(bytes: writer.bytes())
    #expect(file.warnings.isEmpty)
    #expect(file.tracks.count == 300)
    for t in [0, 17, 299] {
        #expect(file.tracks[t].events == [
            ev(Int64(t), on(UInt8(t % 16), UInt8(t % 128), 100)),
            ev(Int64(t + 10), off(UInt8(t % 16), UInt8(t % 128))),
            ev(Int64(t + 10), .endOfTrack),
        ])
    }
    let schedule = file.schedule(sampleRate: 48_000)
    #expect(schedule.events.count == 600)
    #expect(schedule.events.map(\.frame) == schedule.events.map(\.frame).sorted())
    #expect(schedule.endFrame == schedule.frame(forTick: 309))
}

// MARK: - Broken files: errors with their byte offsets

@Test func errorEmptyFile() {
    #expect(parseError([]) == MIDIFileError(offset: 0, reason: "empty file (0 bytes)"))
}

@Test func errorNotAMIDIFile() {
    #expect(parseError(Array("hello, world!!!!".utf8)) == MIDIFileError(offset: 0, reason: "not a Standard MIDI File (no MThd header)"))
    #expect(parseError(Array("MTh".utf8) + [0]) == MIDIFileError(offset: 0, reason: "not a Standard MIDI File (no MThd header)"))
}

@Test func errorRIFFWave() {
    let bytes = Array("RIFF".utf8) + SMF.le32(36) + Array("WAVE".utf8) + Array("fmt ".utf8) + SMF.le32(16) + [UInt8](repeating: 0, count: 16)
    let err = parseError(bytes)
    #expect(err == MIDIFileError(offset: 8, reason: "RIFF file of type \"WAVE\", not RIFF MIDI (\"RMID\"): this is not a MIDI file"))
    #expect(err?.description == "byte 8: RIFF file of type \"WAVE\", not RIFF MIDI (\"RMID\"): this is not a MIDI file")
}

@Test func errorRMIDWithoutData() {
    let bytes = Array("RIFF".utf8) + SMF.le32(16) + Array("RMID".utf8) + Array("LIST".utf8) + SMF.le32(4) + [0, 0, 0, 0]
    #expect(parseError(bytes) == MIDIFileError(offset: 12, reason: "RIFF MIDI (RMID) file without a \"data\" chunk: there is no MIDI data in it"))
}

@Test func errorTruncatedHeader() {
    let full = SMF.header()
    #expect(parseError(Array(full[0..<11])) == MIDIFileError(offset: 11, reason: "the file ends inside the MThd header (11 of 14 bytes): the file is truncated"))
    #expect(parseError(Array(full[0..<3])) == MIDIFileError(offset: 3, reason: "the file ends inside the MThd header (3 of 14 bytes): the file is truncated"))
    // A header length beyond the file.
    let long = Array("MThd".utf8) + SMF.be32(100) + [0, 0, 0, 1, 1, 0xE0]
    #expect(parseError(long) == MIDIFileError(offset: 4, reason: "MThd header length 100 runs past the end of the file (size 14): the file is truncated"))
}

@Test func errorShortHeaderLength() {
    let bytes = Array("MThd".utf8) + SMF.be32(5) + [0, 0, 0, 1, 1, 0xE0]
    #expect(parseError(bytes) == MIDIFileError(offset: 4, reason: "MThd header length 5 is less than 6: the header is damaged"))
}

@Test func errorDivisionZero() {
    #expect(parseError(SMF.file(SMF.endOfTrack, division: 0)) == MIDIFileError(offset: 12, reason: "division is 0 ticks per quarter note: timing is undefined"))
}

@Test func errorBadSMPTE() {
    // 0xE6 = -26 frames per second.
    #expect(parseError(SMF.file(SMF.endOfTrack, division: 0xE628)) == MIDIFileError(offset: 12, reason: "SMPTE division with frame rate byte 0xE6: only -24, -25, -29 and -30 frames per second exist"))
    #expect(parseError(SMF.file(SMF.endOfTrack, division: 0xE700)) == MIDIFileError(offset: 13, reason: "SMPTE division with 0 ticks per frame: timing is undefined"))
}

@Test func errorTrackLengthPastEndOfFile() {
    let bytes = SMF.header() + Array("MTrk".utf8) + SMF.be32(100) + SMF.endOfTrack
    #expect(parseError(bytes) == MIDIFileError(offset: 18, reason: "track 0 length 100 runs past the end of the file (size 26): the file is truncated"))
    // The second track of a file cut short: its length field is at 26 + 4 = 30.
    let cut = Array((SMF.header(format: 1, tracks: 2) + SMF.track(SMF.endOfTrack) + SMF.track([0x00, 0x90, 0x3C, 0x64] + SMF.endOfTrack)).dropLast(3))
    #expect(parseError(cut) == MIDIFileError(offset: 30, reason: "track 1 length 8 runs past the end of the file (size 39): the file is truncated"))
}

@Test func errorBadChunkLength() {
    let bytes = SMF.header() + Array("XFIL".utf8) + SMF.be32(1000) + [1, 2, 3]
    #expect(parseError(bytes) == MIDIFileError(offset: 18, reason: "chunk \"XFIL\" length 1000 runs past the end of the file (size 25): the file is truncated"))
}

@Test func errorHugeDeclaredSizesDoNotAllocate() {
    // A 4 GB track length: rejected from the bytes present, nothing reserved.
    let bytes = SMF.header(tracks: 65535) + Array("MTrk".utf8) + [0xFF, 0xFF, 0xFF, 0xFF] + SMF.endOfTrack
    #expect(parseError(bytes) == MIDIFileError(offset: 18, reason: "track 0 length 4294967295 runs past the end of the file (size 26): the file is truncated"))
    // 65535 declared tracks and none present: a warning, no tracks.
    let file = try? MIDIFile(bytes: SMF.header(tracks: 65535))
    #expect(file?.tracks.count == 0)
    #expect(file?.warnings == [MIDIFileWarning(offset: 10, message: "the header declares 65535 tracks but the file has 0; using the 0 found")])
}

@Test func errorRunningStatusWithoutStatus() {
    let bytes = SMF.file([0x00, 0x3C, 0x64] + SMF.endOfTrack)
    #expect(parseError(bytes) == MIDIFileError(offset: 23, reason: "running status with no preceding status byte: data byte 0x3C where an event should start"))
}

@Test func errorSysExRunsOffTrackEnd() {
    // Length 5 but only 3 bytes left in the track; the length byte is at 24.
    let bytes = SMF.file([0x00, 0xF0, 0x05, 0x43, 0x10, 0xF7])
    #expect(parseError(bytes) == MIDIFileError(offset: 24, reason: "SysEx length 5 runs past the end of track 0 (3 bytes left): the track is damaged"))
}

@Test func errorMetaRunsOffTrackEnd() {
    let bytes = SMF.file([0x00, 0xFF, 0x03, 0x10, 0x41])
    #expect(parseError(bytes) == MIDIFileError(offset: 25, reason: "meta event 0x03 length 16 runs past the end of track 0 (1 byte left): the track is damaged"))
}

@Test func errorFiveByteVLQ() {
    let bytes = SMF.file([0x00, 0x90, 0x3C, 0x64, 0x81, 0x81, 0x81, 0x81, 0x00, 0x3C, 0x00] + SMF.endOfTrack)
    #expect(parseError(bytes) == MIDIFileError(offset: 26, reason: "delta time is a variable-length quantity of more than 4 bytes: the track is damaged"))
    // A 4-byte VLQ is fine: 0x0FFFFFFF ticks.
    let ok = try? MIDIFile(bytes: SMF.file([0xFF, 0xFF, 0xFF, 0x7F, 0x90, 0x3C, 0x64] + SMF.endOfTrack))
    #expect(ok?.tracks[0].events.first == ev(0x0FFF_FFFF, on(0, 60, 100)))
}

@Test func errorUnexpectedStatusByte() {
    let bytes = SMF.file([0x00, 0xF3, 0x01] + SMF.endOfTrack)
    #expect(parseError(bytes) == MIDIFileError(offset: 23, reason: "unexpected status byte 0xF3: only channel messages, SysEx (F0, F7) and meta events (FF) belong in a track"))
}

@Test func errorTruncatedEvents() {
    #expect(parseError(SMF.file([0x00, 0x90, 0x3C])) == MIDIFileError(offset: 25, reason: "track 0 ends inside a channel message: the track is damaged"))
    #expect(parseError(SMF.file([0x00, 0x90, 0x3C, 0x64, 0x81])) == MIDIFileError(offset: 27, reason: "track 0 ends inside a delta time: the track is damaged"))
    #expect(parseError(SMF.file([0x00, 0x90, 0x3C, 0x64, 0x10])) == MIDIFileError(offset: 27, reason: "track 0 ends after a delta time, with no event: the track is damaged"))
}

// MARK: - Tolerated oddities: a warning and the best reading

@Test func warnsKeySignatureWithEightSharps() throws {
    let file = try MIDIFile(bytes: SMF.file([0x00, 0xFF, 0x59, 0x02, 0x08, 0x00] + SMF.endOfTrack))
    #expect(file.tracks[0].events == [ev(0, .keySignature(sharps: 7, minor: false)), ev(0, .endOfTrack)])
    #expect(file.warnings == [MIDIFileWarning(offset: 26, message: "key signature with 8 sharps (at most 7 exist); using 7")])
}

@Test func warnsMissingEndOfTrack() throws {
    let bytes = SMF.file([0x00, 0x90, 0x3C, 0x64, 0x60, 0x80, 0x3C, 0x40])
    let file = try MIDIFile(bytes: bytes)
    #expect(file.tracks[0].events == [ev(0, on(0, 60, 100)), ev(96, off(0, 60, 64))])
    #expect(file.warnings == [MIDIFileWarning(offset: 30, message: "track 0 has no end of track event; it ends at its last event")])
    #expect(file.warnings[0].description == "byte 30: track 0 has no end of track event; it ends at its last event")
    // The schedule still ends at the last event.
    #expect(file.schedule(sampleRate: 48_000).endFrame == 4_800)
}

@Test func warnsVelocity255() throws {
    let file = try MIDIFile(bytes: SMF.file([0x00, 0x90, 0x3C, 0xFF, 0x00, 0x3E, 0x40] + SMF.endOfTrack))
    // Masked to 7 bits, and the byte count of the status is kept: the next event parses normally.
    #expect(file.tracks[0].events == [ev(0, on(0, 60, 127)), ev(0, on(0, 62, 64)), ev(0, .endOfTrack)])
    #expect(file.warnings == [MIDIFileWarning(offset: 25, message: "data byte 0xFF of a note-on message has the top bit set; using 0x7F")])
}

@Test func warnsDeclaredTrackCountMismatch() throws {
    let bytes = SMF.header(format: 1, tracks: 3) + SMF.track(SMF.endOfTrack) + SMF.track([0x00, 0x90, 0x3C, 0x64] + SMF.endOfTrack)
    let file = try MIDIFile(bytes: bytes)
    #expect(file.tracks.count == 2)
    #expect(file.tracks[1].events == [ev(0, on(0, 60, 100)), ev(0, .endOfTrack)])
    #expect(file.warnings == [MIDIFileWarning(offset: 10, message: "the header declares 3 tracks but the file has 2; using the 2 found")])
}

@Test func warnsUnknownChunk() throws {
    let bytes = SMF.header() + SMF.chunk("XFIL", [1, 2, 3, 4]) + SMF.track([0x00, 0x90, 0x3C, 0x64] + SMF.endOfTrack)
    let file = try MIDIFile(bytes: bytes)
    #expect(file.tracks.count == 1)
    #expect(file.tracks[0].events == [ev(0, on(0, 60, 100)), ev(0, .endOfTrack)])
    #expect(file.warnings == [MIDIFileWarning(offset: 14, message: "unknown chunk \"XFIL\" (4 bytes) skipped")])
}

@Test func warnsUnknownFormatAndLongHeader() throws {
    let bytes = Array("MThd".utf8) + SMF.be32(8) + [0, 3, 0, 1, 0, 96, 0xAA, 0xBB] + SMF.track(SMF.endOfTrack)
    let file = try MIDIFile(bytes: bytes)
    #expect(file.format == 1)
    #expect(file.division == .ticksPerQuarter(96))
    #expect(file.tracks[0].events == [ev(0, .endOfTrack)])
    #expect(file.warnings == [
        MIDIFileWarning(offset: 8, message: "unknown format 3; reading it as format 1 (simultaneous tracks)"),
        MIDIFileWarning(offset: 14, message: "MThd header is 8 bytes long; all but its first 6 are ignored"),
    ])
}

@Test func warnsBytesAfterEndOfTrack() throws {
    let file = try MIDIFile(bytes: SMF.file(SMF.endOfTrack + [0x00, 0x90, 0x3C, 0x64]))
    #expect(file.tracks[0].events == [ev(0, .endOfTrack)])
    #expect(file.warnings == [MIDIFileWarning(offset: 26, message: "4 bytes after the end of track 0 ignored")])
}

@Test func warnsZeroTempo() throws {
    let file = try MIDIFile(bytes: SMF.file([0x00, 0xFF, 0x51, 0x03, 0, 0, 0] + SMF.endOfTrack))
    #expect(file.tracks[0].events == [ev(0, .otherMeta(type: 0x51, bytes: [0, 0, 0])), ev(0, .endOfTrack)])
    #expect(file.warnings == [MIDIFileWarning(offset: 23, message: "tempo of 0 microseconds per quarter note ignored")])
    #expect(file.schedule(sampleRate: 48_000).frame(forTick: 480) == 24_000)
}

@Test func warnsUnterminatedSysExAtTrackEnd() throws {
    let file = try MIDIFile(bytes: SMF.file([0x00, 0xF0, 0x02, 0x43, 0x10]))
    #expect(file.tracks[0].events == [ev(0, .sysEx([0xF0, 0x43, 0x10, 0xF7]))])
    #expect(file.warnings == [
        MIDIFileWarning(offset: 27, message: "track 0 ends inside the SysEx message at byte 23 (no F7); sending it with F7 added"),
        MIDIFileWarning(offset: 27, message: "track 0 has no end of track event; it ends at its last event"),
    ])
}

@Test func capsTheNumberOfWarnings() throws {
    // 5000 note-ons with velocity 255: one warning each, but only 1000 are kept.
    var body: [UInt8] = []
    for _ in 0..<5000 { body += [0x00, 0x90, 0x3C, 0xFF] }
    let file = try MIDIFile(bytes: SMF.file(body + SMF.endOfTrack))
    #expect(file.tracks[0].events.count == 5001)
    #expect(file.warnings.count == MIDIFileReader.maxWarnings + 1)
    #expect(file.warnings.last?.message == "4000 more warnings not shown")
}

// MARK: - Robustness

/// Every prefix of a file, and thousands of random mutations of it, either
/// parse or throw; nothing traps or hangs, and the schedule of anything that
/// parses is sorted.
@Test func survivesTruncationAndMutation() {
    var writer = MIDIFileWriter(format: 1, ticksPerQuarter: 96)
    writer.addTrack([(0, .tempo(microsecondsPerQuarter: 400_000)), (0, .text(type: 3, bytes: Array("x".utf8))),
                     (0, .timeSignature(numerator: 3, denominatorPower: 2, clocksPerClick: 24, thirtySecondsPerQuarter: 8)),
                     (0, .keySignature(sharps: 2, minor: false)), (200, .tempo(microsecondsPerQuarter: 300_000))])
    writer.addTrack([(0, .otherMeta(type: 0x21, bytes: [1])), (0, on(16, 60, 100)), (10, on(16, 64, 90)),
                     (10, .sysEx([0xF0, 0x7E, 0x7F, 0x09, 0x01, 0xF7])), (50, off(16, 60)), (60, off(16, 64)),
                     (70, .message(.pitchBend(channel: 16, value: 100))), (80, .message(.controlChange(channel: 16, controller: 7, value: 90)))])
    let good = writer.bytes()

    func check(_ bytes: [UInt8]) {
        if let file = try? MIDIFile(bytes: bytes) {
            let s = file.schedule(sampleRate: 44_100)
            #expect(s.events.map(\.frame) == s.events.map(\.frame).sorted())
        }
    }
    for n in 0...good.count { check(Array(good[0..<n])) }

    var rng = SplitMix64(seed: 0x5EED)
    for _ in 0..<4000 {
        var b = good
        for _ in 0..<Int.random(in: 1...4, using: &rng) {
            let i = Int.random(in: 0..<b.count, using: &rng)
            switch Int.random(in: 0..<4, using: &rng) {
            case 0: b[i] = UInt8.random(in: 0...255, using: &rng)
            case 1: b[i] ^= 1 << UInt8.random(in: 0...7, using: &rng)
            case 2: b.insert(UInt8.random(in: 0...255, using: &rng), at: i)
            default: if b.count > 1 { b.remove(at: i) }
            }
        }
        check(b)
    }
}

/// A SysEx split into 100,000 one-byte continuation packets is reassembled in
/// linear time.
@Test func manyContinuationPacketsAreLinear() throws {
    var body: [UInt8] = [0x00, 0xF0, 0x01, 0x43]
    for _ in 0..<100_000 { body += [0x00, 0xF7, 0x01, 0x10] }
    body += [0x00, 0xF7, 0x01, 0xF7] + SMF.endOfTrack
    let file = try MIDIFile(bytes: SMF.file(body))
    guard case .sysEx(let message)? = file.tracks[0].events.first?.kind else {
        Issue.record("expected a SysEx message")
        return
    }
    #expect(message.count == 100_003)
    #expect(message.first == 0xF0 && message[1] == 0x43 && message.last == 0xF7)
    #expect(file.warnings.isEmpty)
}

// MARK: - Bounded reading (pipes, devices, huge files)

/// A pipe holding `bytes`, its write end left open when `close` is false
/// (a stream that has not ended).
private func pipeHolding(_ bytes: [UInt8], close closeWriter: Bool) -> (read: Int32, write: Int32) {
    var fds: [Int32] = [0, 0]
    precondition(pipe(&fds) == 0)
    _ = bytes.withUnsafeBytes { write(fds[1], $0.baseAddress, $0.count) }
    if closeWriter { close(fds[1]); fds[1] = -1 }
    return (fds[0], fds[1])
}

@Test func aStreamThatIsNotMIDIIsRefusedAfterItsFirstBytesWithoutWaitingForItsEnd() throws {
    // Zeros that never end (the writer stays open): reading it whole would hang.
    let p = pipeHolding([UInt8](repeating: 0, count: 4096), close: false)
    defer { close(p.read); close(p.write) }
    #expect(throws: MIDIFileError(offset: 0, reason: "not a Standard MIDI File (no MThd header)")) {
        try MIDIFile(fileDescriptor: p.read)
    }
}

@Test func aStreamLongerThanTheLimitIsRefused() throws {
    let file = SMF.file([0x00, 0x90, 0x3C, 0x64, 0x60, 0x80, 0x3C, 0x00, 0x00, 0xFF, 0x2F, 0x00])
    let p = pipeHolding(file + [UInt8](repeating: 0, count: 3000), close: true)
    defer { close(p.read) }
    #expect(throws: MIDIFileError.self) { try MIDIFileReaderBound.read(p.read, limit: 1000) }
    // Within the limit, the same stream is read.
    let q = pipeHolding(file, close: true)
    defer { close(q.read) }
    #expect(try MIDIFileReaderBound.read(q.read, limit: 1000).count == file.count)
}

@Test func aRegularFileLargerThanTheLimitIsRefusedByItsSizeBeforeItIsRead() throws {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("spinet-big-\(getpid()).mid").path
    defer { unlink(path) }
    let header = SMF.header()
    FileManager.default.createFile(atPath: path, contents: Data(header))
    // Sparse: 300 MB that take no disk space and would take 300 MB of memory if read.
    #expect(truncate(path, off_t(300 << 20)) == 0)
    do {
        _ = try MIDIFile(path: path)
        Issue.record("a 300 MB file was read")
    } catch {
        #expect(error.reason.contains("314572800 bytes long"))
        #expect(error.reason.contains("256 MB"))
    }
    #expect(MIDIFile.maxFileBytes == 256 << 20)
}

private enum MIDIFileReaderBound {
    static func read(_ fd: Int32, limit: Int) throws(MIDIFileError) -> [UInt8] {
        try MIDIFile.readBounded(fd, limit: limit)
    }
}
