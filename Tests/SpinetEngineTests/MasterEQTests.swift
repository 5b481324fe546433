import Foundation
import Testing
import SpinetEffects
@testable import SpinetEngine
import SpinetTestSupport

/// The master EQ sits after the mix and the master gain, before the
/// limiter. A constant (DC) input shows each section's effect exactly: a
/// high-pass removes it, a low shelf scales it by its full gain, a high
/// shelf leaves it alone.
@Suite("Engine: master EQ")
struct MasterEQTests {
    static func settle(_ eq: Equalizer.Parameters?, level: Float = 0.2) -> (start: Float, end: Float, output: [Float]) {
        var config = Engine.Configuration()
        config.equalizer = eq
        let (engine, _) = EngineHarness.make(ConstantUnit(level: level), configuration: config)
        let out = renderEngine(engine, frames: 48000, blockSizes: [256, 100, 7])
        return (out.left[engine.latencyFrames + 10], out.left[47999], out.left)
    }

    @Test func withoutAnEQTheLevelPassesUnchanged() {
        let plain = Self.settle(nil)
        #expect(abs(plain.end - 0.2) < 1e-6)
        // flat settings build no EQ at all: bit for bit the same
        let flat = Self.settle(Equalizer.Parameters(lowShelfGainDB: 0, highShelfGainDB: 0))
        #expect(flat.output.map(\.bitPattern) == plain.output.map(\.bitPattern))
    }

    @Test func theHighPassRemovesDC() {
        let r = Self.settle(Equalizer.Parameters(highPassEnabled: true, highPassFrequency: 30))
        #expect(abs(r.end) < 1e-4, "DC left after 1 s: \(r.end)")
    }

    @Test func aLowShelfScalesDCByItsGain() {
        let r = Self.settle(Equalizer.Parameters(lowShelfFrequency: 200, lowShelfGainDB: 6))
        let gainDB = 20 * log10(Double(r.end) / 0.2)
        #expect(abs(gainDB - 6) < 0.05, "low shelf +6 dB gave \(gainDB) dB at DC")
    }

    @Test func aHighShelfLeavesDCAlone() {
        let r = Self.settle(Equalizer.Parameters(highShelfFrequency: 4000, highShelfGainDB: -12))
        #expect(abs(r.end - 0.2) < 1e-4)
    }

    /// The limiter comes after the EQ: a boost cannot push past the ceiling.
    @Test func theLimiterCatchesWhatTheEQBoosts() {
        let r = Self.settle(Equalizer.Parameters(lowShelfFrequency: 200, lowShelfGainDB: 12), level: 0.5)
        let ceiling = Float(pow(10, -1.0 / 20))
        let loudest = r.output.map { abs($0) }.max() ?? 0
        #expect(loudest <= ceiling)
        #expect(r.end > 0.85 * ceiling)
    }
}
