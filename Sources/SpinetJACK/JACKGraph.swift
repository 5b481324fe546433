import SpinetEngine
import Synchronization
import SpinetMIDI

/// The engine the process thread renders at one sample rate, with the list
/// that carries each cycle's JACK MIDI into it.
///
/// Built off the process thread (when the client opens, and again when the
/// server's sample rate changes), handed to the process thread by pointer,
/// and released off it (see `JACKClient`).
final class JACKGraph: @unchecked Sendable {
    let engine: Engine
    let sampleRate: Int
    /// Ports of 16 channels the engine has.
    let ports: Int
    /// Process thread only: this cycle's events, in offset order, for
    /// `Engine.render(frames:left:right:events:)`. SysEx bytes point into
    /// JACK's port buffers, valid for the cycle.
    private let events: UnsafeMutablePointer<CallbackEvent>
    private let sorted: UnsafeMutablePointer<CallbackEvent>
    let capacity: Int
    private(set) var count = 0
    /// A later port's events interleave with an earlier one's: sort before render.
    private var needsSort = false
    /// Per offset, for the counting sort (offsets are frames of one cycle).
    private let offsetCounts: UnsafeMutablePointer<Int>
    private let offsetLimit: Int
    /// Events that did not fit this cycle's list (counted, never blocking).
    let overflowed = Atomic<Int>(0)
    /// Process thread only: the MIDI clock's tempo, timed on the engine's
    /// frames (exact whatever the wall clock does, freewheeling included),
    /// by the rule every MIDI input follows.
    var clock = MIDIClockTempo()

    /// Prepares `engine` (built by the host's graph builder, not yet
    /// prepared) for up to `maxFrames` a render call. Larger JACK periods
    /// are fine: `Engine.render` renders them in pieces, so a buffer-size
    /// change needs no new engine.
    convenience init(engine: Engine, sampleRate: Int, maxFrames: Int, eventsPerCycle: Int) {
        engine.prepare(sampleRate: Double(sampleRate), maxFrames: maxFrames)
        self.init(prepared: engine, capacity: eventsPerCycle)
    }

    /// An engine its host built and prepared at the server's rate.
    init(prepared engine: Engine, capacity: Int = 8192) {
        self.engine = engine
        sampleRate = Int(engine.sampleRate)
        ports = engine.configuration.ports
        self.capacity = max(capacity, 16)
        events = .allocate(capacity: self.capacity)
        sorted = .allocate(capacity: self.capacity)
        // Offsets beyond this (periods over 64k frames) are clamped into the last bucket.
        offsetLimit = 65536
        offsetCounts = .allocate(capacity: offsetLimit + 1)
        offsetCounts.initialize(repeating: 0, count: offsetLimit + 1)
    }

    deinit {
        events.deallocate()
        sorted.deallocate()
        offsetCounts.deallocate()
    }

    // MARK: process thread

    /// Process thread only. Starts a cycle's list.
    @inline(__always)
    func beginCycle() {
        count = 0
        needsSort = false
    }

    /// Process thread only. Hands one JACK MIDI event, `offset` frames into
    /// the cycle about to be rendered, to the engine: the one place where
    /// events enter. It goes into this cycle's list for
    /// `Engine.render(frames:left:right:events:)`, which applies it at
    /// exactly that frame. Returns false when it is not for the engine or
    /// the list is full (counted).
    @inline(__always)
    @discardableResult
    func deliver(_ bytes: UnsafePointer<UInt8>, count size: Int, offset: UInt32, port: Int) -> Bool {
        switch RawMIDIEvent(bytes, count: size, offset: Int(offset), port: UInt8(truncatingIfNeeded: min(port, ports - 1))) {
        case .event(let event):
            return append(event)
        case .clockTick:
            let frame = engine.frameTime &+ Int64(offset)
            if let bpm = clock.tick(atFrame: frame, sampleRate: sampleRate) { engine.setTempo(beatsPerMinute: bpm) }
            return false
        case .clockRestart:
            clock.restart()
            return false
        case .ignored:
            return false
        }
    }

    @inline(__always)
    private func append(_ event: CallbackEvent) -> Bool {
        guard count < capacity else { overflowed.add(1, ordering: .relaxed); return false }
        if count > 0 && events[count - 1].offset > event.offset { needsSort = true }
        events[count] = event
        count += 1
        return true
    }

    /// Process thread only. Releases every note and pedal on the channels of
    /// the MIDI ports in `ports` (bit k: port k; all bits: every channel) at
    /// the cycle's first frame: after the server came back (the note-offs of
    /// notes held when it went away were never delivered), or when a source
    /// was disconnected from a port. Call right after `beginCycle`.
    func release(ports mask: UInt32) {
        for c in 0..<engine.channelCount where mask == UInt32.max || (c / 16 < 32 && mask & (1 << UInt32(c / 16)) != 0) {
            let ch = UInt8(truncatingIfNeeded: c)
            _ = append(CallbackEvent(offset: 0, .controlChange(channel: ch, controller: MIDIController.sustain, value: 0)))
            _ = append(CallbackEvent(offset: 0, .controlChange(channel: ch, controller: MIDIController.sostenuto, value: 0)))
            _ = append(CallbackEvent(offset: 0, .controlChange(channel: ch, controller: MIDIController.allNotesOff, value: 0)))
        }
    }

    /// Process thread only. Renders the cycle with its events at their frames.
    @inline(__always)
    func render(frames: Int, left: UnsafeMutablePointer<Float>, right: UnsafeMutablePointer<Float>) {
        var list = events
        if needsSort { sortByOffset(); list = sorted }
        engine.render(frames: frames, left: left, right: right, events: UnsafeBufferPointer(start: list, count: count))
    }

    /// A stable counting sort of the list into `sorted` (several ports'
    /// events interleave; each port's are in order already). No allocation.
    private func sortByOffset() {
        var maxOffset = 0
        for i in 0..<count {
            let o = min(max(events[i].offset, 0), offsetLimit)
            offsetCounts[o] += 1
            if o > maxOffset { maxOffset = o }
        }
        var start = 0
        for o in 0...maxOffset {
            let n = offsetCounts[o]
            offsetCounts[o] = start
            start += n
        }
        for i in 0..<count {
            let o = min(max(events[i].offset, 0), offsetLimit)
            sorted[offsetCounts[o]] = events[i]
            offsetCounts[o] += 1
        }
        for o in 0...maxOffset { offsetCounts[o] = 0 }
    }
}
