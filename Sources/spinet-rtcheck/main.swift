// spinet-rtcheck: counts what Spinet's render path does that a real-time
// thread must never do -- allocate or free memory, take a lock, make a system
// call -- over many live-sized render cycles with 256 voices sounding and
// events arriving every cycle, and a SoundFont switch halfway. The graph is
// `spinet play`'s own (GraphBuilder.live). `spinet bench` runs it and prints
// its lines.
//
// It is a separate executable because the counting works by interposing
// malloc and the lock functions (Tests/CRealtimeProbe); the `spinet` binary
// itself carries no such hooks. Exit status 1 if anything was counted, 2 if
// it could not run.
//
// Usage: spinet-rtcheck [SOUNDFONT] [--period FRAMES] [--cycles N]
import Foundation
import SpinetEffects
import SpinetEngine
import SpinetFile
import SpinetRig
import SpinetMIDI
import SpinetSoundFont
import SpinetSynth
import SpinetTestSupport

struct Options {
    var font: String?
    var period = 128
    var cycles = 2000
    var rate = 48000.0
}

func parse() -> Options {
    var o = Options()
    var args = CommandLine.arguments.dropFirst()
    while let a = args.popFirst() {
        switch a {
        case "--period": o.period = Int(args.popFirst() ?? "") ?? 0
        case "--cycles": o.cycles = Int(args.popFirst() ?? "") ?? 0
        default: o.font = a
        }
    }
    return o
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(("spinet-rtcheck: " + message + "\n").data(using: .utf8)!)
    exit(2)
}

/// One live configuration: the engine, its queue and what plays.
final class Rig: @unchecked Sendable {
    let engine: Engine
    let queue: EventQueue
    let slot: SwappableInstrument
    let settings: GraphSettings
    let font: String
    let rate: Double
    let left: UnsafeMutablePointer<Float>
    let right: UnsafeMutablePointer<Float>
    let period: Int
    var cycle = 0
    let controllers: [UInt8] = [1, 7, 10, 11, 64, 91, 93, 94, 74]
    var masterVolume: [UInt8] = [0xF0, 0x7F, 0x7F, 0x04, 0x01, 0x00, 0x60, 0xF7]
    /// GS Reverb Macro, Hall 2 (the engine switches its reverb on it)
    let gsReverbHall: [UInt8] = [0xF0, 0x41, 0x10, 0x42, 0x12, 0x40, 0x01, 0x30, 0x04, 0x0B, 0xF7]

    /// The graph `spinet play` runs, built by the same `GraphBuilder.live`:
    /// the SoundFont in its swappable slot, Spinet's synth on channel 16 and
    /// on Bank Select 126, one queue for the MIDI thread and one for control.
    init(font: String, rate: Double, period: Int, spinetEffects: Bool) throws {
        var settings = GraphSettings()
        settings.soundFont.polyphony = 512
        settings.soundFont.fluidEffects = !spinetEffects
        if spinetEffects {
            settings.engine.reverb = .hall
            settings.engine.chorus = .wide
            settings.engine.delay = .dottedEighth
            settings.engine.equalizer = .init(highPassEnabled: true, highPassFrequency: 30, lowShelfGainDB: 2, highShelfGainDB: -2)
        }
        settings.channelAssignments = ["16=synth"]
        let graph = try GraphBuilder.live(settings, fonts: [font], rate: rate, inputCapacities: [8192, 1024])
        engine = graph.engine
        queue = graph.inputs[0]
        slot = graph.soundFontSlot!
        self.settings = settings
        self.font = font
        self.rate = rate
        self.period = period
        engine.prepare(sampleRate: rate, maxFrames: period)
        left = .allocate(capacity: period)
        right = .allocate(capacity: period)
        // sustained programs, so the voices stay on
        let programs: [UInt8] = [48, 49, 19, 16, 89, 90, 52, 50, 48, 0, 19, 49, 89, 16, 52, 91]
        for ch in 0..<15 where ch != 9 { queue.push(EngineEvent(frame: 0, .programChange(channel: UInt8(ch), program: programs[ch]))) }
        var key = 0, attempts = 0
        while engine.statistics.activeVoices < 256 && attempts < 1024 {
            let n = key / 7
            let ch = UInt8(n % 15 < 9 ? n % 15 : n % 15 + 1) % 15
            queue.push(EngineEvent(frame: engine.frameTime, .noteOn(channel: ch, key: UInt8(36 + key % 60), velocity: 90)))
            engine.render(frames: period, left: left, right: right)
            key += 7
            attempts += 1
        }
        // every code path once before counting (lazy metadata, first-use tables)
        for _ in 0..<64 { feed(); engine.render(frames: period, left: left, right: right) }
    }

    /// The events of one cycle, as a keyboard and a DAW would send them:
    /// a note off and on, controllers, pitch bend, pressure, sometimes a
    /// program change, a master-volume SysEx and a reverb-type SysEx.
    func feed() {
        let f = engine.frameTime + Int64(cycle % period)
        let ch = UInt8(cycle % 16)
        let key = UInt8(40 + (cycle * 5) % 48)
        queue.push(EngineEvent(frame: f, .noteOff(channel: ch, key: key, velocity: 0)))
        queue.push(EngineEvent(frame: f, .noteOn(channel: ch, key: key, velocity: UInt8(40 + cycle % 80))))
        queue.push(EngineEvent(frame: f + 1, .controlChange(channel: ch, controller: controllers[cycle % controllers.count], value: UInt8(cycle % 128))))
        queue.push(EngineEvent(frame: f + 2, .pitchBend(channel: ch, value: UInt16((cycle * 97) % 16384))))
        queue.push(EngineEvent(frame: f + 3, .channelPressure(channel: ch, pressure: UInt8(cycle % 128))))
        if cycle % 50 == 0 { queue.push(EngineEvent(frame: f + 4, .programChange(channel: ch, program: UInt8(cycle % 100)))) }
        if cycle % 200 == 0 {
            masterVolume[6] = UInt8(64 + cycle % 60)
            queue.pushSysEx(frame: f + 5, masterVolume)
        }
        if cycle % 200 == 100 { queue.pushSysEx(frame: f + 5, gsReverbHall) }
        cycle += 1
    }

    func render() { engine.render(frames: period, left: left, right: right) }

    /// What `spinet play` does when a new SoundFont is asked for: load it on
    /// this (control) thread and offer it to the slot; the render thread
    /// takes it over at its next block, replaying the channel state into it,
    /// while the old one's notes ring on.
    func switchSoundFont() throws {
        let unit = try GraphBuilder.liveSoundFont(settings, fonts: [font], rate: rate)
        guard slot.offer(unit) else { fail("the SoundFont slot refused a new font") }
    }
}

let o = parse()
guard o.period > 0, o.cycles > 0 else { fail("--period and --cycles take positive numbers") }
guard let font = o.font ?? SoundFontLocator.defaultSoundFont() else { fail("no SoundFont found; pass one as the first argument") }
guard RealtimeProbe.isActive else { fail("the allocation probe is not active in this process (a sanitizer build?)") }

var dirty = false
for spinetEffects in [false, true] {
    let rig: Rig
    do { rig = try Rig(font: font, rate: o.rate, period: o.period, spinetEffects: spinetEffects) } catch { fail("\(error)") }
    var allocations = 0, frees = 0, locks = 0
    for cycle in 0..<o.cycles {
        // halfway, a font switch, as play does it (loaded here, uncounted)
        if cycle == o.cycles / 2 {
            do { try rig.switchSoundFont() } catch { fail("\(error)") }
        }
        rig.feed()
        let c = RealtimeProbe.counts { rig.render() }
        allocations += c.allocations
        frees += c.frees
        locks += c.locks
    }
    // the same again on a thread whose every system call is trapped
    let box = rig
    let trapped = RealtimeProbe.syscalls(failingCalls: false) {
        for _ in 0..<200 { box.feed(); box.render() }
    }
    let syscalls = trapped.map { String($0.count) } ?? "not measured (seccomp unavailable)"
    let what = spinetEffects ? "play's graph: swappable SoundFont unit (Spinet's reverb, chorus, delay, EQ) + oscillator synth"
                             : "play's graph: swappable SoundFont unit (FluidSynth's effects) + oscillator synth"
    print(String(format: "%@, up to %d voices, %d-frame periods: per %d render cycles %d allocations, %d frees, %d lock calls; system calls in 200 cycles: %@",
                 what, rig.engine.statistics.peakVoices, o.period, o.cycles, allocations, frees, locks, syscalls))
    if allocations + frees + locks > 0 || (trapped?.count ?? 0) > 0 { dirty = true }
}
exit(dirty ? 1 : 0)
