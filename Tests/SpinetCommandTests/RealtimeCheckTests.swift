import Foundation
import Testing
import SpinetTestSupport
import SpinetTestTraits

/// `spinet-rtcheck`, the counter `spinet bench` runs for its "0 allocations,
/// 0 locks" line, run the way the benchmark runs it (fewer cycles).
@Suite("spinet-rtcheck")
struct RealtimeCheckTests {
    @Test(.realtimeProbe) func rtcheckCountsNothingInTheRenderPath() throws {
        let checker = URL(fileURLWithPath: SpinetCommand.executable).deletingLastPathComponent()
            .appendingPathComponent("spinet-rtcheck").path
        let font = SpinetCommand.repositoryRoot.appendingPathComponent("SoundFonts/sf_GMbank.sf2").path
        let r = try SpinetCommand.run([font, "--cycles", "300"], timeout: 300, program: checker)
        let out = String(decoding: r.stdout, as: UTF8.self)
        #expect(r.status == 0, "\(out)\(r.stderr)")
        let lines = out.split(separator: "\n")
        #expect(lines.count == 2, "\(out)")
        for line in lines {
            #expect(line.contains("per 300 render cycles 0 allocations, 0 frees, 0 lock calls; system calls in 200 cycles: 0"), "\(line)")
            // it really played: hundreds of voices
            let voices = line.split(separator: " ").firstIndex(of: "voices,").map { Int(line.split(separator: " ")[$0 - 1]) ?? 0 } ?? 0
            #expect(voices >= 256, "\(line)")
        }
    }
}
