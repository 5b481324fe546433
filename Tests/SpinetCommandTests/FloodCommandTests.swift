import Foundation
import Testing
import SpinetMIDI
import SpinetTestSupport

@Suite("spinet render: event floods", .serialized)
struct FloodCommandTests {
    /// An organ note, then 20,000 expression values and 5,000 sustain
    /// toggles at one tick, then its note-off: the render drops nothing,
    /// and the note stops after its release (the render ends a few seconds
    /// after the note-off instead of at the 10 s cap), on one thread and two.
    @Test(arguments: [1, 2])
    func aFloodedNoteStillEnds(threads: Int) throws {
        let dir = try SpinetCommand.temporaryDirectory("flood")
        defer { try? FileManager.default.removeItem(at: dir) }
        let input = try Self.writeFloodFile(in: dir)
        let out = dir.appendingPathComponent("flood.wav").path
        let r = try SpinetCommand.run(["render", input.path, "-o", out, "--soundfont", font, "--dry", "--bits", "32f", "--threads", "\(threads)"])
        #expect(r.status == 0, "\(r.stderr)")
        let summary = r.stderr.split(separator: "\n").last.map(String.init) ?? ""
        #expect(summary.contains(" 0 events dropped"), "\(summary)")
        #expect(!r.stderr.contains("Ringbuffer full"), "\(r.stderr)")
        let wav = try WAVFile(data: Data(contentsOf: URL(fileURLWithPath: out)))
        let off = 48000    // tick 960 at 120 bpm: 1 s
        #expect(wav.frames < off + 4 * 48000, "the render ran \(Double(wav.frames) / 48000) s: the note held")
        let left = wav.channel(0)
        if left.count > off + 72_000 {
            let tail = SignalAnalysis.peak(left[(off + 72_000)...])
            #expect(SignalAnalysis.dBFS(tail) < -90, "\(SignalAnalysis.dBFS(tail)) dBFS 1.5 s after the note-off")
        }
    }

    /// A flood is carried over block by block the same way on one render
    /// thread and two: the same bytes.
    @Test func aFloodRendersTheSameOnOneThreadAndTwo() throws {
        let dir = try SpinetCommand.temporaryDirectory("flood-threads")
        defer { try? FileManager.default.removeItem(at: dir) }
        let input = try Self.writeFloodFile(in: dir)
        var outputs: [Data] = []
        for threads in [1, 2] {
            let out = dir.appendingPathComponent("t\(threads).wav")
            let r = try SpinetCommand.run(["render", input.path, "-o", out.path, "--soundfont", font, "--threads", "\(threads)"])
            #expect(r.status == 0, "\(r.stderr)")
            outputs.append(try Data(contentsOf: out))
        }
        #expect(outputs[0] == outputs[1])
    }

    /// Note on/off pairs at one tick, then the note-offs of organ chords:
    /// on the flood's channel or others, with the flood on the drum channel,
    /// at any polyphony, every chord stops after its release (its level
    /// 3 s after the note-offs is 40 dB under that before them, or the
    /// render has ended), nothing is dropped, and the summary counts what
    /// the flood delayed.
    @Test(arguments: [
        NotePairFlood(pairs: 2_000, channel: 0, chords: [1], polyphony: 256),
        NotePairFlood(pairs: 20_000, channel: 0, chords: [1], polyphony: 256),
        NotePairFlood(pairs: 2_000, channel: 0, chords: [0], polyphony: 256),
        NotePairFlood(pairs: 2_000, channel: 9, chords: [0, 1, 4], polyphony: 256),
        NotePairFlood(pairs: 2_000, channel: 0, chords: [1, 2], polyphony: 16),
        NotePairFlood(pairs: 2_000, channel: 0, chords: [1], polyphony: 1),
    ])
    func chordsStopAfterANotePairFlood(_ flood: NotePairFlood) throws {
        try Self.checkChordsStop(flood)
    }

    /// The largest polyphony (FluidSynth's ring is then 4 million entries,
    /// and a flood still delays nothing past a release).
    @Test(.slow) func chordsStopAfterANotePairFloodAtTheLargestPolyphony() throws {
        try Self.checkChordsStop(NotePairFlood(pairs: 2_000, channel: 0, chords: [1], polyphony: 65535))
    }

    struct NotePairFlood: CustomTestStringConvertible, Sendable {
        var pairs: Int
        /// The flood's channel (0-based; 9 is the drum channel).
        var channel: UInt8
        var chords: [UInt8]
        var polyphony: Int
        var testDescription: String { "\(pairs) pairs on channel \(channel + 1), chords on \(chords.map { $0 + 1 }), --polyphony \(polyphony)" }
    }

    static func checkChordsStop(_ flood: NotePairFlood) throws {
        let dir = try SpinetCommand.temporaryDirectory("pair-flood")
        defer { try? FileManager.default.removeItem(at: dir) }
        var writer = MIDIFileWriter(format: 0, ticksPerQuarter: 480)
        var events: [(tick: Int64, event: TrackEvent.Kind)] = []
        let keys: [UInt8] = [60, 64, 67]
        for ch in flood.chords { events.append((0, .message(.programChange(channel: ch, program: 19)))) }
        for ch in flood.chords { for k in keys { events.append((0, .message(.noteOn(channel: ch, key: k, velocity: 90)))) } }
        for i in 0..<flood.pairs {
            // one key (each note-on releases again every voice of the key
            // still sounding), or on the drum channel short drums
            let key = flood.channel == 9 ? UInt8(36 + i % 8) : 60
            events.append((960, .message(.noteOn(channel: flood.channel, key: key, velocity: 100))))
            events.append((960, .message(.noteOff(channel: flood.channel, key: key, velocity: 0))))
        }
        for ch in flood.chords { for k in keys { events.append((960, .message(.noteOff(channel: ch, key: k, velocity: 0)))) } }
        writer.addTrack(events)
        let input = dir.appendingPathComponent("pairs.mid")
        try Data(writer.bytes()).write(to: input)
        let out = dir.appendingPathComponent("pairs.wav").path
        let r = try SpinetCommand.run(["render", input.path, "-o", out, "--soundfont", font, "--dry", "--bits", "32f",
                                       "--polyphony", "\(flood.polyphony)"], timeout: 600)
        #expect(r.status == 0, "\(r.stderr)")
        let summary = r.stderr.split(separator: "\n").last.map(String.init) ?? ""
        #expect(summary.contains(" 0 events dropped"), "\(summary)")
        #expect(!summary.contains("did not decay"), "\(summary)")
        #expect(!r.stderr.contains("Ringbuffer full"), "\(r.stderr.prefix(300))")
        if flood.polyphony <= 256 { #expect(summary.contains("delayed by a flood"), "\(summary)") }
        let wav = try WAVFile(data: Data(contentsOf: URL(fileURLWithPath: out)))
        let off = 48000    // tick 960 at 120 bpm: 1 s
        let left = wav.channel(0)
        let before = SignalAnalysis.rms(left[(off - 24_000)..<(off - 2_400)])
        #expect(SignalAnalysis.dBFS(before) > -60, "the chords did not sound: \(SignalAnalysis.dBFS(before)) dBFS")
        let window = (off + 3 * 48000)..<(off + 3 * 48000 + 24_000)
        if left.count >= window.upperBound {
            let after = SignalAnalysis.rms(left[window])
            #expect(SignalAnalysis.dBFS(after) < SignalAnalysis.dBFS(before) - 40,
                    "3 s after the note-offs \(SignalAnalysis.dBFS(after)) dBFS, before them \(SignalAnalysis.dBFS(before)) dBFS: a chord held")
        }
    }

    /// The flood file: organ notes on channels 1 and 2 (two synthesizers
    /// with two threads), the flood at 1 s on channel 1, then the note-offs.
    static func writeFloodFile(in dir: URL) throws -> URL {
        var writer = MIDIFileWriter(format: 1, ticksPerQuarter: 480)
        var events: [(tick: Int64, event: TrackEvent.Kind)] = [
            (0, .message(.programChange(channel: 0, program: 16))),
            (0, .message(.noteOn(channel: 0, key: 57, velocity: 100))),
            (0, .message(.noteOn(channel: 0, key: 64, velocity: 100))),
        ]
        for i in 0..<20_000 { events.append((960, .message(.controlChange(channel: 0, controller: 11, value: UInt8(i % 128))))) }
        for i in 0..<5_000 {
            events.append((960, .message(.controlChange(channel: 0, controller: 64, value: i % 2 == 0 ? 127 : 0))))
            events.append((960, .message(.pitchBend(channel: 0, value: UInt16(8192 + i % 100)))))
        }
        events.append((960, .message(.noteOff(channel: 0, key: 57, velocity: 0))))
        events.append((960, .message(.noteOff(channel: 0, key: 64, velocity: 0))))
        writer.addTrack(events)
        writer.addTrack([(0, .message(.programChange(channel: 1, program: 19))),
                         (0, .message(.noteOn(channel: 1, key: 48, velocity: 80))),
                         (960, .message(.noteOff(channel: 1, key: 48, velocity: 0)))])
        let input = dir.appendingPathComponent("flood.mid")
        try Data(writer.bytes()).write(to: input)
        return input
    }
}
