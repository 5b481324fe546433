/// A MIDI file's channel messages and SysEx messages at sample frames, ready to play.
///
/// Timing is exact: the time of a tick is kept as an exact integer fraction of a
/// second (Int128) and rounded to a frame only once, half up, so there is no
/// drift however long the file or however many tempo changes it has.
///
/// **Formats.** In format 0 and 1 files tempo events from any track apply to all
/// tracks. In a format 2 file each track is an independent sequence with its own
/// tempo map (starting at the default 120 bpm); the sequences are played one
/// after another: track k starts at the end frame (its End of Track) of track
/// k - 1. With SMPTE division, ticks are absolute time (frames per second x ticks
/// per frame, where 29 means 30000/1001) and tempo events are ignored.
///
/// **Order of simultaneous events.** Events at the same tick (hence the same
/// frame) keep file order within a track, always. Across tracks, note-offs
/// (including note-ons with velocity 0) come first, then every other message and
/// SysEx, then note-ons, ties broken by track index. This is a merge: at a given
/// tick, among the tracks' next events at that tick, the one with the smallest
/// (class, track) is taken, repeatedly, so an event never moves before an earlier
/// event of its own track. Releasing before striking keeps a note that one track
/// ends and another starts on the same key from being cut off at once, and
/// controllers and program changes are in place before the notes that need them.
public struct MIDISchedule: Sendable {
    public struct Event: Sendable, Equatable {
        public var frame: Int64
        public var kind: Kind
        public enum Kind: Sendable, Equatable {
            case message(MIDIMessage)
            /// An index into `MIDISchedule.sysEx`, so events stay small and copy
            /// without touching reference counts.
            case sysEx(index: Int)
        }
        public init(frame: Int64, kind: Kind) {
            self.frame = frame
            self.kind = kind
        }
    }

    public var sampleRate: Int
    /// Sorted by frame, in the order described above.
    public var events: [Event]
    /// Complete SysEx messages, F0 ... F7, in the order the events refer to them.
    public var sysEx: [[UInt8]]
    /// The end of the music: the latest End of Track (or, for a track without one,
    /// its last event) over all tracks; for format 2 the end of the last track.
    public var endFrame: Int64
    /// The file's warnings, so a consumer holding only the schedule can report them.
    public var warnings: [MIDIFileWarning]
    /// The tempo as a step function of frames: the first entry is at frame 0 (the
    /// default 500000 us per quarter unless the file sets another at tick 0), then
    /// one entry per change, by frame; a later change at the same frame replaces
    /// an earlier one. Empty for SMPTE division, where tempo has no meaning.
    public var tempoChanges: [(frame: Int64, microsecondsPerQuarter: Int)]

    /// One tempo map for format 0 and 1, one per track for format 2.
    let timeMaps: [TimeMap]
    /// The start frame of each track's sequence (format 2); empty otherwise.
    let trackStartFrames: [Int64]

    /// The frame of `tick`, by the tempo map. `track` matters only for format 2,
    /// where it selects the sequence (and so its start frame and tempo map); out
    /// of range values are clamped to the first or last track.
    public func frame(forTick tick: Int64, track: Int = 0) -> Int64 {
        guard !timeMaps.isEmpty else { return 0 }
        let t = min(max(track, 0), timeMaps.count - 1)
        let start = trackStartFrames.isEmpty ? 0 : trackStartFrames[t]
        return clampedSum(start, timeMaps[t].frame(forTick: tick))
    }
}

/// a + b, held at Int64.max instead of wrapping: frames are never negative,
/// and a format 2 file whose sequences add up past Int64.max (each can be
/// clamped there already) must not wrap to negative frames and unsort the
/// schedule.
@inline(__always) func clampedSum(_ a: Int64, _ b: Int64) -> Int64 {
    let (sum, overflow) = a.addingReportingOverflow(b)
    return overflow ? (b < 0 ? .min : .max) : sum
}

/// Ticks to frames for one tempo map, in exact integer arithmetic.
///
/// The time of tick T in seconds is numerator(T) / denominator, where
/// numerator(T) is the sum over tempo segments of ticks x numeratorPerTick. For
/// metrical time numeratorPerTick is the tempo in us per quarter and the
/// denominator is division x 1_000_000; for SMPTE it is 1 (or 1001) over fps x
/// ticks per frame (or 30000 x ticks per frame). Int128 holds any numerator a
/// file can produce (ticks < 2^63, tempo < 2^24).
struct TimeMap: Sendable {
    struct Segment: Sendable {
        var startTick: Int64
        var startNumerator: Int128
        var numeratorPerTick: Int128
    }
    /// Sorted by startTick, strictly increasing; the first starts at tick 0.
    var segments: [Segment]
    let denominator: Int128
    let sampleRate: Int128

    init(numeratorPerTick: Int128, denominator: Int128, sampleRate: Int) {
        segments = [Segment(startTick: 0, startNumerator: 0, numeratorPerTick: numeratorPerTick)]
        self.denominator = denominator
        self.sampleRate = Int128(sampleRate)
    }

    /// Adds a tempo change; changes must come in tick order. A change at the
    /// tick of the last one replaces it.
    mutating func change(atTick tick: Int64, numeratorPerTick: Int128) {
        guard let last = segments.last else { return }
        if tick <= last.startTick {
            segments[segments.count - 1].numeratorPerTick = numeratorPerTick
        } else {
            segments.append(Segment(startTick: tick, startNumerator: numerator(last, tick),
                                    numeratorPerTick: numeratorPerTick))
        }
    }

    private func numerator(_ s: Segment, _ tick: Int64) -> Int128 {
        let (ticks, o1) = (Int128(tick) - Int128(s.startTick)).multipliedReportingOverflow(by: s.numeratorPerTick)
        let (sum, o2) = s.startNumerator.addingReportingOverflow(ticks)
        if o1 || o2 { return ticks < 0 ? Int128.min / 2 : Int128.max / 2 }
        return sum
    }

    /// The segment that contains `tick`: the last one starting at or before it
    /// (the first one for negative ticks).
    private func segment(for tick: Int64) -> Segment {
        var lo = 0, hi = segments.count  // invariant: segments[lo].startTick <= tick or lo == 0
        while hi - lo > 1 {
            let mid = (lo + hi) / 2
            if segments[mid].startTick <= tick { lo = mid } else { hi = mid }
        }
        return segments[lo]
    }

    func frame(forTick tick: Int64) -> Int64 {
        let n = numerator(segment(for: tick), tick)
        let (scaled, overflow) = n.multipliedReportingOverflow(by: sampleRate)
        if overflow { return n < 0 ? Int64.min : Int64.max }
        return Self.clampToInt64(Self.roundHalfUp(scaled, denominator))
    }

    /// round(x / d) with halves rounded up (towards +infinity), for d > 0.
    static func roundHalfUp(_ x: Int128, _ d: Int128) -> Int128 {
        var q = x / d
        var r = x % d
        if r < 0 { q -= 1; r += d }  // floor division
        return r >= d - r ? q + 1 : q
    }

    static func clampToInt64(_ x: Int128) -> Int64 {
        if x > Int128(Int64.max) { return Int64.max }
        if x < Int128(Int64.min) { return Int64.min }
        return Int64(x)
    }
}

extension MIDIFile {
    /// The default tempo of a Standard MIDI File: 120 quarter notes per minute.
    public static let defaultMicrosecondsPerQuarter = 500_000

    /// Converts ticks to sample frames and merges the tracks (see `MIDISchedule`
    /// for the formats and the order of simultaneous events). Only channel
    /// messages and SysEx messages become events; meta events shape the timing.
    public func schedule(sampleRate: Int) -> MIDISchedule {
        precondition(sampleRate > 0, "sample rate must be positive")
        let base: TimeMap
        let usesTempo: Bool
        switch division {
        case .ticksPerQuarter(let perQuarter):
            base = TimeMap(numeratorPerTick: Int128(Self.defaultMicrosecondsPerQuarter),
                           denominator: Int128(max(perQuarter, 1)) * 1_000_000, sampleRate: sampleRate)
            usesTempo = true
        case .smpte(let fps, let ticksPerFrame):
            let tpf = Int128(max(ticksPerFrame, 1))
            base = fps == 29
                ? TimeMap(numeratorPerTick: 1001, denominator: 30_000 * tpf, sampleRate: sampleRate)
                : TimeMap(numeratorPerTick: 1, denominator: Int128(max(fps, 1)) * tpf, sampleRate: sampleRate)
            usesTempo = false
        }

        func tempoMap(_ tracks: ArraySlice<Track>) -> TimeMap {
            var map = base
            guard usesTempo else { return map }
            var changes: [(tick: Int64, track: Int, index: Int, tempo: Int)] = []
            for (t, track) in zip(tracks.indices, tracks) {
                for (i, event) in track.events.enumerated() {
                    if case .tempo(let tempo) = event.kind { changes.append((event.tick, t, i, tempo)) }
                }
            }
            // By tick; at one tick the change later in (track, file) order wins.
            changes.sort { ($0.tick, $0.track, $0.index) < ($1.tick, $1.track, $1.index) }
            for c in changes { map.change(atTick: c.tick, numeratorPerTick: Int128(c.tempo)) }
            return map
        }

        func tempoSteps(_ map: TimeMap, startFrame: Int64) -> [(frame: Int64, microsecondsPerQuarter: Int)] {
            guard usesTempo else { return [] }
            return map.segments.map { (clampedSum(startFrame, map.frame(forTick: $0.startTick)), Int($0.numeratorPerTick)) }
        }

        var events: [MIDISchedule.Event] = []
        var sysEx: [[UInt8]] = []
        events.reserveCapacity(tracks.reduce(0) { $0 + $1.events.count })

        func append(_ kind: TrackEvent.Kind, at frame: Int64) {
            switch kind {
            case .message(let m):
                events.append(.init(frame: frame, kind: .message(m)))
            case .sysEx(let bytes):
                events.append(.init(frame: frame, kind: .sysEx(index: sysEx.count)))
                sysEx.append(bytes)
            case .tempo, .timeSignature, .keySignature, .text, .endOfTrack, .otherMeta:
                break
            }
        }

        if format == 2 {
            var maps: [TimeMap] = []
            var starts: [Int64] = []
            var steps: [(frame: Int64, microsecondsPerQuarter: Int)] = []
            var start: Int64 = 0
            for k in tracks.indices {
                let map = tempoMap(tracks[k...k])
                maps.append(map)
                starts.append(start)
                for step in tempoSteps(map, startFrame: start) {
                    // A track that ends where the next begins: the next one's tempo wins.
                    if let last = steps.last, last.frame >= step.frame { steps.removeLast() }
                    steps.append(step)
                }
                for event in tracks[k].events {
                    append(event.kind, at: clampedSum(start, map.frame(forTick: event.tick)))
                }
                start = clampedSum(start, map.frame(forTick: tracks[k].endTick))
            }
            return MIDISchedule(sampleRate: sampleRate, events: events, sysEx: sysEx, endFrame: start,
                                warnings: warnings, tempoChanges: steps,
                                timeMaps: maps.isEmpty ? [base] : maps, trackStartFrames: maps.isEmpty ? [] : starts)
        }

        let map = tempoMap(tracks[...])
        mergeTracks { track, index in
            let event = tracks[track].events[index]
            append(event.kind, at: map.frame(forTick: event.tick))
        }
        let endTick = tracks.map(\.endTick).max() ?? 0
        return MIDISchedule(sampleRate: sampleRate, events: events, sysEx: sysEx,
                            endFrame: map.frame(forTick: endTick), warnings: warnings,
                            tempoChanges: tempoSteps(map, startFrame: 0), timeMaps: [map], trackStartFrames: [])
    }

    /// The merge described at `MIDISchedule`: calls `visit` for every schedulable
    /// event in play order. A heap holds each track's next such event, keyed by
    /// (tick, class, track); popping the smallest is exactly "at the earliest tick,
    /// the smallest (class, track) among the tracks' next events".
    private func mergeTracks(_ visit: (_ track: Int, _ index: Int) -> Void) {
        struct Head: Comparable {
            var tick: Int64
            var order: Int  // 0 note-off, 1 other, 2 note-on
            var track: Int
            var index: Int
            static func < (a: Head, b: Head) -> Bool {
                (a.tick, a.order, a.track) < (b.tick, b.order, b.track)
            }
        }

        func nextHead(_ track: Int, from start: Int) -> Head? {
            let events = tracks[track].events
            var i = start
            while i < events.count {
                switch events[i].kind {
                case .message(let m):
                    let order = m.isNoteOff ? 0 : (m.isNoteOn ? 2 : 1)
                    return Head(tick: events[i].tick, order: order, track: track, index: i)
                case .sysEx:
                    return Head(tick: events[i].tick, order: 1, track: track, index: i)
                case .tempo, .timeSignature, .keySignature, .text, .endOfTrack, .otherMeta:
                    i += 1
                }
            }
            return nil
        }

        var heap = MinHeap<Head>()
        for t in tracks.indices {
            if let head = nextHead(t, from: 0) { heap.push(head) }
        }
        while let head = heap.pop() {
            visit(head.track, head.index)
            if let next = nextHead(head.track, from: head.index + 1) { heap.push(next) }
        }
    }
}

extension Track {
    /// The tick where the track ends: its End of Track, or its last event if it
    /// has none (0 for an empty track).
    var endTick: Int64 {
        events.last?.tick ?? 0
    }
}

/// A binary min-heap; small and local so the merge needs no dependency.
struct MinHeap<Element: Comparable> {
    private var items: [Element] = []

    mutating func push(_ element: Element) {
        items.append(element)
        var i = items.count - 1
        while i > 0 {
            let parent = (i - 1) / 2
            guard items[i] < items[parent] else { break }
            items.swapAt(i, parent)
            i = parent
        }
    }

    mutating func pop() -> Element? {
        guard let top = items.first else { return nil }
        let last = items.removeLast()
        if !items.isEmpty {
            items[0] = last
            var i = 0
            while true {
                let l = 2 * i + 1, r = l + 1
                var smallest = i
                if l < items.count && items[l] < items[smallest] { smallest = l }
                if r < items.count && items[r] < items[smallest] { smallest = r }
                if smallest == i { break }
                items.swapAt(i, smallest)
                i = smallest
            }
        }
        return top
    }
}
