import Foundation
import SpinetEffects
import SpinetTestSupport
import Testing

@Suite("Delay")
struct DelayTests {
    let fs = 48000.0

    func render(_ delay: inout Delay, left: [Float], right: [Float], block: Int = 256) -> (left: [Float], right: [Float]) {
        Measure.render(left: left, right: right, block: block) {
            delay.process(inputLeft: $0, inputRight: $1, outputLeft: $2, outputRight: $3, frames: $4)
        }
    }

    /// Indices and values of the non-zero samples.
    func echoes(_ x: [Float]) -> [(frame: Int, value: Float)] {
        x.indices.filter { x[$0] != 0 }.map { ($0, x[$0]) }
    }

    /// An impulse comes back exactly at the set time, every repeat exactly
    /// `feedback` times the one before (filters off), and nothing else.
    @Test func stereoEchoesArriveExactlyOnTimeWithExactFeedback() {
        var delay = Delay(sampleRate: fs, parameters: .init(time: .milliseconds(250), mode: .stereo, feedback: 0.5,
                                                             lowPassHz: nil, highPassHz: nil, wetLevel: 1))
        #expect(delay.delayFrames == 12000)
        let out = render(&delay, left: Measure.impulse(50000), right: [Float](repeating: 0, count: 50000))
        let left = echoes(out.left)
        #expect(left.map(\.frame) == [12000, 24000, 36000, 48000])
        #expect(echoes(out.right).isEmpty)
        for k in 1..<left.count {
            let ratioDB = 20 * log10(Double(left[k].value / left[k - 1].value))
            #expect(abs(ratioDB - 20 * log10(0.5)) < 0.1)
        }
        #expect(left[0].value == 1)
    }

    /// Ping-pong: the repeats alternate left, right, left, at multiples of
    /// the delay, falling by `feedback` each.
    @Test func pingPongAlternatesSides() {
        var delay = Delay(sampleRate: fs, parameters: .init(time: .milliseconds(100), mode: .pingPong, feedback: 0.6,
                                                             lowPassHz: nil, highPassHz: nil))
        let x = Measure.impulse(20000)
        let out = render(&delay, left: x, right: x)     // mono input: (L + R) / 2 = the impulse
        #expect(echoes(out.left).map(\.frame) == [4800, 14400])
        #expect(echoes(out.right).map(\.frame) == [9600, 19200])
        #expect(echoes(out.left).first?.value == 1)
        let second = Double(echoes(out.right)[0].value), third = Double(echoes(out.left)[1].value)
        #expect(abs(20 * log10(second) - 20 * log10(0.6)) < 0.1)
        #expect(abs(20 * log10(third / second) - 20 * log10(0.6)) < 0.1)
    }

    /// A dotted eighth at 120 bpm is 375 ms exactly; changing the tempo
    /// while running moves the echo to the new time.
    @Test func tempoSyncedTimesAreExact() {
        var delay = Delay(sampleRate: fs, parameters: .init(time: .note(.dottedEighth), mode: .stereo, feedback: 0,
                                                             lowPassHz: nil, highPassHz: nil), bpm: 120)
        #expect(delay.delayFrames == 18000)    // 0.375 s × 48 kHz
        let first = render(&delay, left: Measure.impulse(20000), right: Measure.impulse(20000))
        #expect(echoes(first.left).map(\.frame) == [18000])

        delay.setTempo(bpm: 100)               // 0.75 × 0.6 s = 0.45 s
        #expect(delay.delayFrames == 21600)
        // let the crossfade happen on silence, then send another impulse
        _ = render(&delay, left: [Float](repeating: 0, count: 4800), right: [Float](repeating: 0, count: 4800))
        let second = render(&delay, left: Measure.impulse(30000), right: Measure.impulse(30000))
        #expect(echoes(second.left).map(\.frame) == [21600])

        for (value, frames) in [(NoteValue.quarter, 24000), (.eighth, 12000), (.eighthTriplet, 8000), (.sixteenth, 6000)] {
            delay.parameters.time = .note(value)
            delay.setTempo(bpm: 120)
            #expect(delay.delayFrames == frames)
        }
    }

    @Test func noteValuesParse() {
        #expect(NoteValue(name: "1/4") == .quarter)
        #expect(NoteValue(name: "1/8") == .eighth)
        #expect(NoteValue(name: "1/8.") == .dottedEighth)
        #expect(NoteValue(name: "1/8d") == .dottedEighth)
        #expect(NoteValue(name: "1/8t") == .eighthTriplet)
        #expect(NoteValue(name: "dotted-eighth") == .dottedEighth)
        #expect(NoteValue(name: "1/16") == .sixteenth)
        #expect(NoteValue(name: "1/0") == nil)
        #expect(NoteValue(name: "eighths") == nil)
        #expect(NoteValue.dottedEighth.seconds(bpm: 120) == 0.375)
        #expect(NoteValue.dottedEighth.description == "1/8.")
        #expect(NoteValue.eighthTriplet.description == "1/8t")
    }

    /// With a low-pass in the loop each repeat keeps less treble than the
    /// one before, and with a high-pass less bass.
    @Test func loopFiltersDarkenAndThinEachRepeat() {
        func bandShare(_ x: ArraySlice<Float>, below hz: Double) -> Double {
            let spectrum = SignalAnalysis.magnitudeSpectrum(x, windowed: false)
            let edge = Int(hz / fs * Double(x.count))
            var low = 0.0, total = 0.0
            for (k, m) in spectrum.enumerated() {
                total += m * m
                if k < edge { low += m * m }
            }
            return low / total
        }
        var delay = Delay(sampleRate: fs, parameters: .init(time: .milliseconds(100), mode: .stereo, feedback: 0.8,
                                                             lowPassHz: 2000, highPassHz: 300))
        let out = render(&delay, left: Measure.impulse(4 * 4800 + 2048), right: Measure.impulse(4 * 4800 + 2048))
        var treble: [Double] = [], bass: [Double] = []
        for k in 1...4 {
            let slice = out.left[(k * 4800 - 512)..<(k * 4800 + 1536)]
            treble.append(1 - bandShare(slice, below: 4000))
            bass.append(bandShare(slice, below: 150))
        }
        print("delay repeats: treble share \(treble), bass share \(bass)")
        #expect(zip(treble, treble.dropFirst()).allSatisfy { $0 > 2 * $1 })
        #expect(zip(bass, bass.dropFirst()).allSatisfy { $0 > 1.5 * $1 })
    }

    /// Changing the time while a tone runs crossfades: no step larger than
    /// the tone's own.
    @Test func changingTheTimeDoesNotClick() {
        var delay = Delay(sampleRate: fs, parameters: .init(time: .milliseconds(200), mode: .pingPong, feedback: 0.5))
        let x = Measure.sine(frequency: 300, amplitude: 0.5, frames: Int(1.5 * fs), sampleRate: fs)
        var frame = 0
        let out = Measure.render(left: x, right: x, block: 64) {
            if frame == 38400 { delay.parameters.time = .milliseconds(330) }
            if frame == 57600 { delay.setTempo(bpm: 93); delay.parameters.time = .note(.dottedEighth) }
            if frame == 57664 { delay.parameters.time = .milliseconds(90) }     // during the crossfade
            delay.process(inputLeft: $0, inputRight: $1, outputLeft: $2, outputRight: $3, frames: $4)
            frame += $4
        }
        let peak = max(SignalAnalysis.peak(out.left[24000...]), SignalAnalysis.peak(out.right[24000...]))
        let step = max(SignalAnalysis.maxStep(out.left[24000...]), SignalAnalysis.maxStep(out.right[24000...]))
        // a 300 Hz tone steps at most 2π·300/48000 = 0.039 × its amplitude
        print("delay time changes: max step \(step), peak \(peak)")
        #expect(step < 0.05 * peak)
        #expect(delay.delayFrames == 4320)
    }

    @Test func tailCoversTheRepeats() {
        var delay = Delay(sampleRate: fs, parameters: .init(time: .milliseconds(50), mode: .stereo, feedback: 0.5,
                                                             lowPassHz: nil, highPassHz: nil))
        let frames = Int((delay.tailSeconds + 0.2) * fs)
        let out = render(&delay, left: Measure.impulse(frames), right: Measure.impulse(frames))
        let last = out.left.lastIndex { abs($0) > 1e-6 }!
        #expect(Double(last) / fs < delay.tailSeconds)
        #expect(Double(last) / fs > 0.5 * delay.tailSeconds)
    }
}
