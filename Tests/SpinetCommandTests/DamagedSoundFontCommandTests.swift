import Foundation
import Testing
import SpinetMIDI
import SpinetTestSupport

/// A SoundFont whose sample headers are damaged is not a silent success:
/// one line says what of it is unusable, and the rest plays; a font where
/// nothing can sound is refused in one line.
@Suite("spinet render: damaged SoundFonts", .serialized)
struct DamagedSoundFontCommandTests {
    /// The bundled font with each kind of header damage on one instrument's
    /// samples; the piano is intact. Returns the font and the samples that
    /// can no longer sound (the flutes' loops are only repaired).
    static func mixed(compressed: Bool = false) throws -> (font: DamagedSoundFont, broken: [Int]) {
        var f = try DamagedSoundFont(path: font)
        let harmonica = f.samples(named: ["Harmonica"]), violin = f.samples(named: ["Violin"])
        let oboe = f.samples(named: ["Oboe"]), trombone = f.samples(named: ["Trombone"])
        f.damage(harmonica, compressed ? .compressed(oggMagic: false) : .startPastData)
        f.damage(violin, compressed ? .compressed(oggMagic: true) : .startEndSwapped)
        f.damage(f.samples(named: ["Flute"]), .loopOutside)
        f.damage(oboe, .rate(0))
        f.damage(trombone, .rate(4_000_000_000))
        return (f, (harmonica + violin + oboe + trombone).sorted())
    }

    /// Two seconds of chords: piano (program 0) on channel 1, and on
    /// channels 2-6 harmonica, violin, flute, oboe, trombone.
    static func band(piano only: Bool = false) -> [UInt8] {
        var w = MIDIFileWriter(format: 0, ticksPerQuarter: 480)
        let programs: [UInt8] = only ? [0] : [0, 22, 40, 73, 68, 57]
        var events: [(tick: Int64, event: TrackEvent.Kind)] = []
        for (c, p) in programs.enumerated() { events.append((0, .message(.programChange(channel: UInt8(c), program: p)))) }
        for (i, key) in [60, 64, 67, 72].enumerated() {
            for c in programs.indices {
                events.append((Int64(i * 480), .message(.noteOn(channel: UInt8(c), key: UInt8(key - 12 * (c % 2)), velocity: 100))))
                events.append((Int64(i * 480 + 400), .message(.noteOff(channel: UInt8(c), key: UInt8(key - 12 * (c % 2)), velocity: 0))))
            }
        }
        w.addTrack(events)
        return w.bytes()
    }

    /// Lines other libraries print on their own about a damaged font.
    static func libraryNoise(_ stderr: String) -> [Substring] {
        stderr.split(separator: "\n").filter { $0.contains("CRITICAL") || $0.contains("mpg123") || $0.contains("Illegal Audio-MPEG-Header") }
    }

    static func peak(_ path: String) throws -> Float {
        try WAVFile(data: Data(contentsOf: URL(fileURLWithPath: path))).samples.map(abs).max() ?? 0
    }

    @Test(arguments: [false, true])
    func aDamagedFontIsNamedOnceAndTheRestPlays(compressed: Bool) throws {
        let dir = try SpinetCommand.temporaryDirectory("damaged-font")
        defer { try? FileManager.default.removeItem(at: dir) }
        let (damaged, broken) = try Self.mixed(compressed: compressed)
        let fontPath = try damaged.write(to: dir, compressed ? "damaged.sf3" : "damaged.sf2")
        let input = try write(Self.band(), to: dir, "band.mid")
        let out = dir.appendingPathComponent("band.wav").path
        let r = try SpinetCommand.run(["render", input, "-o", out, "--soundfont", fontPath], timeout: 120)
        #expect(r.status == 0, "\(r.stderr)")
        let lines = r.stderr.split(separator: "\n").filter { $0.contains(" is damaged: ") }
        #expect(lines.count == 1, "\(r.stderr)")
        let line = String(lines.first ?? "")
        #expect(line.hasPrefix("spinet: warning: SoundFont \(fontPath) is damaged: \(broken.count) of 488 samples are unusable ("), "\(line)")
        #expect(line.contains(damaged.name(broken[0])), "the first unusable sample is not named: \(line)")
        #expect(line.contains("presets have nothing to play"), "\(line)")
        #expect(line.contains("sample loops lie outside their sample"), "\(line)")
        #expect(Self.libraryNoise(r.stderr).isEmpty, "\(r.stderr)")
        #expect(try Self.peak(out) > 0.05, "the render is not audible")

        // The intact instruments play as with the intact font, to the byte.
        let piano = try write(Self.band(piano: true), to: dir, "piano.mid")
        let withDamaged = dir.appendingPathComponent("piano-damaged.wav").path
        let withIntact = dir.appendingPathComponent("piano-intact.wav").path
        let a = try SpinetCommand.run(["render", piano, "-o", withDamaged, "--soundfont", fontPath, "--quiet"], timeout: 120)
        let b = try SpinetCommand.run(["render", piano, "-o", withIntact, "--soundfont", font, "--quiet"], timeout: 120)
        #expect(a.status == 0 && b.status == 0, "\(a.stderr) \(b.stderr)")
        // --quiet keeps the one line: the font lacks instruments
        #expect(a.stderr.split(separator: "\n").count == 1 && a.stderr.contains(" is damaged: "), "\(a.stderr)")
        #expect(b.stderr.isEmpty, "\(b.stderr)")
        #expect(FileManager.default.contents(atPath: withDamaged) == FileManager.default.contents(atPath: withIntact))
    }

    @Test(arguments: ["start-past-data", "start-end-swapped", "rate-0", "rate-4ghz", "rom", "not-ogg", "undecodable-ogg"])
    func aFontWhereNothingCanSoundIsRefused(damage: String) throws {
        let dir = try SpinetCommand.temporaryDirectory("dead-font")
        defer { try? FileManager.default.removeItem(at: dir) }
        var f = try DamagedSoundFont(path: font)
        let all = Array(0..<f.sampleCount)
        switch damage {
        case "start-past-data": f.damage(all, .startPastData)
        case "start-end-swapped": f.damage(all, .startEndSwapped)
        case "rate-0": f.damage(all, .rate(0))
        case "rate-4ghz": f.damage(all, .rate(4_000_000_000))
        case "rom": f.damage(all, .rom)
        case "not-ogg": f.damage(all, .compressed(oggMagic: false))
        default: f.damage(all, .compressed(oggMagic: true))
        }
        let fontPath = try f.write(to: dir, "dead.sf2")
        let input = try write(Self.band(), to: dir, "band.mid")
        let before = listing(dir)
        let r = try SpinetCommand.run(["render", input, "-o", dir.appendingPathComponent("band.wav").path, "--soundfont", fontPath], timeout: 120)
        #expect(r.status == 1, "\(damage): \(r.stderr)")
        let lines = r.stderr.split(separator: "\n")
        #expect(lines.count == 1, "\(damage): \(r.stderr)")
        #expect(lines.first?.hasPrefix("spinet: SoundFont \(fontPath): none of its 329 presets can sound: 488 of 488 samples are unusable") == true,
                "\(damage): \(r.stderr)")
        #expect(listing(dir) == before, "\(damage): left \(listing(dir))")
    }

    /// Batch mode loads the fonts once: one line for the font, not one per file.
    @Test func aBatchNamesTheDamagedFontOnce() throws {
        let dir = try SpinetCommand.temporaryDirectory("damaged-batch")
        defer { try? FileManager.default.removeItem(at: dir) }
        let fontPath = try Self.mixed().font.write(to: dir, "damaged.sf2")
        let a = try write(Self.band(), to: dir, "a.mid"), b = try write(Self.band(), to: dir, "b.mid")
        let outDir = dir.appendingPathComponent("out")
        let r = try SpinetCommand.run(["render", a, b, "-o", outDir.path + "/", "--soundfont", fontPath], timeout: 200)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stderr.split(separator: "\n").filter { $0.contains("is damaged") }.count == 1, "\(r.stderr)")
        #expect(Self.libraryNoise(r.stderr).isEmpty, "\(r.stderr)")
        #expect(listing(outDir) == ["a.wav", "b.wav"])
        let all = try DamagedSoundFont(path: font)
        var dead = all
        dead.damage(Array(0..<dead.sampleCount), .startPastData)
        let deadPath = try dead.write(to: dir, "dead.sf2")
        let refused = try SpinetCommand.run(["render", a, b, "-o", dir.appendingPathComponent("out2").path + "/", "--soundfont", deadPath], timeout: 200)
        #expect(refused.status == 1 && refused.stderr.split(separator: "\n").count == 1, "\(refused.stderr)")
        #expect(!FileManager.default.fileExists(atPath: dir.appendingPathComponent("out2").path))
    }

    /// bench renders with --quiet: it says once itself what of its font is damaged.
    @Test func benchNamesADamagedFontAndRefusesADeadOne() throws {
        let dir = try SpinetCommand.temporaryDirectory("damaged-bench")
        defer { try? FileManager.default.removeItem(at: dir) }
        let input = try write(Self.band(), to: dir, "band.mid")
        let damaged = try Self.mixed().font.write(to: dir, "damaged.sf2")
        let r = try SpinetCommand.run(["bench", "--files-only", "--runs", "1", "--fluidsynth", "/bin/true", "--soundfont", damaged, input], timeout: 200)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stderr.split(separator: "\n").filter { $0.hasPrefix("spinet: warning: SoundFont \(damaged) is damaged: ") }.count == 1, "\(r.stderr)")
        var dead = try DamagedSoundFont(path: font)
        dead.damage(Array(0..<dead.sampleCount), .rate(0))
        let deadPath = try dead.write(to: dir, "dead.sf2")
        let refused = try SpinetCommand.run(["bench", "--files-only", "--runs", "1", "--fluidsynth", "/bin/true", "--soundfont", deadPath, input], timeout: 200)
        #expect(refused.status == 1, "\(refused.stderr)")
        #expect(refused.stderr == "spinet: SoundFont \(deadPath): " + "none of its 329 presets can sound: 488 of 488 samples are unusable (Piano D1: sample rate 0 Hz, Piano Gb1: sample rate 0 Hz, Piano C#2: sample rate 0 Hz and 485 more); the file is damaged, pass another with --soundfont\n")
    }
}
