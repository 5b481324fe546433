import Foundation
import Testing
@testable import SpinetSoundFont
import SpinetMIDI
import SpinetTestSupport

/// A SoundFont unit loads a damaged font without its broken samples, and
/// refuses one where nothing can sound.
@Suite("Damaged SoundFont loading", .serialized)
struct DamagedSoundFontLoadingTests {
    /// The samples the checker calls invalid are exactly those FluidSynth
    /// itself rejects when it loads the font (its warnings name them).
    @Test func fluidSynthRejectsTheSameSamples() throws {
        var f = SoundFontDiagnosisTests.intact
        let past = f.samples(named: ["Harmonica"]), swapped = f.samples(named: ["Violin"]), rom = f.samples(named: ["Celesta"])
        f.damage(past, .startPastData)
        f.damage(swapped, .startEndSwapped)
        f.damage(rom, .rom)
        let (found, path) = try diagnose(f, "rejected.sf2")
        defer { discard(path) }
        let d = try #require(found)
        let unit = try SoundFontUnit(fonts: [path], sampleRate: 48000)
        let named = Set(unit.loadMessages.compactMap { line -> String? in
            guard line.hasPrefix("Sample '"), let end = line.dropFirst(8).firstIndex(of: "'") else { return nil }
            return String(line[line.index(line.startIndex, offsetBy: 8)..<end])
        })
        #expect(named == Set((past + swapped + rom).map { f.name($0) }))
        #expect(Set(d.unusableSamples.map(\.name)) == named)
        #expect(unit.fontWarnings.count == 1)
    }

    /// A sample Spinet counts unusable plays nothing: the loader drops it
    /// (a rate of 0 or 4 GHz would hold one value or run through its data).
    @Test func samplesWithAnImpossibleRateDoNotSound() throws {
        for rate: UInt32 in [0, 4_000_000_000] {
            var f = SoundFontDiagnosisTests.intact
            f.damage(f.samples(named: ["Oboe"]), .rate(rate))
            let (_, path) = try diagnose(f, "rate.sf2")
            defer { discard(path) }
            let oboe = try play(font: path, program: 68)
            #expect(oboe.voices == 0 && oboe.peak < 1e-6, "rate \(rate): \(oboe)")     // FluidSynth's reverb floor
            let piano = try play(font: path, program: 0)
            #expect(piano.voices > 0 && piano.peak > 0.01, "rate \(rate): \(piano)")
        }
    }

    /// An SF3 sample whose data does not decode fails the whole font in
    /// FluidSynth; Spinet loads the font without it.
    @Test func anUndecodableCompressedSampleLeavesTheRestPlaying() throws {
        var f = SoundFontDiagnosisTests.intact
        let harmonica = f.samples(named: ["Harmonica"])
        f.damage(harmonica, .compressed(oggMagic: true))
        let (found, path) = try diagnose(f, "undecodable.sf3")
        defer { discard(path) }
        #expect(try #require(found).unusableSamples.isEmpty)     // nothing to see before decoding
        let unit = try SoundFontUnit(fonts: [path], sampleRate: 48000)
        let d = try #require(unit.diagnoses.first)
        #expect(d.unusableSamples.map(\.index) == harmonica)
        #expect(d.unusableSamples.allSatisfy { $0.reason == "compressed data that does not decode" })
        #expect(try play(font: path, program: 0).peak > 0.01)
        // every sample: refused, naming the font
        var all = SoundFontDiagnosisTests.intact
        all.damage(Array(0..<all.sampleCount), .compressed(oggMagic: true))
        let (_, allPath) = try diagnose(all, "undecodable-all.sf3")
        defer { discard(allPath) }
        #expect(throws: SoundFontError.self) { try SoundFontUnit(fonts: [allPath], sampleRate: 48000) }
        do { _ = try SoundFontUnit(fonts: [allPath], sampleRate: 48000) } catch {
            #expect(error.description.contains(allPath) && error.description.contains("none of its 329 presets can sound"), "\(error)")
        }
    }

    /// What `spinet play` does on a font switch: a font where nothing can
    /// sound throws (the switch is refused, the old unit keeps playing); a
    /// damaged one loads, and only it gets a line when fonts are stacked.
    @Test func aUnitRefusesAFontWhereNothingSoundsAndNamesOnlyTheDamagedOne() throws {
        var dead = SoundFontDiagnosisTests.intact
        dead.damage(Array(0..<dead.sampleCount), .startEndSwapped)
        let (_, deadPath) = try diagnose(dead, "dead.sf2")
        defer { discard(deadPath) }
        do {
            _ = try SoundFontUnit(fonts: [bundledFont, deadPath], sampleRate: 48000)
            Issue.record("a font where nothing can sound was loaded")
        } catch {
            #expect(error.path == deadPath && error.description.contains("none of its 329 presets can sound"), "\(error)")
        }
        var damaged = SoundFontDiagnosisTests.intact
        damaged.damage(damaged.samples(named: ["Harmonica"]), .startPastData)
        let (_, damagedPath) = try diagnose(damaged, "damaged.sf2")
        defer { discard(damagedPath) }
        let unit = try SoundFontUnit(fonts: [bundledFont, damagedPath], sampleRate: 48000)
        #expect(unit.fontWarnings.count == 1 && unit.fontWarnings[0].hasPrefix("SoundFont \(damagedPath) is damaged: 6 of 488"), "\(unit.fontWarnings)")
    }

    /// One note of `program` for a quarter second: most voices and peak.
    func play(font: String, program: UInt8) throws -> (voices: Int, peak: Float) {
        let unit = try SoundFontUnit(fonts: [font], sampleRate: 48000)
        let block = 512
        unit.prepare(sampleRate: 48000, maxFrames: block, channels: 16)
        unit.receive(.programChange(channel: 0, program: program))
        unit.receive(.noteOn(channel: 0, key: 67, velocity: 110))
        var l = [Float](repeating: 0, count: block), r = l
        var voices = 0
        var peak: Float = 0
        for _ in 0..<24 {
            unit.render(left: &l, right: &r, frames: block)
            voices = max(voices, unit.activeVoices)
            peak = max(peak, l.map(abs).max() ?? 0, r.map(abs).max() ?? 0)
        }
        return (voices, peak)
    }
}

/// What libraries print while FluidSynth loads a damaged font is held back;
/// anything else written meanwhile passes, byte for byte.
@Suite("Library noise while loading")
struct LibraryNoiseTests {
    @Test func onlyGLibAndMpg123LinesAreHeldBack() {
        let captured = """

            ** (process:9609): CRITICAL **: 06:07:12.345: ipatch_container_init_iter: assertion 'IPATCH_IS_CONTAINER(container)' failed

            (spinet:77): GLib-GObject-CRITICAL **: 06:07:12.346: g_object_unref: assertion 'G_IS_OBJECT (object)' failed
            [src/libmpg123/parse.c:wetwork():1389] error: Giving up resync after 1024 bytes - your stream is not nice...
            Note: Illegal Audio-MPEG-Header 0x00000000 at offset 0.
            Note: Trying to resync...
            spinet: a line of Spinet's own
            \rvoices   3 | load   1.0%\u{1B}[K
            """
        #expect(LibraryNoise.kept(captured) == ["spinet: a line of Spinet's own\n", "\rvoices   3 | load   1.0%\u{1B}[K"])
    }
}
