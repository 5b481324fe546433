import CEBUR128
import Foundation
import Testing
import SpinetMIDI
import SpinetTestSupport

// `spinet render --normalize LUFS`: the output's integrated loudness, read
// back from the file, lands within 0.1 LU of the target, on files that need
// gain up and down and one that drives the limiter; the ceiling holds.

@Suite("spinet render --normalize")
struct NormalizeTests {
    /// Integrated loudness of a stereo WAV file (EBU R128, libebur128).
    static func loudness(_ path: URL) throws -> (lufs: Double, peak: Float) {
        let wav = try WAVFile(data: Data(contentsOf: path))
        let st = ebur128_init(2, UInt(wav.sampleRate), Int32(EBUR128_MODE_I.rawValue))
        var state = st
        defer { ebur128_destroy(&state) }
        wav.samples.withUnsafeBufferPointer { _ = ebur128_add_frames_float(st, $0.baseAddress, wav.frames) }
        var out = -Double.infinity
        _ = ebur128_loudness_global(st, &out)
        return (out, wav.samples.map { abs($0) }.max() ?? 0)
    }

    /// A quiet melody, a loud passage of chords and drums, and the synth's saw lead.
    static func pieces() -> [(String, [UInt8], [String])] {
        func piece(_ build: (inout [(tick: Int64, event: TrackEvent.Kind)]) -> Void) -> [UInt8] {
            var w = MIDIFileWriter(format: 0, ticksPerQuarter: 480)
            var events: [(tick: Int64, event: TrackEvent.Kind)] = []
            build(&events)
            w.addTrack(events)
            return w.bytes()
        }
        let quiet = piece { e in
            e.append((0, .message(.controlChange(channel: 0, controller: 7, value: 40))))
            for i in 0..<16 {
                e.append((Int64(i * 240), .message(.noteOn(channel: 0, key: UInt8(60 + (i * 5) % 12), velocity: 50))))
                e.append((Int64(i * 240 + 220), .message(.noteOff(channel: 0, key: UInt8(60 + (i * 5) % 12), velocity: 0))))
            }
        }
        let loud = piece { e in
            for i in 0..<16 {
                let t = Int64(i * 240)
                for (c, key) in [(0, 48), (0, 55), (0, 64), (1, 36), (2, 60), (2, 67)] {
                    e.append((t, .message(.noteOn(channel: UInt8(c), key: UInt8(key), velocity: 127))))
                    e.append((t + 230, .message(.noteOff(channel: UInt8(c), key: UInt8(key), velocity: 0))))
                }
                e.append((t, .message(.noteOn(channel: 9, key: i % 2 == 0 ? 36 : 38, velocity: 127))))
                e.append((t + 100, .message(.noteOff(channel: 9, key: i % 2 == 0 ? 36 : 38, velocity: 0))))
            }
        }
        let lead = piece { e in
            for i in 0..<12 {
                e.append((Int64(i * 320), .message(.noteOn(channel: 0, key: UInt8(57 + (i * 7) % 12), velocity: 100))))
                e.append((Int64(i * 320 + 300), .message(.noteOff(channel: 0, key: UInt8(57 + (i * 7) % 12), velocity: 0))))
            }
        }
        return [("quiet", quiet, []), ("loud", loud, ["--gain", "12"]), ("lead", lead, ["--channel", "1=synth:saw-lead"])]
    }

    @Test func theOutputLandsWithinATenthOfALoudnessUnit() throws {
        let dir = try SpinetCommand.temporaryDirectory("normalize")
        for ((name, bytes, extra), target) in zip(Self.pieces(), [-16.0, -23.0, -14.0]) {
            let input = try write(bytes, to: dir, name + ".mid")
            let out = dir.appendingPathComponent(name + ".wav")
            let r = try SpinetCommand.run(["render", input, "-o", out.path, "--soundfont", font, "--bits", "32f",
                                           "--normalize", "\(Int(target))"] + extra)
            #expect(r.status == 0, "\(r.stderr)")
            #expect(r.stderr.contains("LUFS"), "the summary says what was measured: \(r.stderr)")
            let (lufs, peak) = try Self.loudness(out)
            #expect(abs(lufs - target) <= 0.1, "\(name): \(lufs) LUFS for a target of \(target)")
            #expect(peak <= 0.8913, "\(name): the ceiling (-1 dBFS) holds: \(peak)")
        }
    }

    /// Quiet targets on a short note: far below the ceiling the limiter does
    /// nothing, so each output is the render times one gain, and two targets
    /// 40 dB apart give outputs 40 dB apart, with no warning blaming the
    /// limiter. (Measured after the gain, the -70 LUFS gate took the quiet
    /// output's blocks away and the gain went wrong by over 2 dB.)
    @Test(arguments: [-70.0, -60.0, -45.0])
    func aQuietTargetGetsExactlyItsGain(_ target: Double) throws {
        let dir = try SpinetCommand.temporaryDirectory("normalize-quiet")
        defer { try? FileManager.default.removeItem(at: dir) }
        var w = MIDIFileWriter(format: 0, ticksPerQuarter: 480)
        w.addTrack([(0, .message(.noteOn(channel: 0, key: 60, velocity: 100))), (48, .message(.noteOff(channel: 0, key: 60, velocity: 0)))])
        let input = try write(w.bytes(), to: dir, "short.mid")
        var peaks: [Float] = []
        for t in [-30.0, target] {
            let out = dir.appendingPathComponent("\(Int(t)).wav")
            let r = try SpinetCommand.run(["render", input, "-o", out.path, "--soundfont", font, "--bits", "32f", "--normalize", "\(Int(t))"])
            #expect(r.status == 0, "\(r.stderr)")
            #expect(!r.stderr.contains("limiter") && !r.stderr.contains("warning"), "\(r.stderr)")
            #expect(r.stderr.contains("to \(Int(t)).0 LUFS"), "\(r.stderr)")
            peaks.append(try Self.loudness(out).peak)
        }
        let apart = 20 * log10(Double(peaks[1] / peaks[0]))
        #expect(abs(apart - (target + 30)) < 0.05, "\(apart) dB apart for targets \(target + 30) dB apart")
    }

    @Test func normalizedRendersAreDeterministic() throws {
        let dir = try SpinetCommand.temporaryDirectory("normalize-same")
        let (name, bytes, extra) = Self.pieces()[1]
        let input = try write(bytes, to: dir, name + ".mid")
        var outputs: [Data] = []
        for i in 0..<2 {
            let out = dir.appendingPathComponent("\(i).wav")
            let r = try SpinetCommand.run(["render", input, "-o", out.path, "--soundfont", font, "--normalize", "-14", "--quiet"] + extra)
            #expect(r.status == 0, "\(r.stderr)")
            outputs.append(try Data(contentsOf: out))
        }
        #expect(outputs[0] == outputs[1])
    }

    @Test(arguments: [["--normalize", "5"], ["--normalize", "-100"], ["--normalize", "nan"], ["--normalize", "-14", "-o", "-"]])
    func badTargetsAreRefusedBeforeAnyWork(extra: [String]) throws {
        let dir = try SpinetCommand.temporaryDirectory("normalize-bad")
        let input = try write(Self.pieces()[0].1, to: dir, "q.mid")
        var arguments = ["render", input, "--soundfont", font] + extra
        if !extra.contains("-o") { arguments += ["-o", dir.appendingPathComponent("x.wav").path] }
        let r = try SpinetCommand.run(arguments)
        #expect(r.status == 1)
        #expect(r.stderr.contains("--normalize") && r.stderr.split(separator: "\n").count == 1, "\(r.stderr)")
        #expect(r.stdout.isEmpty)
    }
}
