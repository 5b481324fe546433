import Foundation
import Testing
import SpinetTestSupport
@testable import SpinetMIDI

// Replays every input that ever broke Spinet (Regressions/, see its README)
// and the fuzzers' hand-made seeds (Fuzz/corpus/), with the checks the fuzz
// targets make: nothing traps, a parse takes well under a second, errors
// point inside the file, what reads survives the writer round trip, and its
// schedule is sorted, never before frame 0 and never past its end frame, at
// every sample rate.

private let testsFolder = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
private let regressions = testsFolder.appendingPathComponent("Regressions")


private let midiFileInputs = regressionInputs(regressions.appendingPathComponent("midi-file"), fuzzer: "MIDIFileFuzzer")
private let byteStreamInputs = regressionInputs(regressions.appendingPathComponent("byte-parser"), fuzzer: "MIDIByteParserFuzzer")

@Suite("Regressions")
struct RegressionTests {
    @Test func theRegressionFoldersAreFound() {
        #expect(regressionInputs(regressions.appendingPathComponent("midi-file")).count >= 3, "\(regressions.path)")
        #expect(midiFileInputs.count >= 40 && byteStreamInputs.count >= 10)
    }

    @Test(arguments: midiFileInputs)
    func midiFileReadsOrFailsCleanly(path: String) throws {
        let name = URL(fileURLWithPath: path).lastPathComponent
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        let clock = ContinuousClock()
        let start = clock.now
        let file: MIDIFile
        do {
            file = try MIDIFile(bytes: bytes)
        } catch {
            #expect(error.offset >= 0 && error.offset <= bytes.count, "\(name): \(error)")
            #expect(clock.now - start < .seconds(2), "\(name): reading took \(clock.now - start)")
            return
        }
        for w in file.warnings {
            #expect(w.offset >= 0 && w.offset <= bytes.count, "\(name): \(w)")
        }
        for track in file.tracks {
            let ticks = track.events.map(\.tick)
            #expect(ticks == ticks.sorted(), "\(name): ticks go back in time")
        }
        // What was read, written and read again, is the same (End of Track aside,
        // which the writer always adds); a second round trip changes nothing.
        let again = try roundTrip(file)
        #expect(again.tracks.map(withoutEndOfTrack) == file.tracks.map(withoutEndOfTrack), "\(name): the writer round trip changed it")
        #expect(try roundTrip(again).tracks == again.tracks, "\(name): a second round trip changed it")
        for rate in [22050, 44100, 48000, 96000, 192000] {
            let s = file.schedule(sampleRate: rate)
            let frames = s.events.map(\.frame)
            #expect(frames == frames.sorted(), "\(name) at \(rate) Hz: the schedule is not sorted")
            #expect((frames.min() ?? 0) >= 0, "\(name) at \(rate) Hz: an event at frame \(frames.min() ?? 0)")
            #expect(s.endFrame >= (frames.max() ?? 0), "\(name) at \(rate) Hz: an event after the end frame \(s.endFrame)")
            for case .sysEx(let i) in s.events.map(\.kind) {
                #expect(i >= 0 && i < s.sysEx.count)
            }
        }
        #expect(clock.now - start < .seconds(5), "\(name): reading and scheduling took \(clock.now - start)")
    }

    /// A byte stream in the fuzzer's layout: the same output whether it
    /// arrives at once, byte by byte or in packets, and only well-formed output.
    @Test(arguments: byteStreamInputs)
    func byteStreamParsesTheSameWayInAnyPackets(path: String) throws {
        let name = URL(fileURLWithPath: path).lastPathComponent
        let input = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        guard input.count >= 3 else { return }
        let limits = [0, 1, 2, 3, 5, 16, 64, 65536]
        let maxSysEx = limits[Int(input[1]) % limits.count]
        let packet = Int(input[2]) % 17 + 1
        let stream = Array(input[3...])

        func run(_ packets: [ArraySlice<UInt8>]) -> [Got] {
            var parser = MIDIByteParser(port: input[0], maxSysExBytes: maxSysEx)
            var out: [Got] = []
            for p in packets {
                Array(p).withUnsafeBufferPointer { b in parser.parse(b) { out.append(Got($0)) } }
            }
            return out
        }
        let whole = run([stream[...]])
        #expect(run(stream.indices.map { stream[$0...$0] }) == whole, "\(name): byte by byte")
        #expect(run(stride(from: 0, to: stream.count, by: packet).map { stream[$0..<min($0 + packet, stream.count)] }) == whole, "\(name): packets of \(packet)")
        for o in whole {
            switch o {
            case .message(let m):
                if let c = m.channel { #expect(Int(c) / 16 == Int(min(input[0], 15)), "\(name): \(m)") }
            case .sysEx(let s):
                #expect(s.count >= 2 && s.count <= maxSysEx && s.first == 0xF0 && s.last == 0xF7, "\(name): \(s)")
                #expect(s.dropFirst().dropLast().allSatisfy { $0 < 0x80 }, "\(name): \(s)")
            case .tooLong(let n):
                #expect(n > maxSysEx, "\(name)")
            case .realtime(let b):
                #expect(b >= 0xF8 && b < 0xFF, "\(name)")
            }
        }
    }
}

/// Writes `file` with MIDIFileWriter and reads it back.
private func roundTrip(_ file: MIDIFile) throws -> MIDIFile {
    var writer: MIDIFileWriter
    switch file.division {
    case .ticksPerQuarter(let q): writer = MIDIFileWriter(format: file.format, ticksPerQuarter: q)
    case .smpte(let fps, let tpf): writer = MIDIFileWriter(format: file.format, smpteFramesPerSecond: fps, ticksPerFrame: tpf)
    }
    for track in file.tracks { writer.addTrack(track.events.map { (tick: $0.tick, event: $0.kind) }) }
    return try MIDIFile(bytes: writer.bytes())
}

private func withoutEndOfTrack(_ track: Track) -> [TrackEvent] {
    track.events.filter { if case .endOfTrack = $0.kind { return false } else { return true } }
}

