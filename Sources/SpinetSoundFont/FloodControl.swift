import Synchronization
import SpinetMIDI

/// The SoundFont unit's preallocated flood-control state (see
/// `SoundFontUnit`): controller values held for coalescing, the backlog of
/// messages waiting for room in FluidSynth's voice-event ring, and the
/// estimate of what the ring holds since FluidSynth's last block. Allocated
/// once; the render thread only reads and writes it.
final class FloodControl {
    /// A message waiting in the backlog; a SysEx's bytes wait in `bytes`.
    enum Deferred {
        case message(MIDIMessage)
        case sysEx(length: Int)
    }

    /// Backlog entries any message may take; `releaseReserve` more are for releases only.
    static let backlogLimit = 8192
    static let releaseReserve = 1024
    /// SysEx bytes the backlog holds: twice what the engine hands over in
    /// one slice (4 x 64 KB by default), so it can take a full slice while
    /// it is half full (`bytesFull`). One SysEx longer than `scratchCapacity`
    /// is never held (the engine passes none by default).
    static let byteCapacity = 1 << 19
    static let scratchCapacity = 1 << 17

    let channels: Int
    let backlog: UnsafeMutablePointer<Deferred>
    let capacity = FloodControl.backlogLimit + FloodControl.releaseReserve
    var head = 0
    var count = 0
    /// SysEx bytes of the backlog, in a ring; `scratch` holds one contiguous copy.
    let bytes: UnsafeMutablePointer<UInt8>
    let scratch: UnsafeMutablePointer<UInt8>
    var byteHead = 0
    var byteCount = 0

    /// Controller, pitch bend and channel pressure values held for
    /// coalescing, in order of first arrival, and per slot (`slot(for:)`)
    /// the index of its entry (-1: none).
    let held: UnsafeMutablePointer<MIDIMessage>
    var heldCount = 0
    let heldIndex: UnsafeMutablePointer<Int32>
    static let slotsPerChannel = 130

    /// The estimate of voice updates in FluidSynth's ring since its last
    /// block: `fixed` (note-ons, resets) plus, per channel, `perVoice[c]`
    /// updates for each voice on the channel; `perVoiceSum` is their sum.
    /// Until `counted`, every channel is assumed to hold all active voices;
    /// once that bound is too coarse, the voices are counted per channel
    /// (`voicesOn`) and `countedSum` is the estimate with the counts.
    var fixed = 0
    var perVoiceSum = 0
    let perVoice: UnsafeMutablePointer<Int32>
    var counted = false
    var countedSum = 0
    let voicesOn: UnsafeMutablePointer<Int32>
    /// Room for FluidSynth's voice list (polyphony + 1 entries).
    let voiceList: UnsafeMutablePointer<OpaquePointer?>
    let voiceListCapacity: Int
    /// Per channel: the most voices one note-on has started (1 until known),
    /// and whether the channel plays mono or legato (a note-off can start a note).
    let noteVoices: UnsafeMutablePointer<Int32>
    let mono: UnsafeMutablePointer<Bool>

    /// Backlog entries per channel, and those without one (System Reset,
    /// SysEx): a release may overtake the backlog when none of them is on
    /// its channel (`mayOvertake`).
    let waitingOn: UnsafeMutablePointer<Int32>
    var waitingGlobal = 0

    let dropped = Atomic<Int>(0)
    /// Messages that waited in the backlog (passed on at a later block).
    let delayed = Atomic<Int>(0)

    init(channels: Int, polyphony: Int) {
        self.channels = channels
        backlog = .allocate(capacity: capacity)
        backlog.initialize(repeating: .message(.systemReset), count: capacity)
        bytes = .allocate(capacity: Self.byteCapacity)
        bytes.initialize(repeating: 0, count: Self.byteCapacity)
        scratch = .allocate(capacity: Self.scratchCapacity)
        scratch.initialize(repeating: 0, count: Self.scratchCapacity)
        held = .allocate(capacity: channels * Self.slotsPerChannel)
        held.initialize(repeating: .systemReset, count: channels * Self.slotsPerChannel)
        heldIndex = .allocate(capacity: channels * Self.slotsPerChannel)
        heldIndex.initialize(repeating: -1, count: channels * Self.slotsPerChannel)
        perVoice = .allocate(capacity: channels)
        perVoice.initialize(repeating: 0, count: channels)
        voicesOn = .allocate(capacity: channels)
        voicesOn.initialize(repeating: 0, count: channels)
        voiceListCapacity = polyphony + 1
        voiceList = .allocate(capacity: voiceListCapacity)
        voiceList.initialize(repeating: nil, count: voiceListCapacity)
        noteVoices = .allocate(capacity: channels)
        noteVoices.initialize(repeating: 1, count: channels)
        mono = .allocate(capacity: channels)
        mono.initialize(repeating: false, count: channels)
        waitingOn = .allocate(capacity: channels)
        waitingOn.initialize(repeating: 0, count: channels)
    }

    deinit {
        backlog.deallocate()
        bytes.deallocate()
        scratch.deallocate()
        held.deallocate()
        heldIndex.deallocate()
        perVoice.deallocate()
        voicesOn.deallocate()
        voiceList.deallocate()
        noteVoices.deallocate()
        mono.deallocate()
        waitingOn.deallocate()
    }

    /// The slot of a message whose value a later one supersedes: a
    /// controller (not a pedal, data entry, (N)RPN or channel mode
    /// message), pitch bend or channel pressure; nil for anything else.
    @inline(__always)
    static func slot(for m: MIDIMessage) -> Int? {
        switch m {
        case .controlChange(let c, let n, _):
            // comparisons, not range patterns: those instantiate ClosedRange
            // metadata (allocating) the first time an unoptimized build runs them
            if n == 6 || n == 38 || (n >= 64 && n <= 69) || (n >= 96 && n <= 101) || n >= 120 { return nil }
            return Int(c) * slotsPerChannel + Int(n)
        case .pitchBend(let c, _): return Int(c) * slotsPerChannel + 128
        case .channelPressure(let c, _): return Int(c) * slotsPerChannel + 129
        default: return nil
        }
    }

    /// Holds a value; a later value in the same slot replaces it in place.
    @inline(__always)
    func hold(_ m: MIDIMessage, slot: Int) {
        let i = Int(heldIndex[slot])
        if i >= 0 {
            held[i] = m
        } else {
            heldIndex[slot] = Int32(heldCount)
            held[heldCount] = m
            heldCount += 1
        }
    }

    /// Appends to the backlog; false when full (releases may use the reserve).
    func append(_ m: MIDIMessage) -> Bool {
        guard count < (m.isRelease ? capacity : Self.backlogLimit) else { return false }
        backlog[(head + count) % capacity] = .message(m)
        count += 1
        if let c = m.channel { waitingOn[Int(c)] += 1 } else { waitingGlobal += 1 }
        delayed.add(1, ordering: .relaxed)
        return true
    }

    /// Appends a SysEx to the backlog; false when either ring lacks room.
    func append(sysEx message: UnsafeBufferPointer<UInt8>) -> Bool {
        let n = message.count
        guard count < Self.backlogLimit, n <= Self.scratchCapacity, byteCount + n <= Self.byteCapacity else { return false }
        var at = (byteHead + byteCount) % Self.byteCapacity
        for i in 0..<n {
            bytes[at] = message[i]
            at += 1
            if at == Self.byteCapacity { at = 0 }
        }
        byteCount += n
        backlog[(head + count) % capacity] = .sysEx(length: n)
        count += 1
        waitingGlobal += 1
        delayed.add(1, ordering: .relaxed)
        return true
    }

    /// The bytes of the backlog's first entry, a SysEx of `length` bytes,
    /// copied to `scratch` (where `removeFirst` leaves them too).
    func peekSysEx(length n: Int) -> UnsafeBufferPointer<UInt8> {
        var at = byteHead
        for i in 0..<n {
            scratch[i] = bytes[at]
            at += 1
            if at == Self.byteCapacity { at = 0 }
        }
        return UnsafeBufferPointer(start: scratch, count: n)
    }

    /// Whether a release may reach FluidSynth ahead of the backlog: nothing
    /// waiting there acts on its channel, so only the order of independent
    /// channels changes. A flood on one channel then never holds back the
    /// note-offs of another (on its own channel they wait their turn: a
    /// note-on of the same key may be waiting before them).
    @inline(__always)
    func mayOvertake(_ m: MIDIMessage) -> Bool {
        guard m.isRelease, waitingGlobal == 0, let c = m.channel else { return false }
        return waitingOn[Int(c)] == 0
    }

    /// Removes the backlog's first entry (a SysEx's bytes go to `scratch`).
    func removeFirst() {
        switch backlog[head] {
        case .message(let m):
            if let c = m.channel { waitingOn[Int(c)] -= 1 } else { waitingGlobal -= 1 }
        case .sysEx:
            waitingGlobal -= 1
        }
        if case .sysEx(let n) = backlog[head] {
            var at = byteHead
            for i in 0..<n {
                scratch[i] = bytes[at]
                at += 1
                if at == Self.byteCapacity { at = 0 }
            }
            byteHead = at
            byteCount -= n
        }
        head += 1
        if head == capacity { head = 0 }
        count -= 1
    }

    /// FluidSynth has taken everything queued so far (a block started).
    @inline(__always)
    func ringEmptied() {
        if perVoiceSum != 0 { perVoice.update(repeating: 0, count: channels) }
        fixed = 0
        perVoiceSum = 0
        counted = false
        countedSum = 0
    }

    /// Whether the SysEx bytes waiting leave less room than a slice may bring.
    var bytesFull: Bool { byteCount > Self.byteCapacity / 2 }

    /// Whether nothing has been charged since FluidSynth's last block.
    var fresh: Bool { fixed == 0 && perVoiceSum == 0 }
}
