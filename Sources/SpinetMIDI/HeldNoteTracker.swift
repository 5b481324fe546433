import SpinetMIDI

/// Which notes and pedals each MIDI source is holding down, so that when a
/// source goes away (unsubscribed, port or client gone) Spinet can release
/// exactly what it held: no stuck notes.
///
/// Fixed storage, sized in `init`: a table of sources, each with one bit per
/// key and channel plus its sustain and sostenuto pedals. When more sources
/// play at once than the table holds, a source that holds nothing gives up
/// its place; if none does, the newcomer is not tracked (and counted).
///
/// `Source` names a MIDI source the way its driver does (an ALSA sequencer
/// address, a JACK port, a plugin's one input). The thread that reads the
/// MIDI input owns it (ALSA: the sequencer thread).
public struct HeldNoteTracker<Source: Hashable & Sendable>: Sendable {
    public let channels: Int
    private let sourceCapacity: Int
    private var sources: [Source?]
    /// Per source, per channel: two 64-bit words of keys.
    private var keys: [UInt64]
    /// Per source, per channel: bit 0 sustain, bit 1 sostenuto.
    private var pedals: [UInt8]
    private var heldCounts: [Int]
    /// Sources that could not be tracked because the table was full.
    public private(set) var untracked = 0

    public init(channels: Int, sources: Int = 32) {
        self.channels = max(channels, 1)
        sourceCapacity = max(sources, 1)
        self.sources = Array(repeating: nil, count: sourceCapacity)
        keys = Array(repeating: 0, count: sourceCapacity * self.channels * 2)
        pedals = Array(repeating: 0, count: sourceCapacity * self.channels)
        heldCounts = Array(repeating: 0, count: sourceCapacity)
    }

    /// Notes and pedals `source` holds down now.
    public func heldCount(_ source: Source) -> Int {
        slot(of: source).map { heldCounts[$0] } ?? 0
    }

    /// Records the effect of a message `source` sent.
    public mutating func observe(_ message: MIDIMessage, from source: Source) {
        switch message {
        case .noteOn(let c, let k, let v):
            if v == 0 { clearKey(source, Int(c), Int(k)) } else { setKey(source, Int(c), Int(k)) }
        case .noteOff(let c, let k, _):
            clearKey(source, Int(c), Int(k))
        case .controlChange(let c, let n, let v):
            let bit: UInt8
            switch n {
            case MIDIController.sustain: bit = 1
            case MIDIController.sostenuto: bit = 2
            case MIDIController.allSoundOff, MIDIController.allNotesOff:
                clearChannel(source, Int(c), keysOnly: true)
                return
            case MIDIController.resetAllControllers:
                clearChannel(source, Int(c), keysOnly: false, pedalsOnly: true)
                return
            default:
                return
            }
            if v >= 64 { setPedal(source, Int(c), bit) } else { clearPedal(source, Int(c), bit) }
        case .systemReset:
            if let i = slot(of: source) { clearSlot(i) }
        case .polyPressure, .programChange, .channelPressure, .pitchBend:
            return
        }
    }

    /// Emits what releases everything `source` holds on `channelRange` (all
    /// channels when nil): a note-off per held key, then sustain and
    /// sostenuto up where they were down. Returns the number of messages.
    @discardableResult
    public mutating func release(_ source: Source, channels channelRange: Range<Int>? = nil,
                          _ emit: (MIDIMessage) -> Void) -> Int {
        guard let i = slot(of: source) else { return 0 }
        let range = channelRange.map { $0.clamped(to: 0..<channels) } ?? 0..<channels
        var count = 0
        for c in range {
            let p = pedals[i * channels + c]
            for w in 0..<2 {
                var bits = keys[(i * channels + c) * 2 + w]
                while bits != 0 {
                    let b = bits.trailingZeroBitCount
                    bits &= bits - 1
                    emit(.noteOff(channel: UInt8(c), key: UInt8(w * 64 + b), velocity: 0))
                    count += 1
                }
                keys[(i * channels + c) * 2 + w] = 0
            }
            if p & 1 != 0 { emit(.controlChange(channel: UInt8(c), controller: MIDIController.sustain, value: 0)); count += 1 }
            if p & 2 != 0 { emit(.controlChange(channel: UInt8(c), controller: MIDIController.sostenuto, value: 0)); count += 1 }
            pedals[i * channels + c] = 0
        }
        recount(i)
        if heldCounts[i] == 0 { sources[i] = nil }
        return count
    }

    /// Releases everything held by every source `matching` picks (all the
    /// ports of a client that went away, say).
    @discardableResult
    public mutating func release(where matching: (Source) -> Bool, _ emit: (MIDIMessage) -> Void) -> Int {
        var count = 0
        for i in 0..<sourceCapacity {
            if let s = sources[i], matching(s) { count += release(s, emit) }
        }
        return count
    }

    // MARK: storage

    private func slot(of source: Source) -> Int? {
        for i in 0..<sourceCapacity where sources[i] == source { return i }
        return nil
    }

    private mutating func slotForWriting(_ source: Source) -> Int? {
        if let i = slot(of: source) { return i }
        for i in 0..<sourceCapacity where sources[i] == nil || heldCounts[i] == 0 {
            if sources[i] != nil { clearSlot(i) }
            sources[i] = source
            return i
        }
        untracked += 1
        return nil
    }

    private mutating func setKey(_ s: Source, _ c: Int, _ k: Int) {
        guard c < channels, k < 128, let i = slotForWriting(s) else { return }
        let idx = (i * channels + c) * 2 + k / 64
        let mask = UInt64(1) << UInt64(k % 64)
        if keys[idx] & mask == 0 { keys[idx] |= mask; heldCounts[i] += 1 }
    }

    private mutating func clearKey(_ s: Source, _ c: Int, _ k: Int) {
        guard c < channels, k < 128, let i = slot(of: s) else { return }
        let idx = (i * channels + c) * 2 + k / 64
        let mask = UInt64(1) << UInt64(k % 64)
        if keys[idx] & mask != 0 { keys[idx] &= ~mask; heldCounts[i] -= 1 }
    }

    private mutating func setPedal(_ s: Source, _ c: Int, _ bit: UInt8) {
        guard c < channels, let i = slotForWriting(s) else { return }
        if pedals[i * channels + c] & bit == 0 { pedals[i * channels + c] |= bit; heldCounts[i] += 1 }
    }

    private mutating func clearPedal(_ s: Source, _ c: Int, _ bit: UInt8) {
        guard c < channels, let i = slot(of: s) else { return }
        if pedals[i * channels + c] & bit != 0 { pedals[i * channels + c] &= ~bit; heldCounts[i] -= 1 }
    }

    private mutating func clearChannel(_ s: Source, _ c: Int, keysOnly: Bool = false, pedalsOnly: Bool = false) {
        guard c < channels, let i = slot(of: s) else { return }
        if !pedalsOnly {
            keys[(i * channels + c) * 2] = 0
            keys[(i * channels + c) * 2 + 1] = 0
        }
        if !keysOnly { pedals[i * channels + c] = 0 }
        recount(i)
    }

    private mutating func clearSlot(_ i: Int) {
        for j in (i * channels * 2)..<((i + 1) * channels * 2) { keys[j] = 0 }
        for j in (i * channels)..<((i + 1) * channels) { pedals[j] = 0 }
        heldCounts[i] = 0
    }

    private mutating func recount(_ i: Int) {
        var n = 0
        for j in (i * channels * 2)..<((i + 1) * channels * 2) { n += keys[j].nonzeroBitCount }
        for j in (i * channels)..<((i + 1) * channels) { n += pedals[j].nonzeroBitCount }
        heldCounts[i] = n
    }
}
