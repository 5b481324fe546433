// libFuzzer target for the Standard MIDI File reader (SpinetMIDI/MIDIFile.swift)
// and the schedule built from what it reads (SpinetMIDI/MIDISchedule.swift).
//
// Built by scripts/fuzz.sh against the SpinetMIDI module (compiled under
// -sanitize=fuzzer,address with -enable-testing, for its internals).
//
// Beyond "no trap, no hang, no huge allocation" (libFuzzer's -timeout and
// -malloc_limit_mb catch the last two), each input checks what the reader
// promises, and a failed promise is a crash:
// - an error names a byte inside the file (0...size);
// - ticks never decrease within a track; at most 1001 warnings;
// - reading is a fixed point through the writer (inputs up to 4 KB): what was
//   read, written with MIDIFileWriter and read again, gives the same events
//   (End of Track aside, which the writer always adds), and writing that
//   again changes nothing;
// - the schedule is sorted by frame and has no event before frame 0, and its
//   SysEx indices are valid.

@testable import SpinetMIDI

@_cdecl("LLVMFuzzerTestOneInput")
public func midiFileFuzzInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let file: MIDIFile
    do {
        file = try MIDIFile(bytes: bytes)
    } catch {
        check(error.offset >= 0 && error.offset <= size, "error offset \(error.offset) outside the file (size \(size)): \(error)")
        check(!error.reason.isEmpty, "an error without a reason")
        return 0
    }
    check(file.warnings.count <= MIDIFileReader.maxWarnings + 1, "\(file.warnings.count) warnings kept")
    for w in file.warnings {
        check(w.offset >= 0 && w.offset <= size, "warning offset \(w.offset) outside the file (size \(size)): \(w)")
    }
    for (t, track) in file.tracks.enumerated() {
        var last: Int64 = 0
        for e in track.events {
            check(e.tick >= last, "track \(t): tick \(e.tick) after \(last)")
            last = e.tick
            if case .sysEx(let s) = e.kind {
                check(s.count >= 2 && s.first == 0xF0 && s.last == 0xF7, "SysEx not F0 ... F7: \(s.prefix(8))")
            }
        }
    }

    // The writer round trip, on small inputs only: the writer is slow under
    // the sanitizers (milliseconds for a 9 KB file) and mutations of small
    // inputs reach the same cases.
    if size <= 4096 {
        let again = roundTrip(file)
        check(again.tracks.count == file.tracks.count, "round trip: \(file.tracks.count) tracks became \(again.tracks.count)")
        for (a, b) in zip(file.tracks, again.tracks) {
            check(withoutEndOfTrack(a) == withoutEndOfTrack(b), "round trip changed a track")
        }
        let third = roundTrip(again)
        check(third.tracks == again.tracks, "a second round trip changed a track")
    }

    // The schedule, at a rate chosen by the input (the end of the file is
    // the part mutations touch least, so use its length instead).
    let rates = [22050, 44100, 48000, 96000, 192000]
    let schedule = file.schedule(sampleRate: rates[size % rates.count])
    var lastFrame = Int64.min
    for e in schedule.events {
        check(e.frame >= 0, "scheduled event at negative frame \(e.frame)")
        check(e.frame >= lastFrame, "schedule out of order: frame \(e.frame) after \(lastFrame)")
        lastFrame = e.frame
        if case .sysEx(let i) = e.kind {
            check(i >= 0 && i < schedule.sysEx.count, "SysEx index \(i) of \(schedule.sysEx.count)")
        }
    }
    check(schedule.endFrame >= 0, "negative end frame \(schedule.endFrame)")
    return 0
}

private func roundTrip(_ file: MIDIFile) -> MIDIFile {
    var writer: MIDIFileWriter
    switch file.division {
    case .ticksPerQuarter(let q):
        writer = MIDIFileWriter(format: file.format, ticksPerQuarter: q)
    case .smpte(let fps, let tpf):
        writer = MIDIFileWriter(format: file.format, smpteFramesPerSecond: fps, ticksPerFrame: tpf)
    }
    for track in file.tracks {
        writer.addTrack(track.events.map { (tick: $0.tick, event: $0.kind) })
    }
    do {
        return try MIDIFile(bytes: writer.bytes())
    } catch {
        check(false, "the writer's output does not read back: \(error)")
        return file
    }
}

private func withoutEndOfTrack(_ track: Track) -> [TrackEvent] {
    track.events.filter { if case .endOfTrack = $0.kind { return false } else { return true } }
}

private func check(_ condition: Bool, _ message: @autoclosure () -> String) {
    if !condition { fatalError(message()) }
}
