import Foundation
import Testing
@testable import SpinetSoundFont
import SpinetMIDI
import SpinetTestSupport

/// The checker that says what of a damaged SoundFont can sound: samples
/// judged as FluidSynth loads them, presets left with nothing to play.
@Suite("SoundFont diagnosis", .serialized)
struct SoundFontDiagnosisTests {
    static let intact = (try? DamagedSoundFont(path: bundledFont)) ?? DamagedSoundFont([])

    /// The bundled font with each kind of damage on one instrument's samples.
    static func mixed() -> (font: DamagedSoundFont, broken: [Int], loops: [Int]) {
        var f = intact
        let harmonica = f.samples(named: ["Harmonica"]), violin = f.samples(named: ["Violin"])
        let oboe = f.samples(named: ["Oboe"]), trombone = f.samples(named: ["Trombone"]), flute = f.samples(named: ["Flute"])
        f.damage(harmonica, .startPastData)
        f.damage(violin, .startEndSwapped)
        f.damage(flute, .loopOutside)
        f.damage(oboe, .rate(0))
        f.damage(trombone, .rate(4_000_000_000))
        return (f, (harmonica + violin + oboe + trombone).sorted(), flute)
    }

    @Test func anIntactFontHasNothingToSay() throws {
        let d = try #require(SoundFontDiagnosis(path: bundledFont))
        #expect(d.samples == 488 && d.presets == 329)
        #expect(d.unusableSamples.isEmpty && d.silentPresets.isEmpty && d.repairedLoops == 0 && d.disabled.isEmpty)
        #expect(d.warning == nil && !d.nothingUsable)
    }

    @Test func eachKindOfDamageIsCountedAndNamed() throws {
        let (font, broken, loops) = Self.mixed()
        #expect(broken.count >= 20 && loops.count >= 4)
        let (found, path) = try diagnose(font, "mixed.sf2")
        defer { discard(path) }
        let d = try #require(found)
        #expect(d.unusableSamples.map(\.index) == broken)
        // loops are repaired, not lost
        #expect(d.repairedLoops == loops.count)
        #expect(d.unusableSamples.first?.name == font.name(broken[0]))
        let reasons = Dictionary(d.unusableSamples.map { (font.name($0.index).split(separator: " ")[0], $0.reason) }) { a, _ in a }
        #expect(reasons["Harmonica"] == "starts past the sample data")
        #expect(reasons["Violin"] == "start after end")
        #expect(reasons["Oboe"] == "sample rate 0 Hz")
        #expect(reasons["Trombone"] == "sample rate 4000000000 Hz")
        // FluidSynth drops the first two itself; Spinet's loader drops the rates
        #expect(d.disabled == Set(font.samples(named: ["Oboe", "Trombone"])))
        // presets made only of those samples cannot sound; the piano can
        #expect(d.silentPresets.count >= 4 && d.silentPresets.count < 40, "\(d.silentPresets)")
        #expect(!d.silentPresets.contains { $0.lowercased().contains("piano") })
        let line = try #require(d.warning)
        #expect(line.contains("\(broken.count) of 488 samples are unusable"))
        #expect(line.contains("\(d.silentPresets.count) of 329 presets have nothing to play"))
        #expect(line.contains("\(loops.count) sample loops") && line.contains(font.name(broken[0])))
        #expect(!line.contains("\n") && !d.nothingUsable)
    }

    @Test func aFontWithEveryKindOfSampleBrokenHasNothingUsable() throws {
        for damage: DamagedSoundFont.Damage in [.startPastData, .startEndSwapped, .rate(0), .rate(4_000_000_000), .rom, .compressed(oggMagic: false)] {
            var f = Self.intact
            f.damage(Array(0..<f.sampleCount), damage)
            let (found, path) = try diagnose(f, "all-broken.sf2")
            discard(path)
            let d = try #require(found)
            #expect(d.nothingUsable, "\(damage)")
            #expect(d.unusableSamples.count == 488 && d.silentPresets.count == 329, "\(damage)")
            #expect(d.refusal.hasPrefix("none of its 329 presets can sound: 488 of 488 samples are unusable"))
        }
        // loops outside every sample: all repaired, all usable
        var f = Self.intact
        f.damage(Array(0..<f.sampleCount), .loopOutside)
        let (loops, path) = try diagnose(f, "loops.sf2")
        discard(path)
        let d = try #require(loops)
        #expect(!d.nothingUsable && d.unusableSamples.isEmpty && d.repairedLoops == 488)
    }

    /// The rules, one header at a time, as fluid_sample_validate and
    /// fluid_sample_sanitize_loop apply them (end is one past the last point).
    @Test func theRulesFollowFluidSynth() {
        let bytes: Int64 = 2000      // 1000 words of sample data
        func judge(_ start: UInt32, _ end: UInt32, loop: (UInt32, UInt32) = (10, 20), rate: UInt32 = 44100, type: UInt16 = 1,
                   version: Int = 2, data: [UInt8]? = nil) -> SoundFontDiagnosis.Verdict {
            SoundFontDiagnosis.judge(start: start, end: end, loopStart: loop.0, loopEnd: loop.1, rate: rate, type: type,
                                     sampleBytes: bytes, version: version) { _, _ in data }
        }
        #expect(judge(0, 100) == .usable(loopRepaired: false))
        #expect(judge(0, 1001) == .usable(loopRepaired: false))     // its last point is the last word
        #expect(judge(0, 1002) == .unusable("ends past the sample data", spinetDrops: false))
        #expect(judge(1500, 1600) == .unusable("starts past the sample data", spinetDrops: false))
        #expect(judge(100, 50) == .unusable("start after end", spinetDrops: false))
        #expect(judge(50, 51) == .unusable("empty (start at end)", spinetDrops: false))
        #expect(judge(0, 0) == .unusable("empty (start at end)", spinetDrops: false))
        #expect(judge(0, 100, type: 0x8001) == .unusable("a ROM sample", spinetDrops: false))
        #expect(judge(0, 100, type: 0x41) == .unusable("unknown sample type 65", spinetDrops: false))
        #expect(judge(0, 100, type: 0) == .usable(loopRepaired: false))          // no flags: FluidSynth assumes mono
        #expect(judge(0, 100, rate: 0) == .unusable("sample rate 0 Hz", spinetDrops: true))
        #expect(judge(0, 100, rate: 4_000_000_000) == .unusable("sample rate 4000000000 Hz", spinetDrops: true))
        #expect(judge(0, 100, rate: 8000) == .usable(loopRepaired: false))
        #expect(judge(0, 100, rate: 192_000) == .usable(loopRepaired: false))
        #expect(judge(0, 100, loop: (20, 10)) == .usable(loopRepaired: true))     // reversed: swapped
        #expect(judge(0, 100, loop: (5, 5)) == .usable(loopRepaired: false))      // zero length: taken as it is
        #expect(judge(0, 100, loop: (10, 5000)) == .usable(loopRepaired: true))
        #expect(judge(50, 100, loop: (10, 60)) == .usable(loopRepaired: true))    // starts before the sample
        #expect(judge(0, 100, loop: (10, 500)) == .usable(loopRepaired: false))   // past its end, inside the data: used anyway
        // SF3: byte offsets; the data must be Ogg
        let ogg = Array("OggS".utf8)
        #expect(judge(0, 1900, type: 0x11, version: 3, data: ogg) == .usable(loopRepaired: false))
        #expect(judge(0, 2100, type: 0x11, version: 3, data: ogg) == .unusable("ends past the sample data", spinetDrops: false))
        #expect(judge(0, 1900, type: 0x11, version: 3, data: [0, 0, 0, 0]) == .unusable("compressed data that is not Ogg Vorbis", spinetDrops: true))
    }
}

/// `font` written to a fresh directory as `name`: its diagnosis and path.
func diagnose(_ font: DamagedSoundFont, _ name: String) throws -> (SoundFontDiagnosis?, String) {
    let dir = try SpinetCommand.temporaryDirectory("diagnosis")
    let path = try font.write(to: dir, name)
    return (SoundFontDiagnosis(path: path), path)
}

/// Removes the directory `diagnose` wrote `path` into.
func discard(_ path: String) {
    try? FileManager.default.removeItem(at: URL(fileURLWithPath: path).deletingLastPathComponent())
}
