import Foundation
import Testing
import SpinetTestSupport
@testable import SpinetSoundFont

// Replays every SoundFont that ever broke Spinet's own SoundFont readers
// (Regressions/soundfont/, see Regressions/README.md) and SoundFontFuzzer's
// seeds (Fuzz/corpus/SoundFontFuzzer/), with the fuzz target's main checks:
// nothing traps, the cost model's times are finite, and the view FluidSynth
// reads is the file, or the file with its preset data cut to the programs.

let regressionsFolder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Regressions")


private let soundFontInputs = regressionInputs(regressionsFolder.appendingPathComponent("soundfont"), fuzzer: "SoundFontFuzzer")

@Suite("SoundFont regressions")
struct SoundFontRegressionTests {
    @Test func theFoldersAreFound() {
        #expect(regressionInputs(regressionsFolder.appendingPathComponent("soundfont")).count >= 1, "\(regressionsFolder.path)")
        #expect(soundFontInputs.count >= 10)
    }

    @Test(arguments: soundFontInputs)
    func readsOrRefusesCleanly(path: String) throws {
        let name = URL(fileURLWithPath: path).lastPathComponent
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        let clock = ContinuousClock()
        let start = clock.now
        if let model = VoiceCostModel(path: path) {
            for (key, voices) in model.presets {
                for v in voices {
                    #expect(v.release.isFinite && v.release > 0, "\(name): preset \(key)")
                    #expect(v.longest.map { $0.isFinite && $0 >= 0 } ?? true, "\(name): preset \(key)")
                }
            }
        }
        #expect(clock.now - start < .seconds(5), "\(name): the cost model took \(clock.now - start)")

        let hydra = try FontFile.hydra(path)
        for programs: Set<Int> in [[0], [Int(bytes.last ?? 0) % 128], Set(0..<128)] {
            let view = try #require(FontFileView(path: path, programs: programs))
            var got = [UInt8](repeating: 0, count: Int(view.size))
            #expect(view.read(&got, count: view.size), "\(name)")
            if view.segments.count == 1 {
                #expect(got == bytes, "\(name): the view of an uncut file is not the file")
            } else {
                let cut = try #require(hydra.flatMap { PresetSubset.filter(pdta: $0, programs: programs) }, "\(name)")
                let copy = FileManager.default.temporaryDirectory.appendingPathComponent("spinet-view-\(getpid())-\(name)")
                try Data(got).write(to: copy)
                defer { try? FileManager.default.removeItem(at: copy) }
                #expect(try FontFile.hydra(copy.path) == cut, "\(name): the view's preset data is not the cut for \(programs.sorted())")
            }
        }
    }

    /// 15 KB: one preset whose 900 zones each name an instrument of 900
    /// zones. Reading its 810,000 voices took 75 MB in one allocation and
    /// 187 s in a debug build; the model now gives up past 2^18 instrument
    /// zones read (the bundled font reads 4,375).
    @Test func aPresetNamingOneLargeInstrumentOverAndOverGetsNoModel() {
        let path = regressionsFolder.appendingPathComponent("soundfont/preset-names-a-900-zone-instrument-900-times.sf2").path
        let clock = ContinuousClock()
        let start = clock.now
        #expect(VoiceCostModel(path: path) == nil)
        #expect(clock.now - start < .seconds(5))
    }
}

/// The preset data of a font file, read as the readers read it.
private enum FontFile {
    struct CannotOpen: Error { var path: String }

    static func hydra(_ path: String) throws -> [UInt8]? {
        guard let f = fopen(path, "rb") else { throw CannotOpen(path: path) }
        defer { fclose(f) }
        guard fseeko(f, 0, SEEK_END) == 0 else { return nil }
        return FontFileView.hydra(f, fileSize: Int64(ftello(f)))
    }
}
