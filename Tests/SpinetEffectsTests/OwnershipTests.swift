import SpinetEffects
import SpinetTestSupport
import Testing
import SpinetTestTraits

/// An effect owns its buffers: when it goes away they are freed, with no
/// call to make (it cannot be copied, so nothing else holds them). Counted
/// with the probe: every allocation made building and running one is freed
/// when it ends, on every path.
@Suite("Effect ownership", .realtimeProbe)
struct OwnershipTests {
    /// Builds, runs and drops an effect inside `body`: as many frees as allocations.
    func expectFreesAll(_ name: String, _ body: () -> Void) {
        #expect(RealtimeProbe.isActive)
        body()                                      // warm up (metadata, static lets)
        let counts = RealtimeProbe.counts(body)
        #expect(counts.allocations > 0, "\(name): allocated nothing (not counted?)")
        #expect(counts.frees == counts.allocations, "\(name): \(counts.allocations) allocations, \(counts.frees) frees")
    }

    static func run(_ process: (UnsafePointer<Float>, UnsafePointer<Float>, UnsafeMutablePointer<Float>, UnsafeMutablePointer<Float>, Int) -> Void) {
        let buffers = FixedBuffer<Float>(repeating: 0.25, count: 4 * 256)
        let p = buffers.pointer
        process(p, p + 256, p + 512, p + 768, 256)
    }

    @Test func reverb() {
        expectFreesAll("reverb") {
            var reverb = Reverb(sampleRate: 48000)
            Self.run { reverb.process(inputLeft: $0, inputRight: $1, outputLeft: $2, outputRight: $3, frames: $4) }
        }
    }

    @Test func chorus() {
        expectFreesAll("chorus") {
            var chorus = Chorus(sampleRate: 48000)
            Self.run { chorus.process(inputLeft: $0, inputRight: $1, outputLeft: $2, outputRight: $3, frames: $4) }
        }
    }

    @Test func delay() {
        expectFreesAll("delay") {
            var delay = Delay(sampleRate: 48000, maxDelaySeconds: 1)
            Self.run { delay.process(inputLeft: $0, inputRight: $1, outputLeft: $2, outputRight: $3, frames: $4) }
        }
    }

    /// An optional effect (as the send slots hold them) is freed when it is
    /// replaced and when it is set to nil.
    @Test func replacedAndRemovedEffects() {
        expectFreesAll("replaced reverb") {
            var slot: Reverb? = Reverb(sampleRate: 48000)
            slot = Reverb(sampleRate: 44100)
            let replaced = slot != nil
            #expect(replaced)
            slot = nil
        }
    }
}
