/// Puts SysEx messages back together when ALSA delivers them in chunks.
///
/// A raw MIDI device's SysEx reaches the sequencer in pieces (256 bytes or
/// less each): the first starts with F0, the last ends with F7. Pieces from
/// different sources may interleave, so each source gets its own buffer.
/// Buffers are allocated once, in `init`; a message longer than the bound
/// is dropped and reported once, when it ends. A message that never ends
/// (no F7: a status byte or a new F0 cuts it off) is dropped too, and
/// `lastAbandoned` tells its source and size, so it can be reported.
///
/// `Source` names a MIDI source the way its driver does (an ALSA sequencer
/// address, a JACK port). The thread that reads the MIDI input owns it.
public struct SysExReassembler<Source: Equatable & Sendable> {
    public enum Outcome: Equatable {
        /// Waiting for more pieces.
        case incomplete
        /// A message longer than `maxBytes` (counting F0 and F7) ended and was dropped.
        case tooLong(totalBytes: Int)
        /// A piece that belongs to no message (no F0 before it) was dropped.
        case stray
    }

    public let maxBytes: Int
    private let slotCount: Int
    private let storage: UnsafeMutablePointer<UInt8>
    private var sources: [Source?]
    private var lengths: [Int]        // bytes stored
    private var totals: [Int]         // bytes seen (also those beyond the bound)
    private var lastUse: [UInt64]
    private var clock: UInt64 = 0
    /// Partial messages abandoned (another message started, a channel
    /// message interrupted it, or its buffer was taken by another source).
    public private(set) var abandoned = 0
    /// The latest abandoned partial message: its source and the bytes seen
    /// (also those beyond the bound).
    public private(set) var lastAbandoned: (source: Source, totalBytes: Int)?

    /// - Parameters:
    ///   - maxBytes: the longest message passed on, F0 and F7 included.
    ///   - sources: how many sources may be in the middle of a message at once.
    public init(maxBytes: Int = 65536, sources: Int = 8) {
        self.maxBytes = max(maxBytes, 2)
        slotCount = max(sources, 1)
        storage = .allocate(capacity: self.maxBytes * slotCount)
        self.sources = Array(repeating: nil, count: slotCount)
        lengths = Array(repeating: 0, count: slotCount)
        totals = Array(repeating: 0, count: slotCount)
        lastUse = Array(repeating: 0, count: slotCount)
    }

    /// Frees the buffers. Call once, when done.
    public func deallocate() {
        storage.deallocate()
    }

    /// True while a message from `source` is waiting for its end.
    public func isPending(_ source: Source) -> Bool {
        slot(of: source) != nil
    }

    /// Adds one piece from `source`. `complete` receives a finished message
    /// (F0 ... F7; valid only during the call). Returns what became of the piece.
    @discardableResult
    public mutating func add(_ piece: UnsafeBufferPointer<UInt8>, from source: Source,
                      complete: (UnsafeBufferPointer<UInt8>) -> Void) -> Outcome {
        guard let first = piece.first, let last = piece.last else { return .incomplete }
        clock &+= 1
        var s = slot(of: source)
        if first == 0xF0 {
            if let old = s {
                abandon(old)        // a new message starts before the old one ended
                s = nil
            }
            // A whole message in one piece: pass it on without copying.
            if last == 0xF7 && piece.count >= 2 {
                if piece.count > maxBytes { return .tooLong(totalBytes: piece.count) }
                complete(piece)
                return .incomplete
            }
            s = claim(for: source)
        }
        guard let i = s else { return .stray }
        lastUse[i] = clock
        let room = maxBytes - lengths[i]
        let n = min(room, piece.count)
        if n > 0, let base = piece.baseAddress {
            (storage + i * maxBytes + lengths[i]).update(from: base, count: n)
            lengths[i] += n
        }
        totals[i] += piece.count
        // F7 ends the message; so does any other status byte (not real-time) at the end.
        if last == 0xF7 {
            let total = totals[i]
            defer { release(i) }
            if total > maxBytes { return .tooLong(totalBytes: total) }
            complete(UnsafeBufferPointer(start: storage + i * maxBytes, count: lengths[i]))
            return .incomplete
        }
        return .incomplete
    }

    /// A channel message from `source` interrupts its SysEx (as any status
    /// byte does on the wire): the partial message is dropped.
    public mutating func interrupt(_ source: Source) {
        if let i = slot(of: source) { abandon(i) }
    }

    /// Forgets a source's partial message (it went away).
    public mutating func forget(_ source: Source) {
        if let i = slot(of: source) { release(i) }
    }

    /// Forgets the partial messages of every source `matching` picks (the
    /// ports of a client that went away, say).
    public mutating func forget(where matching: (Source) -> Bool) {
        for i in 0..<slotCount where sources[i].map(matching) == true { release(i) }
    }

    private func slot(of source: Source) -> Int? {
        for i in 0..<slotCount where sources[i] == source { return i }
        return nil
    }

    private mutating func claim(for source: Source) -> Int {
        var pick = 0
        var oldest = UInt64.max
        for i in 0..<slotCount {
            if sources[i] == nil { pick = i; oldest = 0; break }
            if lastUse[i] < oldest { oldest = lastUse[i]; pick = i }
        }
        if sources[pick] != nil { abandon(pick) }
        sources[pick] = source
        lengths[pick] = 0
        totals[pick] = 0
        lastUse[pick] = clock
        return pick
    }

    private mutating func abandon(_ i: Int) {
        abandoned += 1
        if let source = sources[i] { lastAbandoned = (source, totals[i]) }
        release(i)
    }

    private mutating func release(_ i: Int) {
        sources[i] = nil
        lengths[i] = 0
        totals[i] = 0
    }
}
