/// Writes Standard MIDI Files: for tests, and for generating demo files.
///
/// What it writes reads back to the same events with `MIDIFile(bytes:)`:
/// - Messages on global channels 16 and up need a MIDI Port meta event
///   (FF 21 01 pp); the writer inserts one before a message whose port differs
///   from the current one. Port meta events given as `.otherMeta(type: 0x21, ...)`
///   are written as they are and update the current port, so a track read from a
///   file writes back unchanged.
/// - `.message(.systemReset)` cannot be a channel event (FF starts a meta event in
///   a file); it is written as the escape F7 01 FF, which the reader skips.
/// - Running status (optional) is cancelled after every meta and SysEx event, as
///   the SMF specification requires.
/// - A gap between events longer than one delta time can hold (0x0FFFFFFF ticks)
///   is bridged with empty escape packets (F7 00), which the reader skips.
public struct MIDIFileWriter: Sendable {
    private let format: Int
    private let divisionWord: UInt16
    private var tracks: [(events: [(tick: Int64, event: TrackEvent.Kind)], endTick: Int64)] = []

    /// Metrical time: `ticksPerQuarter` in 1...32767.
    public init(format: Int = 1, ticksPerQuarter: Int) {
        precondition((0...2).contains(format), "format must be 0, 1 or 2")
        precondition((1...0x7FFF).contains(ticksPerQuarter), "ticks per quarter must be in 1...32767")
        self.format = format
        self.divisionWord = UInt16(ticksPerQuarter)
    }

    /// SMPTE time: `smpteFramesPerSecond` is 24, 25, 29 (29.97 drop-frame) or 30;
    /// `ticksPerFrame` in 1...255.
    public init(format: Int, smpteFramesPerSecond: Int, ticksPerFrame: Int) {
        precondition((0...2).contains(format), "format must be 0, 1 or 2")
        precondition([24, 25, 29, 30].contains(smpteFramesPerSecond), "SMPTE frame rate must be 24, 25, 29 or 30")
        precondition((1...255).contains(ticksPerFrame), "ticks per frame must be in 1...255")
        self.format = format
        let fpsByte = UInt8(bitPattern: Int8(-smpteFramesPerSecond))
        self.divisionWord = UInt16(fpsByte) << 8 | UInt16(ticksPerFrame)
    }

    /// Adds a track; events at absolute ticks (any order; stable-sorted by tick).
    /// End of Track is appended at the last tick (or `endTick` if later).
    /// `.endOfTrack` events in `events` are not written; their tick counts as a
    /// candidate end tick, so a track read from a file can be written back as is.
    public mutating func addTrack(_ events: [(tick: Int64, event: TrackEvent.Kind)], endTick: Int64? = nil) {
        var end = max(endTick ?? 0, 0)
        var kept: [(tick: Int64, event: TrackEvent.Kind)] = []
        kept.reserveCapacity(events.count)
        for e in events {
            precondition(e.tick >= 0, "event ticks must not be negative")
            end = max(end, e.tick)
            if case .endOfTrack = e.event { continue }
            kept.append(e)
        }
        // Stable sort: ties keep their given order.
        let sorted = kept.enumerated().sorted { ($0.element.tick, $0.offset) < ($1.element.tick, $1.offset) }.map(\.element)
        tracks.append((sorted, end))
    }

    /// The file's bytes. With `runningStatus`, a channel message with the same
    /// status byte as the previous one omits it.
    public func bytes(runningStatus: Bool = true) -> [UInt8] {
        var out: [UInt8] = Array("MThd".utf8)
        Self.put32(6, &out)
        Self.put16(UInt16(format), &out)
        Self.put16(UInt16(min(tracks.count, 0xFFFF)), &out)
        Self.put16(divisionWord, &out)
        for track in tracks {
            let body = Self.trackBody(track.events, endTick: track.endTick, runningStatus: runningStatus)
            out.append(contentsOf: Array("MTrk".utf8))
            Self.put32(body.count, &out)
            out.append(contentsOf: body)
        }
        return out
    }

    private static func trackBody(_ events: [(tick: Int64, event: TrackEvent.Kind)], endTick: Int64,
                                  runningStatus useRunningStatus: Bool) -> [UInt8] {
        var out: [UInt8] = []
        var lastTick: Int64 = 0
        var running: UInt8 = 0
        var port: UInt8 = 0

        func delta(_ tick: Int64) {
            // A gap longer than one delta time holds (a read file can have one:
            // the reader skips escape packets but keeps their delta times) is
            // bridged with empty escape packets (F7 00), which send nothing
            // and which readers skip.
            var gap = Int(tick - lastTick)
            while gap > maxVLQ {
                putVLQ(maxVLQ, &out)
                out.append(contentsOf: [0xF7, 0x00])
                running = 0
                gap -= maxVLQ
            }
            putVLQ(gap, &out)
            lastTick = tick
        }
        func meta(_ tick: Int64, _ type: UInt8, _ data: [UInt8]) {
            delta(tick)
            out.append(0xFF)
            out.append(type)
            putVLQ(data.count, &out)
            out.append(contentsOf: data)
            running = 0
        }

        for (tick, event) in events {
            switch event {
            case .message(.systemReset):
                delta(tick)
                out.append(contentsOf: [0xF7, 0x01, 0xFF])
                running = 0
            case .message(let message):
                let messagePort = (message.channel ?? 0) / 16
                if messagePort != port {
                    meta(tick, 0x21, [messagePort])
                    port = messagePort
                }
                let wire = message.bytes
                delta(tick)
                if useRunningStatus && wire[0] == running {
                    out.append(contentsOf: wire.dropFirst())
                } else {
                    out.append(contentsOf: wire)
                    running = wire[0]
                }
            case .sysEx(let bytes):
                let data = bytes.first == 0xF0 ? Array(bytes.dropFirst()) : bytes
                delta(tick)
                out.append(0xF0)
                putVLQ(data.count, &out)
                out.append(contentsOf: data)
                running = 0
            case .tempo(let microseconds):
                let t = min(max(microseconds, 1), 0xFF_FFFF)
                meta(tick, 0x51, [UInt8(t >> 16), UInt8((t >> 8) & 0xFF), UInt8(t & 0xFF)])
            case .timeSignature(let n, let d, let c, let b):
                meta(tick, 0x58, [n, d, c, b].map { UInt8(truncatingIfNeeded: $0) })
            case .keySignature(let sharps, let minor):
                meta(tick, 0x59, [UInt8(bitPattern: Int8(clamping: sharps)), minor ? 1 : 0])
            case .text(let type, let bytes):
                meta(tick, type, bytes)
            case .endOfTrack:
                break  // removed by addTrack; written once below
            case .otherMeta(let type, let bytes):
                meta(tick, type, bytes)
                if type == 0x21, bytes.count == 1 { port = min(bytes[0], 15) }
            }
        }
        meta(max(endTick, lastTick), 0x2F, [])
        return out
    }

    private static func put16(_ v: UInt16, _ out: inout [UInt8]) {
        out.append(UInt8(v >> 8))
        out.append(UInt8(v & 0xFF))
    }

    private static func put32(_ v: Int, _ out: inout [UInt8]) {
        precondition(v >= 0 && v <= 0xFFFF_FFFF, "chunk too large for a Standard MIDI File")
        for shift in stride(from: 24, through: 0, by: -8) { out.append(UInt8((v >> shift) & 0xFF)) }
    }

    /// Delta times and lengths have at most 4 bytes in a Standard MIDI File, so
    /// values are limited to 0x0FFFFFFF (a delta of ~75 hours at 960 ticks per
    /// quarter and 120 bpm).
    static let maxVLQ = 0x0FFF_FFFF

    static func putVLQ(_ value: Int, _ out: inout [UInt8]) {
        precondition(value >= 0 && value <= maxVLQ, "value \(value) does not fit a 4-byte variable-length quantity")
        var shift = 21
        while shift > 0 && value >> shift == 0 { shift -= 7 }
        while shift > 0 {
            out.append(UInt8((value >> shift) & 0x7F) | 0x80)
            shift -= 7
        }
        out.append(UInt8(value & 0x7F))
    }
}
