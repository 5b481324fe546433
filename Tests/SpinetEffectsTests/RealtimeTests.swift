import SpinetEffects
import SpinetTestSupport
import Testing
import SpinetTestTraits

/// `process`, parameter changes, preset selection, tempo changes and the
/// bypass path (fade, clear, resume) allocate nothing, free nothing and take
/// no lock on the calling thread.
@Suite("Real-time safety", .realtimeProbe)
struct RealtimeTests {
    let fs = 48000.0
    let frames = 4096

    /// Runs `body` once to warm up (type metadata, `static let`s), then counts
    /// a second run.
    func expectRealtimeSafe(_ name: String, _ body: () -> Void) {
        #expect(RealtimeProbe.isActive)
        body()
        let counts = RealtimeProbe.counts(body)
        #expect(counts.allocations == 0, "\(name): \(counts.allocations) allocation(s)")
        #expect(counts.frees == 0, "\(name): \(counts.frees) free(s)")
        #expect(counts.locks == 0, "\(name): \(counts.locks) lock(s)")
    }

    func buffers() -> (UnsafeMutablePointer<Float>, UnsafeMutablePointer<Float>, UnsafeMutablePointer<Float>, UnsafeMutablePointer<Float>) {
        let p = (0..<4).map { _ in UnsafeMutablePointer<Float>.allocate(capacity: frames) }
        for q in p { q.initialize(repeating: 0, count: frames) }
        for i in 0..<frames { p[0][i] = Float(i % 97) / 97 - 0.5; p[1][i] = Float(i % 89) / 89 - 0.5 }
        return (p[0], p[1], p[2], p[3])
    }

    /// What every send effect's check ends with: a block, an empty one,
    /// bypass on (the fade, then the block that clears), off again, and the
    /// tail length.
    func bypassCycle<Effect: SendEffect & ~Copyable>(
        _ effect: inout Effect,
        _ b: (UnsafeMutablePointer<Float>, UnsafeMutablePointer<Float>, UnsafeMutablePointer<Float>, UnsafeMutablePointer<Float>)
    ) {
        func process(_ n: Int) { effect.process(inputLeft: b.0, inputRight: b.1, outputLeft: b.2, outputRight: b.3, frames: n) }
        process(1000)
        process(0)
        effect.isBypassed = true
        process(frames)
        process(64)   // clears
        effect.isBypassed = false
        process(777)
        _ = effect.tailSeconds
    }

    @Test func reverb() {
        let (inL, inR, outL, outR) = buffers()
        defer { inL.deallocate(); inR.deallocate(); outL.deallocate(); outR.deallocate() }
        var reverb = Reverb(sampleRate: fs)
        var gsType = 0
        expectRealtimeSafe("reverb") {
            reverb.process(inputLeft: inL, inputRight: inR, outputLeft: outL, outputRight: outR, frames: 512)
            reverb.parameters = ReverbPreset(gsType: gsType % 6)!.parameters
            reverb.parameters.size = 0.2 + 0.1 * Double(gsType % 5)
            reverb.parameters.decaySeconds = 3
            if let preset = ReverbPreset(gm2Type: 8) { reverb.parameters = preset.parameters }
            gsType += 1
            bypassCycle(&reverb, (inL, inR, outL, outR))
        }
    }

    @Test func chorus() {
        let (inL, inR, outL, outR) = buffers()
        defer { inL.deallocate(); inR.deallocate(); outL.deallocate(); outR.deallocate() }
        var chorus = Chorus(sampleRate: fs)
        var type = 0
        expectRealtimeSafe("chorus") {
            chorus.process(inputLeft: inL, inputRight: inR, outputLeft: outL, outputRight: outR, frames: 512)
            chorus.parameters = ChorusPreset(gsType: type % 8)!.parameters
            chorus.parameters.voices = 1 + type % 4
            type += 1
            bypassCycle(&chorus, (inL, inR, outL, outR))
        }
    }

    @Test func delay() {
        let (inL, inR, outL, outR) = buffers()
        defer { inL.deallocate(); inR.deallocate(); outL.deallocate(); outR.deallocate() }
        var delay = Delay(sampleRate: fs)
        var bpm = 100.0
        expectRealtimeSafe("delay") {
            delay.process(inputLeft: inL, inputRight: inR, outputLeft: outL, outputRight: outR, frames: 512)
            delay.setTempo(bpm: bpm)
            bpm += 7
            delay.parameters = DelayPreset.dottedEighth.parameters
            delay.parameters.mode = .pingPong
            delay.parameters.lowPassHz = nil
            delay.parameters.time = .milliseconds(123)
            if let gs = DelayPreset(gsReverbType: 7) { delay.parameters = gs.parameters }
            bypassCycle(&delay, (inL, inR, outL, outR))
        }
    }

    @Test func equalizer() {
        let (inL, inR, outL, outR) = buffers()
        defer { inL.deallocate(); inR.deallocate(); outL.deallocate(); outR.deallocate() }
        var eq = Equalizer(sampleRate: fs)
        var toggle = false
        expectRealtimeSafe("equalizer") {
            eq.process(left: inL, right: inR, frames: 512)
            toggle.toggle()
            eq.parameters = .init(highPassEnabled: toggle, highPassFrequency: 40, lowShelfGainDB: toggle ? 3 : -3,
                                  highShelfGainDB: 2)
            eq.process(left: inL, right: inR, frames: 1000)
            eq.isBypassed = toggle
            eq.process(left: inL, right: inR, frames: frames)
            eq.process(left: outL, right: outR, frames: 0)
        }
    }
}
