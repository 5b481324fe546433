import Foundation
import Testing
import SpinetTestSupport
@testable import SpinetSynth
import SpinetSupport

// Replays every preset file that ever broke the JSON parser or the preset
// reader (Regressions/presets/, see Regressions/README.md) and
// PresetFileFuzzer's seeds (Fuzz/corpus/PresetFileFuzzer/), with the fuzz
// target's checks: a bank read is valid and its own JSON reads back the
// same; an error is one message naming the file; either comes quickly.

private let testsFolder = URL(fileURLWithPath: #filePath).deletingLastPathComponent()


private let presetFileInputs = regressionInputs(testsFolder.appendingPathComponent("Regressions/presets"), fuzzer: "PresetFileFuzzer")

@Suite("Preset file regressions")
struct PresetFileRegressionTests {
    @Test func theSeedsAreFound() {
        #expect(presetFileInputs.count >= 5, "\(testsFolder.path)")
    }

    @Test(arguments: presetFileInputs)
    func readsOrFailsWithOneMessage(path: String) throws {
        let name = URL(fileURLWithPath: path).lastPathComponent
        let text = String(decoding: try Data(contentsOf: URL(fileURLWithPath: path)), as: UTF8.self)
        let clock = ContinuousClock()
        let start = clock.now
        do {
            let bank = try PresetBank(json: text, source: name)
            for p in bank.presets { #expect(throws: Never.self) { try p.validate() } }
            #expect(try PresetBank(json: bank.jsonString()) == bank, "\(name): the bank's own JSON reads back differently")
        } catch {
            #expect(error.description.utf8.starts(with: "\(name): ".utf8), "\(error.description)")
        }
        #expect(clock.now - start < .seconds(2), "\(name): took \(clock.now - start)")
    }
}
