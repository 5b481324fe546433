import SpinetEngine
import Synchronization
import SpinetMIDI

/// The engine the process thread renders at one sample rate, with the queue
/// that carries JACK MIDI into it.
///
/// Built off the process thread (when the client opens, and again when the
/// server's sample rate changes), handed to the process thread by pointer,
/// and released off it (see `JACKClient`).
final class JACKGraph: @unchecked Sendable {
    let engine: Engine
    let sampleRate: Int
    /// Process thread → engine: this cycle's JACK MIDI, pushed right before
    /// `engine.render` on the same thread (single producer, single
    /// consumer). An `Unmanaged<EventQueue>`'s bits holding a reference, or
    /// 0 while there is none yet (set once: see `attach`).
    private let midiBits = Atomic<UInt>(0)
    /// Ports of 16 channels the engine has.
    let ports: Int
    /// Process thread only: the MIDI clock's tempo.
    var clock = ClockTempo()

    /// Adds the MIDI queue to `engine` (built by the host's graph builder,
    /// not yet prepared) and prepares it for up to `maxFrames` a render call.
    /// Larger JACK periods are fine: `Engine.render` renders them in pieces,
    /// so a buffer-size change needs no new engine.
    init(engine: Engine, sampleRate: Int, maxFrames: Int, queueCapacity: Int) {
        self.engine = engine
        self.sampleRate = sampleRate
        ports = engine.configuration.ports
        let queue = engine.addInput(capacity: queueCapacity)
        engine.prepare(sampleRate: Double(sampleRate), maxFrames: maxFrames)
        attach(queue)
    }

    /// An engine its host built and prepared (at the server's rate); JACK
    /// MIDI reaches it once `attach` gives one of its input queues.
    init(prepared engine: Engine) {
        self.engine = engine
        sampleRate = Int(engine.sampleRate)
        ports = engine.configuration.ports
    }

    deinit {
        let bits = midiBits.load(ordering: .acquiring)
        if bits != 0 { Unmanaged<EventQueue>.fromOpaque(UnsafeRawPointer(bitPattern: bits)!).release() }
    }

    /// Gives the queue JACK MIDI goes into: one of the engine's inputs, for
    /// the process thread alone to push to. Once; false if one was given.
    @discardableResult
    func attach(_ queue: EventQueue) -> Bool {
        let bits = UInt(bitPattern: Unmanaged.passRetained(queue).toOpaque())
        if midiBits.compareExchange(expected: 0, desired: bits, ordering: .acquiringAndReleasing).exchanged { return true }
        Unmanaged<EventQueue>.fromOpaque(UnsafeRawPointer(bitPattern: bits)!).release()
        return false
    }

    // MARK: process thread

    /// Process thread only. Hands one JACK MIDI event, `offset` frames into
    /// the cycle about to be rendered, to the engine: the one place where
    /// events enter. Today it goes through the engine's input queue stamped
    /// with the absolute frame (`frameTime + offset`), which the engine's
    /// next `render` applies at exactly that frame; once the engine takes
    /// events inside `render(frames:left:right:events:)`, this appends to
    /// the cycle's event list instead. Returns false when it was dropped
    /// (queue full; counted by the queue) or is not for the engine.
    @inline(__always)
    @discardableResult
    func deliver(_ bytes: UnsafePointer<UInt8>, count: Int, offset: UInt32, port: Int) -> Bool {
        let bits = midiBits.load(ordering: .acquiring)
        guard count > 0, bits != 0 else { return false }
        return Unmanaged<EventQueue>.fromOpaque(UnsafeRawPointer(bitPattern: bits)!)._withUnsafeGuaranteedRef { midi in
            deliver(bytes, count: count, offset: offset, port: port, into: midi)
        }
    }

    @inline(__always)
    private func deliver(_ bytes: UnsafePointer<UInt8>, count: Int, offset: UInt32, port: Int, into midi: EventQueue) -> Bool {
        let frame = engine.frameTime &+ Int64(offset)
        let status = bytes[0]
        switch status {
        case 0xF0:
            return midi.pushSysEx(frame: frame, UnsafeBufferPointer(start: bytes, count: count))
        case 0xF8:
            if let bpm = clock.tick(at: frame, sampleRate: sampleRate) { engine.setTempo(beatsPerMinute: bpm) }
            return false
        case 0xFA, 0xFB, 0xFC:
            clock.restart()
            return false
        default:
            guard status >= 0x80 else { return false }      // JACK MIDI has no running status
            let m = MIDIMessage(status: status, data1: count > 1 ? bytes[1] : 0, data2: count > 2 ? bytes[2] : 0,
                                port: UInt8(truncatingIfNeeded: min(port, ports - 1)))
            guard let m else { return false }             // other system messages: nothing to play
            return midi.push(EngineEvent(frame: frame, m))
        }
    }

    /// Process thread only. Releases every note and pedal on the channels of
    /// the MIDI ports in `ports` (bit k: port k; all bits: every channel) at
    /// the start of the next render: after the server came back (the
    /// note-offs of notes held when it went away were never delivered), or
    /// when a source was disconnected from a port.
    func release(ports mask: UInt32) {
        let bits = midiBits.load(ordering: .acquiring)
        guard bits != 0 else { return }
        Unmanaged<EventQueue>.fromOpaque(UnsafeRawPointer(bitPattern: bits)!)._withUnsafeGuaranteedRef { midi in
            let frame = engine.frameTime
            for c in 0..<engine.channelCount where mask == UInt32.max || (c / 16 < 32 && mask & (1 << UInt32(c / 16)) != 0) {
                let ch = UInt8(truncatingIfNeeded: c)
                midi.push(EngineEvent(frame: frame, .controlChange(channel: ch, controller: MIDIController.sustain, value: 0)))
                midi.push(EngineEvent(frame: frame, .controlChange(channel: ch, controller: MIDIController.sostenuto, value: 0)))
                midi.push(EngineEvent(frame: frame, .controlChange(channel: ch, controller: MIDIController.allNotesOff, value: 0)))
            }
        }
    }
}

/// The tempo of a MIDI clock (24 ticks per quarter note), measured on the
/// engine's frame timeline, so it is exact whatever the wall clock does
/// (freewheeling included). A new tempo every quarter note.
struct ClockTempo {
    private var firstTick: Int64 = -1
    private var ticks = 0

    mutating func restart() {
        firstTick = -1
        ticks = 0
    }

    /// Process thread. The tempo after a tick at `frame`, once a quarter
    /// note has been timed; nil otherwise.
    mutating func tick(at frame: Int64, sampleRate: Int) -> Double? {
        if firstTick < 0 { firstTick = frame; ticks = 0; return nil }
        ticks += 1
        guard ticks == 24 else { return nil }
        let frames = frame - firstTick
        firstTick = frame
        ticks = 0
        guard frames > 0 else { return nil }
        let bpm = 60 * Double(sampleRate) / Double(frames)
        return bpm >= 20 && bpm <= 400 ? bpm : nil
    }
}
