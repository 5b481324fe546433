import Foundation
import Glibc
import Testing
import SpinetSoundFont

// Every font load goes through the same check, so a FIFO typed at `spinet
// play`'s prompt (a font switch) or given to `spinet bench` cannot block it.
@Suite("SoundFont paths")
struct FontPathTests {
    @Test func aFIFOIsRefusedWithoutBeingOpened() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("spinet-fontfifo-\(getpid())")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let fifo = dir.appendingPathComponent("font.sf2").path
        #expect(mkfifo(fifo, 0o600) == 0)
        let start = Date()
        do {
            _ = try SoundFontUnit(fonts: [fifo], sampleRate: 48000)
            Issue.record("a FIFO loaded as a font")
        } catch {
            #expect(error.description.contains("not a regular file"), "\(error)")
        }
        #expect(Date().timeIntervalSince(start) < 5)
    }
}
