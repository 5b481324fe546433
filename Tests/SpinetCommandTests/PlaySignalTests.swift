import Foundation
import Glibc
import Testing
import SpinetTestSupport

/// How `spinet play` ends on a signal, on ALSA's `null` device (no sound
/// card needed; without a sequencer, `--bench-notes` lets it play on).
@Suite("spinet play: signals", .serialized)
struct PlaySignalTests {
    /// Ctrl-C ends play with 0; SIGTERM, SIGQUIT, SIGUSR1, SIGUSR2 and
    /// SIGALRM end it the same way (fade, summary, --record file complete)
    /// with 128 + the signal. SIGQUIT brings no crash report.
    @Test(arguments: [SIGINT, SIGTERM, SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM])
    func aStoppingSignalEndsPlayCleanly(_ signal: Int32) throws {
        let dir = try SpinetCommand.temporaryDirectory("play-signal-\(signal)")
        defer { try? FileManager.default.removeItem(at: dir) }
        let record = dir.appendingPathComponent("take.wav")
        let r = try SpinetCommand.run(["play", "--device", "null", "--bench-notes", "4", "--priority", "0", "--connect", "none",
                                       "--soundfont", font, "--record", record.path],
                                      timeout: 60, interruptAfter: 2.0, signal: signal)
        #expect(!r.timedOut)
        #expect(r.status == (signal == SIGINT ? 0 : 128 + signal), "\(r.stderr)")
        #expect(r.stderr.contains("Played"), "\(r.stderr)")
        #expect(!r.stderr.contains("crashed") && !r.stderr.contains("Backtrace"), "\(r.stderr)")
        #expect(listing(dir) == ["take.wav"])
        let wav = try WAVFile(data: Data(contentsOf: record))
        #expect(wav.frames > 0)
    }
}
