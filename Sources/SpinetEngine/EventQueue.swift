import Synchronization
import SpinetMIDI

/// One event on its way to the render thread: a frame time on the engine's
/// timeline and either a short message or the length of a SysEx message whose
/// bytes travel in the queue's byte ring.
public struct EngineEvent: Sendable, Equatable {
    public enum Kind: Sendable, Equatable {
        case message(MIDIMessage)
        /// A complete SysEx message (F0 ... F7) of this many bytes, waiting in the byte ring.
        case sysEx(length: UInt32)
    }
    /// Absolute frame on the engine timeline (frame 0 = first frame after `prepare`).
    public var frame: Int64
    public var kind: Kind

    @inlinable public init(frame: Int64, kind: Kind) {
        self.frame = frame
        self.kind = kind
    }

    @inlinable public init(frame: Int64, _ message: MIDIMessage) {
        self.frame = frame
        self.kind = .message(message)
    }
}

/// A fixed-capacity single-producer single-consumer lock-free queue of
/// `EngineEvent`s, with a byte ring beside it for SysEx payloads.
///
/// One thread pushes (the sequencer thread, the file player, a control
/// thread: one queue each), the render thread pops. Nothing is allocated
/// after `init`; a full queue refuses the event and counts it as dropped —
/// the producer never blocks and never waits for the render thread.
///
/// The last `releaseReserve` slots take only releases (`MIDIMessage.isRelease`:
/// note-offs, pedals up, All Notes Off, ...): a flood fills the queue up to
/// the reserve and is dropped from there, while the note-offs that follow
/// it still get in, so a flood never leaves a note hanging.
///
/// Memory ordering: the producer writes the slot, then publishes the new
/// tail with release; the consumer reads the tail with acquire before it
/// reads the slot, and publishes the new head with release so the producer
/// (acquire) may reuse the slot.
public final class EventQueue: @unchecked Sendable {
    public let capacity: Int
    public let byteCapacity: Int
    /// Slots only releases may take (see the type's documentation).
    public let releaseReserve: Int
    private let mask: Int
    private let byteMask: Int
    private let slots: FixedBuffer<EngineEvent>
    private let bytes: FixedBuffer<UInt8>
    private let head = Atomic<Int>(0)      // next slot to read (consumer owns)
    private let tail = Atomic<Int>(0)      // next slot to write (producer owns)
    private let byteHead = Atomic<Int>(0)
    private let byteTail = Atomic<Int>(0)
    private let droppedCount = Atomic<Int>(0)
    /// `retract`: the events before this slot index (pushed by then) ...
    private let retractTail = Atomic<Int>(0)
    /// ... and at or after this frame are skipped unheard.
    private let retractFrame = Atomic<Int64>(.max)

    /// - Parameters:
    ///   - capacity: events; rounded up to a power of two.
    ///   - byteCapacity: SysEx bytes in flight; rounded up to a power of two.
    ///   - releaseReserve: slots kept for releases; default a sixteenth of the capacity.
    public init(capacity: Int = 8192, byteCapacity: Int = 1 << 18, releaseReserve: Int? = nil) {
        let c = Self.powerOfTwo(atLeast: max(capacity, 2))
        let b = Self.powerOfTwo(atLeast: max(byteCapacity, 16))
        self.capacity = c
        self.releaseReserve = max(0, min(releaseReserve ?? c / 16, c - 1))
        self.byteCapacity = b
        mask = c - 1
        byteMask = b - 1
        slots = FixedBuffer(repeating: EngineEvent(frame: 0, .systemReset), count: c)
        bytes = FixedBuffer(repeating: 0, count: b)
    }

    static func powerOfTwo(atLeast n: Int) -> Int {
        var p = 1
        while p < n { p <<= 1 }
        return p
    }

    /// Events refused because the queue (or its byte ring) was full.
    public var dropped: Int { droppedCount.load(ordering: .relaxed) }

    /// Events waiting (approximate when read from a third thread).
    public var count: Int { tail.load(ordering: .acquiring) &- head.load(ordering: .acquiring) }

    // MARK: producer side

    /// Producer thread only. Returns false (and counts a drop) when full:
    /// for a release, when every slot is taken; for anything else, when
    /// only the release reserve is left. `countingDrop: false` refuses
    /// without counting, for a producer that keeps the event and offers it
    /// again later (the offline renderer).
    @discardableResult
    public func push(_ event: EngineEvent, countingDrop: Bool = true) -> Bool {
        let t = tail.load(ordering: .relaxed)
        var limit = capacity - releaseReserve
        if case .message(let m) = event.kind, m.isRelease { limit = capacity }
        if t &- head.load(ordering: .acquiring) >= limit {
            if countingDrop { droppedCount.add(1, ordering: .relaxed) }
            return false
        }
        slots[t & mask] = event
        tail.store(t &+ 1, ordering: .releasing)
        return true
    }

    /// Producer thread only. Queues a complete SysEx message (F0 ... F7).
    /// Returns false (and counts a drop, unless `countingDrop` is false)
    /// when either ring lacks room (the release reserve is not for SysEx).
    @discardableResult
    public func pushSysEx(frame: Int64, _ message: UnsafeBufferPointer<UInt8>, countingDrop: Bool = true) -> Bool {
        let n = message.count
        let t = tail.load(ordering: .relaxed)
        let bt = byteTail.load(ordering: .relaxed)
        if n == 0 || n > byteCapacity
            || t &- head.load(ordering: .acquiring) >= capacity - releaseReserve
            || bt &- byteHead.load(ordering: .acquiring) + n > byteCapacity {
            if countingDrop { droppedCount.add(1, ordering: .relaxed) }
            return false
        }
        for i in 0..<n { bytes[(bt &+ i) & byteMask] = message[i] }
        byteTail.store(bt &+ n, ordering: .releasing)
        slots[t & mask] = EngineEvent(frame: frame, kind: .sysEx(length: UInt32(n)))
        tail.store(t &+ 1, ordering: .releasing)
        return true
    }

    /// Producer thread only. Convenience for callers holding an array.
    @discardableResult
    public func pushSysEx(frame: Int64, _ message: [UInt8], countingDrop: Bool = true) -> Bool {
        message.withUnsafeBufferPointer { pushSysEx(frame: frame, $0, countingDrop: countingDrop) }
    }

    /// Producer thread only. Takes back every event pushed so far whose
    /// frame is `frame` or later and that the render thread has not taken
    /// yet: it skips them, unheard and not counted as dropped. For a
    /// producer that queues ahead of time (the file player) and must change
    /// course (pause, seek): it retracts, then pushes what is to be played
    /// from `frame` instead (releases first: a note-off taken back would
    /// leave its note hanging). Memory order: the frame is stored before the
    /// slot index (release); the render thread loads the index (acquire)
    /// before the frame.
    public func retract(from frame: Int64) {
        retractFrame.store(frame, ordering: .relaxed)
        retractTail.store(tail.load(ordering: .relaxed), ordering: .releasing)
    }

    // MARK: consumer side (render thread)

    /// Render thread only. The next event, without removing it (events
    /// taken back by `retract` are skipped here).
    @inline(__always)
    public func peek() -> EngineEvent? {
        while true {
            let h = head.load(ordering: .relaxed)
            if h == tail.load(ordering: .acquiring) { return nil }
            let event = slots[h & mask]
            if h < retractTail.load(ordering: .acquiring) && event.frame >= retractFrame.load(ordering: .relaxed) {
                pop()
                continue
            }
            return event
        }
    }

    /// Render thread only. Removes the event returned by `peek()`. For a
    /// SysEx event, its bytes are copied to `sysExDestination` (which must
    /// hold `length` bytes) or skipped when it is nil.
    @inline(__always)
    public func pop(sysExDestination: UnsafeMutablePointer<UInt8>? = nil) {
        let h = head.load(ordering: .relaxed)
        if case .sysEx(let length) = slots[h & mask].kind {
            let n = Int(length)
            let bh = byteHead.load(ordering: .relaxed)
            if let dst = sysExDestination {
                for i in 0..<n { dst[i] = bytes[(bh &+ i) & byteMask] }
            }
            byteHead.store(bh &+ n, ordering: .releasing)
        }
        head.store(h &+ 1, ordering: .releasing)
    }
}

extension MIDIMessage {
    /// True for the messages that end sound: a note-off (or note-on with
    /// velocity 0), a sustain, sostenuto or hold pedal released, All Sound
    /// Off, Reset All Controllers, All Notes Off and the mode messages that
    /// imply it (124-127), and System Reset. Under a flood these are never
    /// dropped: a lost one leaves a note hanging.
    @inlinable public var isRelease: Bool {
        switch self {
        case .noteOff: return true
        case .noteOn(_, _, let v): return v == 0
        case .controlChange(_, let n, let v):
            // comparisons, not a range pattern (its metadata allocates the
            // first time an unoptimized build runs it)
            if n == 64 || n == 66 || n == 69 { return v < 64 }
            return n == 120 || n == 121 || n >= 123
        case .systemReset: return true
        default: return false
        }
    }
}

/// An event a host hands the engine inside its audio callback, at a frame
/// offset within that call (`Engine.render(frames:left:right:events:)`):
/// 0 is the call's first frame. A SysEx message's bytes (F0 ... F7) stay
/// the caller's; the engine copies them during the call.
public struct CallbackEvent {
    public enum Kind {
        case message(MIDIMessage)
        /// A complete SysEx message (F0 ... F7).
        case sysEx(UnsafeBufferPointer<UInt8>)
    }
    /// Frames from the call's first frame.
    public var offset: Int
    public var kind: Kind

    @inlinable public init(offset: Int, kind: Kind) {
        self.offset = offset
        self.kind = kind
    }

    @inlinable public init(offset: Int, _ message: MIDIMessage) {
        self.offset = offset
        self.kind = .message(message)
    }

    @inlinable public init(offset: Int, sysEx bytes: UnsafeBufferPointer<UInt8>) {
        self.offset = offset
        self.kind = .sysEx(bytes)
    }
}
