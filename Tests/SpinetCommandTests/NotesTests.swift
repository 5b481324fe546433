import Foundation
import Glibc
import Testing
import SpinetMIDI
import SpinetTestSupport

// `spinet render --notes`: one row per note, where it sounds in the output.

@Suite("spinet render --notes")
struct NotesTests {
    /// 480 ticks a quarter at 120 bpm: 960 ticks a second, 50 frames a tick at 48 kHz.
    static let framesPerTick: Int64 = 50

    /// Four notes on channel 1, 1 s apart plus a few ticks (so that they fall
    /// off FluidSynth's 64-frame grid), 0.3 s long; the last one held by the
    /// sustain pedal until 0.2 s after its note-off.
    static func fourNotes() -> (bytes: [UInt8], onsets: [Int64], offsets: [Int64]) {
        var w = MIDIFileWriter(format: 0, ticksPerQuarter: 480)
        var events: [(tick: Int64, event: TrackEvent.Kind)] = []
        var onsets: [Int64] = [], offsets: [Int64] = []
        for i in 0..<4 {
            let on = Int64(960 * (i + 1) + 3 * i + 1), off = on + 300
            let key = UInt8(60 + i)
            events.append((on, .message(.noteOn(channel: 0, key: key, velocity: 100))))
            if i == 3 {
                events.append((on + 10, .message(.controlChange(channel: 0, controller: 64, value: 127))))
                events.append((off, .message(.noteOff(channel: 0, key: key, velocity: 0))))
                events.append((off + 192, .message(.controlChange(channel: 0, controller: 64, value: 0))))
                offsets.append((off + 192) * framesPerTick)
            } else {
                events.append((off, .message(.noteOff(channel: 0, key: key, velocity: 0))))
                offsets.append(off * framesPerTick)
            }
            onsets.append(on * framesPerTick)
        }
        w.addTrack(events)
        return (w.bytes(), onsets, offsets)
    }

    struct Row {
        var fields: [String: String]
        var onset: Int64 { Int64(fields["onset_frame"]!)! }
        var offset: Int64 { Int64(fields["offset_frame"]!)! }
    }

    static func rows(_ path: URL) throws -> [Row] {
        let lines = try String(contentsOf: path, encoding: .utf8).split(separator: "\n").map(String.init)
        let header = lines[0].split(separator: ",").map(String.init)
        #expect(header == ["onset_frame", "offset_frame", "onset_s", "offset_s", "port", "channel", "key", "velocity",
                           "program", "bank", "instrument", "stem", "sounded"])
        return lines.dropFirst().map { line in
            Row(fields: Dictionary(uniqueKeysWithValues: zip(header, line.split(separator: ",", omittingEmptySubsequences: false).map(String.init))))
        }
    }

    /// The frame where sound starts near `frame`: the first sample well above what came before.
    static func soundStart(_ x: [Float], near frame: Int64) -> Int64 {
        let f = Int(frame)
        let before = x[(f - 600)..<(f - 150)].map { abs($0) }.max() ?? 0
        let threshold = max(1e-5, 4 * before)
        var j = f - 150
        while j < x.count && abs(x[j]) <= threshold { j += 1 }
        return Int64(j)
    }

    static func render(_ extra: [String], in dir: URL, name: String) throws -> (audio: [Float], rows: [Row]) {
        let piece = fourNotes()
        let input = try write(piece.bytes, to: dir, "four.mid")
        let wav = dir.appendingPathComponent(name + ".wav"), csv = dir.appendingPathComponent(name + ".csv")
        let r = try SpinetCommand.run(["render", input, "-o", wav.path, "--notes", csv.path, "--soundfont", font,
                                       "--dry", "--bits", "32f", "--quiet"] + extra)
        #expect(r.status == 0, "\(r.stderr)")
        return (try WAVFile(data: Data(contentsOf: wav)).channel(0), try rows(csv))
    }

    @Test func theSynthsOnsetsAreExactToTheFrame() throws {
        let dir = try SpinetCommand.temporaryDirectory("notes-synth")
        let (x, rows) = try Self.render(["--channel", "1=synth:sine"], in: dir, name: "synth")
        let piece = Self.fourNotes()
        #expect(rows.count == 4)
        for (row, onset) in zip(rows, piece.onsets) {
            #expect(row.onset == onset, "the event's own frame")
            #expect(Self.soundStart(x, near: row.onset) == row.onset, "sound starts at the labelled frame")
            #expect(row.fields["instrument"] == "sine" && row.fields["bank"] == "126")
        }
        #expect(rows.map(\.offset) == piece.offsets, "note-offs, and the pedal's release for the held note")
    }

    @Test func soundFontOnsetsAreTheDeliveredGridFrames() throws {
        let dir = try SpinetCommand.temporaryDirectory("notes-sf")
        let (x, rows) = try Self.render([], in: dir, name: "sf")
        let piece = Self.fourNotes()
        #expect(rows.count == 4)
        for (row, onset) in zip(rows, piece.onsets) {
            #expect(row.onset % 64 == 0 && abs(row.onset - onset) <= 32, "the grid point nearest \(onset): \(row.onset)")
            let start = Self.soundStart(x, near: row.onset)
            #expect(abs(start - row.onset) <= 16, "sound starts at \(start), labelled \(row.onset)")
            #expect(row.fields["instrument"] == "Piano 1" && row.fields["sounded"] == "true")
        }
        #expect(zip(rows.map(\.offset), piece.offsets).allSatisfy { $0 % 64 == 0 && abs($0 - $1) <= 32 })
    }

    @Test func mutedNotesAreMarkedAndJSONAndBatchWork() throws {
        let dir = try SpinetCommand.temporaryDirectory("notes-json")
        let input = try write(MuteSoloCommandTests.twoChannels(), to: dir, "two.mid")
        let json = dir.appendingPathComponent("two.json")
        let r = try SpinetCommand.run(["render", input, "-o", dir.appendingPathComponent("two.wav").path, "--notes", json.path,
                                       "--soundfont", font, "--mute", "2", "--quiet"])
        #expect(r.status == 0, "\(r.stderr)")
        let rows = try JSONSerialization.jsonObject(with: Data(contentsOf: json)) as! [[String: Any]]
        #expect(rows.count == 2)
        #expect(rows.map { $0["channel"] as? Int } == [1, 2])
        #expect(rows.map { $0["sounded"] as? Bool } == [true, false])

        let out = dir.appendingPathComponent("batch")
        let notes = dir.appendingPathComponent("labels")
        let b = try SpinetCommand.run(["render", input, try write(Self.fourNotes().bytes, to: dir, "four.mid"),
                                       "-o", out.path + "/", "--notes", notes.path + "/", "--soundfont", font, "--quiet"])
        #expect(b.status == 0, "\(b.stderr)")
        #expect(Set(listing(notes)) == ["two.csv", "four.csv"])
        #expect(try Self.rows(notes.appendingPathComponent("four.csv")).count == 4)
    }
}
