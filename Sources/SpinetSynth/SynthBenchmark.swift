#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import SpinetEngine
import SpinetMIDI

/// How many voices one core renders in real time. Not a test: call it from
/// a release build (`swift build -c release`) on an otherwise idle core.
public enum SynthBenchmark {
    /// The preset measured: both oscillators (detuned saws), the resonant
    /// filter swept by its envelope and the LFO, both envelopes running,
    /// vibrato on (mod wheel at half).
    static var workload: Preset {
        var p = Preset(name: "benchmark", program: 0)
        p.wave = .saw; p.wave2 = .saw; p.mix = 0.5; p.detune = 9
        p.cutoff = 800; p.resonance = 0.4; p.filterEnvAmount = 36; p.keyTracking = 0.5
        p.attack = 0.01; p.decay = 1.5; p.sustain = 0.7; p.release = 0.3
        p.filterAttack = 0.02; p.filterDecay = 3; p.filterSustain = 0.4
        p.lfoRate = 5; p.vibrato = 0.3; p.lfoToCutoff = 3
        return p
    }

    /// Renders `voices` sustained notes for `seconds` of audio in 256-frame
    /// blocks and times it.
    ///
    /// - Returns: voices one core can render in real time at `sampleRate`,
    ///   and the cost of one voice for one sample in nanoseconds.
    public static func voicesPerCore(sampleRate: Double = 48_000, seconds: Double = 2) -> (voicesPerCore: Double, nsPerVoiceSample: Double) {
        voicesPerCore(sampleRate: sampleRate, seconds: seconds, voices: 512)
    }

    public static func voicesPerCore(sampleRate: Double, seconds: Double, voices: Int) -> (voicesPerCore: Double, nsPerVoiceSample: Double) {
        voicesPerCore(sampleRate: sampleRate, seconds: seconds, voices: voices, sends: nil)
    }

    /// The same, rendered the way the engine renders (dry sound and effect
    /// sends, `render(_:frames:)`) with every channel's CC 91, CC 93 and
    /// CC 94 set to `sends`; nil renders dry only (`render(left:right:frames:)`).
    /// Sends (0, 0, 0) measure the cost of a dry synth inside the engine.
    public static func voicesPerCore(sampleRate: Double, seconds: Double, voices: Int,
                                     sends: (reverb: UInt8, chorus: UInt8, delay: UInt8)?) -> (voicesPerCore: Double, nsPerVoiceSample: Double) {
        let bank: PresetBank
        do {
            bank = try PresetBank(presets: [workload])
        } catch {
            fatalError("benchmark preset is invalid: \(error)")
        }
        let synth = OscillatorSynth(presets: bank, polyphony: voices)
        let block = 256
        synth.prepare(sampleRate: sampleRate, maxFrames: block, channels: 16)
        for c in 0..<16 {
            synth.receive(.controlChange(channel: UInt8(c), controller: MIDIController.modulation, value: 64))
            if let sends {
                synth.receive(.controlChange(channel: UInt8(c), controller: MIDIController.reverbSend, value: sends.reverb))
                synth.receive(.controlChange(channel: UInt8(c), controller: MIDIController.chorusSend, value: sends.chorus))
                synth.receive(.controlChange(channel: UInt8(c), controller: MIDIController.delaySend, value: sends.delay))
            }
        }
        for v in 0..<voices {
            let channel = UInt8(v % 16)
            let key = UInt8(24 + (v / 16) % 80)
            synth.receive(.noteOn(channel: channel, key: key, velocity: UInt8(60 + v % 60)))
        }
        let storage = FixedBuffer<Float>(repeating: 0, count: 8 * block)
        let buffers = storage.pointer
        let left = buffers, right = buffers + block
        let output = UnitOutput(left: left, right: right,
                                reverbLeft: buffers + 2 * block, reverbRight: buffers + 3 * block,
                                chorusLeft: buffers + 4 * block, chorusRight: buffers + 5 * block,
                                delayLeft: buffers + 6 * block, delayRight: buffers + 7 * block)
        let withSends = sends != nil
        func renderOnce() {
            if withSends {
                synth.render(output, frames: block)
            } else {
                synth.render(left: left, right: right, frames: block)
            }
        }
        // Warm up (tables, caches), then time.
        for _ in 0..<20 { renderOnce() }
        let blocks = max(1, Int(seconds * sampleRate) / block)
        // Thread CPU time, not wall time: on a shared machine the thread may
        // be descheduled, which says nothing about the synth's cost.
        let start = threadCPUNanoseconds()
        for _ in 0..<blocks { renderOnce() }
        let ns = Double(threadCPUNanoseconds() - start)
        let voiceSamples = Double(blocks * block) * Double(synth.activeVoices)
        let perVoiceSample = ns / max(voiceSamples, 1)
        return (1e9 / (perVoiceSample * sampleRate), perVoiceSample)
    }
}

/// CPU time consumed by the calling thread, in nanoseconds.
private func threadCPUNanoseconds() -> Int64 {
    var t = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t)
    return Int64(t.tv_sec) * 1_000_000_000 + Int64(t.tv_nsec)
}
