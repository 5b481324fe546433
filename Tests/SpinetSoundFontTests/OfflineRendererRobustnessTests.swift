import Foundation
import Testing
import SpinetEngine
import SpinetFile
import SpinetMIDI
import SpinetSoundFont
import SpinetTestSupport

@Suite("Offline renderer: robustness")
struct OfflineRendererRobustnessTests {
    /// Regression: music that ends at Int64.max frames (a damaged file's delta
    /// times, clamped by the tempo map) made the renderer trap on an overflow
    /// computing its tail cap. Now it renders until asked to stop.
    @Test func musicEndingAtInt64MaxDoesNotTrap() throws {
        let path = repositoryRoot.appendingPathComponent("Tests/SpinetMIDITests/Regressions/midi-file/end-of-track-past-int64-frames.mid").path
        let schedule = try MIDIFile(path: path).schedule(sampleRate: 192_000)
        #expect(schedule.endFrame == Int64.max)
        let unit = try SoundFontUnit(fonts: [bundledFont], sampleRate: 192_000)
        let (engine, queue) = EngineHarness.make(unit, sampleRate: 192_000, maxFrames: OfflineRenderer.Options().blockFrames)
        let renderer = OfflineRenderer(engine: engine, queue: queue, schedule: schedule)
        var blocks = 0, frames = 0
        let report = try renderer.run(sink: { _, _, n in frames += n }, shouldStop: {
            blocks += 1
            return blocks > 50
        })
        #expect(report.interrupted && report.musicFrames == Int64.max)
        #expect(frames > 0 && report.peak > 0)
    }
}
