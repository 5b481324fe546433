import Foundation
import Testing
import SpinetEngine
import SpinetFile
import SpinetMIDI
import SpinetSoundFont
import SpinetTestSupport
import SpinetTestTraits

/// Floods of every shape that once overflowed FluidSynth's voice-event ring:
/// the messages, all at one tick, and the organ notes held across them.
enum Flood: String, CaseIterable, CustomStringConvertible, Sendable {
    case oneController = "20,000 of one controller"
    case severalControllers = "30,000 of five controllers"
    case bendsAndPressure = "25,000 pitch bends and channel pressures"
    case sustainToggles = "12,000 sustain toggles around modulation"
    case notePairs = "4,000 note pairs on other channels"
    case sixteenChannels = "40,000 controllers on sixteen channels"
    case hiHats = "3,000 closed hi-hats"
    case pedalToggles = "40,000 sustain toggles under a ten-note chord"
    case dataEntry = "15,000 pitch-bend-range RPNs"
    case oneKeyPairs = "2,000 note pairs of one key, a chord on another channel"
    case oneKeyPairsSameChannel = "2,000 note pairs of one key in a chord's channel"
    case drumPairs = "2,000 drum note pairs, chords on three channels"

    var description: String { rawValue }

    /// Note on/off pairs and the chords released after them.
    static let notePairFloods: [Flood] = [.oneKeyPairs, .oneKeyPairsSameChannel, .drumPairs]

    /// (channel, key) of the organ notes (never on the drum channel, 10).
    var notes: [(UInt8, UInt8)] {
        switch self {
        case .sustainToggles: return [(0, 60), (0, 64)]
        case .pedalToggles: return [48, 52, 55, 60, 64, 67, 72, 76, 79, 84].map { (0, UInt8($0)) }
        case .sixteenChannels: return (0..<16).filter { $0 != 9 }.map { (UInt8($0), UInt8(48 + $0)) }
        case .oneKeyPairs: return [60, 64, 67].map { (1, UInt8($0)) }
        case .oneKeyPairsSameChannel: return [60, 64, 67].map { (0, UInt8($0)) }
        case .drumPairs: return [0, 1, 2].flatMap { ch in [60, 64, 67].map { (UInt8(ch), UInt8($0)) } }
        default: return [(0, 60)]
        }
    }

    /// Channels whose own notes are made inaudible (volume and expression
    /// 0, about -190 dB), so only the organ notes are measured.
    var muted: [UInt8] {
        switch self {
        case .notePairs: return Array(1...15)
        case .oneKeyPairs: return [0]
        case .drumPairs: return [9]
        default: return []
        }
    }

    var messages: [MIDIMessage] {
        var m: [MIDIMessage] = []
        switch self {
        case .oneController:
            for i in 0..<20_000 { m.append(.controlChange(channel: 0, controller: 11, value: UInt8(64 + i % 64))) }
        case .severalControllers:
            let numbers: [UInt8] = [1, 7, 10, 11, 91]
            for i in 0..<30_000 { m.append(.controlChange(channel: 0, controller: numbers[i % 5], value: UInt8(40 + i % 80))) }
        case .bendsAndPressure:
            for i in 0..<25_000 {
                if i % 2 == 0 {
                    m.append(.pitchBend(channel: 0, value: UInt16(8192 + i % 500)))
                } else {
                    m.append(.channelPressure(channel: 0, pressure: UInt8(i % 128)))
                }
            }
        case .sustainToggles:
            for i in 0..<12_000 {
                m.append(.controlChange(channel: 0, controller: 64, value: 127))
                m.append(.controlChange(channel: 0, controller: 1, value: UInt8(i % 128)))
                m.append(.controlChange(channel: 0, controller: 64, value: 0))
            }
        case .notePairs:
            for i in 0..<4_000 {
                let ch = UInt8(1 + i % 15), key = UInt8(30 + i % 60)
                m.append(.noteOn(channel: ch, key: key, velocity: 90))
                m.append(.noteOff(channel: ch, key: key, velocity: 0))
            }
        case .sixteenChannels:
            for i in 0..<40_000 { m.append(.controlChange(channel: UInt8(i % 16), controller: 11, value: UInt8(i % 128))) }
        case .hiHats:
            // each kills the ones still sounding (an exclusive class): the
            // cost in FluidSynth grows with every note
            for _ in 0..<3_000 { m.append(.noteOn(channel: 9, key: 42, velocity: 100)) }
        case .pedalToggles:
            // pedals are never merged: each one reaches FluidSynth
            for i in 0..<40_000 { m.append(.controlChange(channel: 0, controller: 64, value: i % 2 == 0 ? 127 : 0)) }
        case .oneKeyPairs, .oneKeyPairsSameChannel:
            // each note-on releases again every voice of the key still
            // sounding (in its release too): FluidSynth's cost grows with every pair
            for _ in 0..<2_000 {
                m.append(.noteOn(channel: 0, key: 60, velocity: 100))
                m.append(.noteOff(channel: 0, key: 60, velocity: 0))
            }
        case .drumPairs:
            for i in 0..<2_000 {
                let key = UInt8(36 + i % 8)
                m.append(.noteOn(channel: 9, key: key, velocity: 100))
                m.append(.noteOff(channel: 9, key: key, velocity: 0))
            }
        case .dataEntry:
            for i in 0..<15_000 {
                m.append(.controlChange(channel: 0, controller: 101, value: 0))
                m.append(.controlChange(channel: 0, controller: 100, value: 0))
                m.append(.controlChange(channel: 0, controller: 6, value: UInt8(2 + i % 10)))
            }
        }
        return m
    }
}

/// A file: organ notes from tick 0, the flood at tick 480 (0.5 s at 120 bpm),
/// the notes' note-offs just after it at the same tick.
func floodFile(_ flood: Flood) -> [UInt8] {
    var writer = MIDIFileWriter(format: 1, ticksPerQuarter: 480)
    var events: [(tick: Int64, event: TrackEvent.Kind)] = []
    for ch in Set(flood.notes.map { $0.0 }) {
        // channel 10 of the flood is the drum channel; the organ notes are not on it
        events.append((0, .message(.programChange(channel: ch, program: 19))))
        events.append((0, .message(.controlChange(channel: ch, controller: 91, value: 0))))
    }
    for ch in flood.muted {
        events.append((0, .message(.controlChange(channel: ch, controller: 7, value: 0))))
        events.append((0, .message(.controlChange(channel: ch, controller: 11, value: 0))))
    }
    for (ch, key) in flood.notes { events.append((0, .message(.noteOn(channel: ch, key: key, velocity: 100)))) }
    for m in flood.messages { events.append((480, .message(m))) }
    for (ch, key) in flood.notes { events.append((480, .message(.noteOff(channel: ch, key: key, velocity: 0)))) }
    writer.addTrack(events)
    return writer.bytes()
}

@Suite("Event floods")
struct FloodTests {
    /// Nothing is lost offline: however many messages arrive at one tick,
    /// the note-offs after them are heard, so the organ notes stop after
    /// their release instead of holding to the 10 s cap.
    @Test(arguments: Flood.allCases)
    func notesStopAfterAFlood(_ flood: Flood) throws {
        try checkNotesStop(after: flood, polyphony: 256)
    }

    /// The same at any polyphony: FluidSynth's ring is 64 entries per voice,
    /// so a small polyphony fills it with far fewer messages.
    /// (Floods whose own notes are inaudible: at polyphony 1 a flood plays
    /// out for seconds, one note a block, and on its own channel it sounds.)
    @Test(arguments: [Flood.oneKeyPairs, .drumPairs], [1, 16, 2048])
    func notesStopAfterAFloodAtAnyPolyphony(_ flood: Flood, polyphony: Int) throws {
        try checkNotesStop(after: flood, polyphony: polyphony)
    }

    func checkNotesStop(after flood: Flood, polyphony: Int) throws {
        let file = try MIDIFile(bytes: floodFile(flood))
        let schedule = file.schedule(sampleRate: 48000)
        let off = Int(schedule.frame(forTick: 480))
        let out = try renderWithSoundFont(schedule, polyphony: polyphony)
        // The organ's release is well under a second; 1.5 s after the note-offs
        // everything must be silent (and the render ends soon after).
        let from = off + 72_000
        #expect(out.left.count < off + 4 * 48000, "the render ran \(Double(out.left.count) / 48000) s: a note held")
        if out.left.count > from {
            let tail = max(SignalAnalysis.peak(out.left[from...]), SignalAnalysis.peak(out.right[from...]))
            #expect(SignalAnalysis.dBFS(tail) < -90, "\(SignalAnalysis.dBFS(tail)) dBFS 1.5 s after the note-offs")
        }
        // and the notes did sound before
        #expect(SignalAnalysis.peak(out.left[(off - 4800)..<off]) > 0.01)
        let messages = SoundFontUnit.drainRenderThreadMessages()
        #expect(!messages.contains { $0.contains("Ringbuffer full") }, "\(messages.prefix(3))")
    }
}

/// The largest magnitude among `n` samples.
func peakOf(_ p: UnsafeMutablePointer<Float>, _ n: Int) -> Float {
    var m: Float = 0
    for i in 0..<n { m = max(m, abs(p[i])) }
    return m
}

extension FloodTests {
    /// A unit as live hosts use it (Spinet's effects, 256-frame calls) and
    /// its output buffers (the caller deallocates them).
    static func liveUnit(polyphony: Int) throws -> (SoundFontUnit, UnsafeMutablePointer<Float>, UnitOutput) {
        var options = SoundFontOptions()
        options.fluidEffects = false
        options.polyphony = polyphony
        let unit = try SoundFontUnit(fonts: [bundledFont], sampleRate: 48000, options: options)
        unit.prepare(sampleRate: 48000, maxFrames: 256, channels: 16)
        let buffers = UnsafeMutablePointer<Float>.allocate(capacity: 8 * 256)
        return (unit, buffers, UnitOutput(planar: buffers, stride: 256))
    }

    /// Live, the unit may drop what a flood brings beyond its backlog, but
    /// never a release: 20,000 hi-hat notes (each a voice started, about 50
    /// updates of FluidSynth's ring) arrive at once between renders, then
    /// the organ note's note-off. The hi-hats beyond the backlog are
    /// dropped and counted; the note-off is kept, and the organ stops.
    @Test func aLiveFloodDropsButNeverANoteOff() throws {
        let (unit, buffers, output) = try Self.liveUnit(polyphony: 256)
        defer { buffers.deallocate() }
        unit.receive(.programChange(channel: 0, program: 19))
        unit.receive(.noteOn(channel: 0, key: 60, velocity: 100))
        for _ in 0..<8 { unit.render(output, frames: 256) }
        #expect(peakOf(buffers, 256) > 0.01)
        for _ in 0..<20_000 { unit.receive(.noteOn(channel: 9, key: 42, velocity: 100)) }
        unit.receive(.noteOff(channel: 0, key: 60, velocity: 0))
        var last: Float = 0
        for block in 0..<(3 * 48000 / 256) {
            unit.render(output, frames: 256)
            if block >= 5 * 48000 / 2 / 256 {
                last = max(last, peakOf(buffers, 256),
                           peakOf(buffers + 256, 256))
            }
        }
        #expect(unit.droppedEvents > 0)
        #expect(SignalAnalysis.dBFS(last) < -90, "\(SignalAnalysis.dBFS(last)) dBFS 2.5 s after the note-off")
    }

    /// Live, 20,000 note pairs of one key on channel 1 (each note-on
    /// releases again every voice of the key still sounding) arrive at once
    /// between renders, then the note-offs of a chord on channel 2, at
    /// several polyphonies: what the backlog cannot hold is dropped and
    /// counted, the note-offs are kept and overtake the flood (nothing of
    /// their channel waits), and the chord is silent 1 s later.
    @Test(arguments: [16, 256])
    func aLiveNotePairFloodNeverHoldsAnotherChannelsChord(polyphony: Int) throws {
        let (unit, buffers, output) = try Self.liveUnit(polyphony: polyphony)
        defer { buffers.deallocate() }
        unit.receive(.programChange(channel: 1, program: 19))
        unit.receive(.controlChange(channel: 0, controller: 7, value: 0))      // the flood's own notes inaudible
        for key: UInt8 in [60, 64, 67] { unit.receive(.noteOn(channel: 1, key: key, velocity: 100)) }
        for _ in 0..<8 { unit.render(output, frames: 256) }
        #expect(peakOf(buffers, 256) > 0.01)
        for _ in 0..<20_000 {
            unit.receive(.noteOn(channel: 0, key: 60, velocity: 100))
            unit.receive(.noteOff(channel: 0, key: 60, velocity: 0))
        }
        for key: UInt8 in [60, 64, 67] { unit.receive(.noteOff(channel: 1, key: key, velocity: 0)) }
        var last: Float = 0
        for block in 0..<(2 * 48000 / 256) {
            unit.render(output, frames: 256)
            if block >= 48000 / 256 { last = max(last, peakOf(buffers, 256), peakOf(buffers + 256, 256)) }
        }
        #expect(unit.droppedEvents > 0)
        #expect(SignalAnalysis.dBFS(last) < -90, "\(SignalAnalysis.dBFS(last)) dBFS 1 s after the chord's note-offs")
        let messages = unit.drainRenderMessages()
        #expect(!messages.contains { $0.contains("Ringbuffer full") }, "\(messages.prefix(3))")
    }

    /// A flood through the engine's queue, rendered live-sized: the render
    /// path still allocates nothing and takes no lock, drops nothing, and
    /// the organ note ends.
    @Test(.realtimeProbe) func aFloodAllocatesNothingAndTakesNoLock() throws {
        #expect(RealtimeProbe.isActive, "the allocation probe is not interposed in this test binary")
        var options = SoundFontOptions()
        options.fluidEffects = false
        let unit = try SoundFontUnit(fonts: [bundledFont], sampleRate: 48000, options: options)
        let (engine, queue) = EngineHarness.make(unit, queueCapacity: 1 << 16)
        let left = UnsafeMutablePointer<Float>.allocate(capacity: 256)
        let right = UnsafeMutablePointer<Float>.allocate(capacity: 256)
        defer { left.deallocate(); right.deallocate() }
        engine.render(frames: 256, left: left, right: right)
        queue.push(EngineEvent(frame: 256, .programChange(channel: 0, program: 19)))
        queue.push(EngineEvent(frame: 256, .noteOn(channel: 0, key: 60, velocity: 100)))
        // the flood's own notes (channels 2-16) are made inaudible: volume 0
        for ch in 1..<16 { queue.push(EngineEvent(frame: 256, .controlChange(channel: UInt8(ch), controller: 7, value: 0))) }
        let at: Int64 = 2048
        var pushed = 0
        // (the note-pair floods are for the offline guarantee: their notes
        // would outlast the backlog of this live-sized render)
        for flood in Flood.allCases where !Flood.notePairFloods.contains(flood) {
            for m in flood.messages.prefix(6_000) where queue.push(EngineEvent(frame: at, m)) { pushed += 1 }
        }
        queue.push(EngineEvent(frame: at, .noteOff(channel: 0, key: 60, velocity: 0)))
        var allocations = 0, locks = 0
        var last: Float = 0
        for block in 0..<(4 * 48000 / 256) {
            let counts = RealtimeProbe.count { engine.render(frames: 256, left: left, right: right) }
            allocations += counts.allocations
            locks += counts.locks
            if block >= 3 * 48000 / 256 {
                last = max(last, peakOf(left, 256))
            }
        }
        #expect(pushed > 40_000)
        #expect(allocations == 0)
        #expect(locks == 0)
        #expect(engine.statistics.droppedEvents == 0)
        #expect(SignalAnalysis.dBFS(last) < -90, "\(SignalAnalysis.dBFS(last)) dBFS 3 s after the note-off")
    }
}
