import Foundation
import Glibc
import Testing
import SpinetMIDI
import SpinetTestSupport

// `spinet render --stems DIR`: one file per heard channel that plays notes,
// adding up to the mix.

@Suite("spinet render --stems", .serialized)
struct StemsTests {
    /// 480 ticks a quarter at 120 bpm: 960 ticks a second, 50 frames a tick at 48 kHz.
    static let framesPerTick: Int64 = 50
    /// Channel 3 (index 2) first plays at this tick; only channels 1 and 2 play before.
    static let laterEntry: Int64 = 2400

    /// About three seconds on five channels: channel 1 (piano, panned left,
    /// reverb send, a Program Change to strings halfway), channel 2 (chorus
    /// send, played by the synth in the tests), channel 3 (bass, panned right,
    /// delay send, from `laterEntry` on), channel 4 (notes, muted in the
    /// tests) and channel 10 (drums, delay send); a loud passage of full
    /// chords in the middle drives the limiter (with --gain +12).
    static func song() -> [UInt8] {
        var w = MIDIFileWriter(format: 0, ticksPerQuarter: 480)
        var e: [(tick: Int64, event: TrackEvent.Kind)] = []
        func cc(_ t: Int64, _ ch: UInt8, _ c: UInt8, _ v: UInt8) { e.append((t, .message(.controlChange(channel: ch, controller: c, value: v)))) }
        func note(_ t: Int64, _ ch: UInt8, _ key: UInt8, _ vel: UInt8, _ len: Int64) {
            e.append((t, .message(.noteOn(channel: ch, key: key, velocity: vel))))
            e.append((t + len, .message(.noteOff(channel: ch, key: key, velocity: 0))))
        }
        cc(0, 0, 10, 20); cc(0, 0, 91, 110)
        cc(0, 1, 93, 120)
        cc(0, 2, 10, 110); cc(0, 2, 94, 100); e.append((0, .message(.programChange(channel: 2, program: 33))))
        cc(0, 9, 94, 90)
        for i in 0..<8 {
            let t = Int64(i) * 360 + 7
            note(t, 0, UInt8(60 + (i % 5) * 2), 90, 300)
            note(t + 90, 1, UInt8(67 + (i % 3) * 3), 80, 200)
            note(t, 3, 50, 100, 200)
            note(t, 9, i % 2 == 0 ? 36 : 38, 110, 60)
        }
        e.append((1440, .message(.programChange(channel: 0, program: 48))))
        // the loud passage
        for key: UInt8 in [48, 55, 60, 64, 67, 72] { note(1500, 0, key, 127, 500) }
        for key: UInt8 in [52, 59, 64] { note(1500, 1, key, 127, 500) }
        note(Self.laterEntry, 2, 40, 110, 300)
        note(Self.laterEntry + 240, 2, 43, 110, 200)
        e.append((3000, .message(.noteOff(channel: 0, key: 0, velocity: 0))))
        w.addTrack(e)
        return w.bytes()
    }

    static let common = ["--soundfont", font, "--quiet", "--reverb", "hall", "--chorus", "wide", "--delay", "eighth", "--gain", "12",
                         "--channel", "2=synth", "--mute", "4"]

    static func audio(_ path: String) throws -> WAVFile { try WAVFile(data: Data(contentsOf: URL(fileURLWithPath: path))) }

    static func files(_ dir: String) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: dir).sorted()
    }

    /// Energy of `a - b` over the energy of `b`, in dB.
    static func residualDB(_ a: [Float], _ b: [Float]) -> Double {
        var e = 0.0, r = 0.0
        for i in 0..<b.count {
            e += Double(b[i]) * Double(b[i])
            let d = Double(a[i]) - Double(b[i])
            r += d * d
        }
        return r == 0 ? -.infinity : 10 * log10(r / e)
    }

    @Test func stemsSumToTheMixAndHoldOnlyTheirChannel() throws {
        let dir = try SpinetCommand.temporaryDirectory("stems-sum")
        let input = try write(Self.song(), to: dir, "song.mid")
        var results: [String: (mix: WAVFile, stems: [String: WAVFile])] = [:]
        for threads in ["1", "2"] {
            let mix = dir.appendingPathComponent("mix\(threads).wav").path, stems = dir.appendingPathComponent("stems\(threads)").path
            let notes = dir.appendingPathComponent("notes\(threads).csv").path
            let r = try SpinetCommand.run(["render", input, "-o", mix, "--stems", stems, "--bits", "32f", "--threads", threads,
                                           "--notes", notes] + Self.common)
            #expect(r.status == 0, "\(r.stderr)")
            var named: [String: WAVFile] = [:]
            for f in try Self.files(stems) { named[f] = try Self.audio(stems + "/" + f) }
            results[threads] = (try Self.audio(mix), named)
            if threads == "2" {
                // the notes file names each sounded note's stem; the muted channel's notes none
                let text = try String(contentsOfFile: notes, encoding: .utf8)
                let rows = text.split(separator: "\n").dropFirst().map { $0.split(separator: ",", omittingEmptySubsequences: false).map(String.init) }
                for row in rows {
                    let channel = Int(row[5])!, stem = row[11]
                    if channel == 4 { #expect(stem == "") } else { #expect(stem.hasPrefix(String(format: "%02d-", channel)) && stem.hasSuffix(".wav"), "\(row)") }
                }
            }
        }
        let (mix, stems) = results["2"]!
        // names: two-digit channel, the first program's name; no stem for the muted channel 4
        let names = stems.keys.sorted()
        // the first program's name (channel 1 changes to strings halfway), the synth's preset, the font's kit
        #expect(names == ["01-Piano 1.wav", "02-organ.wav", "03-Fingered Bass.wav", "10-Standard.wav"], "\(names)")
        // same format, rate and length as the mix
        for (_, s) in stems {
            #expect(s.sampleRate == mix.sampleRate && s.isFloat && s.channels == 2 && s.frames == mix.frames)
        }
        // the limiter engaged: the mix sits at the ceiling
        #expect((mix.samples.map { abs($0) }.max() ?? 0) > 0.85)
        // the stems add up to the mix
        var sum = [Float](repeating: 0, count: mix.samples.count)
        for (_, s) in stems { for i in 0..<sum.count { sum[i] += s.samples[i] } }
        let residual = Self.residualDB(sum, mix.samples)
        #expect(residual <= -80, "residual \(residual) dB")
        // channel 3's stem is silent before its first note (its reverb and delay are its own)
        let bass = stems.first { $0.key.hasPrefix("03-") }!.value
        let entry = Int(Self.laterEntry * Self.framesPerTick) - 64
        let before = bass.samples[0..<(2 * entry)].map { abs($0) }.max() ?? 1
        #expect(before == 0, "channel 3's stem sounds before its notes: \(before)")
        let after = bass.samples[(2 * entry)...].map { abs($0) }.max() ?? 0
        #expect(after > 0.01)
        // byte-identical on one thread and two
        let one = results["1"]!
        #expect(one.mix.samples == mix.samples)
        for (name, s) in stems { #expect(one.stems[name]?.samples == s.samples, "\(name)") }
    }

    /// The stems come from the players a render without stems uses: the
    /// mix is that render's, byte for byte, on one thread and two.
    @Test func theMixOfAStemsRenderIsThePlainRender() throws {
        let dir = try SpinetCommand.temporaryDirectory("stems-plain")
        let input = try write(Self.song(), to: dir, "song.mid")
        for threads in ["1", "2"] {
            let plain = dir.appendingPathComponent("plain\(threads).wav").path, mix = dir.appendingPathComponent("mix\(threads).wav").path
            let stems = dir.appendingPathComponent("stems\(threads)").path
            let a = try SpinetCommand.run(["render", input, "-o", plain, "--threads", threads] + Self.common)
            let b = try SpinetCommand.run(["render", input, "-o", mix, "--stems", stems, "--threads", threads] + Self.common)
            #expect(a.status == 0 && b.status == 0, "\(a.stderr)\(b.stderr)")
            let plainBytes = try Data(contentsOf: URL(fileURLWithPath: plain)), mixBytes = try Data(contentsOf: URL(fileURLWithPath: mix))
            #expect(plainBytes.count > 100_000)
            #expect(plainBytes == mixBytes)
        }
    }

    @Test func sixteenBitStemsDifferFromTheMixOnlyByTheDither() throws {
        let dir = try SpinetCommand.temporaryDirectory("stems-16")
        let input = try write(Self.song(), to: dir, "song.mid")
        let mix = dir.appendingPathComponent("mix.wav").path, stems = dir.appendingPathComponent("stems").path
        // (no limiter here: a stem may pass full scale where stems cancel, and clip in 16 bits)
        let r = try SpinetCommand.run(["render", input, "-o", mix, "--stems", stems] + Self.common + ["--gain", "0"])
        #expect(r.status == 0, "\(r.stderr)")
        let m = try Self.audio(mix)
        let files = try Self.files(stems)
        #expect(files.count == 4)
        var sum = [Float](repeating: 0, count: m.samples.count)
        for f in files {
            let s = try Self.audio(stems + "/" + f)
            #expect(s.bitsPerSample == 16 && s.frames == m.frames)
            for i in 0..<sum.count { sum[i] += s.samples[i] }
        }
        // TPDF dither of ±1 LSB per file: five files differ by a few LSB at most
        var worst: Float = 0
        for i in 0..<sum.count { worst = max(worst, abs(sum[i] - m.samples[i])) }
        #expect(worst <= 10.0 / 32768, "worst difference \(worst * 32768) LSB")
    }

    @Test func normalizeGivesTheStemsTheMixsGains() throws {
        let dir = try SpinetCommand.temporaryDirectory("stems-norm")
        let input = try write(Self.song(), to: dir, "song.mid")
        let mix = dir.appendingPathComponent("mix.wav").path, stems = dir.appendingPathComponent("stems").path
        // a loud target: the playback limiter works too
        let r = try SpinetCommand.run(["render", input, "-o", mix, "--stems", stems, "--bits", "32f", "--normalize", "-8"] + Self.common)
        #expect(r.status == 0, "\(r.stderr)")
        let m = try Self.audio(mix)
        var sum = [Float](repeating: 0, count: m.samples.count)
        for f in try Self.files(stems) {
            let s = try Self.audio(stems + "/" + f)
            #expect(s.frames == m.frames)
            for i in 0..<min(sum.count, s.samples.count) { sum[i] += s.samples[i] }
        }
        let residual = Self.residualDB(sum, m.samples)
        #expect(residual <= -80, "residual \(residual) dB")
    }

    @Test func fluidSynthEffectsAreRefused() throws {
        let dir = try SpinetCommand.temporaryDirectory("stems-fluid")
        let input = try write(Self.song(), to: dir, "song.mid")
        let r = try SpinetCommand.run(["render", input, "-o", dir.appendingPathComponent("m.wav").path, "--stems",
                                       dir.appendingPathComponent("s").path, "--effects", "fluidsynth", "--soundfont", font])
        #expect(r.status != 0)
        #expect(r.stderr.contains("--stems") && r.stderr.contains("--effects spinet"), "\(r.stderr)")
        #expect(r.stderr.split(separator: "\n").count == 1, "\(r.stderr)")
        #expect(!FileManager.default.fileExists(atPath: dir.appendingPathComponent("m.wav").path))
    }

    @Test func existingStemsAreRefusedWithoutForce() throws {
        let dir = try SpinetCommand.temporaryDirectory("stems-exist")
        var w = MIDIFileWriter(format: 0, ticksPerQuarter: 480)
        w.addTrack([(0, .message(.noteOn(channel: 0, key: 60, velocity: 100))), (480, .message(.noteOff(channel: 0, key: 60, velocity: 0)))])
        let input = try write(w.bytes(), to: dir, "one.mid")
        let stems = dir.appendingPathComponent("s").path
        let mix = dir.appendingPathComponent("m.wav").path
        let first = try SpinetCommand.run(["render", input, "-o", mix, "--stems", stems, "--soundfont", font, "--quiet"])
        #expect(first.status == 0, "\(first.stderr)")
        let names = try Self.files(stems)
        #expect(names.count == 1 && names[0].hasPrefix("01-") && names[0].hasSuffix(".wav"), "\(names)")
        unlink(mix)
        let again = try SpinetCommand.run(["render", input, "-o", mix, "--stems", stems, "--soundfont", font, "--quiet"])
        #expect(again.status != 0)
        #expect(again.stderr.contains("already exists") && again.stderr.contains("--force"), "\(again.stderr)")
        // nothing half-written, no mix without its stems, no temporary file left
        #expect(!FileManager.default.fileExists(atPath: mix))
        #expect(try Self.files(stems) == names)
        #expect(try Self.files(dir.path).allSatisfy { !$0.contains(".spinet-") })
        let forced = try SpinetCommand.run(["render", input, "-o", mix, "--stems", stems, "--soundfont", font, "--quiet", "--force"])
        #expect(forced.status == 0, "\(forced.stderr)")
    }

    @Test func aSecondPortsStemsArePrefixedWithItsNumber() throws {
        let dir = try SpinetCommand.temporaryDirectory("stems-port")
        var w = MIDIFileWriter(format: 0, ticksPerQuarter: 480)
        w.addTrack([(0, .message(.noteOn(channel: 0, key: 60, velocity: 100))), (480, .message(.noteOff(channel: 0, key: 60, velocity: 0))),
                    (0, .message(.programChange(channel: 16, program: 40))),
                    (0, .message(.noteOn(channel: 16, key: 67, velocity: 100))), (480, .message(.noteOff(channel: 16, key: 67, velocity: 0)))])
        let input = try write(w.bytes(), to: dir, "ports.mid")
        let stems = dir.appendingPathComponent("s").path
        let r = try SpinetCommand.run(["render", input, "-o", dir.appendingPathComponent("m.wav").path, "--stems", stems,
                                       "--soundfont", font, "--quiet"])
        #expect(r.status == 0, "\(r.stderr)")
        let names = try Self.files(stems)
        #expect(names.count == 2 && names[0].hasPrefix("01-") && names[1] == "2.01-Violin.wav", "\(names)")
    }

    /// Bank Select 126 moves a channel between the font and Spinet's synth
    /// mid-song: its stem is both (its font parts and a synth of its own),
    /// the stems add up to the mix, and the mix is the plain render's.
    /// Channel 1 plays the font, then the synth's preset 8 (a sine) from
    /// `switchTick`, then the font again from `backTick`; channel 2 plays
    /// the font all along, and channel 3 moves to the synth for good.
    @Test func aChannelBankSelectMovesToTheSynthHasBothInItsStem() throws {
        let switchTick: Int64 = 960, backTick: Int64 = 1920
        var w = MIDIFileWriter(format: 0, ticksPerQuarter: 480)
        var e: [(tick: Int64, event: TrackEvent.Kind)] = []
        func note(_ t: Int64, _ ch: UInt8, _ key: UInt8) {
            e.append((t, .message(.noteOn(channel: ch, key: key, velocity: 100))))
            e.append((t + 200, .message(.noteOff(channel: ch, key: key, velocity: 0))))
        }
        e.append((0, .message(.controlChange(channel: 0, controller: 91, value: 80))))
        e.append((switchTick - 10, .message(.controlChange(channel: 0, controller: 0, value: 126))))
        e.append((switchTick - 10, .message(.programChange(channel: 0, program: 8))))
        e.append((backTick - 10, .message(.controlChange(channel: 0, controller: 0, value: 0))))
        e.append((backTick - 10, .message(.programChange(channel: 0, program: 0))))
        e.append((0, .message(.controlChange(channel: 2, controller: 0, value: 126))))
        e.append((0, .message(.programChange(channel: 2, program: 8))))
        for i in 0..<12 {
            let t = Int64(i) * 240 + 5
            note(t, 0, 69)
            note(t + 120, 1, 60)
            note(t + 60, 2, 57)
        }
        w.addTrack(e)
        let dir = try SpinetCommand.temporaryDirectory("stems-bank126")
        let input = try write(w.bytes(), to: dir, "bank.mid")
        let common = ["--soundfont", font, "--quiet", "--bits", "32f", "--reverb", "hall"]
        let plain = dir.appendingPathComponent("plain.wav").path
        let p = try SpinetCommand.run(["render", input, "-o", plain] + common)
        #expect(p.status == 0, "\(p.stderr)")
        do {
            let threads = "2"
            let mix = dir.appendingPathComponent("mix.wav").path, stems = dir.appendingPathComponent("stems").path
            let r = try SpinetCommand.run(["render", input, "-o", mix, "--stems", stems, "--threads", threads] + common)
            #expect(r.status == 0, "\(r.stderr)")
            guard r.status == 0 else { return }
            let m = try Self.audio(mix)
            // two channels on the synth: a synth each here, one for both in
            // the plain render, so the same sound summed in another order
            let plainMix = try Self.audio(plain)
            let fromPlain = Self.residualDB(m.samples, plainMix.samples)
            #expect(m.frames == plainMix.frames && fromPlain <= -120, "the mix is \(fromPlain) dB from the plain render (\(threads) threads)")
            let names = try Self.files(stems)
            #expect(names.count == 3 && names[0].hasPrefix("01-") && names[1].hasPrefix("02-") && names[2].hasPrefix("03-"), "\(names)")
            guard names.count == 3 else { return }
            let stem = try names.map { try Self.audio(stems + "/" + $0) }
            var sum = [Float](repeating: 0, count: m.samples.count)
            for s in stem { for i in 0..<sum.count { sum[i] += s.samples[i] } }
            let residual = Self.residualDB(sum, m.samples)
            #expect(residual <= -80, "residual \(residual) dB")
            // channel 1's stem holds the synth's sine while the synth plays it:
            // a note's middle there is one pure partial at 440 Hz
            let start = Int(switchTick + 240 + 5 + 60) * Int(Self.framesPerTick)
            func level(_ s: WAVFile, _ hz: Double) -> Double {
                let left = (0..<4096).map { s.samples[2 * (start + $0)] }
                let spectrum = SignalAnalysis.magnitudeSpectrum(left[...])
                let bin = Int((hz * 4096 / 48000).rounded())
                return spectrum[(bin - 2)...(bin + 2)].max()!
            }
            let at440 = level(stem[0], 440), at880 = level(stem[0], 880)
            print("bank 126 stem, \(threads) threads: residual \(residual) dB, mix against plain \(fromPlain) dB; channel 1 at 440 Hz \(at440), 880 Hz \(at880); channel 2 at 440 Hz \(level(stem[1], 440))")
            #expect(at440 > 0.01 && at880 < at440 / 100, "440 Hz \(at440), 880 Hz \(at880)")
            // and channel 2's stem has no sound of channel 1's synth
            #expect(level(stem[1], 440) < at440 / 100)
        }
    }

    @Test func batchModeWritesOneStemDirectoryPerInput() throws {
        let dir = try SpinetCommand.temporaryDirectory("stems-batch")
        var a = MIDIFileWriter(format: 0, ticksPerQuarter: 480)
        a.addTrack([(0, .message(.noteOn(channel: 0, key: 60, velocity: 100))), (480, .message(.noteOff(channel: 0, key: 60, velocity: 0)))])
        var b = MIDIFileWriter(format: 0, ticksPerQuarter: 480)
        b.addTrack([(0, .message(.noteOn(channel: 9, key: 38, velocity: 100))), (0, .message(.noteOn(channel: 1, key: 60, velocity: 100))),
                    (480, .message(.noteOff(channel: 1, key: 60, velocity: 0)))])
        let inA = try write(a.bytes(), to: dir, "a.mid"), inB = try write(b.bytes(), to: dir, "b.mid")
        let out = dir.appendingPathComponent("out").path + "/", stems = dir.appendingPathComponent("stems").path
        let report = dir.appendingPathComponent("report.jsonl").path
        let r = try SpinetCommand.run(["render", inA, inB, "-o", out, "--stems", stems, "--report", report, "--soundfont", font, "--quiet"])
        #expect(r.status == 0, "\(r.stderr)")
        let sa = try Self.files(stems + "/a"), sb = try Self.files(stems + "/b")
        #expect(sa.count == 1 && sa[0].hasPrefix("01-"), "\(sa)")
        #expect(sb.count == 2 && sb[0].hasPrefix("02-") && sb[1].hasPrefix("10-"), "\(sb)")
        let lines = try String(contentsOfFile: report, encoding: .utf8).split(separator: "\n")
        #expect(lines.count == 2)
        for line in lines {
            let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as! [String: Any]
            let listed = object["stems"] as! [String]
            let expected = (object["input"] as! String).hasSuffix("a.mid") ? sa.map { stems + "/a/" + $0 } : sb.map { stems + "/b/" + $0 }
            #expect(listed == expected)
        }
    }
}
