import Foundation
import Testing
import SpinetEngine
import SpinetMIDI
import SpinetSoundFont

/// A SoundFont unit told which programs a file uses loads only those
/// presets (every bank) and program 0; what it plays must be exactly what
/// the whole font plays, fallbacks for missing presets included.
@Suite("SoundFont preset subset")
struct PresetSubsetTests {
    /// The bundled font has 329 presets: banks 0 (128), 1-9, 16, 127 (128)
    /// and 128 (10 drum kits: 0 8 16 24 25 32 40 48 56 127).
    static let passage: [(Int, MIDIMessage)] = [
        (0, .controlChange(channel: 0, controller: 0, value: 8)),      // a variation bank
        (0, .programChange(channel: 0, program: 4)),
        (0, .controlChange(channel: 1, controller: 0, value: 5)),      // bank 5 has no program 10: bank 0's
        (0, .programChange(channel: 1, program: 10)),
        (0, .controlChange(channel: 2, controller: 0, value: 127)),
        (0, .programChange(channel: 2, program: 50)),
        (0, .programChange(channel: 9, program: 25)),                  // drum kit 25
        (256, .noteOn(channel: 0, key: 60, velocity: 100)),
        (256, .noteOn(channel: 1, key: 64, velocity: 90)),
        (512, .noteOn(channel: 2, key: 67, velocity: 80)),
        (512, .noteOn(channel: 3, key: 48, velocity: 80)),             // never changed: program 0
        (768, .noteOn(channel: 9, key: 38, velocity: 120)),
        (4096, .programChange(channel: 9, program: 3)),                 // no kit 3: kit 0
        (4352, .noteOn(channel: 9, key: 36, velocity: 120)),
        (6144, .noteOff(channel: 0, key: 60, velocity: 0)),
        (6144, .noteOff(channel: 1, key: 64, velocity: 0)),
        (8192, .noteOff(channel: 2, key: 67, velocity: 0)),
        (8192, .noteOff(channel: 3, key: 48, velocity: 0)),
    ]

    @Test func theSubsetSoundsLikeTheWholeFont() throws {
        let whole = try renderSoundFontUnit(sounding: nil, events: Self.passage, frames: 16384)
        let subset = try renderSoundFontUnit(sounding: nil, programs: [4, 10, 50, 25, 3], events: Self.passage, frames: 16384)
        #expect(whole.presets == 329)
        // programs 0, 3, 4, 10, 25, 50 in every bank the font has them
        #expect(subset.presets > 6 && subset.presets < 40, "kept \(subset.presets) presets")
        #expect(whole.planes[0].contains { abs($0) > 0.01 }, "the passage must sound")
        // dry left/right and the reverb, chorus and delay sends
        for p in 0..<8 {
            #expect(subset.planes[p].count == whole.planes[p].count)
            let first = subset.planes[p].indices.first { subset.planes[p][$0] != whole.planes[p][$0] }
            #expect(first == nil, "plane \(p) differs from frame \(first ?? 0)")
        }
    }

    @Test func programZeroIsAlwaysKept() throws {
        var options = SoundFontOptions()
        options.programs = []
        let unit = try SoundFontUnit(fonts: [bundledFont], sampleRate: 48000, options: options)
        // bank 0..9, 16, 127 program 0 and drum kit 0
        #expect(unit.loadedPresets >= 2 && unit.loadedPresets < 20, "kept \(unit.loadedPresets) presets")
    }

    /// The preset data of the bundled font (the `pdta` list's body).
    static func hydra() throws -> [UInt8] {
        let data = [UInt8](try Data(contentsOf: URL(fileURLWithPath: bundledFont)))
        let tag = Array("pdta".utf8)
        let at = (0..<data.count - 4).first { data[$0..<$0 + 4].elementsEqual(tag) && data[$0 - 8..<$0 - 4].elementsEqual(Array("LIST".utf8)) }!
        let size = Int(data[at - 4]) | Int(data[at - 3]) << 8 | Int(data[at - 2]) << 16 | Int(data[at - 1]) << 24
        return Array(data[at + 4..<at + size])
    }

    @Test func theSubsetKeepsTheSampleHeadersAndTerminalRecords() throws {
        let hydra = try Self.hydra()
        let cut = try #require(PresetSubset.filter(pdta: hydra, programs: [25]))
        #expect(cut.count < hydra.count / 2)
        // nine sub-chunks in order; the last (sample headers) unchanged
        var offset = 0
        var chunks: [String: ArraySlice<UInt8>] = [:]
        for id in ["phdr", "pbag", "pmod", "pgen", "inst", "ibag", "imod", "igen", "shdr"] {
            #expect(String(decoding: cut[offset..<offset + 4], as: UTF8.self) == id)
            let size = Int(cut[offset + 4]) | Int(cut[offset + 5]) << 8 | Int(cut[offset + 6]) << 16
            chunks[id] = cut[offset + 8..<offset + 8 + size]
            offset += 8 + size
        }
        #expect(offset == cut.count)
        #expect(hydra.suffix(chunks["shdr"]!.count).elementsEqual(chunks["shdr"]!))
        let phdr = Array(chunks["phdr"]!)
        let presets = phdr.count / 38 - 1
        let programs = (0..<presets).map { (p: Int) -> Int in
            let low = Int(phdr[p * 38 + 20]), high = Int(phdr[p * 38 + 21])
            return low | high << 8
        }
        #expect(Set(programs) == [0, 25])
        #expect(String(decoding: phdr[presets * 38..<presets * 38 + 3], as: UTF8.self) == "EOP")
        // the terminal header points past the last bag
        #expect(Int(phdr[presets * 38 + 24]) == chunks["pbag"]!.count / 4 - 1)
    }

    @Test func dataOutOfOrderIsLeftWhole() throws {
        let hydra = try Self.hydra()
        #expect(PresetSubset.filter(pdta: hydra, programs: Set(0..<128)) == nil, "nothing to cut")
        var swapped = hydra
        swapped[0] = UInt8(ascii: "x")                                   // not 'phdr'
        #expect(PresetSubset.filter(pdta: swapped, programs: [25]) == nil)
        var backwards = hydra
        backwards[8 + 24] = 0xFF; backwards[8 + 25] = 0xFF               // first preset's bag index
        #expect(PresetSubset.filter(pdta: backwards, programs: [25]) == nil)
        #expect(PresetSubset.filter(pdta: Array(hydra.prefix(100)), programs: [25]) == nil)
    }
}
